// kernels/cpu/gemm_avx2.cpp — the packed-tile kernels of gemm.h for CPUs with AVX2 but without
// AVX-512 VNNI (AMD Zen 2 / Zen 3, Intel before Ice Lake): the activation groups and the Q4_1 /
// Q5_1 and K-quant weight scratch of gemm_layout.h (the bytes the AVX-512 kernels use), a 4-row x
// 8-lane register tile over one half (32 bytes) of each 64-byte layout vector. Compiled with the
// AVX2 flags (file suffix); reached only through gemm_kernels() after a cpuid check. No engine
// types.
//
// Without vpdpbusd a step (4 elements of 8 lanes, one row) is vpmaddubsw (u8 weight x s8
// activation, adjacent pairs summed into int16), and the int16 sums of several steps are added
// before one vpmaddwd widens them to int32 with the group's scale (or with 1). How many steps
// fit in int16 is the type's bound: 2 x (largest level) x 127 per vpmaddubsw, at most 32767 in
// all (kFlush below). The integer sums are therefore those of the AVX-512 kernels, and the float
// operations are theirs in their order, so the outputs are bit-identical to gemm_avx512.cpp's and
// to its emulation (test_gemm compares them bit for bit).
//
// Q4_0 / Q5_0 / Q8_0 use an AVX2 scratch of their own (the AVX-512 one holds q + 128, which
// vpmaddubsw would saturate on): Q4_0 / Q5_0 as unsigned levels 0..15 / 0..31, their offset
// (-8 / -16 x the activations' sum) taken from the packed corr (-128 x that sum) by a shift;
// Q8_0 as |q| and q, the activation taking q's sign (vpsignb) so that |q| can be the unsigned
// operand. The packed corr is per lane (each lane's own activations), so every lane's integer sum
// is again the AVX-512 kernels', in every layout, and so are the output bits.
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "kernels/cpu/blocks.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_layout.h"
#include "kernels/cpu/type_kernels.h"
#include "kernels/cpu/weight_prefetch.h"



namespace strata::kernels::gemm_avx2 {
namespace {

using namespace gemm_layout;

#include "kernels/cpu/gemm_x86.inc"

// Keeps an accumulator's adds in program order: GCC otherwise reassociates the int16 sums of
// a run of steps into a tree, whose partial sums outnumber the 16 ymm registers and spill.
inline void in_order(__m256i& v) { __asm__("" : "+x"(v)); }

// One half of a 64-byte layout vector: 8 of its 16 lanes.
constexpr int64_t kHalf = 32;

// The kStep weight bytes of one step in every lane (pair): vpbroadcastd (wide) or vpbroadcastq
// (pairs), both a plain load.
template <int kStep>
inline __m256i bcast_step(const uint8_t* p) {
  if constexpr (kStep == 4) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
  } else {
    long long v;
    std::memcpy(&v, p, 8);
    return _mm256_set1_epi64x(v);
  }
}
// The int32 scale at p in every int16 lane (scales fit in int16).
inline __m256i scale16(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi16(static_cast<short>(v));
}
inline __m256i load256(const uint8_t* p) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(p)); }

// A token's kLanes adjacent lanes of layout L each get the sum of all of them (int32, wrapping:
// exact), as gemm_avx512.cpp's token_sums: pairs swap neighbours (vpshufd), quads also lane pairs,
// octets (8 lanes: a whole half) also the two 128-bit halves (vperm2i128). Taken on every block's
// integer sums before the float step, so a token's float steps are the wide layout's one lane's
// (dot_order.h): the same bits in every layout. Wide: as it is.
template <class L>
inline __m256i token_sums(__m256i v) {
  if constexpr (L::kLanes >= 2) v = _mm256_add_epi32(v, _mm256_shuffle_epi32(v, 0xB1));
  if constexpr (L::kLanes >= 4) v = _mm256_add_epi32(v, _mm256_shuffle_epi32(v, 0x4E));
  if constexpr (L::kLanes >= 8) v = _mm256_add_epi32(v, _mm256_permute2x128_si256(v, v, 0x01));
  return v;
}

// Writes the results of half `half` of a group of layout L: lane l is token (8 half + l) /
// kLanes of the group, whose first lane is its result (token_sums gave them all its sum; Q4_1 /
// Q5_1's min term is in the first only) -> y[t * ys + r] for the group's tokens t < nt.
template <class L, int kRows>
inline void store_half(const __m256 (&acc)[kRows], int half, int64_t nr, int64_t nt, float* y, int64_t ys) {
  alignas(32) float o[kRows][8];
  for (int r = 0; r < kRows; ++r) _mm256_store_ps(o[r], acc[r]);
  for (int l = 0; l < 8; l += L::kLanes) {
    const int64_t t = (8 * half + l) / L::kLanes;
    if (t >= nt) return;
    for (int64_t r = 0; r < nr; ++r) y[t * ys + r] = o[r][l];
  }
}

// ---- K-quants (Q8_K activations) -----------------------------------------------------------

// p16[r] = the vpmaddubsw products of kSteps steps from step s0 of 4 weight rows (row r's
// unsigned levels at wq + kRowBytes r, kStep bytes a step) against one half of the activations
// (aq: its quants, 64 bytes a step), added in int16: the caller keeps kSteps within its levels'
// bound (kFlush).
template <class L, int kSteps, int64_t kRowBytes>
inline void step_sums16(const uint8_t* wq, const uint8_t* aq, int s0, __m256i (&p16)[kR]) {
  constexpr int kStep = L::kStepElems;
  for (int r = 0; r < kR; ++r) p16[r] = _mm256_setzero_si256();
#pragma GCC unroll 8
  for (int s = s0; s < s0 + kSteps; ++s) {
    const __m256i a = load256(aq + 64 * s);
    for (int r = 0; r < kR; ++r) {
      p16[r] = _mm256_add_epi16(p16[r], _mm256_maddubs_epi16(bcast_step<kStep>(wq + kRowBytes * r + kStep * s), a));
      in_order(p16[r]);
    }
  }
}

