// tests/kernels/test_vec_dot.cpp — vec_dot of every weight type: every ISA against the scalar
// reference, the scalar reference against the f32 dot of the dequantized rows, and the whole
// quantized path against the f32 dot of the original activations.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernel_test_util.h"
#include "kernels/cpu/type_kernels.h"

namespace strata::kernels {
namespace {

const int64_t kLengths[] = {256, 512, 768, 2048, 4352};

struct Dots {
  double exact;  // f64 dot of the dequantized weight row and dequantized activations
  double mag;    // sum |w_i * a_i| of the same: the scale rounding errors are relative to
};

Dots exact_dot(DType wt, const void* w, DType at, const void* a, int64_t n) {
  const std::vector<float> wf = test::dequantized(wt, w, n), af = test::dequantized(at, a, n);
  Dots d{0, 0};
  for (int64_t i = 0; i < n; ++i) {
    d.exact += double(wf[i]) * af[i];
    d.mag += std::fabs(double(wf[i]) * af[i]);
  }
  return d;
}

double tolerance_vs_exact(DType wt) {
  // Int dots are exact; the error is float rounding of per-block scales and sums (~1e-6).
  // Q8_1 stores s = d * sum(q) as fp16 (2^-11 relative), which Q4_1 / Q5_1 use for the min term.
  if (wt == DType::Q4_1 || wt == DType::Q5_1) return 1e-3;
  return 1e-5;
}

TEST(VecDot, EveryIsaMatchesScalar) {
  for (Isa isa : {Isa::Avx2, Isa::Avx512}) {
    if (!isa_supported(isa)) {
      std::printf("  %s not supported here: skipped\n", isa_name(isa));
      continue;
    }
    for (DType wt : test::weight_types()) {
      const DType at = vec_dot_type(wt);
      const TypeKernels* k = type_kernels(wt, isa);
      const TypeKernels* ref = type_kernels(wt, Isa::Scalar);
      ASSERT_NE(k, nullptr);
      for (int64_t n : kLengths) {
        for (int variant = 0; variant < 2; ++variant) {
          const uint32_t seed = static_cast<uint32_t>(n * 10 + variant);
          // variant 0: weights from the quantizer; 1: random bytes (every bit pattern).
          const std::vector<uint8_t> w = variant == 0 ? test::quantized(wt, test::random_floats(n, seed))
                                                      : test::random_bytes_row(wt, n, seed);
          const std::vector<uint8_t> a = test::quantized(at, test::random_floats(n, seed + 1000));
          float got = 0, want = 0;
          k->vec_dot(n, w.data(), a.data(), &got);
          ref->vec_dot(n, w.data(), a.data(), &want);
          const Dots d = exact_dot(wt, w.data(), at, a.data(), n);
          // Relative to sum |w a|: both sides round per-block products in a different order.
          const double tol = (wt == DType::F32 || wt == DType::F16 || wt == DType::BF16 ? 2e-5 : 1e-5) * d.mag;
          ASSERT_NEAR(got, want, tol) << dtype_name(wt) << " " << isa_name(isa) << " n=" << n << " v=" << variant;
        }
      }
    }
  }
}

// Rows of 1 to 9 blocks of the 32-element types: the SIMD dots take 2 or 4 blocks an iteration,
// and every remainder must come out of their tails right.
TEST(VecDot, ShortRowsOfBlockTypesMatchScalar) {
  int checked = 0;
  for (Isa isa : {Isa::Avx2, Isa::Avx512}) {
    if (!isa_supported(isa)) continue;
    for (DType wt : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0}) {
      const DType at = vec_dot_type(wt);
      for (int64_t nb = 1; nb <= 9; ++nb) {
        const int64_t n = 32 * nb;
        const uint32_t seed = static_cast<uint32_t>(500 + nb);
        const std::vector<uint8_t> w = test::random_bytes_row(wt, n, seed);
        const std::vector<uint8_t> a = test::quantized(at, test::random_floats(n, seed + 1000));
        float got = 0, want = 0;
        type_kernels(wt, isa)->vec_dot(n, w.data(), a.data(), &got);
        type_kernels(wt, Isa::Scalar)->vec_dot(n, w.data(), a.data(), &want);
        const Dots d = exact_dot(wt, w.data(), at, a.data(), n);
        ASSERT_NEAR(got, want, 1e-5 * d.mag) << dtype_name(wt) << " " << isa_name(isa) << " blocks=" << nb;
        ++checked;
      }
    }
  }
  if (checked == 0) GTEST_SKIP() << "no SIMD ISA on this CPU";
}

TEST(VecDot, ScalarMatchesDequantizedDot) {
  for (DType wt : test::weight_types()) {
    const DType at = vec_dot_type(wt);
    for (int64_t n : kLengths) {
      for (int variant = 0; variant < 2; ++variant) {
        const uint32_t seed = static_cast<uint32_t>(n * 7 + variant);
        const std::vector<uint8_t> w = variant == 0 ? test::quantized(wt, test::random_floats(n, seed))
                                                    : test::random_bytes_row(wt, n, seed);
        const std::vector<uint8_t> a = test::quantized(at, test::random_floats(n, seed + 99));
        float got = 0;
        type_kernels(wt, Isa::Scalar)->vec_dot(n, w.data(), a.data(), &got);
        const Dots d = exact_dot(wt, w.data(), at, a.data(), n);
        ASSERT_NEAR(got, d.exact, tolerance_vs_exact(wt) * d.mag) << dtype_name(wt) << " n=" << n;
      }
    }
  }
}

TEST(VecDot, QuantizedPathMatchesF32Dot) {
  // vec_dot(W, quantize(x)) against the f32 dot of dequantized W with the original x. The only
  // error left is activation quantization (8-bit, |err| <= amax / 254 per element), bounded by
  // 1% of |w| |x| (Cauchy-Schwarz scale); float types must agree to 1e-5 of sum |w x|.
  for (Isa isa : test::all_isas()) {
    if (!isa_supported(isa)) continue;
    for (DType wt : test::weight_types()) {
      const DType at = vec_dot_type(wt);
      for (int64_t n : kLengths) {
        const std::vector<float> x = test::random_floats(n, 5 + static_cast<uint32_t>(n));
        const std::vector<uint8_t> w = test::quantized(wt, test::random_floats(n, 6 + static_cast<uint32_t>(n)));
        std::vector<uint8_t> a(static_cast<size_t>(row_bytes(at, n)));
        type_kernels(at, isa)->quantize_row(x.data(), a.data(), n);
        float got = 0;
        type_kernels(wt, isa)->vec_dot(n, w.data(), a.data(), &got);
        const std::vector<float> wf = test::dequantized(wt, w.data(), n);
        double exact = 0, mag = 0, w2 = 0, x2 = 0;
        for (int64_t i = 0; i < n; ++i) {
          exact += double(wf[i]) * x[i];
          mag += std::fabs(double(wf[i]) * x[i]);
          w2 += double(wf[i]) * wf[i];
          x2 += double(x[i]) * x[i];
        }
        const double tol = at == DType::F32 ? 2e-5 * mag : 0.01 * std::sqrt(w2 * x2);
        ASSERT_NEAR(got, exact, tol) << dtype_name(wt) << " " << isa_name(isa) << " n=" << n;
      }
    }
  }
}

TEST(VecDot, FourTokenKernelsMatchScalar) {
  int checked = 0;
  for (Isa isa : {Isa::Avx2, Isa::Avx512}) {
    if (!isa_supported(isa)) continue;
    for (DType wt : test::weight_types()) {
      const VecDot4 k4 = vec_dot4_kernel(wt, isa);
      if (!k4) continue;
      const DType at = vec_dot_type(wt);
      for (int64_t n : kLengths) {
        const std::vector<uint8_t> w = test::random_bytes_row(wt, n, 11 + static_cast<uint32_t>(n));
        const int64_t arb = row_bytes(at, n);
        std::vector<uint8_t> a(static_cast<size_t>(arb * 4));
        for (int c = 0; c < 4; ++c) {
          const std::vector<float> x = test::random_floats(n, 100 + c + static_cast<uint32_t>(n));
          quantize_row(at, x.data(), a.data() + c * arb, n);
        }
        const int64_t nb = n / traits(wt).block_elems;
        float got[4];
        float state[kVecDot4StateFloats];
        k4(0, nb, w.data(), a.data(), arb, state, got);
        // Cut into segments (1 block, then 3 at a time: matmul's k segments), the same bits.
        float seg[4];
        for (int64_t b0 = 0; b0 < nb;) {
          const int64_t b1 = std::min(nb, b0 == 0 ? int64_t{1} : b0 + 3);
          k4(b0, b1, w.data(), a.data(), arb, state, b1 == nb ? seg : nullptr);
          b0 = b1;
        }
        for (int c = 0; c < 4; ++c)
          ASSERT_EQ(std::memcmp(&seg[c], &got[c], sizeof(float)), 0)
              << dtype_name(wt) << " " << isa_name(isa) << " n=" << n << " c=" << c << ": " << seg[c] << " vs " << got[c];
        for (int c = 0; c < 4; ++c) {
          float want = 0;
          type_kernels(wt, Isa::Scalar)->vec_dot(n, w.data(), a.data() + c * arb, &want);
          const Dots d = exact_dot(wt, w.data(), at, a.data() + c * arb, n);
          ASSERT_NEAR(got[c], want, 2e-5 * d.mag) << dtype_name(wt) << " " << isa_name(isa) << " n=" << n << " c=" << c;
        }
        ++checked;
      }
    }
  }
  if (checked == 0) GTEST_SKIP() << "no SIMD ISA on this CPU";
}

// The decode dots over kDecodeRows rows at once (float weights and the 32-element block types,
// at AVX2 and AVX-512): each row's result has the bits of vec_dot over that row alone (matmul's
// promise that a decode step gives each row what the one-row dot gives), at lengths with every
// kind of tail (float: past the last 32, past the last 8; Q8_0: odd block counts; Q4_0-Q5_1:
// blocks past their 4-block loop, a pair and / or a single one), with rows apart by more than their length, and for
// Q8_0 with weight bytes of -128 (which the quantizer never writes, but a file may hold) in every
// row. The quantized types' two-token form (vec_dot_rows2) the same, token by token.
TEST(VecDot, DecodeRowsHaveTheOneRowBits) {
  struct Case {
    DType wt;
    Isa isa;
  };
  const Case cases[] = {{DType::F32, Isa::Avx2},  {DType::F16, Isa::Avx2},    {DType::BF16, Isa::Avx2},
                        {DType::F32, Isa::Avx512}, {DType::F16, Isa::Avx512}, {DType::BF16, Isa::Avx512},
                        {DType::Q8_0, Isa::Avx2},  {DType::Q4_0, Isa::Avx2},   {DType::Q4_1, Isa::Avx2},
                        {DType::Q5_0, Isa::Avx2},  {DType::Q5_1, Isa::Avx2},   {DType::Q8_0, Isa::Avx512},
                        {DType::Q4_0, Isa::Avx512}, {DType::Q4_1, Isa::Avx512}, {DType::Q5_0, Isa::Avx512},
                        {DType::Q5_1, Isa::Avx512}, {DType::Q4_K, Isa::Avx2}, {DType::Q5_K, Isa::Avx2},
                        {DType::Q6_K, Isa::Avx2},   {DType::Q4_K, Isa::Avx512}, {DType::Q5_K, Isa::Avx512},
                        {DType::Q6_K, Isa::Avx512}, {DType::Q2_K, Isa::Avx2}, {DType::Q3_K, Isa::Avx2},
                        {DType::Q2_K, Isa::Avx512}, {DType::Q3_K, Isa::Avx512}};
  int checked = 0;
  for (const Case& c : cases) {
    if (!isa_supported(c.isa)) continue;
    const TypeKernels* k = type_kernels(c.wt, c.isa);
    ASSERT_NE(k, nullptr);
    ASSERT_NE(k->vec_dot_rows, nullptr) << dtype_name(c.wt) << " " << isa_name(c.isa);
    const bool blocks = traits(c.wt).block_elems == 32;
    const bool quantized = traits(c.wt).block_elems >= 32;  // quantized activations (Q8_0, Q8_1, Q8_K)
    // Blocks of 32: 1-3 (Q4_0-Q5_1: a pair and / or a single block only), 5 and 7 (their 4-block
    // loop, then a single block or a pair and a single), 8 and more. K-quants: 1-3 and 8 blocks.
    const std::vector<int64_t> lengths = blocks ? std::vector<int64_t>{32, 64, 96, 160, 224, 256, 1024, 4352}
                                         : quantized ? std::vector<int64_t>{256, 512, 768, 2048}
                                                     : std::vector<int64_t>{5, 8, 31, 32, 45, 256, 1003};
    for (int64_t n : lengths) {
      // Rows kDecodeRows apart in memory with a gap after each (the row stride is not n).
      const int64_t rb = row_bytes(c.wt, n), stride = rb + 64;
      std::vector<uint8_t> w(static_cast<size_t>(stride * kDecodeRows));
      for (int r = 0; r < kDecodeRows; ++r) {
        std::vector<uint8_t> row = test::quantized(c.wt, test::random_floats(n, 7 + static_cast<uint32_t>(n + r)));
        if (c.wt == DType::Q8_0) {
          // A -128 in a different lane of each block, row by row.
          for (int64_t b = 0; b < n / 32; ++b) row[static_cast<size_t>(b * 34 + 2 + (b * 7 + r * 5) % 32)] = 0x80;
        }
        std::copy(row.begin(), row.end(), w.begin() + r * stride);
      }
      const std::vector<float> af = test::random_floats(n, 99 + static_cast<uint32_t>(n));
      const DType at = vec_dot_type(c.wt);  // Q8_0, or Q8_1 for Q4_1 / Q5_1, Q8_K for Q4_K / Q5_K
      const std::vector<uint8_t> aq = quantized ? test::quantized(at, af) : std::vector<uint8_t>{};
      const void* a = quantized ? static_cast<const void*>(aq.data()) : static_cast<const void*>(af.data());
      float got[kDecodeRows];
      k->vec_dot_rows(n, w.data(), stride, a, got);
      for (int r = 0; r < kDecodeRows; ++r) {
        float want = 0;
        k->vec_dot(n, w.data() + r * stride, a, &want);
        ASSERT_EQ(std::memcmp(&got[r], &want, sizeof(float)), 0)
            << dtype_name(c.wt) << " " << isa_name(c.isa) << " n=" << n << " r=" << r << ": " << got[r] << " vs " << want;
        ASSERT_NE(want, 0.f);
        if (blocks) {
          // And the value itself: within float rounding of the exact dot.
          const Dots d = exact_dot(c.wt, w.data() + r * stride, at, a, n);
          EXPECT_NEAR(got[r], d.exact, tolerance_vs_exact(c.wt) * d.mag) << "n=" << n << " r=" << r;
        }
      }
      if (quantized) {
        // Two activation rows at once (vec_dot_rows2), apart by more than their length: each
        // (row, token) the one-token dot's bits.
        ASSERT_NE(k->vec_dot_rows2, nullptr) << dtype_name(c.wt) << " " << isa_name(c.isa);
        const std::vector<uint8_t> aq2 = test::quantized(at, test::random_floats(n, 555 + static_cast<uint32_t>(n)));
        const int64_t a_stride = static_cast<int64_t>(aq.size()) + 96;
        std::vector<uint8_t> acts(static_cast<size_t>(2 * a_stride), 0xEE);
        std::copy(aq.begin(), aq.end(), acts.begin());
        std::copy(aq2.begin(), aq2.end(), acts.begin() + a_stride);
        float got2[2 * kDecodeRows];
        k->vec_dot_rows2(n, w.data(), stride, acts.data(), a_stride, got2);
        for (int t = 0; t < 2; ++t)
          for (int r = 0; r < kDecodeRows; ++r) {
            float want = 0;
            k->vec_dot(n, w.data() + r * stride, acts.data() + t * a_stride, &want);
            ASSERT_EQ(std::memcmp(&got2[t * kDecodeRows + r], &want, sizeof(float)), 0)
                << dtype_name(c.wt) << " " << isa_name(c.isa) << " n=" << n << " token " << t << " r=" << r << ": "
                << got2[t * kDecodeRows + r] << " vs " << want;
          }
      }
      ++checked;
    }
  }
  if (checked == 0) GTEST_SKIP() << "no SIMD ISA on this CPU";
}

// The one-token dots of the 32-element block types (two blocks a vector) and of the K-quants take
// the same integer lane sums at AVX2 and at AVX-512 (maddubs + madd without saturation, or
// vpdpbusd) and the same float steps: the same bits on both, so a model's output does not depend
// on which of the two a CPU runs.
TEST(VecDot, OneTokenDotsHaveTheSameBitsAtAvx2AndAvx512) {
  if (!isa_supported(Isa::Avx512)) GTEST_SKIP() << "no AVX-512 on this CPU";
  for (DType wt : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q2_K, DType::Q3_K, DType::Q4_K,
                   DType::Q5_K, DType::Q6_K}) {
    const bool k_quant = traits(wt).block_elems == 256;
    for (int64_t n : k_quant ? std::vector<int64_t>{256, 512, 4096} : std::vector<int64_t>{32, 64, 96, 160, 224, 4096}) {
      const std::vector<uint8_t> w = test::quantized(wt, test::random_floats(n, 5 + static_cast<uint32_t>(n)));
      const std::vector<uint8_t> a = test::quantized(vec_dot_type(wt), test::random_floats(n, 17 + static_cast<uint32_t>(n)));
      float avx2 = 0, avx512 = 0;
      type_kernels(wt, Isa::Avx2)->vec_dot(n, w.data(), a.data(), &avx2);
      type_kernels(wt, Isa::Avx512)->vec_dot(n, w.data(), a.data(), &avx512);
      ASSERT_NE(avx2, 0.f);
      EXPECT_EQ(std::memcmp(&avx2, &avx512, sizeof(float)), 0) << dtype_name(wt) << " n=" << n << ": " << avx2 << " vs " << avx512;
    }
  }
}

TEST(VecDot, ActivationTypesDotThemselves) {
  for (DType t : {DType::Q8_0, DType::Q8_1, DType::Q8_K}) {
    const int64_t n = 1024;
    const std::vector<uint8_t> a = test::quantized(t, test::random_floats(n, 1));
    const std::vector<uint8_t> b = test::quantized(t, test::random_floats(n, 2));
    const Dots d = exact_dot(t, a.data(), t, b.data(), n);
    for (Isa isa : test::all_isas()) {
      if (!isa_supported(isa)) continue;
      float got = 0;
      type_kernels(t, isa)->vec_dot(n, a.data(), b.data(), &got);
      EXPECT_NEAR(got, d.exact, 1e-5 * d.mag) << dtype_name(t) << " " << isa_name(isa);
    }
  }
}

}  // namespace
}  // namespace strata::kernels
