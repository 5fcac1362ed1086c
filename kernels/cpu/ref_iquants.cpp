// kernels/cpu/ref_iquants.cpp — scalar reference kernels of the IQ (IQ1_S .. IQ4_XS), ternary (TQ1_0,
// TQ2_0) and MXFP4 blocks: decoders bit for bit those of gguf-py's gguf.quants (tests/kernels/
// test_iquants.cpp), dot products against f32 activations (a block decoded into registers-sized
// scratch, then an f32 dot), and quantizers for the types that need no grid search (IQ4_NL, IQ4_XS,
// TQ1_0, TQ2_0, MXFP4; the grid types are read, not written).
// Depends on blocks.h, fp16.h, iq_grids.h only.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/blocks.h"
#include "kernels/cpu/fp16.h"
#include "kernels/cpu/iq_grids.h"
#include "kernels/cpu/ref_kernels.h"

namespace strata::kernels::ref {
namespace {

// The 8 signs of 7-bit sign set k: its bits plus a parity bit, so that the count of minus signs is even.
inline uint8_t sign_set(uint32_t k) {
  const uint32_t parity = static_cast<uint32_t>(__builtin_popcount(k & 127)) & 1;
  return static_cast<uint8_t>((k & 127) | (parity << 7));
}
inline float apply_sign(float v, uint32_t bits, int j) { return (bits >> j) & 1 ? -v : v; }

inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

// One block of each type into y (block_elems floats).
void decode(const BlockIQ2_XXS& b, float* y) {
  const float d = fp16_to_f32(b.d);
  const uint8_t* q = reinterpret_cast<const uint8_t*>(b.qs);
  for (int g = 0; g < 8; ++g, y += 32) {
    const uint8_t* grid_idx = q + 8 * g;
    const uint32_t aux = load_u32(q + 8 * g + 4);
    const float db = d * (0.5f + static_cast<float>(aux >> 28)) * 0.25f;
    for (int l = 0; l < 4; ++l) {
      const uint8_t* grid = iq::kIq2xxsGrid[grid_idx[l]];
      const uint32_t signs = sign_set(aux >> (7 * l));
      for (int j = 0; j < 8; ++j) y[8 * l + j] = apply_sign(db * static_cast<float>(grid[j]), signs, j);
    }
  }
}
void decode(const BlockIQ2_XS& b, float* y) {
  const float d = fp16_to_f32(b.d);
  for (int s = 0; s < 16; ++s) {
    const float db = d * (0.5f + static_cast<float>((b.scales[s / 2] >> (4 * (s & 1))) & 15)) * 0.25f;
    for (int h = 0; h < 2; ++h, y += 8) {
      const uint16_t q = b.qs[2 * s + h];
      const uint8_t* grid = iq::kIq2xsGrid[q & 511];
      const uint32_t signs = sign_set(q >> 9);
      for (int j = 0; j < 8; ++j) y[j] = apply_sign(db * static_cast<float>(grid[j]), signs, j);
    }
  }
}
void decode(const BlockIQ2_S& b, float* y) {
  const float d = fp16_to_f32(b.d);
  for (int k = 0; k < 32; ++k, y += 8) {
    const int s = k / 2;
    const float db = d * (0.5f + static_cast<float>((b.scales[s / 2] >> (4 * (s & 1))) & 15)) * 0.25f;
    const uint8_t* grid = iq::kIq2sGrid[b.qs[k] | (((b.qh[k / 4] >> (2 * (k % 4))) & 3) << 8)];
    for (int j = 0; j < 8; ++j) y[j] = apply_sign(db * static_cast<float>(grid[j]), b.signs[k], j);
  }
}
void decode(const BlockIQ3_XXS& b, float* y) {
  const float d = fp16_to_f32(b.d);
  for (int g = 0; g < 8; ++g, y += 32) {
    const uint32_t aux = load_u32(b.scales_signs + 4 * g);
    const float db = d * (0.5f + static_cast<float>(aux >> 28)) * 0.5f;
    for (int l = 0; l < 4; ++l) {
      const uint32_t signs = sign_set(aux >> (7 * l));
      const uint8_t* g0 = iq::kIq3xxsGrid[b.qs[8 * g + 2 * l]];
      const uint8_t* g1 = iq::kIq3xxsGrid[b.qs[8 * g + 2 * l + 1]];
      for (int j = 0; j < 4; ++j) {
        y[8 * l + j] = apply_sign(db * static_cast<float>(g0[j]), signs, j);
        y[8 * l + 4 + j] = apply_sign(db * static_cast<float>(g1[j]), signs, j + 4);
      }
    }
  }
}
void decode(const BlockIQ3_S& b, float* y) {
  const float d = fp16_to_f32(b.d);
  for (int k = 0; k < 64; ++k, y += 4) {
    const int g = k / 8;  // 32-element group
    const float db = d * static_cast<float>(1 + 2 * ((b.scales[g / 2] >> (4 * (g & 1))) & 15));
    const uint8_t* grid = iq::kIq3sGrid[b.qs[k] | (((b.qh[k / 8] >> (k % 8)) & 1) << 8)];
    const uint32_t signs = b.signs[k / 2] >> (4 * (k & 1));
    for (int j = 0; j < 4; ++j) y[j] = apply_sign(db * static_cast<float>(grid[j]), signs, j);
  }
}
void decode(const BlockIQ1_S& b, float* y) {
  const float d = fp16_to_f32(b.d);
  for (int g = 0; g < 8; ++g) {
    const uint16_t qh = b.qh[g];
    const float dl = d * static_cast<float>(2 * ((qh >> 12) & 7) + 1);
    const float delta = (qh & 0x8000) ? -0.125f : 0.125f;
    for (int l = 0; l < 4; ++l, y += 8) {
      const int8_t* grid = iq::kIq1sGrid[b.qs[4 * g + l] | (((qh >> (3 * l)) & 7) << 8)];
      for (int j = 0; j < 8; ++j) y[j] = dl * (static_cast<float>(grid[j]) + delta);
    }
  }
}
void decode(const BlockIQ1_M& b, float* y) {
  uint16_t sc[4];
  for (int i = 0; i < 4; ++i) sc[i] = load_u16(b.scales + 2 * i);
  const uint16_t d_bits = static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) |
                                                (sc[3] & 0xF000));
  const float d = fp16_to_f32(d_bits);
  for (int k = 0; k < 32; ++k, y += 8) {
    const int s = k / 2;  // one 3-bit scale per 16 elements
    const float dl = d * static_cast<float>(2 * ((sc[s / 4] >> (3 * (s % 4))) & 7) + 1);
    const uint32_t nib = (b.qh[k / 2] >> (4 * (k & 1))) & 15;
    const float delta = (nib & 8) ? -0.125f : 0.125f;
    const int8_t* grid = iq::kIq1sGrid[b.qs[k] | ((nib & 7) << 8)];
    for (int j = 0; j < 8; ++j) y[j] = dl * (static_cast<float>(grid[j]) + delta);
  }
}
void decode(const BlockIQ4_NL& b, float* y) {
  const float d = fp16_to_f32(b.d);
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>(kIq4Values[b.qs[j] & 15]);
    y[j + 16] = d * static_cast<float>(kIq4Values[b.qs[j] >> 4]);
  }
}
void decode(const BlockIQ4_XS& b, float* y) {
  const float d = fp16_to_f32(b.d);
  for (int g = 0; g < 8; ++g, y += 32) {
    const int ls = ((b.scales_l[g / 2] >> (4 * (g & 1))) & 15) | (((b.scales_h >> (2 * g)) & 3) << 4);
    const float dl = d * static_cast<float>(ls - 32);
    for (int j = 0; j < 16; ++j) {
      y[j] = dl * static_cast<float>(kIq4Values[b.qs[16 * g + j] & 15]);
      y[j + 16] = dl * static_cast<float>(kIq4Values[b.qs[16 * g + j] >> 4]);
    }
  }
}
// Trit n of a byte holding 5 (or 4) trits as the fraction q / 256 in base 3: multiply by 3^n (mod 256)
// and take the integer part of 3 times it over 256.
inline int trit(uint8_t q, int pow3) {
  const uint8_t shifted = static_cast<uint8_t>(q * pow3);
  return ((static_cast<uint16_t>(shifted) * 3) >> 8) - 1;
}
void decode(const BlockTQ1_0& b, float* y) {
  const float d = fp16_to_f32(b.d);
  static constexpr int kPow3[5] = {1, 3, 9, 27, 81};
  for (int n = 0; n < 5; ++n)
    for (int j = 0; j < 32; ++j) y[n * 32 + j] = d * static_cast<float>(trit(b.qs[j], kPow3[n]));
  for (int n = 0; n < 5; ++n)
    for (int j = 0; j < 16; ++j) y[160 + n * 16 + j] = d * static_cast<float>(trit(b.qs[32 + j], kPow3[n]));
  for (int n = 0; n < 4; ++n)
    for (int j = 0; j < 4; ++j) y[240 + n * 4 + j] = d * static_cast<float>(trit(b.qh[j], kPow3[n]));
}
void decode(const BlockTQ2_0& b, float* y) {
  const float d = fp16_to_f32(b.d);
  for (int h = 0; h < 2; ++h)
    for (int s = 0; s < 4; ++s)
      for (int j = 0; j < 32; ++j)
        y[128 * h + 32 * s + j] = d * static_cast<float>(((b.qs[32 * h + j] >> (2 * s)) & 3) - 1);
}
// 2^(e - 128): the e8m0 scale halved, because the values table holds the e2m1 values doubled.
inline float e8m0_half(uint8_t e) {
  const uint32_t bits = e < 2 ? (0x00200000u << e) : (static_cast<uint32_t>(e - 1) << 23);
  return bits_to_f32(bits);
}
void decode(const BlockMXFP4& b, float* y) {
  const float d = e8m0_half(b.e);
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>(kMxfp4Values[b.qs[j] & 15]);
    y[j + 16] = d * static_cast<float>(kMxfp4Values[b.qs[j] >> 4]);
  }
}