// isum[r] += a whole 32-element block of 4 rows (levels at wq + 32 r) against one half of the
// activations: step_sums16 kFlush steps at a time, each run widened with 1.
template <class L, int kFlush>
inline void block_level_sums(const uint8_t* wq, const uint8_t* aq, __m256i (&isum)[kR]) {
  const __m256i ones = _mm256_set1_epi16(1);
  for (int s0 = 0; s0 < 32 / L::kStepElems; s0 += kFlush) {
    __m256i p16[kR];
    step_sums16<L, kFlush, 32>(wq, aq, s0, p16);
    for (int r = 0; r < kR; ++r) isum[r] = _mm256_add_epi32(isum[r], _mm256_madd_epi16(p16[r], ones));
  }
}

// The K-quant tiles run kRows rows of a quad's scratch (from row r0) against kHalves halves of a
// group (half h at ah + 32 h), kRows x kHalves = 4 accumulators of each kind: 4 rows x one half,
// or 2 rows x both halves, where each weight broadcast feeds two vpmaddubsw (rows_driver says
// which runs where). tile_w6 is not inlined into its driver: inlined (beside the unpack) it
// spilled its int16 sums to the stack; tile_w45 runs faster inlined (docs/benchmarks.md,
// "Measurements behind the kernel thresholds").
template <int kRows, int kHalves>
using KAcc = __m256i[kRows][kHalves];
template <int kRows, int kHalves>
using KFacc = __m256[kRows][kHalves];

// isum[r][h] += (kSteps steps from step s0 of row r's levels (wq + 256 r, kStep bytes a step) x
// half h of the activations (aq + 32 h, 64 bytes a step), added in int16) x the row's scale (the
// int32 at sc + sc_stride r, which fits in int16). The caller keeps kSteps within its levels'
// bound (kFlush).
template <class L, int kRows, int kHalves, int kSteps>
inline void scaled_steps(const uint8_t* wq, const uint8_t* aq, int s0, const uint8_t* sc, int64_t sc_stride,
                         KAcc<kRows, kHalves>& isum) {
  constexpr int kStep = L::kStepElems;
  KAcc<kRows, kHalves> p16;
  for (int r = 0; r < kRows; ++r)
    for (int h = 0; h < kHalves; ++h) p16[r][h] = _mm256_setzero_si256();
#pragma GCC unroll 8
  for (int s = s0; s < s0 + kSteps; ++s) {
    __m256i a[kHalves];
    for (int h = 0; h < kHalves; ++h) a[h] = load256(aq + 64 * s + kHalf * h);
    for (int r = 0; r < kRows; ++r) {
      const __m256i w = bcast_step<kStep>(wq + 256 * r + kStep * s);
      for (int h = 0; h < kHalves; ++h) p16[r][h] = _mm256_add_epi16(p16[r][h], _mm256_maddubs_epi16(w, a[h]));
    }
    for (int r = 0; r < kRows; ++r)
      for (int h = 0; h < kHalves; ++h) in_order(p16[r][h]);
  }
  for (int r = 0; r < kRows; ++r) {
    const __m256i s16 = scale16(sc + sc_stride * r);
    for (int h = 0; h < kHalves; ++h) isum[r][h] = _mm256_add_epi32(isum[r][h], _mm256_madd_epi16(p16[r][h], s16));
  }
}

// isum[r][h] += the int16 pairs at w + w_stride r (kStep bytes a step) times half h of the
// activations' int16 sums at bs (n vectors), as vpdpwssd does in the AVX-512 kernels.
template <class L, int kRows, int kHalves>
inline void sum_pairs(const uint8_t* w, int64_t w_stride, const uint8_t* bs, int n, KAcc<kRows, kHalves>& isum) {
  constexpr int kStep = L::kStepElems;
  for (int p = 0; p < n; ++p) {
    __m256i b[kHalves];
    for (int h = 0; h < kHalves; ++h) b[h] = load256(bs + 64 * p + kHalf * h);
    for (int r = 0; r < kRows; ++r) {
      const __m256i m = bcast_step<kStep>(w + w_stride * r + kStep * p);
      for (int h = 0; h < kHalves; ++h) isum[r][h] = _mm256_add_epi32(isum[r][h], _mm256_madd_epi16(b[h], m));
    }
  }
}

// facc[r][h] = facc[r][h] -/+ isum[r][h] x (half h's d_a x the row's f32 at wd + 4 r), in the
// AVX-512 tiles' operation order (the product d_a d_w first, then one fmadd / fnmadd).
template <bool kSubtract, int kRows, int kHalves>
inline void scale_into(const KAcc<kRows, kHalves>& isum, const __m256 (&da)[kHalves], const uint8_t* wd,
                       KFacc<kRows, kHalves>& facc) {
  for (int r = 0; r < kRows; ++r) {
    const __m256 dw = _mm256_set1_ps(loadf(wd + 4 * r));
    for (int h = 0; h < kHalves; ++h) {
      const __m256 dd = _mm256_mul_ps(da[h], dw);
      facc[r][h] = kSubtract ? _mm256_fnmadd_ps(_mm256_cvtepi32_ps(isum[r][h]), dd, facc[r][h])
                             : _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r][h]), dd, facc[r][h]);
    }
  }
}

template <class L, int kRows, int kHalves>
inline void token_sums(KAcc<kRows, kHalves>& v) {
  for (int r = 0; r < kRows; ++r)
    for (int h = 0; h < kHalves; ++h) v[r][h] = token_sums<L>(v[r][h]);
}
template <int kRows, int kHalves>
inline void zero(KAcc<kRows, kHalves>& v) {
  for (int r = 0; r < kRows; ++r)
    for (int h = 0; h < kHalves; ++h) v[r][h] = _mm256_setzero_si256();
}
template <int kRows, int kHalves>
inline void zero(KFacc<kRows, kHalves>& v) {
  for (int r = 0; r < kRows; ++r)
    for (int h = 0; h < kHalves; ++h) v[r][h] = _mm256_setzero_ps();
}
template <class L, int kHalves>
inline void load_da(const uint8_t* ab, __m256 (&da)[kHalves]) {
  for (int h = 0; h < kHalves; ++h) da[h] = _mm256_load_ps(reinterpret_cast<const float*>(ab + L::k8KD + kHalf * h));
}

