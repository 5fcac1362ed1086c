// tests/cuda_emu/include/cuda_bf16.h — the emulated GPU (tests only): __nv_bfloat16 and its
// conversions (f32 -> bf16 round-to-nearest-even, NaN kept quiet).
#pragma once

#include <bit>
#include <cstdint>

#include "cuda_runtime.h"

struct __nv_bfloat16 {
  uint16_t bits;
};
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short b) { return __nv_bfloat16{b}; }
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.bits; }
inline float __bfloat162float(__nv_bfloat16 h) { return std::bit_cast<float>(static_cast<uint32_t>(h.bits) << 16); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return __nv_bfloat16{0x7fffu};
  const uint32_t r = u + 0x7fffu + ((u >> 16) & 1u);
  return __nv_bfloat16{static_cast<uint16_t>(r >> 16)};
}
inline __nv_bfloat16 __float2bfloat16(float f) { return __float2bfloat16_rn(f); }
