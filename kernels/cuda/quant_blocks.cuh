// kernels/cuda/quant_blocks.cuh — __host__ __device__ decode of every weight block type (Q4_0 ..
// Q6_K, the IQ types, TQ1_0 / TQ2_0, MXFP4, F32 / F16 / BF16), the one place the CUDA kernels learn the bit layouts of
// kernels/cpu/blocks.h. Compiles with plain g++ too (tested there bit for bit against the CPU
// dequantizers); depends on nothing but kernels/cpu/blocks.h and dtype.h (no CUDA headers on the
// host path).
//
// The unit of decoding is an "oct": 8 consecutive elements [8i, 8i + 8) of one block, which always
// share one scale (and min). A decoder fills an Oct with the 8 integer levels q (as exact floats)
// and the oct's scale d and offset m; the element value is, in exactly the CPU reference's order:
//   kMinNone:  d * q            (Q4_0, Q5_0, Q8_0, Q3_K, Q6_K; the K-quants' "- dmin*0" is exact)
//   kMinAdd:   d * q + m        (Q4_1, Q5_1)
//   kMinSub:   d * q - m        (Q2_K, Q4_K, Q5_K: d = d_super * sc, m = dmin * min)
//   kRaw:      q                (F32, F16, BF16: q already holds the value)
// On the device the products and sums use __fmul_rn / __fadd_rn so the compiler cannot fuse them
// into FMAs: dequantize / embed give the CPU's floats bit for bit. mmv uses the same Oct but sums
// d * sum(q x) + m * sum(x) (oct_dot), which reorders the arithmetic (a tolerance, not bits).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/blocks.h"
#include "kernels/cpu/dtype.h"
#include "kernels/cpu/iq_grids.h"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#define STRATA_HD __host__ __device__
#define STRATA_HD_INLINE __host__ __device__ __forceinline__
#else
#define STRATA_HD
#define STRATA_HD_INLINE inline
#endif
#if defined(__CUDA_ARCH__)  // the device pass only (host compilers warn about the pragma)
#define STRATA_UNROLL _Pragma("unroll")
#else
#define STRATA_UNROLL
#endif

namespace strata::kernels::cuda {

// ---- bits and small conversions ------------------------------------------------------------

STRATA_HD_INLINE float qb_bits_to_f32(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}
STRATA_HD_INLINE uint32_t qb_f32_to_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}

// IEEE half -> f32, exact (every half is a float). Device: the hardware conversion.
STRATA_HD_INLINE float f16_bits_to_f32(uint16_t h) {
#if defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(h));
#else
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return qb_bits_to_f32(sign | 0x7f800000u | (man << 13));  // inf / nan
  if (exp == 0) {                                                             // zero / subnormal
    const float v = static_cast<float>(man) * qb_bits_to_f32(0x33800000u);   // man * 2^-24, exact
    return qb_bits_to_f32(sign | qb_f32_to_bits(v));
  }
  return qb_bits_to_f32(sign | ((exp + 112u) << 23) | (man << 13));
#endif
}

// f32 -> IEEE half bits, round to nearest even; overflow to inf; nan stays nan (the device gives
// the canonical 0x7fff, the host keeps the payload like kernels/cpu/fp16.h).
STRATA_HD_INLINE uint16_t f32_to_f16_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __half_as_ushort(__float2half_rn(f));
#else
  const uint32_t u = qb_f32_to_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs >= 0x7f800000u) {
    if (abs == 0x7f800000u) return sign | 0x7c00u;
    return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  }
  if (abs >= 0x477ff000u) return sign | 0x7c00u;
  if (abs < 0x38800000u) {
    if (abs < 0x33000000u) return sign;
    const uint32_t exp = abs >> 23;
    const uint32_t man = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - exp;
    uint32_t q = man >> shift;
    const uint32_t rem = man & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    return static_cast<uint16_t>(sign | q);
  }
  uint32_t v = abs - 0x38000000u;
  const uint32_t rem = v & 0x1fffu;
  v >>= 13;
  if (rem > 0x1000u || (rem == 0x1000u && (v & 1u))) ++v;
  return static_cast<uint16_t>(sign | v);
#endif
}

STRATA_HD_INLINE float bf16_bits_to_f32(uint16_t b) { return qb_bits_to_f32(static_cast<uint32_t>(b) << 16); }

// float(u) - bias for 0 <= u < 2^22 and small bias, exact. The device builds the float from the
// bits of 1.5 * 2^23 + u (two ALU ops instead of a slow int -> float conversion).
STRATA_HD_INLINE float qb_level(uint32_t u, int bias) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(__uint_as_float(0x4B400000u | u), 12582912.0f + static_cast<float>(bias));
#else
  return static_cast<float>(static_cast<int>(u) - bias);
#endif
}
// Exactly rounded product / sum / difference that the compiler may not contract into an FMA.
STRATA_HD_INLINE float qb_mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
STRATA_HD_INLINE float qb_add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
STRATA_HD_INLINE float qb_sub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}

// Little-endian loads from a block. Blocks are 2-byte aligned wherever they live (every block but MXFP4's
// size is even and tensors start aligned), so the device reads 16-bit words.
STRATA_HD_INLINE uint32_t qb_u16(const uint8_t* p) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const uint16_t*>(p);
#else
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8);
#endif
}
STRATA_HD_INLINE uint32_t qb_u32(const uint8_t* p) {  // p 2-byte aligned
  return qb_u16(p) | (qb_u16(p + 2) << 16);
}
STRATA_HD_INLINE float qb_f32_at(const uint8_t* p) {  // p 4-byte aligned (F32 data)
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const float*>(p);
#else
  float f;
  std::memcpy(&f, p, 4);
  return f;
#endif
}

// ---- the oct --------------------------------------------------------------------------------

enum class MinMode { kNone, kAdd, kSub, kRaw };

struct Oct {
  float q[8];  // integer levels (or the values themselves for kRaw)
  float d;     // scale
  float m;     // offset (kAdd, kSub)
};

