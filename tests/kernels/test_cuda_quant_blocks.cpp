// tests/kernels/test_cuda_quant_blocks.cpp — the __host__ __device__ block decoders of
// kernels/cuda/quant_blocks.cuh, compiled here as plain C++ (no CUDA needed): every type decodes
// bit for bit like the CPU dequantizer (quantized data, random bytes with sane scales, and fully
// random bytes, scale fields included); the fp16 / bf16 helpers agree with kernels/cpu/fp16.h on
// every half; mmv's oct_dot matches a plain dot of the dequantized values within a stated bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/cpu/fp16.h"
#include "kernels/cpu/quant.h"
#include "kernels/cuda/quant_blocks.cuh"

namespace strata::kernels::cuda {
namespace {

using test::quantized;
using test::random_floats;

// The same float, or both nan (payloads may differ).
bool same_float(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, 4) == 0;
}

const std::vector<DType>& quant_types() {
  static const std::vector<DType> t = {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0,
                                       DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K,
                                       DType::IQ4_NL, DType::IQ4_XS, DType::MXFP4, DType::IQ2_XXS, DType::IQ2_XS,
                                       DType::IQ2_S, DType::IQ3_XXS, DType::IQ3_S, DType::IQ1_S, DType::IQ1_M,
                                       DType::TQ1_0, DType::TQ2_0};
  return t;
}

// Decodes a row of n elements of type t with the quant_blocks.cuh decoders, oct by oct (in a
// shuffled order, so no oct depends on another).
std::vector<float> decode_row_cuda(DType t, const std::vector<uint8_t>& bytes, int64_t n, uint32_t seed) {
  std::vector<float> out(static_cast<size_t>(n), std::nanf("0x123"));
  const bool known = visit_decoder(t, [&](auto tag) {
    using Dec = typename decltype(tag)::type;
    const int64_t n_octs = n / 8;
    std::vector<int64_t> order(static_cast<size_t>(n_octs));
    for (int64_t i = 0; i < n_octs; ++i) order[static_cast<size_t>(i)] = i;
    std::shuffle(order.begin(), order.end(), std::mt19937(seed));
    constexpr int kOcts = Dec::kElems / 8;
    for (int64_t o : order) {
      const int64_t block = o / kOcts;
      const int i = static_cast<int>(o % kOcts);
      decode_oct<Dec>(bytes.data() + block * Dec::kBytes, i, out.data() + o * 8);
    }
  });
  EXPECT_TRUE(known) << dtype_name(t);
  return out;
}

// Bit-exact comparison; nan only where the reference has nan.
void expect_rows_equal(DType t, const std::vector<uint8_t>& bytes, int64_t n, const char* what, uint32_t seed) {
  std::vector<float> ref(static_cast<size_t>(n));
  dequantize_row(t, bytes.data(), ref.data(), n);
  const std::vector<float> got = decode_row_cuda(t, bytes, n, seed);
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < n; ++i)
    if (!same_float(ref[static_cast<size_t>(i)], got[static_cast<size_t>(i)])) {
      if (first < 0) first = i;
      ++bad;
    }
  EXPECT_EQ(bad, 0) << dtype_name(t) << " (" << what << "): first mismatch at element " << first << ": cpu "
                    << (first >= 0 ? ref[static_cast<size_t>(first)] : 0.f) << " cuda decode "
                    << (first >= 0 ? got[static_cast<size_t>(first)] : 0.f);
  if (bad == 0) {
    // Without nans the arrays are identical byte for byte.
    bool any_nan = false;
    for (float f : ref) any_nan |= std::isnan(f);
    if (!any_nan) {
      EXPECT_EQ(std::memcmp(ref.data(), got.data(), static_cast<size_t>(n) * 4), 0) << dtype_name(t);
    }
  }
}