template <typename Block, int kElems>
void dequantize_blocks(const void* src, float* dst, int64_t n) {
  const Block* b = static_cast<const Block*>(src);
  for (int64_t i = 0; i < n / kElems; ++i) decode(b[i], dst + i * kElems);
}

// dot(w, a) with a in f32: each block decoded, then 8 running sums (the f16 dot's order within a block).
template <typename Block, int kElems>
void vec_dot_blocks(int64_t n, const void* w, const void* act, float* out) {
  const Block* b = static_cast<const Block*>(w);
  const float* a = static_cast<const float*>(act);
  float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  float y[kElems];
  for (int64_t i = 0; i < n / kElems; ++i, a += kElems) {
    decode(b[i], y);
    for (int j = 0; j < kElems; j += 8)
      for (int k = 0; k < 8; ++k) s[k] += y[j + k] * a[j + k];
  }
  *out = ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
}

// Index of the value of `table` (16 entries) nearest to v.
inline int nearest_index(const int8_t* table, float v) {
  int best = 0;
  float err = std::fabs(v - static_cast<float>(table[0]));
  for (int i = 1; i < 16; ++i) {
    const float e = std::fabs(v - static_cast<float>(table[i]));
    if (e < err) err = e, best = i;
  }
  return best;
}

// 32 values to IQ4 nibbles at scale d (nibble order as Q4_0).
void iq4_nibbles(const float* x, float d, uint8_t* qs) {
  const float id = d != 0.f ? 1.f / d : 0.f;
  for (int j = 0; j < 16; ++j) {
    const int lo = nearest_index(kIq4Values, x[j] * id), hi = nearest_index(kIq4Values, x[j + 16] * id);
    qs[j] = static_cast<uint8_t>(lo | (hi << 4));
  }
}
// The scale that maps the value of largest magnitude onto -127 (the table's widest end).
float iq4_scale(const float* x, int n) {
  float amax = 0.f, max = 0.f;
  for (int j = 0; j < n; ++j)
    if (std::fabs(x[j]) > amax) amax = std::fabs(x[j]), max = x[j];
  return max / -127.f;
}

}  // namespace