// 8 nibbles of a little-endian 64-bit word pair, each minus bias.
STRATA_HD_INLINE void qb_nibbles(uint32_t lo, uint32_t hi, int shift, int bias, float* q) {
STRATA_UNROLL
  for (int k = 0; k < 4; ++k) q[k] = qb_level((lo >> (8 * k + shift)) & 15u, bias);
STRATA_UNROLL
  for (int k = 0; k < 4; ++k) q[4 + k] = qb_level((hi >> (8 * k + shift)) & 15u, bias);
}

// Q4_K / Q5_K: 6-bit scale and min of group j (0..7) from the 12 packed bytes (blocks.h).
STRATA_HD_INLINE void qb_k4_scale_min(int j, const uint8_t* q, uint32_t& sc, uint32_t& m) {
  if (j < 4) {
    sc = q[j] & 63u;
    m = q[j + 4] & 63u;
  } else {
    sc = (q[j + 4] & 0xFu) | ((q[j - 4] >> 6) << 4);
    m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}
// Q3_K: signed scale of group j (0..15), -32..31.
STRATA_HD_INLINE int qb_q3k_scale(int j, const uint8_t* s) {
  const int low = j < 8 ? (s[j] & 0xF) : (s[j - 8] >> 4);
  const int high = (s[8 + (j & 3)] >> (2 * (j >> 2))) & 3;
  return (low | (high << 4)) - 32;
}

// --- the 32-element types (oct i in 0..3) ---

struct DecQ4_0 {
  static constexpr DType kType = DType::Q4_0;
  static constexpr int kElems = 32, kBytes = 18;
  static constexpr MinMode kMode = MinMode::kNone;
  STRATA_HD_INLINE static void oct(const uint8_t* b, int i, Oct& o) {
    const uint8_t* qs = b + 2 + (i & 1) * 8;  // elements j and j + 16 share byte qs[j]
    o.d = f16_bits_to_f32(static_cast<uint16_t>(qb_u16(b)));
    o.m = 0.f;
    qb_nibbles(qb_u32(qs), qb_u32(qs + 4), (i >> 1) * 4, 8, o.q);
  }
};

struct DecQ4_1 {
  static constexpr DType kType = DType::Q4_1;
  static constexpr int kElems = 32, kBytes = 20;
  static constexpr MinMode kMode = MinMode::kAdd;
  STRATA_HD_INLINE static void oct(const uint8_t* b, int i, Oct& o) {
    const uint8_t* qs = b + 4 + (i & 1) * 8;
    o.d = f16_bits_to_f32(static_cast<uint16_t>(qb_u16(b)));
    o.m = f16_bits_to_f32(static_cast<uint16_t>(qb_u16(b + 2)));
    qb_nibbles(qb_u32(qs), qb_u32(qs + 4), (i >> 1) * 4, 0, o.q);
  }
};

// Q5: element e takes bit e of qh (little-endian u32) as its bit 4.
STRATA_HD_INLINE void qb_q5_levels(const uint8_t* qh4, const uint8_t* qs16, int i, int bias, float* q) {
  const uint8_t* qs = qs16 + (i & 1) * 8;
  const uint32_t lo = qb_u32(qs), hi = qb_u32(qs + 4);
  const uint32_t qh = qb_u32(qh4) >> (8 * i);  // bits of elements 8i .. 8i + 7
  const int shift = (i >> 1) * 4;
STRATA_UNROLL
  for (int k = 0; k < 8; ++k) {
    const uint32_t word = k < 4 ? lo : hi;
    const uint32_t nib = (word >> (8 * (k & 3) + shift)) & 15u;
    q[k] = qb_level(nib | (((qh >> k) & 1u) << 4), bias);
  }
}

struct DecQ5_0 {
  static constexpr DType kType = DType::Q5_0;
  static constexpr int kElems = 32, kBytes = 22;
  static constexpr MinMode kMode = MinMode::kNone;
  STRATA_HD_INLINE static void oct(const uint8_t* b, int i, Oct& o) {
    o.d = f16_bits_to_f32(static_cast<uint16_t>(qb_u16(b)));
    o.m = 0.f;
    qb_q5_levels(b + 2, b + 6, i, 16, o.q);
  }
};

struct DecQ5_1 {
  static constexpr DType kType = DType::Q5_1;
  static constexpr int kElems = 32, kBytes = 24;
  static constexpr MinMode kMode = MinMode::kAdd;
  STRATA_HD_INLINE static void oct(const uint8_t* b, int i, Oct& o) {
    o.d = f16_bits_to_f32(static_cast<uint16_t>(qb_u16(b)));
    o.m = f16_bits_to_f32(static_cast<uint16_t>(qb_u16(b + 2)));
    qb_q5_levels(b + 4, b + 8, i, 0, o.q);
  }
};

struct DecQ8_0 {
  static constexpr DType kType = DType::Q8_0;
  static constexpr int kElems = 32, kBytes = 34;
  static constexpr MinMode kMode = MinMode::kNone;
  STRATA_HD_INLINE static void oct(const uint8_t* b, int i, Oct& o) {
    const uint8_t* qs = b + 2 + 8 * i;
    o.d = f16_bits_to_f32(static_cast<uint16_t>(qb_u16(b)));
    o.m = 0.f;
    const uint32_t lo = qb_u32(qs), hi = qb_u32(qs + 4);
STRATA_UNROLL
    for (int k = 0; k < 8; ++k) {
      const uint32_t byte = ((k < 4 ? lo : hi) >> (8 * (k & 3))) & 255u;
      o.q[k] = qb_level(byte ^ 128u, 128);  // int8 -> (byte ^ 0x80) - 128
    }
  }
};

// --- the K-quants (oct i in 0..31) ---

struct DecQ2_K {
  static constexpr DType kType = DType::Q2_K;
  static constexpr int kElems = 256, kBytes = 84;
  static constexpr MinMode kMode = MinMode::kSub;
  STRATA_HD_INLINE static void oct(const uint8_t* b, int i, Oct& o) {
    // element n*128 + j*32 + l -> qs[n*32 + l] bits 2j..2j+1; group = element / 16.
    const int n = i >> 4, j = (i >> 2) & 3, l0 = (i & 3) * 8;
    const uint32_t sc = b[i >> 1];
    o.d = qb_mul(f16_bits_to_f32(static_cast<uint16_t>(qb_u16(b + 80))), qb_level(sc & 15u, 0));
    o.m = qb_mul(f16_bits_to_f32(static_cast<uint16_t>(qb_u16(b + 82))), qb_level(sc >> 4, 0));
    const uint8_t* qs = b + 16 + n * 32 + l0;
    const uint32_t lo = qb_u32(qs), hi = qb_u32(qs + 4);
STRATA_UNROLL
    for (int k = 0; k < 8; ++k) o.q[k] = qb_level((((k < 4 ? lo : hi) >> (8 * (k & 3))) >> (2 * j)) & 3u, 0);
  }
};

struct DecQ3_K {
  static constexpr DType kType = DType::Q3_K;
  static constexpr int kElems = 256, kBytes = 110;
  static constexpr MinMode kMode = MinMode::kNone;
  STRATA_HD_INLINE static void oct(const uint8_t* b, int i, Oct& o) {
    // low 2 bits as Q2_K; bit 2 from hmask[l] bit (4n + j), set means "no -4".
    const int n = i >> 4, j = (i >> 2) & 3, l0 = (i & 3) * 8;
    o.d = qb_mul(f16_bits_to_f32(static_cast<uint16_t>(qb_u16(b + 108))),
                 qb_level(static_cast<uint32_t>(qb_q3k_scale(i >> 1, b + 96) + 32), 32));
    o.m = 0.f;
    const uint8_t* qs = b + 32 + n * 32 + l0;
    const uint8_t* hm = b + l0;
    const uint32_t lo = qb_u32(qs), hi = qb_u32(qs + 4);
    const uint32_t hlo = qb_u32(hm), hhi = qb_u32(hm + 4);
    const int hbit = 4 * n + j;
STRATA_UNROLL
    for (int k = 0; k < 8; ++k) {
      const uint32_t low = (((k < 4 ? lo : hi) >> (8 * (k & 3))) >> (2 * j)) & 3u;
      const uint32_t high = (((k < 4 ? hlo : hhi) >> (8 * (k & 3))) >> hbit) & 1u;
      o.q[k] = qb_level(low | (high << 2), 4);  // (low | high << 2) - 4 == low - (high ? 0 : 4)
    }
  }
};

// Q4_K / Q5_K: element j*64 + l (l < 32) low nibble of qs[j*32 + l], j*64 + 32 + l high nibble;
// Q5_K's fifth bit: qh[l] bit 2j (low half) or 2j + 1 (high half). Group of 32 = i / 4.
template <bool kFive>
STRATA_HD_INLINE void qb_k45_oct(const uint8_t* b, int i, Oct& o) {
  const int g = i >> 2, j = i >> 3, half = g & 1, l0 = (i & 3) * 8;
  uint32_t sc, mn;
  qb_k4_scale_min(g, b + 4, sc, mn);
  o.d = qb_mul(f16_bits_to_f32(static_cast<uint16_t>(qb_u16(b))), qb_level(sc, 0));
  o.m = qb_mul(f16_bits_to_f32(static_cast<uint16_t>(qb_u16(b + 2))), qb_level(mn, 0));
  const uint8_t* qs = b + (kFive ? 48 : 16) + j * 32 + l0;
  const uint32_t lo = qb_u32(qs), hi = qb_u32(qs + 4);
  if constexpr (!kFive) {
    qb_nibbles(lo, hi, 4 * half, 0, o.q);
  } else {
    const uint8_t* qh = b + 16 + l0;
    const uint32_t hlo = qb_u32(qh), hhi = qb_u32(qh + 4);
    const int hbit = 2 * j + half;
STRATA_UNROLL
    for (int k = 0; k < 8; ++k) {
      const uint32_t nib = ((k < 4 ? lo : hi) >> (8 * (k & 3) + 4 * half)) & 15u;
      const uint32_t top = (((k < 4 ? hlo : hhi) >> (8 * (k & 3))) >> hbit) & 1u;
      o.q[k] = qb_level(nib | (top << 4), 0);
    }
  }
}

struct DecQ4_K {
  static constexpr DType kType = DType::Q4_K;
  static constexpr int kElems = 256, kBytes = 144;
  static constexpr MinMode kMode = MinMode::kSub;
  STRATA_HD_INLINE static void oct(const uint8_t* b, int i, Oct& o) { qb_k45_oct<false>(b, i, o); }
};

struct DecQ5_K {
  static constexpr DType kType = DType::Q5_K;
  static constexpr int kElems = 256, kBytes = 176;
  static constexpr MinMode kMode = MinMode::kSub;
  STRATA_HD_INLINE static void oct(const uint8_t* b, int i, Oct& o) { qb_k45_oct<true>(b, i, o); }
};

struct DecQ6_K {
  static constexpr DType kType = DType::Q6_K;
  static constexpr int kElems = 256, kBytes = 210;
  static constexpr MinMode kMode = MinMode::kNone;
  STRATA_HD_INLINE static void oct(const uint8_t* b, int i, Oct& o) {
    // per half n: element l + 32k = nibble k/2 of ql[n*64 + l + 32*(k&1)] | qh[n*32 + l] bits 2k..2k+1 << 4.
    const int n = i >> 4, k = (i >> 2) & 3, l0 = (i & 3) * 8;
    const int sc = static_cast<int8_t>(b[192 + (i >> 1)]);
    o.d = qb_mul(f16_bits_to_f32(static_cast<uint16_t>(qb_u16(b + 208))),
                 qb_level(static_cast<uint32_t>(sc + 128), 128));
    o.m = 0.f;
    const uint8_t* ql = b + n * 64 + l0 + 32 * (k & 1);
    const uint8_t* qh = b + 128 + n * 32 + l0;
    const uint32_t lo = qb_u32(ql), hi = qb_u32(ql + 4);
    const uint32_t hlo = qb_u32(qh), hhi = qb_u32(qh + 4);
    const int nshift = 4 * (k >> 1);
STRATA_UNROLL
    for (int e = 0; e < 8; ++e) {
      const uint32_t nib = ((e < 4 ? lo : hi) >> (8 * (e & 3) + nshift)) & 15u;
      const uint32_t top = ((e < 4 ? hlo : hhi) >> (8 * (e & 3) + 2 * k)) & 3u;
      o.q[e] = qb_level(nib | (top << 4), 32);
    }
  }
};

// --- the 4-bit table types (IQ4_NL, IQ4_XS, MXFP4): a nibble indexes 16 signed levels ---

// The 16 levels of a table packed into two words (levels 0-7, 8-15, one int8 per byte), so the
// device looks them up in registers (no table in memory).
constexpr uint64_t qb_pack_levels(const int8_t (&v)[16], int half) {
  uint64_t w = 0;
  for (int k = 0; k < 8; ++k) w |= static_cast<uint64_t>(static_cast<uint8_t>(v[8 * half + k])) << (8 * k);
  return w;
}
constexpr uint64_t kIq4Lo = qb_pack_levels(kIq4Values, 0), kIq4Hi = qb_pack_levels(kIq4Values, 1);
constexpr uint64_t kMxfp4Lo = qb_pack_levels(kMxfp4Values, 0), kMxfp4Hi = qb_pack_levels(kMxfp4Values, 1);

STRATA_HD_INLINE float qb_table_level(uint64_t lo, uint64_t hi, uint32_t nib) {
  const uint64_t w = nib < 8 ? lo : hi;
  return static_cast<float>(static_cast<int8_t>(static_cast<uint8_t>(w >> (8 * (nib & 7u)))));
}
// Oct i of 32 nibble-packed elements (Q4_0's order: element j low nibble of qs[j], j + 16 high).
STRATA_HD_INLINE void qb_table_oct(uint32_t lo, uint32_t hi, int i, uint64_t tlo, uint64_t thi, float* q) {
  const int shift = (i >> 1) * 4;
STRATA_UNROLL
  for (int k = 0; k < 8; ++k) q[k] = qb_table_level(tlo, thi, ((k < 4 ? lo : hi) >> (8 * (k & 3) + shift)) & 15u);
}
// A little-endian u32 by bytes: for blocks of odd size (MXFP4), which sit at any address.
STRATA_HD_INLINE uint32_t qb_u32_bytes(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}

struct DecIQ4_NL {
  static constexpr DType kType = DType::IQ4_NL;
  static constexpr int kElems = 32, kBytes = 18;
  static constexpr MinMode kMode = MinMode::kNone;
  STRATA_HD_INLINE static void oct(const uint8_t* b, int i, Oct& o) {
    const uint8_t* qs = b + 2 + (i & 1) * 8;
    o.d = f16_bits_to_f32(static_cast<uint16_t>(qb_u16(b)));
    o.m = 0.f;
    qb_table_oct(qb_u32(qs), qb_u32(qs + 4), i, kIq4Lo, kIq4Hi, o.q);
  }
};

// IQ4_XS: 8 groups of 32 (oct i in group i / 4), each IQ4_NL-like with scale d * (ls - 32), ls
// the group's 6 bits (4 in scales_l, 2 in scales_h).
struct DecIQ4_XS {
  static constexpr DType kType = DType::IQ4_XS;
  static constexpr int kElems = 256, kBytes = 136;
  static constexpr MinMode kMode = MinMode::kNone;
  STRATA_HD_INLINE static void oct(const uint8_t* b, int i, Oct& o) {
    const int g = i >> 2, k = i & 3;
    const uint32_t ls = ((b[4 + g / 2] >> (4 * (g & 1))) & 15u) | (((qb_u16(b + 2) >> (2 * g)) & 3u) << 4);
    o.d = qb_mul(f16_bits_to_f32(static_cast<uint16_t>(qb_u16(b))), qb_level(ls, 32));
    o.m = 0.f;
    const uint8_t* qs = b + 8 + 16 * g + (k & 1) * 8;
    qb_table_oct(qb_u32(qs), qb_u32(qs + 4), k, kIq4Lo, kIq4Hi, o.q);
  }
};

// MXFP4: an e8m0 exponent byte, then 16 bytes of e2m1 nibbles (their values doubled in the table,
// so the scale is 2^(e - 128)). 17 bytes: read by bytes only.
STRATA_HD_INLINE float qb_e8m0_half(uint32_t e) {
  return qb_bits_to_f32(e < 2 ? (0x00200000u << e) : ((e - 1u) << 23));
}
struct DecMXFP4 {
  static constexpr DType kType = DType::MXFP4;
  static constexpr int kElems = 32, kBytes = 17;
  static constexpr MinMode kMode = MinMode::kNone;
  STRATA_HD_INLINE static void oct(const uint8_t* b, int i, Oct& o) {
    const uint8_t* qs = b + 1 + (i & 1) * 8;
    o.d = qb_e8m0_half(b[0]);
    o.m = 0.f;
    qb_table_oct(qb_u32_bytes(qs), qb_u32_bytes(qs + 4), i, kMxfp4Lo, kMxfp4Hi, o.q);
  }
};

// --- the grid types (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S): an index picks a
// lattice point of 8 (IQ3: 4) values, signs apply per element; and the ternary types (TQ1_0, TQ2_0) ---

// The lattices of kernels/cpu/iq_grids.h packed one row to a word (byte j = value j). The host
// decodes from the packed copy of the host tables; the device from its own copy in device memory
// (static: one per kernel object; 34 KB for all seven).
template <int N>
struct QbGrid8 {
  uint64_t row[N];
};
template <int N>
struct QbGrid4 {
  uint32_t row[N];
};
template <int N, class T>
constexpr QbGrid8<N> qb_pack_grid8(const T (&g)[N][8]) {
  QbGrid8<N> out{};
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < 8; ++j) out.row[i] |= static_cast<uint64_t>(static_cast<uint8_t>(g[i][j])) << (8 * j);
  return out;
}
template <int N>
constexpr QbGrid4<N> qb_pack_grid4(const uint8_t (&g)[N][4]) {
  QbGrid4<N> out{};
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < 4; ++j) out.row[i] |= static_cast<uint32_t>(g[i][j]) << (8 * j);
  return out;
}
#define STRATA_QB_GRIDS(X)                                    \
  X(Grid8, 256, qb_pack_grid8, kIq2xxsGrid, kQbIq2xxs)        \
  X(Grid8, 512, qb_pack_grid8, kIq2xsGrid, kQbIq2xs)          \
  X(Grid8, 1024, qb_pack_grid8, kIq2sGrid, kQbIq2s)           \
  X(Grid4, 256, qb_pack_grid4, kIq3xxsGrid, kQbIq3xxs)        \
  X(Grid4, 512, qb_pack_grid4, kIq3sGrid, kQbIq3s)            \
  X(Grid8, 2048, qb_pack_grid8, kIq1sGrid, kQbIq1s)
