// tests/kernels/kernel_test_util.h — shared helpers of the CPU kernel tests: deterministic
// random data, the type lists, random weight rows of each type.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/dtype.h"
#include "kernels/cpu/fp16.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/quant.h"

namespace strata::kernels::test {

inline const std::vector<DType>& weight_types() {
  static const std::vector<DType> t = {DType::F32,  DType::F16,  DType::BF16, DType::Q4_0,
                                       DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0,
                                       DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K,
                                       DType::Q6_K};
  return t;
}

inline const std::vector<Isa>& all_isas() {
  static const std::vector<Isa> i = {Isa::Scalar, Isa::Avx2, Isa::Avx512};
  return i;
}

inline std::vector<float> random_floats(int64_t n, uint32_t seed, float sigma = 1.f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, sigma);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& f : v) f = dist(rng);
  return v;
}

inline std::vector<uint8_t> quantized(DType t, const std::vector<float>& x) {
  std::vector<uint8_t> q(static_cast<size_t>(row_bytes(t, static_cast<int64_t>(x.size()))));
  quantize_row(t, x.data(), q.data(), static_cast<int64_t>(x.size()));
  return q;
}

inline std::vector<float> dequantized(DType t, const void* q, int64_t n) {
  std::vector<float> x(static_cast<size_t>(n));
  dequantize_row(t, q, x.data(), n);
  return x;
}

// A row of random bytes with the fp16 scale fields set to sane positive values, so every bit
// pattern of the quants (and packed scales) is exercised. Float types: from random floats.
inline std::vector<uint8_t> random_bytes_row(DType t, int64_t n, uint32_t seed) {
  const DTypeTraits& tr = traits(t);
  if (tr.block_elems == 1) return quantized(t, random_floats(n, seed));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> scale(0.001f, 0.05f);
  std::vector<uint8_t> q(static_cast<size_t>(row_bytes(t, n)));
  for (uint8_t& b : q) b = static_cast<uint8_t>(rng());
  std::vector<int> f16_offsets;
  switch (t) {
    case DType::Q4_0: case DType::Q5_0: case DType::Q8_0: case DType::IQ4_NL: case DType::IQ4_XS:
    case DType::IQ2_XXS: case DType::IQ2_XS: case DType::IQ2_S: case DType::IQ3_XXS: case DType::IQ3_S:
    case DType::IQ1_S: f16_offsets = {0}; break;
    case DType::TQ1_0: f16_offsets = {52}; break;
    case DType::TQ2_0: f16_offsets = {64}; break;
    case DType::Q4_1: case DType::Q5_1: case DType::Q4_K: case DType::Q5_K: f16_offsets = {0, 2}; break;
    case DType::Q2_K: f16_offsets = {80, 82}; break;
    case DType::Q3_K: f16_offsets = {108}; break;
    case DType::Q6_K: f16_offsets = {208}; break;
    default: break;
  }
  if (t == DType::IQ1_M)  // the f16 scale lies in the top nibbles of the four u16 scales at byte 48
    for (int64_t b = 0; b < n / tr.block_elems; ++b) {
      const uint16_t h = f32_to_fp16(scale(rng));
      for (int i = 0; i < 4; ++i) {
        uint8_t& hi = q[static_cast<size_t>(b * tr.block_bytes + 48 + 2 * i + 1)];
        hi = static_cast<uint8_t>((hi & 0x0F) | (((h >> (4 * i)) & 0xF) << 4));
      }
    }
  if (t == DType::MXFP4)  // e8m0 exponents near 2^0 (127 +- 8)
    for (int64_t b = 0; b < n / tr.block_elems; ++b) q[static_cast<size_t>(b * tr.block_bytes)] = static_cast<uint8_t>(119 + rng() % 17);
  for (int64_t b = 0; b < n / tr.block_elems; ++b)
    for (int off : f16_offsets) {
      const uint16_t h = f32_to_fp16(scale(rng));
      std::memcpy(q.data() + b * tr.block_bytes + off, &h, 2);
    }
  return q;
}

inline double rms(const std::vector<float>& v) {
  double s = 0;
  for (float f : v) s += double(f) * f;
  return std::sqrt(s / double(v.size()));
}

}  // namespace strata::kernels::test