#define STRATA_IQ_DECODERS(T, Block, kElems)                                                                   \
  void dequantize_##T(const void* src, float* dst, int64_t n) { dequantize_blocks<Block, kElems>(src, dst, n); } \
  void vec_dot_##T(int64_t n, const void* w, const void* a, float* out) { vec_dot_blocks<Block, kElems>(n, w, a, out); }

STRATA_IQ_DECODERS(iq2_xxs, BlockIQ2_XXS, 256)
STRATA_IQ_DECODERS(iq2_xs, BlockIQ2_XS, 256)
STRATA_IQ_DECODERS(iq2_s, BlockIQ2_S, 256)
STRATA_IQ_DECODERS(iq3_xxs, BlockIQ3_XXS, 256)
STRATA_IQ_DECODERS(iq3_s, BlockIQ3_S, 256)
STRATA_IQ_DECODERS(iq1_s, BlockIQ1_S, 256)
STRATA_IQ_DECODERS(iq1_m, BlockIQ1_M, 256)
STRATA_IQ_DECODERS(iq4_nl, BlockIQ4_NL, 32)
STRATA_IQ_DECODERS(iq4_xs, BlockIQ4_XS, 256)
STRATA_IQ_DECODERS(tq1_0, BlockTQ1_0, 256)
STRATA_IQ_DECODERS(tq2_0, BlockTQ2_0, 256)
STRATA_IQ_DECODERS(mxfp4, BlockMXFP4, 32)
#undef STRATA_IQ_DECODERS

void quantize_iq4_nl(const float* src, void* dst, int64_t n) {
  BlockIQ4_NL* b = static_cast<BlockIQ4_NL*>(dst);
  for (int64_t i = 0; i < n / 32; ++i, src += 32) {
    const float d = iq4_scale(src, 32);
    b[i].d = f32_to_fp16(d);
    iq4_nibbles(src, fp16_to_f32(b[i].d), b[i].qs);
  }
}