#define STRATA_QB_HOST_GRID(kind, n, pack, src, name) static constexpr Qb##kind<n> name##Host = pack(iq::src);
STRATA_QB_GRIDS(STRATA_QB_HOST_GRID)
#undef STRATA_QB_HOST_GRID
#if defined(__CUDACC__)
#define STRATA_QB_DEVICE_GRID(kind, n, pack, src, name) static __device__ const Qb##kind<n> name##Dev = pack(iq::src);
STRATA_QB_GRIDS(STRATA_QB_DEVICE_GRID)
#undef STRATA_QB_DEVICE_GRID
#endif
// The device pass reads its own copy; the host (and nvcc's host pass) the host's.
#if defined(__CUDA_ARCH__)
#define STRATA_QB_GRID(name) name##Dev
#else
#define STRATA_QB_GRID(name) name##Host
#endif
#undef STRATA_QB_GRIDS

// Signed int8 byte j of a packed row, as an exact float.
STRATA_HD_INLINE float qb_row_level(uint64_t row, int j) {
  return static_cast<float>(static_cast<int8_t>(static_cast<uint8_t>(row >> (8 * j))));
}
// The 8 signs of 7-bit sign set k: its bits plus a parity bit (an even count of minus signs).
STRATA_HD_INLINE uint32_t qb_sign_set(uint32_t k) {
  k &= 127u;
  uint32_t p = k ^ (k >> 4);
  p ^= p >> 2;
  p ^= p >> 1;
  return k | ((p & 1u) << 7);
}
// 8 unsigned grid values (a packed row) with sign bits: the levels +-value.
STRATA_HD_INLINE void qb_signed_row(uint64_t row, uint32_t signs, float* q) {
STRATA_UNROLL
  for (int j = 0; j < 8; ++j) {
    const float v = static_cast<float>((row >> (8 * j)) & 255u);
    q[j] = (signs >> j) & 1u ? -v : v;
  }
}
// 4 unsigned grid values (an IQ3 row) with sign bits 0..3 of `signs`: levels into q[0..4).
STRATA_HD_INLINE void qb_signed_row4(uint32_t row, uint32_t signs, float* q) {
STRATA_UNROLL
  for (int j = 0; j < 4; ++j) {
    const float v = static_cast<float>((row >> (8 * j)) & 255u);
    q[j] = (signs >> j) & 1u ? -v : v;
  }
}
// d * (0.5 + s) * f in the CPU's order (the IQ2 / IQ3_XXS group scales).
STRATA_HD_INLINE float qb_half_scale(float d, uint32_t s, float f) { return qb_mul(qb_mul(d, qb_add(0.5f, qb_level(s, 0))), f); }