// Q4_K (kFive false: levels 0..15, 8 steps of 4 fit in int16) / Q5_K (0..31: 4 steps).
template <class L, bool kFive, int kRows, int kHalves>
inline void tile_w45(const uint8_t* ws, int r0, int64_t nb, const uint8_t* ah, const Prefetch& pf,
                     KFacc<kRows, kHalves>& facc) {
  constexpr int kStep = L::kStepElems, kGroupSteps = 32 / kStep;
  constexpr int kFlush = min_i64(kGroupSteps, kFive ? 4 : 8);
  zero(facc);
  for (int64_t k = 0; k < nb; ++k) {
    prefetch_part(pf, k);
    const uint8_t* wb = ws + k * kW45Block;
    const uint8_t* ab = ah + k * L::k8KBlock;
    KAcc<kRows, kHalves> isum;
    zero(isum);
#pragma GCC unroll 1
    for (int grp = 0; grp < 8; ++grp)
      for (int s0 = kGroupSteps * grp; s0 < kGroupSteps * (grp + 1); s0 += kFlush)
        scaled_steps<L, kRows, kHalves, kFlush>(wb + kW45Q + 256 * r0, ab + L::k8KQ, s0, wb + kW45Sc + 32 * r0 + 4 * grp,
                                                32, isum);
    // mins: sum over groups of m * (sum of the group's activations)
    KAcc<kRows, kHalves> mins;
    zero(mins);
    sum_pairs<L>(wb + kW45Mp + 16 * r0, 16, ab + L::k8KBs32, 16 / kStep, mins);
    __m256 da[kHalves];
    load_da<L>(ab, da);
    token_sums<L>(isum);
    token_sums<L>(mins);
    scale_into<false>(isum, da, wb + kW45D + 4 * r0, facc);
    scale_into<true>(mins, da, wb + kW45Dmin + 4 * r0, facc);
  }
}

// Q6_K (levels 0..63: 2 steps fit in int16), Q3_K (0..7) and Q2_K (0..3, kMin: its mins are
// taken off scaled by dmin before the scale pass starts from zero), in the W6 scratch.
template <class L, bool kMin, int kMaxFlush, int kRows, int kHalves>
__attribute__((noinline)) void tile_w6(const uint8_t* ws, int r0, int64_t nb, const uint8_t* ah, const Prefetch& pf,
                    KFacc<kRows, kHalves>& facc) {
  constexpr int kStep = L::kStepElems, kGroupSteps = 16 / kStep;
  constexpr int kFlush = min_i64(kGroupSteps, kMaxFlush);
  zero(facc);
  for (int64_t k = 0; k < nb; ++k) {
    prefetch_part(pf, k);
    const uint8_t* wb = ws + k * kW6Block;
    const uint8_t* ab = ah + k * L::k8KBlock;
    KAcc<kRows, kHalves> isum;
    zero(isum);
    // The levels' offsets (or Q2_K's mins) times the activations' sums of 16.
    sum_pairs<L>(wb + kW6Op + 32 * r0, 32, ab + L::k8KBs16, 32 / kStep, isum);
    __m256 da[kHalves];
    if constexpr (kMin) {
      load_da<L>(ab, da);
      token_sums<L>(isum);
      scale_into<true>(isum, da, wb + kW6Dmin + 4 * r0, facc);
      zero(isum);
    }
#pragma GCC unroll 2
    for (int grp = 0; grp < 16; ++grp)
      for (int s0 = kGroupSteps * grp; s0 < kGroupSteps * (grp + 1); s0 += kFlush)
        scaled_steps<L, kRows, kHalves, kFlush>(wb + kW6Q + 256 * r0, ab + L::k8KQ, s0, wb + kW6Sc + 64 * r0 + 4 * grp,
                                                64, isum);
    load_da<L>(ab, da);  // here, not kept across the steps: 16 ymm registers
    token_sums<L>(isum);
    scale_into<false>(isum, da, wb + kW6D + 4 * r0, facc);
  }
}

// ---- Q4_0, Q5_0, Q8_0 (Q8_0 activations) ----------------------------------------------------

// This file's scratch per block of 4 rows: d[4] f32, then Q4_0 / Q5_0: levels[4][32] u8; Q8_0:
// |q|[4][32] u8 and q[4][32] s8.
constexpr int64_t kV80D = 0, kV80Q = 16;
constexpr int64_t kV80Block = kV80Q + kR * 32;
constexpr int64_t kV8Abs = 16, kV8Q = 16 + kR * 32;
constexpr int64_t kV8Block = kV8Q + kR * 32;

int64_t scratch_bytes_v80(int64_t cols) { return cols / 32 * kV80Block; }
int64_t scratch_bytes_v8(int64_t cols) { return cols / 32 * kV8Block; }

// Byte i = 0x10 where bit i of the 32-bit little-endian word at p is set (Q5_0's fifth bits).
inline __m256i fifth_bits(const uint8_t* p) {
  uint32_t x;
  std::memcpy(&x, p, 4);
  const __m256i idx = _mm256_set_epi64x(0x0303030303030303LL, 0x0202020202020202LL, 0x0101010101010101LL, 0);
  const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(x)), idx);
  const __m256i sel = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ULL));
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(bytes, sel), sel), _mm256_set1_epi8(0x10));
}