TEST(CudaQuantBlocks, GeometryMatchesDtypeTable) {
  std::vector<DType> types = test::weight_types();
  types.insert(types.end(), {DType::IQ4_NL, DType::IQ4_XS, DType::MXFP4, DType::IQ2_XXS, DType::IQ2_XS, DType::IQ2_S,
                             DType::IQ3_XXS, DType::IQ3_S, DType::IQ1_S, DType::IQ1_M, DType::TQ1_0, DType::TQ2_0});
  for (DType t : types) {
    EXPECT_EQ(qb_geometry(t).block_elems, traits(t).block_elems) << dtype_name(t);
    EXPECT_EQ(qb_geometry(t).block_bytes, traits(t).block_bytes) << dtype_name(t);
    EXPECT_EQ(qb_row_bytes(t, 256 * 7), row_bytes(t, 256 * 7)) << dtype_name(t);
  }
  EXPECT_FALSE(visit_decoder(DType::Q8_1, [](auto) {}));
  EXPECT_FALSE(visit_decoder(DType::Q8_K, [](auto) {}));
}

TEST(CudaQuantBlocks, QuantizedDataBitExact) {
  const int64_t n = 256 * 24;
  uint32_t seed = 1;
  for (DType t : quant_types()) {
    // N(0,1), large and shifted, tiny (subnormal-ish fp16 scales), all zero.
    std::vector<float> big = random_floats(n, seed + 100, 300.f);
    for (float& f : big) f += 50.f;
    const std::vector<std::vector<float>> inputs = {random_floats(n, seed), big, random_floats(n, seed + 200, 1e-6f),
                                                    std::vector<float>(static_cast<size_t>(n), 0.f)};
    for (const std::vector<float>& x : inputs) expect_rows_equal(t, quantized(t, x), n, "quantized", ++seed);
  }
}

TEST(CudaQuantBlocks, RandomBytesSaneScalesBitExact) {
  const int64_t n = 256 * 64;
  uint32_t seed = 7;
  for (DType t : quant_types())
    for (int rep = 0; rep < 4; ++rep) {
      ++seed;
      expect_rows_equal(t, test::random_bytes_row(t, n, seed), n, "random bytes", seed);
    }
}

TEST(CudaQuantBlocks, FullyRandomBytesBitExact) {
  // Every byte random, the fp16 scale fields too (inf / nan / subnormal scales included).
  const int64_t n = 256 * 256;
  std::mt19937 rng(4242);
  for (DType t : quant_types()) {
    std::vector<uint8_t> bytes(static_cast<size_t>(row_bytes(t, n)));
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
    expect_rows_equal(t, bytes, n, "fully random bytes", static_cast<uint32_t>(rng()));
  }
}

TEST(CudaQuantBlocks, FloatTypesBitExact) {
  const int64_t n = 8 * 37;
  const std::vector<float> x = random_floats(n, 5, 3.f);
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    const std::vector<uint8_t> bytes = quantized(t, x);
    expect_rows_equal(t, bytes, n, "float type", 3);
    std::vector<float> ref(static_cast<size_t>(n));
    dequantize_row(t, bytes.data(), ref.data(), n);
    visit_decoder(t, [&](auto tag) {
      using Dec = typename decltype(tag)::type;
      for (int64_t c = 0; c < n; ++c)
        ASSERT_TRUE(same_float(decode_element<Dec>(bytes.data(), c), ref[static_cast<size_t>(c)])) << dtype_name(t);
    });
  }
}

TEST(CudaQuantBlocks, SingleElementDecode) {
  const int64_t n = 256 * 4;
  for (DType t : quant_types()) {
    const std::vector<uint8_t> bytes = test::random_bytes_row(t, n, 77);
    std::vector<float> ref(static_cast<size_t>(n));
    dequantize_row(t, bytes.data(), ref.data(), n);
    visit_decoder(t, [&](auto tag) {
      using Dec = typename decltype(tag)::type;
      for (int64_t c = 0; c < n; ++c) {
        const float got = decode_element<Dec>(bytes.data(), c);
        ASSERT_EQ(std::memcmp(&got, &ref[static_cast<size_t>(c)], 4), 0) << dtype_name(t) << " element " << c;
      }
    });
  }
}