struct DecIQ2_XXS {
  static constexpr DType kType = DType::IQ2_XXS;
  static constexpr int kElems = 256, kBytes = 66;
  static constexpr MinMode kMode = MinMode::kNone;
  STRATA_HD_INLINE static void oct(const uint8_t* b, int i, Oct& o) {
    // group g (32 elements): 4 grid index bytes, then a u32 of four 7-bit sign sets | scale << 28.
    const int g = i >> 2, l = i & 3;
    const uint8_t* q8 = b + 2 + 8 * g;
    const uint32_t aux = qb_u32(q8 + 4);
    o.d = qb_half_scale(f16_bits_to_f32(static_cast<uint16_t>(qb_u16(b))), aux >> 28, 0.25f);
    o.m = 0.f;
    qb_signed_row(STRATA_QB_GRID(kQbIq2xxs).row[q8[l]], qb_sign_set(aux >> (7 * l)), o.q);
  }
};

struct DecIQ2_XS {
  static constexpr DType kType = DType::IQ2_XS;
  static constexpr int kElems = 256, kBytes = 74;
  static constexpr MinMode kMode = MinMode::kNone;
  STRATA_HD_INLINE static void oct(const uint8_t* b, int i, Oct& o) {
    // oct i = u16 qs[i]: a 9-bit grid index | a 7-bit sign set << 9; 4-bit scale of sub-block i / 2.
    const int sub = i >> 1;
    const uint32_t q = qb_u16(b + 2 + 2 * i);
    o.d = qb_half_scale(f16_bits_to_f32(static_cast<uint16_t>(qb_u16(b))), (b[66 + sub / 2] >> (4 * (sub & 1))) & 15u,
                        0.25f);
    o.m = 0.f;
    qb_signed_row(STRATA_QB_GRID(kQbIq2xs).row[q & 511u], qb_sign_set(q >> 9), o.q);
  }
};