template <DType T>
void pack_v80(const uint8_t* w, int64_t wrb, int64_t nr, int64_t nb, uint8_t* ws) {
  constexpr int64_t kBlock = T == DType::Q8_0 ? kV8Block : kV80Block;
  const __m128i m4 = _mm_set1_epi8(0x0F);
  for (int64_t k = 0; k < nb; ++k) {
    uint8_t* o = ws + k * kBlock;
    for (int r = 0; r < kR; ++r) {
      float d = 0.f;
      __m256i q = _mm256_setzero_si256();
      if (r < nr) {
        const uint8_t* row = w + r * wrb;
        if constexpr (T == DType::Q8_0) {
          const BlockQ8_0& b = reinterpret_cast<const BlockQ8_0*>(row)[k];
          d = h2f(b.d), q = loadu256(b.qs);
        } else {
          const uint8_t* qs;
          if constexpr (T == DType::Q4_0) {
            const BlockQ4_0& b = reinterpret_cast<const BlockQ4_0*>(row)[k];
            d = h2f(b.d), qs = b.qs;
          } else {
            const BlockQ5_0& b = reinterpret_cast<const BlockQ5_0*>(row)[k];
            d = h2f(b.d), qs = b.qs;
          }
          const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
          q = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), m4), _mm_and_si128(v, m4));
          if constexpr (T == DType::Q5_0)
            q = _mm256_or_si256(q, fifth_bits(reinterpret_cast<const BlockQ5_0*>(row)[k].qh));
        }
      }
      putf(o + kV80D + 4 * r, d);
      if constexpr (T == DType::Q8_0) {
        storeu256(o + kV8Abs + 32 * r, _mm256_sign_epi8(q, q));
        storeu256(o + kV8Q + 32 * r, q);
      } else {
        storeu256(o + kV80Q + 32 * r, q);
      }
    }
  }
}

// 4 rows x one half of the activations over all nb blocks of 32: per block facc += (Σ w a) *
// (d_a d_w), Σ w a from the unsigned levels minus the offset (Q4_0: 8, Q5_0: 16) times Σ a, or
// for Q8_0 from |w| and the activations with w's sign (one step a flush: 2 x 127 x 127 fills int16).
template <class L, DType T>
inline void tile_v80(const uint8_t* ws, int64_t nb, const uint8_t* act, const Prefetch& pf, __m256 (&facc)[kR]) {
  constexpr int kStep = L::kStepElems, kBlockSteps = 32 / kStep;
  constexpr int64_t kBlock = T == DType::Q8_0 ? kV8Block : kV80Block;
  for (int r = 0; r < kR; ++r) facc[r] = _mm256_setzero_ps();
  for (int64_t k = 0; k < nb; ++k) {
    prefetch_part(pf, k);
    const uint8_t* wb = ws + k * kBlock;
    const uint8_t* ab = act + k * L::k80Block;
    __m256i isum[kR];
    if constexpr (T == DType::Q8_0) {
      const __m256i ones = _mm256_set1_epi16(1);
      for (int r = 0; r < kR; ++r) isum[r] = _mm256_setzero_si256();
#pragma GCC unroll 8
      for (int s = 0; s < kBlockSteps; ++s) {
        const __m256i a = load256(ab + L::k80Q + 64 * s);
        for (int r = 0; r < kR; ++r) {
          const __m256i sa = _mm256_sign_epi8(a, bcast_step<kStep>(wb + kV8Q + 32 * r + kStep * s));
          const __m256i p16 = _mm256_maddubs_epi16(bcast_step<kStep>(wb + kV8Abs + 32 * r + kStep * s), sa);
          isum[r] = _mm256_add_epi32(isum[r], _mm256_madd_epi16(p16, ones));
        }
      }
    } else {
      // corr = -128 Σ a, a multiple of 16: -8 Σ a (Q4_0) and -16 Σ a (Q5_0) exactly.
      const __m256i corr = load256(ab + L::k80Corr);
      const __m256i off = T == DType::Q4_0 ? _mm256_srai_epi32(corr, 4) : _mm256_srai_epi32(corr, 3);
      for (int r = 0; r < kR; ++r) isum[r] = off;
      block_level_sums<L, T == DType::Q4_0 ? kBlockSteps : min_i64(kBlockSteps, 4)>(wb + kV80Q, ab + L::k80Q, isum);
    }
    const __m256 da = _mm256_load_ps(reinterpret_cast<const float*>(ab + L::k80D));
    for (int r = 0; r < kR; ++r) {
      const __m256 dd = _mm256_mul_ps(da, _mm256_set1_ps(loadf(wb + kV80D + 4 * r)));
      facc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(token_sums<L>(isum[r])), dd, facc[r]);
    }
  }
}

// ---- Q4_1, Q5_1 (Q8_1 activations): the AVX-512 kernels' W81 scratch ---------------------------

template <DType T>
inline __m256i block_levels(const uint8_t* blk, float* d, float* m);

// 4 rows' blocks into the W81 scratch of gemm_layout.h (d, m as f32, the levels 0..15 / 0..31),
// byte for byte the AVX-512 pack_w81's (rows past nr: zeros).
template <DType T>
void pack_w81(const uint8_t* w, int64_t wrb, int64_t nr, int64_t nb, uint8_t* ws) {
  constexpr int64_t kBB = kBlockBytes32<T>;
  for (int64_t k = 0; k < nb; ++k) {
    uint8_t* o = ws + k * kW81Block;
    for (int r = 0; r < kR; ++r) {
      float d = 0.f, m = 0.f;
      __m256i q = _mm256_setzero_si256();
      if (r < nr) q = block_levels<T>(w + r * wrb + k * kBB, &d, &m);
      putf(o + kW81D + 4 * r, d);
      putf(o + kW81M + 4 * r, m);
      storeu256(o + kW81Q + 32 * r, q);
    }
  }
}

