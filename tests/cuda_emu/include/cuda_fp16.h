// tests/cuda_emu/include/cuda_fp16.h — the emulated GPU (tests only): __half and the conversions the
// kernels use, with CUDA's rounding (f32 -> f16 round-to-nearest-even, overflow to inf, NaN to the
// canonical 0x7fff as the device does).
#pragma once

#include <bit>
#include <cstdint>

#include "cuda_runtime.h"

struct __half {
  uint16_t bits;
};
struct __half2 {
  __half x, y;
};

inline __half __ushort_as_half(unsigned short b) { return __half{b}; }
inline unsigned short __half_as_ushort(__half h) { return h.bits; }
inline __half __short_as_half(short b) { return __half{static_cast<uint16_t>(b)}; }
inline short __half_as_short(__half h) { return static_cast<short>(h.bits); }

inline float __half2float(__half h) {
  const uint32_t sign = static_cast<uint32_t>(h.bits & 0x8000u) << 16;
  const uint32_t exp = (h.bits >> 10) & 0x1fu;
  const uint32_t man = h.bits & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    // man * 2^-24, exact in f32.
    const float v = static_cast<float>(man) * std::bit_cast<float>(0x33800000u);
    return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(v));
  }
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (man << 13));
}

inline __half __float2half_rn(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return __half{0x7fffu};                      // NaN: canonical
  if (abs == 0x7f800000u) return __half{static_cast<uint16_t>(sign | 0x7c00u)};
  if (abs >= 0x477ff000u) return __half{static_cast<uint16_t>(sign | 0x7c00u)};  // rounds past 65504
  if (abs < 0x38800000u) {                                                 // f16 subnormal or zero
    if (abs < 0x33000000u) return __half{sign};                            // below half the least subnormal
    const uint32_t exp = abs >> 23;
    const uint32_t man = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - exp;
    uint32_t q = man >> shift;
    const uint32_t rem = man & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    return __half{static_cast<uint16_t>(sign | q)};
  }
  uint32_t v = abs - 0x38000000u;
  const uint32_t rem = v & 0x1fffu;
  v >>= 13;
  if (rem > 0x1000u || (rem == 0x1000u && (v & 1u))) ++v;
  return __half{static_cast<uint16_t>(sign | v)};
}
inline __half __float2half(float f) { return __float2half_rn(f); }
inline float __low2float(__half2 h) { return __half2float(h.x); }
inline float __high2float(__half2 h) { return __half2float(h.y); }
inline __half2 __floats2half2_rn(float a, float b) { return __half2{__float2half_rn(a), __float2half_rn(b)}; }