struct DecIQ2_S {
  static constexpr DType kType = DType::IQ2_S;
  static constexpr int kElems = 256, kBytes = 82;
  static constexpr MinMode kMode = MinMode::kNone;
  STRATA_HD_INLINE static void oct(const uint8_t* b, int i, Oct& o) {
    // qs[32] at 2, signs[32] at 34, qh[8] at 66, scales[8] at 74; oct i's index qs[i] | 2 bits of qh.
    const int sub = i >> 1;
    const uint32_t idx = b[2 + i] | (((b[66 + i / 4] >> (2 * (i % 4))) & 3u) << 8);
    o.d = qb_half_scale(f16_bits_to_f32(static_cast<uint16_t>(qb_u16(b))), (b[74 + sub / 2] >> (4 * (sub & 1))) & 15u,
                        0.25f);
    o.m = 0.f;
    qb_signed_row(STRATA_QB_GRID(kQbIq2s).row[idx], b[34 + i], o.q);
  }
};

struct DecIQ3_XXS {
  static constexpr DType kType = DType::IQ3_XXS;
  static constexpr int kElems = 256, kBytes = 98;
  static constexpr MinMode kMode = MinMode::kNone;
  STRATA_HD_INLINE static void oct(const uint8_t* b, int i, Oct& o) {
    // group g: 8 grid index bytes (4 values each) at qs[8g], the u32 of sign sets | scale << 28 at 66 + 4g.
    const int g = i >> 2, l = i & 3;
    const uint32_t aux = qb_u32(b + 66 + 4 * g);
    o.d = qb_half_scale(f16_bits_to_f32(static_cast<uint16_t>(qb_u16(b))), aux >> 28, 0.5f);
    o.m = 0.f;
    // Two 4-value rows, each decoded on its own (one 32-bit word live at a time: a 64-bit row
    // spilled registers in the 8-token matrix-vector kernel).
    const uint32_t signs = qb_sign_set(aux >> (7 * l));
    qb_signed_row4(STRATA_QB_GRID(kQbIq3xxs).row[b[2 + 8 * g + 2 * l]], signs, o.q);
    qb_signed_row4(STRATA_QB_GRID(kQbIq3xxs).row[b[2 + 8 * g + 2 * l + 1]], signs >> 4, o.q + 4);
  }
};