void quantize_iq4_xs(const float* src, void* dst, int64_t n) {
  BlockIQ4_XS* b = static_cast<BlockIQ4_XS*>(dst);
  for (int64_t i = 0; i < n / 256; ++i, src += 256) {
    float group_d[8], dmax = 0.f;
    for (int g = 0; g < 8; ++g) {
      group_d[g] = iq4_scale(src + 32 * g, 32);
      dmax = std::max(dmax, std::fabs(group_d[g]));
    }
    // Group scales are d * (ls - 32), ls in 0..63: d spans the largest one with the 32 negative steps.
    const float d = dmax / 32.f;
    b[i].d = f32_to_fp16(d);
    const float dd = fp16_to_f32(b[i].d);
    b[i].scales_h = 0;
    std::memset(b[i].scales_l, 0, sizeof b[i].scales_l);
    for (int g = 0; g < 8; ++g) {
      const int ls = dd != 0.f ? std::clamp(nearest_int(group_d[g] / dd), -32, 31) + 32 : 32;
      b[i].scales_l[g / 2] |= static_cast<uint8_t>((ls & 15) << (4 * (g & 1)));
      b[i].scales_h |= static_cast<uint16_t>((ls >> 4) << (2 * g));
      iq4_nibbles(src + 32 * g, dd * static_cast<float>(ls - 32), b[i].qs + 16 * g);
    }
  }
}

namespace {
// x / d rounded to a trit, stored + 1 (0, 1, 2); d = the block's largest magnitude.
void ternary(const float* x, uint8_t* t, float* d_out) {
  float amax = 0.f;
  for (int j = 0; j < 256; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float id = amax != 0.f ? 1.f / amax : 0.f;
  for (int j = 0; j < 256; ++j) t[j] = static_cast<uint8_t>(std::clamp(nearest_int(x[j] * id), -1, 1) + 1);
  *d_out = amax;
}
// k trits (first most significant) as the byte whose fraction byte / 256 reads them back (trit()).
uint8_t pack_trits(const uint8_t* t, int k, int stride) {
  int v = 0;
  for (int i = 0; i < k; ++i) v = v * 3 + t[i * stride];
  for (int i = k; i < 5; ++i) v *= 3;
  return static_cast<uint8_t>((v * 256 + 242) / 243);
}
}  // namespace

void quantize_tq1_0(const float* src, void* dst, int64_t n) {
  BlockTQ1_0* b = static_cast<BlockTQ1_0*>(dst);
  uint8_t t[256];
  for (int64_t i = 0; i < n / 256; ++i, src += 256) {
    float d;
    ternary(src, t, &d);
    for (int j = 0; j < 32; ++j) b[i].qs[j] = pack_trits(t + j, 5, 32);
    for (int j = 0; j < 16; ++j) b[i].qs[32 + j] = pack_trits(t + 160 + j, 5, 16);
    for (int j = 0; j < 4; ++j) b[i].qh[j] = pack_trits(t + 240 + j, 4, 4);
    b[i].d = f32_to_fp16(d);
  }
}

void quantize_tq2_0(const float* src, void* dst, int64_t n) {
  BlockTQ2_0* b = static_cast<BlockTQ2_0*>(dst);
  uint8_t t[256];
  for (int64_t i = 0; i < n / 256; ++i, src += 256) {
    float d;
    ternary(src, t, &d);
    for (int h = 0; h < 2; ++h)
      for (int j = 0; j < 32; ++j) {
        uint8_t q = 0;
        for (int s = 0; s < 4; ++s) q |= static_cast<uint8_t>(t[128 * h + 32 * s + j] << (2 * s));
        b[i].qs[32 * h + j] = q;
      }
    b[i].d = f32_to_fp16(d);
  }
}

void quantize_mxfp4(const float* src, void* dst, int64_t n) {
  BlockMXFP4* b = static_cast<BlockMXFP4*>(dst);
  for (int64_t i = 0; i < n / 32; ++i, src += 32) {
    float amax = 0.f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(src[j]));
    // The largest magnitude lands in [4, 8) of the doubled e2m1 values' range (largest 12).
    const int e = amax > 0.f ? std::clamp(static_cast<int>(std::floor(std::log2(amax))) - 2 + 127, 0, 254) : 0;
    b[i].e = static_cast<uint8_t>(e);
    const float d = e8m0_half(b[i].e);
    const float id = d != 0.f ? 1.f / d : 0.f;
    for (int j = 0; j < 16; ++j) {
      const int lo = nearest_index(kMxfp4Values, src[j] * id), hi = nearest_index(kMxfp4Values, src[j + 16] * id);
      b[i].qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

}  // namespace strata::kernels::ref