// 4 rows x one half of the activations over all nb blocks of 32: per block the levels x a
// (vpmaddubsw, int16 sums over up to 8 / 4 steps, then vpmaddwd), then the AVX-512 tile_w8's two
// fmadds (the integer sum times d_a d_w, then s_a m_w): every lane as there, the same bits.
template <class L, DType T>
inline void tile_w81(const uint8_t* ws, int64_t nb, const uint8_t* act, const Prefetch& pf, __m256 (&facc)[kR]) {
  constexpr int kBlockSteps = 32 / L::kStepElems;
  constexpr int kFlush = T == DType::Q4_1 ? kBlockSteps : min_i64(kBlockSteps, 4);
  for (int r = 0; r < kR; ++r) facc[r] = _mm256_setzero_ps();
  for (int64_t k = 0; k < nb; ++k) {
    prefetch_part(pf, k);
    const uint8_t* wb = ws + k * kW81Block;
    const uint8_t* ab = act + k * L::k80Block;
    __m256i isum[kR];
    for (int r = 0; r < kR; ++r) isum[r] = _mm256_setzero_si256();
    block_level_sums<L, kFlush>(wb + kW81Q, ab + L::k80Q, isum);
    const __m256 da = _mm256_load_ps(reinterpret_cast<const float*>(ab + L::k80D));
    const __m256 sa = _mm256_load_ps(reinterpret_cast<const float*>(ab + L::k80Corr));
    for (int r = 0; r < kR; ++r) {
      const __m256 dd = _mm256_mul_ps(da, _mm256_set1_ps(loadf(wb + kW81D + 4 * r)));
      facc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(token_sums<L>(isum[r])), dd, facc[r]);
      facc[r] = _mm256_fmadd_ps(sa, _mm256_set1_ps(loadf(wb + kW81M + 4 * r)), facc[r]);
    }
  }
}

// ---- in-place tiles: 2-8 tokens of Q8_0 / Q4_0 / Q5_0 weights, no weight scratch -------------

// Step s of a block (elements [kStep s, kStep s + kStep)) in every lane of a half, pattern
// repeated: the same 32 bytes serve both halves of the 64-byte layout vector (kStep <= 32).
// Q8_0: its bytes, broadcast from the block; Q4_0 / Q5_0: their levels (0..15 / 0..31) picked
// out of the block unpacked once (u, element order) with one vpermd.
template <int kStep>
inline __m256i bcast_any(const uint8_t* p) {
  if constexpr (kStep <= 8) return bcast_step<kStep>(p);
  else if constexpr (kStep == 16)
    return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  else return loadu256(p);
}
template <int kStep>
inline __m256i pick_step(__m256i u, int s) {
  if constexpr (kStep == 32) {
    return u;
  } else {
    constexpr int kDwords = kStep / 4;  // 32-bit words of one step
    const __m256i lane = _mm256_and_si256(_mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0), _mm256_set1_epi32(kDwords - 1));
    return _mm256_permutevar8x32_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(kDwords * s), lane));
  }
}

// The 32 levels of a Q4_0 / Q5_0 / Q4_1 / Q5_1 block in element order (0..15 / 0..31: pack_v80's
// bytes, and the AVX-512 W81 scratch's), with its d (and m).
template <DType T>
inline __m256i block_levels(const uint8_t* blk, float* d, float* m) {
  const __m128i m4 = _mm_set1_epi8(0x0F);
  const uint8_t* qs;
  const uint8_t* qh = nullptr;
  if constexpr (T == DType::Q4_0) {
    const BlockQ4_0& b = *reinterpret_cast<const BlockQ4_0*>(blk);
    *d = h2f(b.d), qs = b.qs;
  } else if constexpr (T == DType::Q5_0) {
    const BlockQ5_0& b = *reinterpret_cast<const BlockQ5_0*>(blk);
    *d = h2f(b.d), qs = b.qs, qh = b.qh;
  } else if constexpr (T == DType::Q4_1) {
    const BlockQ4_1& b = *reinterpret_cast<const BlockQ4_1*>(blk);
    *d = h2f(b.d), *m = h2f(b.m), qs = b.qs;
  } else {
    const BlockQ5_1& b = *reinterpret_cast<const BlockQ5_1*>(blk);
    *d = h2f(b.d), *m = h2f(b.m), qs = b.qs, qh = b.qh;
  }
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i q = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), m4), _mm_and_si128(v, m4));
  if constexpr (T == DType::Q4_0 || T == DType::Q4_1) return q;
  else return _mm256_or_si256(q, fifth_bits(qh));
}

constexpr int kInPlaceRows = 4;
static_assert(kInPlaceRows == kR, "rows_in_place stores through store_half (kR rows)");