struct DecIQ3_S {
  static constexpr DType kType = DType::IQ3_S;
  static constexpr int kElems = 256, kBytes = 110;
  static constexpr MinMode kMode = MinMode::kNone;
  STRATA_HD_INLINE static void oct(const uint8_t* b, int i, Oct& o) {
    // qs[64] at 2, qh[8] at 66, signs[32] at 74, scales[4] at 106; oct i = grids 2i and 2i + 1 (4
    // values each, 9-bit indices), its 8 sign bits signs[i], scale d (1 + 2 s) of group i / 4.
    const int g = i >> 2, k0 = 2 * i, k1 = 2 * i + 1;
    const uint32_t s = (b[106 + g / 2] >> (4 * (g & 1))) & 15u;
    o.d = qb_mul(f16_bits_to_f32(static_cast<uint16_t>(qb_u16(b))), qb_level(1u + 2u * s, 0));
    o.m = 0.f;
    const uint32_t i0 = b[2 + k0] | (((b[66 + k0 / 8] >> (k0 % 8)) & 1u) << 8);
    const uint32_t i1 = b[2 + k1] | (((b[66 + k1 / 8] >> (k1 % 8)) & 1u) << 8);
    const uint32_t signs = b[74 + i];
    qb_signed_row4(STRATA_QB_GRID(kQbIq3s).row[i0], signs, o.q);  // each 4-value row on its own (see IQ3_XXS)
    qb_signed_row4(STRATA_QB_GRID(kQbIq3s).row[i1], signs >> 4, o.q + 4);
  }
};

// IQ1: levels grid (-1 / 0 / 1) + delta (+-1/8), exact floats; d = the group's scale.
STRATA_HD_INLINE void qb_iq1_levels(uint32_t idx, bool minus, float* q) {
  const uint64_t row = STRATA_QB_GRID(kQbIq1s).row[idx];
  const float delta = minus ? -0.125f : 0.125f;
STRATA_UNROLL
  for (int j = 0; j < 8; ++j) q[j] = qb_row_level(row, j) + delta;
}

struct DecIQ1_S {
  static constexpr DType kType = DType::IQ1_S;
  static constexpr int kElems = 256, kBytes = 50;
  static constexpr MinMode kMode = MinMode::kNone;
  STRATA_HD_INLINE static void oct(const uint8_t* b, int i, Oct& o) {
    // qs[32] at 2, u16 qh[8] at 34: 3 high index bits per grid | scale << 12 | delta sign << 15.
    const int g = i >> 2, l = i & 3;
    const uint32_t qh = qb_u16(b + 34 + 2 * g);
    o.d = qb_mul(f16_bits_to_f32(static_cast<uint16_t>(qb_u16(b))), qb_level(2u * ((qh >> 12) & 7u) + 1u, 0));
    o.m = 0.f;
    qb_iq1_levels(b[2 + 4 * g + l] | (((qh >> (3 * l)) & 7u) << 8), (qh & 0x8000u) != 0, o.q);
  }
};

struct DecIQ1_M {
  static constexpr DType kType = DType::IQ1_M;
  static constexpr int kElems = 256, kBytes = 56;
  static constexpr MinMode kMode = MinMode::kNone;
  STRATA_HD_INLINE static void oct(const uint8_t* b, int i, Oct& o) {
    // qs[32] at 0, qh[16] at 32 (a nibble per grid), four u16 scales at 48: 3-bit scales, and the f16
    // d in their top nibbles.
    const uint32_t sc0 = qb_u16(b + 48), sc1 = qb_u16(b + 50), sc2 = qb_u16(b + 52), sc3 = qb_u16(b + 54);
    const uint32_t d_bits = (sc0 >> 12) | ((sc1 >> 8) & 0x00F0u) | ((sc2 >> 4) & 0x0F00u) | (sc3 & 0xF000u);
    const int s = i >> 1;
    const uint32_t sc = s < 4 ? sc0 : s < 8 ? sc1 : s < 12 ? sc2 : sc3;
    o.d = qb_mul(f16_bits_to_f32(static_cast<uint16_t>(d_bits)), qb_level(2u * ((sc >> (3 * (s % 4))) & 7u) + 1u, 0));
    o.m = 0.f;
    const uint32_t nib = (b[32 + i / 2] >> (4 * (i & 1))) & 15u;
    qb_iq1_levels(b[i] | ((nib & 7u) << 8), (nib & 8u) != 0, o.q);
  }
};

// TQ1_0: 5 trits a byte as the fraction byte / 256 in base 3 (trit n: the integer part of 3 times
// byte * 3^n mod 256, over 256), stored + 1.
STRATA_HD_INLINE float qb_trit(uint32_t byte, uint32_t pow3) {
  const uint32_t shifted = (byte * pow3) & 255u;
  return qb_level((shifted * 3u) >> 8, 1);
}

