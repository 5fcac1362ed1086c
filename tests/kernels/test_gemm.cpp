// tests/kernels/test_gemm.cpp — the packed-tile prompt kernels (gemm.h) against the scalar
// reference vec_dot: every type that has one, random-byte weights (every bit pattern of quants
// and packed scales), row counts that are not multiples of the 4-row tile, token counts that are
// not multiples of the 16-token group, and outputs outside the tile left untouched.
#include <gtest/gtest.h>

#include <cmath>

#include "kernel_test_util.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/type_kernels.h"

namespace strata::kernels {
namespace {

uint8_t* align64(std::vector<uint8_t>& v) {
  return reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(v.data()) + 63) & ~uintptr_t{63});
}

struct Case {
  int64_t rows, cols, tokens;
};

void check_gemm(const GemmKernels& gk, DType wt, const Case& c, uint32_t seed) {
  const DType at = vec_dot_type(wt);
  const int64_t wrb = row_bytes(wt, c.cols), arb = row_bytes(at, c.cols);
  std::vector<uint8_t> w(static_cast<size_t>(wrb * c.rows));
  for (int64_t r = 0; r < c.rows; ++r) {
    const std::vector<uint8_t> row = test::random_bytes_row(wt, c.cols, seed + static_cast<uint32_t>(r));
    std::copy(row.begin(), row.end(), w.begin() + r * wrb);
  }
  const std::vector<float> x = test::random_floats(c.tokens * c.cols, seed + 1000);

  const int64_t n_groups = (c.tokens + kGemmTokenGroup - 1) / kGemmTokenGroup;
  const int64_t gb = gk.group_bytes(c.cols);
  std::vector<uint8_t> act_buf(static_cast<size_t>(n_groups * gb + 64));
  std::vector<uint8_t> ws_buf(static_cast<size_t>(gk.scratch_bytes(c.cols) + 64));
  uint8_t* act = align64(act_buf);
  for (int64_t g = 0; g < n_groups; ++g) gk.pack_group(x.data(), c.cols, c.tokens, g, act + g * gb);

  const int64_t ys = c.rows + 3;  // a gap after each token's outputs must stay untouched
  std::vector<float> y(static_cast<size_t>(c.tokens * ys), NAN);
  gk.rows(w.data(), wrb, c.rows, c.cols, act, c.tokens, y.data(), ys, align64(ws_buf), nullptr, 0);

  std::vector<uint8_t> a(static_cast<size_t>(arb));
  for (int64_t t = 0; t < c.tokens; ++t) {
    quantize_row(at, x.data() + t * c.cols, a.data(), c.cols);
    const std::vector<float> af = test::dequantized(at, a.data(), c.cols);
    for (int64_t r = 0; r < c.rows; ++r) {
      float want = 0;
      type_kernels(wt, Isa::Scalar)->vec_dot(c.cols, w.data() + r * wrb, a.data(), &want);
      const std::vector<float> wf = test::dequantized(wt, w.data() + r * wrb, c.cols);
      double mag = 0;
      for (int64_t i = 0; i < c.cols; ++i) mag += std::fabs(double(wf[i]) * af[i]);
      // Integer sums are exact; the rest is float rounding of per-block scales and sums, in a
      // different order than the reference (as for the 4-token kernels in test_vec_dot).
      ASSERT_NEAR(y[t * ys + r], want, 2e-5 * mag)
          << dtype_name(wt) << " rows=" << c.rows << " cols=" << c.cols << " tokens=" << c.tokens << " t=" << t
          << " r=" << r;
    }
    for (int64_t r = c.rows; r < ys; ++r) ASSERT_TRUE(std::isnan(y[t * ys + r])) << "wrote past the rows, t=" << t;
  }
}

TEST(Gemm, PackedKernelsMatchScalar) {
  int checked = 0;
  for (DType wt : test::weight_types()) {
    const GemmKernels* gk = gemm_kernels(wt, Isa::Avx512);
    if (!gk) continue;
    const int64_t blk = traits(wt).block_elems;
    const Case cases[] = {{1, 256, 1},   {3, 256, 5},     {4, 512, 16},  {5, 256, 17},
                          {9, 768, 33},  {13, 512, 64},   {8, 256, 70},  {6, 3 * blk, 2},
                          {7, 1024, 31}, {4, 5 * blk, 48}};
    for (const Case& c : cases) check_gemm(*gk, wt, c, static_cast<uint32_t>(c.rows * 97 + c.tokens));
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no AVX-512 VNNI on this CPU: no packed kernels";
}

TEST(Gemm, OnlyWhereTheIsaIsSupported) {
  for (DType wt : test::weight_types()) {
    EXPECT_EQ(gemm_kernels(wt, Isa::Scalar), nullptr);
    EXPECT_EQ(gemm_kernels(wt, Isa::Avx2), nullptr);
    if (!isa_supported(Isa::Avx512)) {
      EXPECT_EQ(gemm_kernels(wt, Isa::Avx512), nullptr);
    }
  }
  if (isa_supported(Isa::Avx512)) {
    for (DType wt : {DType::Q4_0, DType::Q5_0, DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
      EXPECT_NE(gemm_kernels(wt, Isa::Avx512), nullptr) << dtype_name(wt);
    }
  }
}

TEST(Gemm, ZeroActivationsGiveZeros) {
  // All-zero tokens (d = 0) beside normal ones: padding lanes and zero rows must not leak.
  for (DType wt : test::weight_types()) {
    const GemmKernels* gk = gemm_kernels(wt, Isa::Avx512);
    if (!gk) continue;
    const int64_t cols = 512, rows = 5, tokens = 20;
    const int64_t wrb = row_bytes(wt, cols);
    std::vector<uint8_t> w(static_cast<size_t>(wrb * rows));
    for (int64_t r = 0; r < rows; ++r) {
      const std::vector<uint8_t> row = test::random_bytes_row(wt, cols, 5 + static_cast<uint32_t>(r));
      std::copy(row.begin(), row.end(), w.begin() + r * wrb);
    }
    std::vector<float> x(static_cast<size_t>(tokens * cols), 0.f);
    std::vector<uint8_t> act_buf(static_cast<size_t>(2 * gk->group_bytes(cols) + 64));
    std::vector<uint8_t> ws_buf(static_cast<size_t>(gk->scratch_bytes(cols) + 64));
    uint8_t* act = align64(act_buf);
    for (int64_t g = 0; g < 2; ++g) gk->pack_group(x.data(), cols, tokens, g, act + g * gk->group_bytes(cols));
    std::vector<float> y(static_cast<size_t>(tokens * rows), NAN);
    gk->rows(w.data(), wrb, rows, cols, act, tokens, y.data(), rows, align64(ws_buf), w.data(), rows);
    for (float v : y) ASSERT_EQ(v, 0.f) << dtype_name(wt);
  }
}

}  // namespace
}  // namespace strata::kernels