// kInPlaceRows rows (row[r]: a row's first block) x both halves of one group of layout L (pairs,
// quads or octets) over all nb blocks, the weights read in place and each step used for both
// halves: tile_v80's integer sums (Q8_0: |w| x (a with w's sign), one step a flush; Q4_0 / Q5_0:
// levels x a from the offset, corr >> 4 / >> 3) and float operations, so pairs give rows_pairs'
// bits. Q4_1 / Q5_1 (Q8_1 activations, whose s sits where corr does): levels x a from zero, then
// the AVX-512 tile_w8's two fmadds (the integer sum times d_a d_w, then s_a m_w). Every lane as
// there, so the bits are the AVX-512 kernels' and the emulation's. (block_scales, which the
// AVX-512 tile takes its d from, was no faster here.)
template <DType T, class L>
inline void tile_in_place(const uint8_t* const (&row)[kInPlaceRows], int64_t nb, const uint8_t* act, int64_t ahead,
                          __m256 (&facc)[kInPlaceRows][2]) {
  constexpr int kStep = L::kStepElems, kSteps = 32 / kStep;
  constexpr int64_t kBB = kBlockBytes32<T>;
  const __m256i ones = _mm256_set1_epi16(1);
  for (int r = 0; r < kInPlaceRows; ++r) facc[r][0] = facc[r][1] = _mm256_setzero_ps();
  for (int64_t k = 0; k < nb; ++k) {
    const uint8_t* ab = act + k * L::k80Block;
    __m256 da[2];
    __m256i off[2];
    for (int h = 0; h < 2; ++h) {
      da[h] = _mm256_load_ps(reinterpret_cast<const float*>(ab + L::k80D + kHalf * h));
      const __m256i corr = load256(ab + L::k80Corr + kHalf * h);
      off[h] = T == DType::Q4_0   ? _mm256_srai_epi32(corr, 4)
               : T == DType::Q5_0 ? _mm256_srai_epi32(corr, 3)
               : kHasMin<T>       ? corr  // s_a (f32), used after the conversion
                                  : _mm256_setzero_si256();
    }
    for (int r = 0; r < kInPlaceRows; ++r) {
      const uint8_t* blk = row[r] + k * kBB;
      _mm_prefetch(reinterpret_cast<const char*>(blk + ahead), _MM_HINT_T1);
      float d, m = 0.f;
      // Q4_1 / Q5_1: off is s_a (f32), applied after the conversion; the others start from it
      __m256i isum[2];
      for (int h = 0; h < 2; ++h) isum[h] = kHasMin<T> ? _mm256_setzero_si256() : off[h];
      if constexpr (T == DType::Q8_0) {
        d = h2f(reinterpret_cast<const BlockQ8_0*>(blk)->d);
        const uint8_t* qs = blk + 2;
#pragma GCC unroll 4
        for (int s = 0; s < kSteps; ++s) {
          const __m256i w = bcast_any<kStep>(qs + kStep * s);
          const __m256i aw = _mm256_sign_epi8(w, w);
          for (int h = 0; h < 2; ++h) {
            const __m256i a = load256(ab + L::k80Q + 64 * s + kHalf * h);
            const __m256i p = _mm256_maddubs_epi16(aw, _mm256_sign_epi8(a, w));
            isum[h] = _mm256_add_epi32(isum[h], _mm256_madd_epi16(p, ones));
          }
        }
      } else {
        const __m256i u = block_levels<T>(blk, &d, &m);
        __m256i p16[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
#pragma GCC unroll 4
        for (int s = 0; s < kSteps; ++s) {  // at most 4 steps: within Q5_0's int16 bound
          const __m256i w = pick_step<kStep>(u, s);
          for (int h = 0; h < 2; ++h) {
            p16[h] = _mm256_add_epi16(p16[h], _mm256_maddubs_epi16(w, load256(ab + L::k80Q + 64 * s + kHalf * h)));
            in_order(p16[h]);
          }
        }
        for (int h = 0; h < 2; ++h) isum[h] = _mm256_add_epi32(isum[h], _mm256_madd_epi16(p16[h], ones));
      }
      const __m256 dw = _mm256_set1_ps(d);
      for (int h = 0; h < 2; ++h) {
        facc[r][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(token_sums<L>(isum[h])), _mm256_mul_ps(da[h], dw), facc[r][h]);
        if constexpr (kHasMin<T>)
          facc[r][h] = _mm256_fmadd_ps(_mm256_castsi256_ps(off[h]), _mm256_set1_ps(m), facc[r][h]);
      }
    }
  }
}

// GemmKernels::in_place rows: kInPlaceRows rows at a time, each read once, in place; rows of a
// tile past nr read the last row again (their results are not stored).
template <DType T, class L>
void rows_in_place(const uint8_t* w, int64_t wrb, int64_t nr, int64_t cols, const uint8_t* act, int64_t n_tokens,
                   float* y, int64_t ys, uint8_t*, const uint8_t*, int64_t) {
  const int64_t nb = cols / 32;
  const int64_t ahead = in_place_prefetch_offset(wrb, kInPlaceRows);
  for (int64_t r0 = 0; r0 < nr; r0 += kInPlaceRows) {
    const int64_t rn = min_i64(kInPlaceRows, nr - r0);
    const uint8_t* row[kInPlaceRows];
    for (int r = 0; r < kInPlaceRows; ++r) row[r] = w + (r0 + min_i64(r, rn - 1)) * wrb;
    __m256 facc[kInPlaceRows][2];
    tile_in_place<T, L>(row, nb, act, ahead, facc);
    for (int h = 0; h < 2 && h * L::kTokens / 2 < n_tokens; ++h) {
      const __m256 f[kR] = {facc[0][h], facc[1][h], facc[2][h], facc[3][h]};
      store_half<L>(f, h, rn, n_tokens, y + r0, ys);
    }
  }
}

// ---- activations and drivers ----------------------------------------------------------------

template <class L>
void pack_group_q8_0(const float* x, int64_t cols, int64_t n_tokens, int64_t group, uint8_t* dst) {
  pack_act_q8_0<L>(detail::avx2_kernels(DType::Q8_0)->quantize_row, x, cols, n_tokens, group, dst);
}
template <class L>
void pack_group_q8_k(const float* x, int64_t cols, int64_t n_tokens, int64_t group, uint8_t* dst) {
  pack_act_q8_k<L>(detail::avx2_kernels(DType::Q8_K)->quantize_row, x, cols, n_tokens, group, dst);
}
template <class L>
void pack_group_q8_1(const float* x, int64_t cols, int64_t n_tokens, int64_t group, uint8_t* dst) {
  pack_act_q8_1<L>(detail::avx2_kernels(DType::Q8_1)->quantize_row, x, cols, n_tokens, group, dst);
}

using PackW = void (*)(const uint8_t* w, int64_t wrb, int64_t nr, int64_t nb, uint8_t* ws);
// Row quads: unpack 4 weight rows once (kElemsPerBlock elements a block; gb: bytes of a token
// group of layout L), then per token group run them 2 at a time against both halves where both
// hold tokens (kBothHalves: the K-quant tiles), else all 4 against one half at a time
// (KTile::run<kRows, kHalves>). The first tile of each quad prefetches the rows the next unpack
// reads (the next quad, or after the last quad the first rows of next_w).
//
// Both halves at once pay at 5-8 tokens (a batched decode step, pairs layout) for every K-quant,
// and in the wide layout (prompts) for the W6 types only. W 2816 x 1024, 1 thread, AMD Zen 3,
// best ms of 3-5 alternations, the 4-row tile one half at a time -> these tiles: 8 tokens Q4_K
// 0.437-0.458 -> 0.382-0.384, Q5_K 0.454-0.458 -> 0.397-0.403, Q6_K 0.408-0.419 -> 0.343-0.349,
// Q3_K 0.589 -> 0.491, Q2_K 0.336-0.342 -> 0.325-0.327; 64 tokens (wide) Q6_K 3.00-3.03 -> 2.27-2.28,
// Q3_K 3.26-3.29 -> 2.97-3.02, Q2_K 3.30-3.37 -> 2.65-2.66; with both halves Q4_K at 64 tokens went
// 2.47 -> 2.82, so the W45 types keep one half at a time there.
template <PackW kPack, int64_t kElemsPerBlock, class KTile, class L, bool kBothHalves>
void rows_driver(const uint8_t* w, int64_t wrb, int64_t nr, int64_t cols, const uint8_t* act, int64_t n_tokens,
                 float* y, int64_t ys, uint8_t* ws, const uint8_t* next_w, int64_t next_nr, int64_t gb) {
  const int64_t nb = cols / kElemsPerBlock;
  constexpr int64_t kT = L::kTokens;
  const int64_t n_groups = (n_tokens + kT - 1) / kT;
  for (int64_t r0 = 0; r0 < nr; r0 += kR) {
    const int64_t rq = min_i64(kR, nr - r0);
    kPack(w + r0 * wrb, wrb, rq, nb, ws);
    Prefetch pf = next_quad_prefetch(w, wrb, nr, r0, nb, next_w, next_nr);
    for (int64_t g = 0; g < n_groups; ++g) {
      const int64_t nt = n_tokens - g * kT;  // the group's tokens (or more: the rest of the product's)
      const uint8_t* ag = act + g * gb;
      float* yg = y + g * kT * ys + r0;
      if constexpr (kBothHalves) {
        if (nt > kT / 2) {
          for (int rp = 0; rp < rq; rp += 2) {
            KFacc<2, 2> facc;
            KTile::template run<2, 2>(ws, rp, nb, ag, pf, facc);
            pf.p = nullptr;
            for (int h = 0; h < 2; ++h) {
              const __m256 f[2] = {facc[0][h], facc[1][h]};
              store_half<L>(f, h, min_i64(2, rq - rp), nt, yg + rp, ys);
            }
          }
          continue;
        }
      }
      for (int h = 0; h < 2 && h * kT / 2 < nt; ++h) {
        KFacc<kR, 1> facc;
        KTile::template run<kR, 1>(ws, 0, nb, ag + kHalf * h, pf, facc);
        pf.p = nullptr;
        const __m256 f[kR] = {facc[0][0], facc[1][0], facc[2][0], facc[3][0]};
        store_half<L>(f, h, rq, nt, yg, ys);
      }
    }
  }
}

template <class L, bool kFive>
struct TileW45 {
  template <int kRows, int kHalves>
  static void run(const uint8_t* ws, int r0, int64_t nb, const uint8_t* ah, const Prefetch& pf,
                  KFacc<kRows, kHalves>& facc) {
    tile_w45<L, kFive, kRows, kHalves>(ws, r0, nb, ah, pf, facc);
  }
};
template <class L, bool kMin, int kMaxFlush>
struct TileW6 {
  template <int kRows, int kHalves>
  static void run(const uint8_t* ws, int r0, int64_t nb, const uint8_t* ah, const Prefetch& pf,
                  KFacc<kRows, kHalves>& facc) {
    tile_w6<L, kMin, kMaxFlush, kRows, kHalves>(ws, r0, nb, ah, pf, facc);
  }
};

// The 32-element types' tiles (4 rows x one half): their sums as a KFacc<kR, 1>.
template <auto kTile>
struct Tile4Rows {
  template <int kRows, int kHalves>
  static void run(const uint8_t* ws, int, int64_t nb, const uint8_t* ah, const Prefetch& pf,
                  KFacc<kRows, kHalves>& facc) {
    static_assert(kRows == kR && kHalves == 1, "the 32-element tiles run 4 rows against one half");
    __m256 f[kR];
    kTile(ws, nb, ah, pf, f);
    for (int r = 0; r < kR; ++r) facc[r][0] = f[r];
  }
};

template <DType T, class L>
void rows_v80(const uint8_t* w, int64_t wrb, int64_t nr, int64_t cols, const uint8_t* act, int64_t n_tokens, float* y,
              int64_t ys, uint8_t* ws, const uint8_t* next_w, int64_t next_nr) {
  rows_driver<&pack_v80<T>, 32, Tile4Rows<&tile_v80<L, T>>, L, false>(w, wrb, nr, cols, act, n_tokens, y, ys, ws,
                                                                      next_w, next_nr, group_bytes_q8_0(cols));
}
template <DType T, class L>
void rows_w81(const uint8_t* w, int64_t wrb, int64_t nr, int64_t cols, const uint8_t* act, int64_t n_tokens, float* y,
              int64_t ys, uint8_t* ws, const uint8_t* next_w, int64_t next_nr) {
  rows_driver<&pack_w81<T>, 32, Tile4Rows<&tile_w81<L, T>>, L, false>(w, wrb, nr, cols, act, n_tokens, y, ys, ws,
                                                                      next_w, next_nr, group_bytes_q8_0(cols));
}
template <bool kFive, class L>
void rows_w45(const uint8_t* w, int64_t wrb, int64_t nr, int64_t cols, const uint8_t* act, int64_t n_tokens, float* y,
              int64_t ys, uint8_t* ws, const uint8_t* next_w, int64_t next_nr) {
  constexpr bool kBothHalves = std::is_same_v<L, Pairs>;  // prompts (wide): one half at a time (rows_driver)
  rows_driver<&pack_w45<kFive>, 256, TileW45<L, kFive>, L, kBothHalves>(w, wrb, nr, cols, act, n_tokens, y, ys, ws,
                                                                        next_w, next_nr, group_bytes_q8_k(cols));
}
template <PackW kPack, bool kMin, int kMaxFlush, class L>
void rows_w6(const uint8_t* w, int64_t wrb, int64_t nr, int64_t cols, const uint8_t* act, int64_t n_tokens, float* y,
             int64_t ys, uint8_t* ws, const uint8_t* next_w, int64_t next_nr) {
  rows_driver<kPack, 256, TileW6<L, kMin, kMaxFlush>, L, true>(w, wrb, nr, cols, act, n_tokens, y, ys, ws, next_w,
                                                               next_nr, group_bytes_q8_k(cols));
}

// A type's in-place kernels (GemmKernels::in_place), layout by layout; kInPlaceMin: Q8_1 activations.
template <DType T>
constexpr std::array<GemmKernels::InPlace, kGemmInPlaceLayouts> kInPlace = {{
    {&pack_group_q8_0<Pairs>, &rows_in_place<T, Pairs>},
    {&pack_group_q8_0<Quads>, &rows_in_place<T, Quads>},
    {&pack_group_q8_0<Octets>, &rows_in_place<T, Octets>}}};
template <DType T>
constexpr std::array<GemmKernels::InPlace, kGemmInPlaceLayouts> kInPlaceMin = {{
    {&pack_group_q8_1<Pairs>, &rows_in_place<T, Pairs>},
    {&pack_group_q8_1<Quads>, &rows_in_place<T, Quads>},
    {&pack_group_q8_1<Octets>, &rows_in_place<T, Octets>}}};

// min_tokens: gemm_layout.h. Each table: its wide kernels, then its pairs kernels, then its
// in-place ones.
const GemmKernels kQ8_0{kMinTokensAvx2Q8, &group_bytes_q8_0, &pack_group_q8_0<Wide>, &scratch_bytes_v8,
                        &rows_v80<DType::Q8_0, Wide>, &pack_group_q8_0<Pairs>, &rows_v80<DType::Q8_0, Pairs>,
                        kInPlace<DType::Q8_0>, kInPlaceMaxTokensAvx2Q8, kPairsMaxTokensAvx2};
const GemmKernels kQ4_0{kMinTokensAvx2Q4_0, &group_bytes_q8_0, &pack_group_q8_0<Wide>, &scratch_bytes_v80,
                        &rows_v80<DType::Q4_0, Wide>, &pack_group_q8_0<Pairs>, &rows_v80<DType::Q4_0, Pairs>,
                        kInPlace<DType::Q4_0>, 0, kPairsMaxTokensAvx2};
const GemmKernels kQ5_0{kMinTokensAvx2Q5_0, &group_bytes_q8_0, &pack_group_q8_0<Wide>, &scratch_bytes_v80,
                        &rows_v80<DType::Q5_0, Wide>, &pack_group_q8_0<Pairs>, &rows_v80<DType::Q5_0, Pairs>,
                        kInPlace<DType::Q5_0>, 0, kPairsMaxTokensAvx2};
const GemmKernels kQ4_1{kMinTokensAvx2Q4_1, &group_bytes_q8_0, &pack_group_q8_1<Wide>, &scratch_bytes_w81,
                        &rows_w81<DType::Q4_1, Wide>, &pack_group_q8_1<Pairs>, &rows_w81<DType::Q4_1, Pairs>,
                        kInPlaceMin<DType::Q4_1>, 0, kPairsMaxTokensAvx2};
const GemmKernels kQ5_1{kMinTokensAvx2Q5_1, &group_bytes_q8_0, &pack_group_q8_1<Wide>, &scratch_bytes_w81,
                        &rows_w81<DType::Q5_1, Wide>, &pack_group_q8_1<Pairs>, &rows_w81<DType::Q5_1, Pairs>,
                        kInPlaceMin<DType::Q5_1>, 0, kPairsMaxTokensAvx2};
const GemmKernels kQ4_K{kMinTokensAvx2K, &group_bytes_q8_k, &pack_group_q8_k<Wide>, &scratch_bytes_w45,
                        &rows_w45<false, Wide>, &pack_group_q8_k<Pairs>, &rows_w45<false, Pairs>, {}, 0, kPairsMaxTokensAvx2};
const GemmKernels kQ5_K{kMinTokensAvx2K, &group_bytes_q8_k, &pack_group_q8_k<Wide>, &scratch_bytes_w45,
                        &rows_w45<true, Wide>, &pack_group_q8_k<Pairs>, &rows_w45<true, Pairs>, {}, 0, kPairsMaxTokensAvx2};
const GemmKernels kQ6_K{kMinTokensAvx2K, &group_bytes_q8_k, &pack_group_q8_k<Wide>, &scratch_bytes_w6,
                        &rows_w6<&pack_w6, false, 2, Wide>, &pack_group_q8_k<Pairs>, &rows_w6<&pack_w6, false, 2, Pairs>, {}, 0, kPairsMaxTokensAvx2Q6};
const GemmKernels kQ3_K{kMinTokensAvx2Q3, &group_bytes_q8_k, &pack_group_q8_k<Wide>, &scratch_bytes_w6,
                        &rows_w6<&pack_w3, false, 4, Wide>, &pack_group_q8_k<Pairs>, &rows_w6<&pack_w3, false, 4, Pairs>, {}, 0, kPairsMaxTokensAvx2};
const GemmKernels kQ2_K{kMinTokensAvx2Q2, &group_bytes_q8_k, &pack_group_q8_k<Wide>, &scratch_bytes_w6,
                        &rows_w6<&pack_w2, true, 4, Wide>, &pack_group_q8_k<Pairs>, &rows_w6<&pack_w2, true, 4, Pairs>, {}, 0, kPairsMaxTokensAvx2};

}  // namespace
}  // namespace strata::kernels::gemm_avx2

namespace strata::kernels::detail {
const GemmKernels* avx2_gemm(DType t) {
  using namespace gemm_avx2;
  switch (t) {
    case DType::Q8_0: return &kQ8_0;
    case DType::Q4_0: return &kQ4_0;
    case DType::Q5_0: return &kQ5_0;
    case DType::Q4_1: return &kQ4_1;
    case DType::Q5_1: return &kQ5_1;
    case DType::Q4_K: return &kQ4_K;
    case DType::Q5_K: return &kQ5_K;
    case DType::Q6_K: return &kQ6_K;
    case DType::Q3_K: return &kQ3_K;
    case DType::Q2_K: return &kQ2_K;
    default: return nullptr;
  }
}
}  // namespace strata::kernels::detail