struct DecTQ1_0 {
  static constexpr DType kType = DType::TQ1_0;
  static constexpr int kElems = 256, kBytes = 54;
  static constexpr MinMode kMode = MinMode::kNone;
  STRATA_HD_INLINE static void oct(const uint8_t* b, int i, Oct& o) {
    // qs[48] at 0, qh[4] at 48, d at 52. Elements n*32 + j from qs[j] (n < 5), 160 + n*16 + j from
    // qs[32 + j], 240 + n*4 + j from qh[j] (n < 4).
    constexpr uint32_t kPow3[5] = {1, 3, 9, 27, 81};
    o.d = f16_bits_to_f32(static_cast<uint16_t>(qb_u16(b + 52)));
    o.m = 0.f;
    if (i < 20) {
      const uint8_t* q = b + 8 * (i % 4);
STRATA_UNROLL
      for (int k = 0; k < 8; ++k) o.q[k] = qb_trit(q[k], kPow3[i / 4]);
    } else if (i < 30) {
      const uint8_t* q = b + 32 + 8 * ((i - 20) % 2);
STRATA_UNROLL
      for (int k = 0; k < 8; ++k) o.q[k] = qb_trit(q[k], kPow3[(i - 20) / 2]);
    } else {
STRATA_UNROLL
      for (int k = 0; k < 8; ++k) o.q[k] = qb_trit(b[48 + (k & 3)], kPow3[2 * (i - 30) + (k >> 2)]);
    }
  }
};

struct DecTQ2_0 {
  static constexpr DType kType = DType::TQ2_0;
  static constexpr int kElems = 256, kBytes = 66;
  static constexpr MinMode kMode = MinMode::kNone;
  STRATA_HD_INLINE static void oct(const uint8_t* b, int i, Oct& o) {
    // qs[64] at 0, d at 64: element 128 h + 32 s + j = (qs[32 h + j] >> 2 s & 3) - 1.
    const int h = i >> 4, s = (i >> 2) & 3;
    const uint8_t* q = b + 32 * h + 8 * (i & 3);
    o.d = f16_bits_to_f32(static_cast<uint16_t>(qb_u16(b + 64)));
    o.m = 0.f;
STRATA_UNROLL
    for (int k = 0; k < 8; ++k) o.q[k] = qb_level((q[k] >> (2 * s)) & 3u, 1);
  }
};

// --- float types: a "block" of 8 elements (so they share the mmv tiling); element decode for
// rows whose length is not a multiple of 8 ---

struct DecF32 {
  static constexpr DType kType = DType::F32;
  static constexpr int kElems = 8, kBytes = 32;
  static constexpr MinMode kMode = MinMode::kRaw;
  STRATA_HD_INLINE static float element(const uint8_t* row, int64_t c) {
    return qb_f32_at(row + 4 * c);
  }
  STRATA_HD_INLINE static void oct(const uint8_t* b, int, Oct& o) {
STRATA_UNROLL
    for (int k = 0; k < 8; ++k) o.q[k] = qb_f32_at(b + 4 * k);
    o.d = 1.f;
    o.m = 0.f;
  }
};

struct DecF16 {
  static constexpr DType kType = DType::F16;
  static constexpr int kElems = 8, kBytes = 16;
  static constexpr MinMode kMode = MinMode::kRaw;
  STRATA_HD_INLINE static float element(const uint8_t* row, int64_t c) {
    return f16_bits_to_f32(static_cast<uint16_t>(qb_u16(row + 2 * c)));
  }
  STRATA_HD_INLINE static void oct(const uint8_t* b, int, Oct& o) {
STRATA_UNROLL
    for (int k = 0; k < 8; ++k) o.q[k] = f16_bits_to_f32(static_cast<uint16_t>(qb_u16(b + 2 * k)));
    o.d = 1.f;
    o.m = 0.f;
  }
};

struct DecBF16 {
  static constexpr DType kType = DType::BF16;
  static constexpr int kElems = 8, kBytes = 16;
  static constexpr MinMode kMode = MinMode::kRaw;
  STRATA_HD_INLINE static float element(const uint8_t* row, int64_t c) {
    return bf16_bits_to_f32(static_cast<uint16_t>(qb_u16(row + 2 * c)));
  }
  STRATA_HD_INLINE static void oct(const uint8_t* b, int, Oct& o) {
STRATA_UNROLL
    for (int k = 0; k < 8; ++k) o.q[k] = bf16_bits_to_f32(static_cast<uint16_t>(qb_u16(b + 2 * k)));
    o.d = 1.f;
    o.m = 0.f;
  }
};

// ---- using an oct ---------------------------------------------------------------------------

// Element k of a decoded oct: the CPU reference's float, bit for bit.
template <class Dec>
STRATA_HD_INLINE float oct_value(const Oct& o, int k) {
  if constexpr (Dec::kMode == MinMode::kRaw) return o.q[k];
  else if constexpr (Dec::kMode == MinMode::kNone) return qb_mul(o.d, o.q[k]);
  else if constexpr (Dec::kMode == MinMode::kAdd) return qb_add(qb_mul(o.d, o.q[k]), o.m);
  else return qb_sub(qb_mul(o.d, o.q[k]), o.m);
}

// Elements [8i, 8i + 8) of the block at b, as the CPU dequantizer gives them.
template <class Dec>
STRATA_HD_INLINE void decode_oct(const uint8_t* b, int i, float* out) {
  Oct o;
  Dec::oct(b, i, o);
STRATA_UNROLL
  for (int k = 0; k < 8; ++k) out[k] = oct_value<Dec>(o, k);
}

// Element c of a row (any type; the float types need no multiple of 8).
template <class Dec>
STRATA_HD_INLINE float decode_element(const uint8_t* row, int64_t c) {
  if constexpr (Dec::kMode == MinMode::kRaw) {
    return Dec::element(row, c);
  } else {
    Oct o;
    Dec::oct(row + (c / Dec::kElems) * Dec::kBytes, static_cast<int>(c % Dec::kElems) / 8, o);
    return oct_value<Dec>(o, static_cast<int>(c & 7));
  }
}

// A whole block (kElems floats).
template <class Dec>
STRATA_HD_INLINE void decode_block(const uint8_t* b, float* out) {
  for (int i = 0; i < Dec::kElems / 8; ++i) decode_oct<Dec>(b, i, out + 8 * i);
}