TEST(CudaQuantBlocks, F16ToF32AllHalves) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float ref = fp16_to_f32(static_cast<uint16_t>(h));
    const float got = f16_bits_to_f32(static_cast<uint16_t>(h));
    ASSERT_TRUE(same_float(ref, got)) << std::hex << h;
    if (!std::isnan(ref)) {
      ASSERT_EQ(f32_to_bits(ref), f32_to_bits(got)) << std::hex << h;
    }
  }
}

TEST(CudaQuantBlocks, Bf16ToF32AllPatterns) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float ref = bf16_to_f32(static_cast<uint16_t>(h));
    const float got = bf16_bits_to_f32(static_cast<uint16_t>(h));
    ASSERT_TRUE(same_float(ref, got)) << std::hex << h;
    if (!std::isnan(ref)) {
      ASSERT_EQ(f32_to_bits(ref), f32_to_bits(got)) << std::hex << h;
    }
  }
}

TEST(CudaQuantBlocks, F32ToF16RoundsLikeCpu) {
  // Every upper half of the f32 bits with low halves around the rounding points of fp16
  // (ties, one below, one above) and random ones: 65536 * 12 inputs.
  std::mt19937 rng(11);
  const uint32_t lows[] = {0x0000, 0x0001, 0x0FFF, 0x1000, 0x1001, 0x1FFF, 0x2000, 0x2001, 0x7FFF, 0x8000, 0xFFFF, 0};
  for (uint32_t hi = 0; hi < 0x10000; ++hi)
    for (uint32_t lo : lows) {
      const uint32_t bits = (hi << 16) | (lo ? lo : (rng() & 0xFFFF));
      const float f = bits_to_f32(bits);
      const uint16_t ref = f32_to_fp16(f), got = f32_to_f16_bits(f);
      if (std::isnan(f)) {
        ASSERT_TRUE(std::isnan(fp16_to_f32(got))) << std::hex << bits;
      } else {
        ASSERT_EQ(ref, got) << std::hex << bits;
      }
    }
}

// mmv's per-oct sum d * sum(q x) + m * sum(x) against a double dot of the dequantized values:
// |err| <= 1e-5 * sum |w x| (f32 reassociation over 8 terms plus one scale multiply).
TEST(CudaQuantBlocks, OctDotMatchesDequantizedDot) {
  const int64_t n = 256 * 16;
  for (DType t : test::weight_types()) {
    const std::vector<uint8_t> bytes =
        traits(t).block_elems == 1 ? quantized(t, random_floats(n, 17)) : test::random_bytes_row(t, n, 31);
    std::vector<float> w(static_cast<size_t>(n));
    dequantize_row(t, bytes.data(), w.data(), n);
    const std::vector<float> x = random_floats(n, 23);
    visit_decoder(t, [&](auto tag) {
      using Dec = typename decltype(tag)::type;
      constexpr int kOcts = Dec::kElems / 8;
      for (int64_t o = 0; o < n / 8; ++o) {
        Oct oc;
        Dec::oct(bytes.data() + (o / kOcts) * Dec::kBytes, static_cast<int>(o % kOcts), oc);
        const float* xo = x.data() + o * 8;
        float sum_x = 0.f;
        for (int k = 0; k < 8; ++k) sum_x += xo[k];
        const float got = oct_dot<Dec>(oc, xo, sum_x);
        double ref = 0, mag = 0;
        for (int k = 0; k < 8; ++k) {
          ref += double(w[static_cast<size_t>(o * 8 + k)]) * xo[k];
          mag += std::fabs(double(w[static_cast<size_t>(o * 8 + k)]) * xo[k]);
        }
        // Types with a min cancel d*sum(qx) against m*sum(x): bound by their magnitudes too.
        double bound = 1e-5 * mag + 1e-30;
        if constexpr (kOctNeedsSumX<Dec>) {
          double qx = 0;
          for (int k = 0; k < 8; ++k) qx += std::fabs(double(oc.q[k]) * xo[k]);
          bound += 1e-5 * (std::fabs(double(oc.d)) * qx + std::fabs(double(oc.m) * sum_x));
        }
        ASSERT_NEAR(got, ref, bound) << dtype_name(t) << " oct " << o;
      }
    });
  }
}

}  // namespace
}  // namespace strata::kernels::cuda
