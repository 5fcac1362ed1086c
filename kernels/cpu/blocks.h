// kernels/cpu/blocks.h — byte layouts of the quantized blocks, bit-exact with ggml / GGUF.
// Plain structs only (no behaviour); depends on nothing but <cstdint>.
// Its inline helpers are static (internal linkage): the AVX2 / AVX-512 files include this header,
// and a shared weak copy compiled with their flags could reach the scalar path (tools/isa_check.sh).
#pragma once

#include <cstdint>

namespace strata::kernels {

constexpr int kQK = 32;    // elements per block of the simple types (Q4_0 ... Q8_1)
constexpr int kQKK = 256;  // elements per super-block of the K-quants

// x[j] = d * ((qs[j] & 15) - 8), x[j + 16] = d * ((qs[j] >> 4) - 8), j < 16.
struct BlockQ4_0 { uint16_t d; uint8_t qs[16]; };
// x = d * q + m, q in 0..15, same nibble order as Q4_0.
struct BlockQ4_1 { uint16_t d, m; uint8_t qs[16]; };
// 5-bit q = nibble | (bit j, or j + 16 for the high half, of qh as little-endian u32) << 4;
// x = d * (q - 16).
struct BlockQ5_0 { uint16_t d; uint8_t qh[4]; uint8_t qs[16]; };
// x = d * q + m.
struct BlockQ5_1 { uint16_t d, m; uint8_t qh[4]; uint8_t qs[16]; };
// x = d * qs[j].
struct BlockQ8_0 { uint16_t d; int8_t qs[32]; };
// activation type: s = d * sum(qs) (as fp16).
struct BlockQ8_1 { uint16_t d, s; int8_t qs[32]; };

// 16 groups of 16: scales[g] = scale (low 4 bits) | min (high 4 bits);
// element n*128 + j*32 + l -> qs[n*32 + l] bits 2j..2j+1, group = element / 16.
// x = d * (sc & 15) * q - dmin * (sc >> 4).
struct BlockQ2_K { uint8_t scales[16]; uint8_t qs[64]; uint16_t d, dmin; };
// 16 groups of 16 with signed 6-bit scales (packed in 12 bytes, minus 32); q in -4..3:
// low 2 bits as Q2_K, bit 2 from hmask[l] bit (4n + j), set means "no -4".
struct BlockQ3_K { uint8_t hmask[32]; uint8_t qs[64]; uint8_t scales[12]; uint16_t d; };
// 8 groups of 32 with 6-bit scales and mins packed in 12 bytes; element j*64 + l (l < 32) is
// the low nibble of qs[j*32 + l], element j*64 + 32 + l the high nibble. x = d*sc*q - dmin*m.
struct BlockQ4_K { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[128]; };
// as Q4_K plus a fifth bit: element j*64 + l -> qh[l] bit 2j, j*64 + 32 + l -> bit 2j + 1.
struct BlockQ5_K { uint16_t d, dmin; uint8_t scales[12]; uint8_t qh[32]; uint8_t qs[128]; };
// 16 groups of 16 with int8 scales; 6-bit q (minus 32): per half n (128 elements),
// element l + 32k (l < 32, k < 4) = nibble k/2 of ql[n*64 + l + 32*(k&1)] | qh[n*32 + l] bits 2k..2k+1 << 4.
struct BlockQ6_K { uint8_t ql[128]; uint8_t qh[64]; int8_t scales[16]; uint16_t d; };
// activation type: f32 scale, 256 int8, sums of each 16 group.
struct BlockQ8_K { float d; int8_t qs[256]; int16_t bsums[16]; };

// The IQ types (256-element super-blocks unless said; grids in iq_grids.h). Sign sets: a 7-bit index k
// stands for the 8 signs k | parity(k) << 7 (an even count of minus signs); bit j set: element j negated.
// x = d * (0.5 + s) / 4 * grid * sign; group of 32: 4 grid bytes, then a u32 = four 7-bit sign sets | s << 28.
struct BlockIQ2_XXS { uint16_t d; uint16_t qs[32]; };
// 16 sub-blocks of 16: 2 u16 each (9-bit grid index | 7-bit sign set << 9), 4-bit s in scales[sub / 2].
struct BlockIQ2_XS { uint16_t d; uint16_t qs[32]; uint8_t scales[8]; };
// grid index k = qs[k] | (qh[k / 4] >> 2 (k % 4) & 3) << 8, signs[k] its 8 sign bits; scales as IQ2_XS.
struct BlockIQ2_S { uint16_t d; uint8_t qs[32]; uint8_t signs[32]; uint8_t qh[8]; uint8_t scales[8]; };
// 8 groups of 32: 8 grid bytes (4 values each), u32 = four sign sets | s << 28; x = d (0.5 + s) / 2 ...
struct BlockIQ3_XXS { uint16_t d; uint8_t qs[64]; uint8_t scales_signs[32]; };
// grid index k = qs[k] | (qh[k / 8] bit k % 8) << 8 (4 values each); signs[k / 2] ... x = d (1 + 2 s) grid sign.
struct BlockIQ3_S { uint16_t d; uint8_t qs[64]; uint8_t qh[8]; uint8_t signs[32]; uint8_t scales[4]; };
// 8 groups of 32: qh[g] = 3 high index bits of each of the 4 grids | s (3 bits) << 12 | delta sign << 15;
// x = d (2 s + 1) (grid + delta), delta = +-1/8, grid values -1 / 0 / 1.
struct BlockIQ1_S { uint16_t d; uint8_t qs[32]; uint16_t qh[8]; };
// qh nibble k: 3 high index bits of grid k | delta sign << 3; 16 3-bit scales in scales (one per 16
// elements), f16 d spread over the four u16's top nibbles.
struct BlockIQ1_M { uint8_t qs[32]; uint8_t qh[16]; uint8_t scales[8]; };
// 32 elements: x = d * kIq4Values[nibble], nibble order as Q4_0.
struct BlockIQ4_NL { uint16_t d; uint8_t qs[16]; };
// 8 groups of 32, 6-bit scale (4 low bits in scales_l, 2 high in scales_h) minus 32; x = d (s - 32) kIq4Values[q].
struct BlockIQ4_XS { uint16_t d; uint16_t scales_h; uint8_t scales_l[4]; uint8_t qs[128]; };
// Ternary: trits -1 / 0 / 1 (stored + 1). TQ1_0: 5 trits a byte as the fraction byte / 256 in base 3;
// elements n*32 + j from qs[j] (n < 5), 160 + n*16 + j from qs[32 + j], 240 + n*4 + j from qh[j] (n < 4).
struct BlockTQ1_0 { uint8_t qs[48]; uint8_t qh[4]; uint16_t d; };
// element 128 h + 32 s + j = (qs[32 h + j] >> 2 s & 3) - 1.
struct BlockTQ2_0 { uint8_t qs[64]; uint16_t d; };
// 32 elements: e8m0 exponent e, x = 2^(e - 128) * kMxfp4Values[nibble] (the values doubled), nibbles as Q4_0.
struct BlockMXFP4 { uint8_t e; uint8_t qs[16]; };

// Internal linkage (not `inline`): an inline variable is a weak symbol in every ISA-specific object
// that reads it, which tools/isa_check.sh refuses.
constexpr int8_t kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
constexpr int8_t kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

static_assert(sizeof(BlockIQ2_XXS) == 66 && sizeof(BlockIQ2_XS) == 74 && sizeof(BlockIQ2_S) == 82 &&
              sizeof(BlockIQ3_XXS) == 98 && sizeof(BlockIQ3_S) == 110 && sizeof(BlockIQ1_S) == 50 &&
              sizeof(BlockIQ1_M) == 56 && sizeof(BlockIQ4_NL) == 18 && sizeof(BlockIQ4_XS) == 136 &&
              sizeof(BlockTQ1_0) == 54 && sizeof(BlockTQ2_0) == 66 && sizeof(BlockMXFP4) == 17);

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22 &&
              sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34 && sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 && sizeof(BlockQ4_K) == 144 &&
              sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210 && sizeof(BlockQ8_K) == 292);

// Q4_K / Q5_K: 6-bit scale and min of group j (0..7) from the 12 packed bytes.
static inline void k4_scale_min(int j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// Q3_K: signed scale of group j (0..15), -32..31.
static inline int q3k_scale(int j, const uint8_t* s) {
  const int low = j < 8 ? (s[j] & 0xF) : (s[j - 8] >> 4);
  const int high = (s[8 + (j & 3)] >> (2 * (j >> 2))) & 3;
  return (low | (high << 4)) - 32;
}

}  // namespace strata::kernels