// sum_k value_k * x[k] of one oct, the way mmv sums it: d * sum(q x) + m * sum(x) (sum_x is
// sum(x[0..8)), passed in so a caller shares it across rows). f32 throughout, FMAs allowed.
template <class Dec>
STRATA_HD_INLINE float oct_dot(const Oct& o, const float* x, float sum_x) {
  float s = 0.f;
STRATA_UNROLL
  for (int k = 0; k < 8; ++k) s += o.q[k] * x[k];
  if constexpr (Dec::kMode == MinMode::kRaw) return s;
  else if constexpr (Dec::kMode == MinMode::kNone) return o.d * s;
  else if constexpr (Dec::kMode == MinMode::kAdd) return o.d * s + o.m * sum_x;
  else return o.d * s - o.m * sum_x;
}
template <class Dec>
inline constexpr bool kOctNeedsSumX = Dec::kMode == MinMode::kAdd || Dec::kMode == MinMode::kSub;

// ---- dispatch -------------------------------------------------------------------------------

template <class Dec>
struct DecTag {
  using type = Dec;
};

// Calls f(DecTag<Dec>{}) for the decoder of t and returns true; false for a type without one
// (Q8_1, Q8_K). Host code only (launch dispatch, tests).
template <class F>
inline bool visit_decoder(DType t, F&& f) {
  switch (t) {
    case DType::F32: f(DecTag<DecF32>{}); return true;
    case DType::F16: f(DecTag<DecF16>{}); return true;
    case DType::BF16: f(DecTag<DecBF16>{}); return true;
    case DType::Q4_0: f(DecTag<DecQ4_0>{}); return true;
    case DType::Q4_1: f(DecTag<DecQ4_1>{}); return true;
    case DType::Q5_0: f(DecTag<DecQ5_0>{}); return true;
    case DType::Q5_1: f(DecTag<DecQ5_1>{}); return true;
    case DType::Q8_0: f(DecTag<DecQ8_0>{}); return true;
    case DType::Q2_K: f(DecTag<DecQ2_K>{}); return true;
    case DType::Q3_K: f(DecTag<DecQ3_K>{}); return true;
    case DType::Q4_K: f(DecTag<DecQ4_K>{}); return true;
    case DType::Q5_K: f(DecTag<DecQ5_K>{}); return true;
    case DType::Q6_K: f(DecTag<DecQ6_K>{}); return true;
    case DType::IQ4_NL: f(DecTag<DecIQ4_NL>{}); return true;
    case DType::IQ4_XS: f(DecTag<DecIQ4_XS>{}); return true;
    case DType::MXFP4: f(DecTag<DecMXFP4>{}); return true;
    case DType::IQ2_XXS: f(DecTag<DecIQ2_XXS>{}); return true;
    case DType::IQ2_XS: f(DecTag<DecIQ2_XS>{}); return true;
    case DType::IQ2_S: f(DecTag<DecIQ2_S>{}); return true;
    case DType::IQ3_XXS: f(DecTag<DecIQ3_XXS>{}); return true;
    case DType::IQ3_S: f(DecTag<DecIQ3_S>{}); return true;
    case DType::IQ1_S: f(DecTag<DecIQ1_S>{}); return true;
    case DType::IQ1_M: f(DecTag<DecIQ1_M>{}); return true;
    case DType::TQ1_0: f(DecTag<DecTQ1_0>{}); return true;
    case DType::TQ2_0: f(DecTag<DecTQ2_0>{}); return true;
    default: return false;
  }
}

// Block geometry without the CPU library's table (the CUDA target does not link it).
// Float types report 1 element per "block" here, as dtype.h does.
struct QbGeometry {
  int64_t block_elems = 0;
  int64_t block_bytes = 0;
};
inline QbGeometry qb_geometry(DType t) {
  switch (t) {
    case DType::F32: return {1, 4};
    case DType::F16: case DType::BF16: return {1, 2};
    default: break;
  }
  QbGeometry g;
  visit_decoder(t, [&](auto tag) {
    using D = typename decltype(tag)::type;
    g = {D::kElems, D::kBytes};
  });
  return g;
}
// The alignment a tensor of type t needs: F32 is read by words, MXFP4 (17-byte blocks) by bytes,
// the other blocks (even sizes) by 16-bit words.
inline size_t qb_data_alignment(DType t) { return t == DType::F32 ? 4 : t == DType::MXFP4 ? 1 : 2; }
inline int64_t qb_row_bytes(DType t, int64_t cols) {
  const QbGeometry g = qb_geometry(t);
  return g.block_elems ? cols / g.block_elems * g.block_bytes : 0;
}

// The layouts above are those of blocks.h.
static_assert(sizeof(BlockQ4_0) == DecQ4_0::kBytes && offsetof(BlockQ4_0, qs) == 2);
static_assert(sizeof(BlockQ4_1) == DecQ4_1::kBytes && offsetof(BlockQ4_1, m) == 2 && offsetof(BlockQ4_1, qs) == 4);
static_assert(sizeof(BlockQ5_0) == DecQ5_0::kBytes && offsetof(BlockQ5_0, qh) == 2 && offsetof(BlockQ5_0, qs) == 6);
static_assert(sizeof(BlockQ5_1) == DecQ5_1::kBytes && offsetof(BlockQ5_1, qh) == 4 && offsetof(BlockQ5_1, qs) == 8);
static_assert(sizeof(BlockQ8_0) == DecQ8_0::kBytes && offsetof(BlockQ8_0, qs) == 2);
static_assert(sizeof(BlockQ2_K) == DecQ2_K::kBytes && offsetof(BlockQ2_K, qs) == 16 && offsetof(BlockQ2_K, d) == 80 &&
              offsetof(BlockQ2_K, dmin) == 82);
static_assert(sizeof(BlockQ3_K) == DecQ3_K::kBytes && offsetof(BlockQ3_K, qs) == 32 &&
              offsetof(BlockQ3_K, scales) == 96 && offsetof(BlockQ3_K, d) == 108);
static_assert(sizeof(BlockQ4_K) == DecQ4_K::kBytes && offsetof(BlockQ4_K, scales) == 4 && offsetof(BlockQ4_K, qs) == 16);
static_assert(sizeof(BlockQ5_K) == DecQ5_K::kBytes && offsetof(BlockQ5_K, qh) == 16 && offsetof(BlockQ5_K, qs) == 48);
static_assert(sizeof(BlockQ6_K) == DecQ6_K::kBytes && offsetof(BlockQ6_K, qh) == 128 &&
              offsetof(BlockQ6_K, scales) == 192 && offsetof(BlockQ6_K, d) == 208);

}  // namespace strata::kernels::cuda
