// kernels/cpu/gemm_avx512.cpp — the AVX-512 VNNI packed-tile kernels of gemm.h: activation
// packing, weight unpacking into scratch, and the 4-row x 48-token micro-kernels. Compiled with
// the AVX-512 flags (file suffix); reached only through gemm_kernels() after a cpuid check.
// No engine types. The layouts are gemm_layout.h's, shared with gemm_emulated.cpp (the same
// algorithm in plain C++, which checks this one on CPUs without AVX-512 VNNI).
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>

// GCC 12 reports the _mm512_undefined_ps() inside _mm512_cvtepi32_ps as maybe-uninitialized.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "kernels/cpu/blocks.h"
#include "kernels/cpu/fp16.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_layout.h"
#include "kernels/cpu/type_kernels.h"
#include "kernels/cpu/weight_prefetch.h"

namespace strata::kernels::gemm_avx512 {
namespace {

using namespace gemm_layout;

#include "kernels/cpu/gemm_x86.inc"
#include "kernels/cpu/gemm_avx512.inc"

// A token's kLanes adjacent lanes of layout L each get the sum of all of them (int32, wrapping:
// exact): pairs swap neighbours (vpshufd CDAB), quads also swap lane pairs (vpshufd BADC), octets
// also swap 128-bit quarters (vshufi32x4). Taken on every block's integer sums before the float
// step, so a token's float steps are those of the wide layout's one lane (dot_order.h): the same
// bits in every layout, at 2 or 3 more instructions a block and accumulator. Wide: as it is.
template <class L>
inline __m512i token_sums(__m512i v) {
  if constexpr (L::kLanes >= 2) v = _mm512_add_epi32(v, _mm512_shuffle_epi32(v, _MM_PERM_CDAB));
  if constexpr (L::kLanes >= 4) v = _mm512_add_epi32(v, _mm512_shuffle_epi32(v, _MM_PERM_BADC));
  if constexpr (L::kLanes >= 8) v = _mm512_add_epi32(v, _mm512_shuffle_i32x4(v, v, _MM_SHUFFLE(2, 3, 0, 1)));
  return v;
}

// Writes the results of a micro-tile of G groups of layout L: token t of group g is the first of
// its lanes [kLanes t, kLanes t + kLanes) of acc[r][g] (token_sums gave them all its sum; Q4_1 /
// Q5_1's min term is in the first only) -> y[(T g + t) * ys + r].
template <class L, int G>
inline void store_tile(const __m512 (&acc)[kR][G], int64_t nr, int64_t nt, float* y, int64_t ys) {
  alignas(64) float o[kR][G][16];
  for (int r = 0; r < kR; ++r)
    for (int g = 0; g < G; ++g) _mm512_store_ps(o[r][g], acc[r][g]);
  for (int g = 0; g < G; ++g)
    for (int l = 0; l < L::kTokens; ++l) {
      const int64_t t = g * L::kTokens + l;
      if (t >= nt) return;
      for (int64_t r = 0; r < nr; ++r) y[t * ys + r] = o[r][g][L::kLanes * l];
    }
}

// ---- activations: Q8_0 (for Q4_0, Q5_0, Q8_0 weights), Q8_K (for Q2_K-Q6_K) ---------------

template <class L>
void pack_group_q8_0(const float* x, int64_t cols, int64_t n_tokens, int64_t group, uint8_t* dst) {
  pack_act_q8_0<L>(detail::avx512_kernels(DType::Q8_0)->quantize_row, x, cols, n_tokens, group, dst);
}
template <class L>
void pack_group_q8_k(const float* x, int64_t cols, int64_t n_tokens, int64_t group, uint8_t* dst) {
  pack_act_q8_k<L>(detail::avx512_kernels(DType::Q8_K)->quantize_row, x, cols, n_tokens, group, dst);
}

// ---- weights with Q8_0 activations: Q8_0, Q4_0, Q5_0 as u8 = q + 128 -----------------------

// 4 rows x G groups of layout L over all nb blocks of 32, per block facc += (integer sum) *
// (d_a d_w). Without kMin (Q8_0, Q4_0, Q5_0: u8 = q + 128) the sum takes the activations' corr
// (-128 * their sum) first; with kMin (Q4_1, Q5_1: u8 = q, x = d q + m) s_a m_w is added after.
template <bool kMin, class L, int G>
inline void tile_w8(const uint8_t* ws, int64_t nb, const uint8_t* act, int64_t gb, const Prefetch& pf,
                    __m512 (&facc)[kR][G]) {
  constexpr int64_t kBlock = kMin ? kW81Block : kW80Block, kQ = kMin ? kW81Q : kW80Q, kD = kMin ? kW81D : kW80D;
  for (int r = 0; r < kR; ++r)
    for (int g = 0; g < G; ++g) facc[r][g] = _mm512_setzero_ps();
  for (int64_t k = 0; k < nb; ++k) {
    prefetch_part(pf, k);
    const uint8_t* wb = ws + k * kBlock;
    const uint8_t* ab[G];
    __m512i acc[kR][G];
    for (int g = 0; g < G; ++g) {
      ab[g] = act + g * gb + k * L::k80Block;
      for (int r = 0; r < kR; ++r) acc[r][g] = _mm512_setzero_si512();
    }
    constexpr int kStep = L::kStepElems;
#pragma GCC unroll 8
    for (int j = 0; j < 32 / kStep; ++j) {
      __m512i a[G];
      for (int g = 0; g < G; ++g) a[g] = _mm512_load_si512(ab[g] + L::k80Q + 64 * j);
      for (int r = 0; r < kR; ++r) {
        const __m512i b = bcast_step<kStep>(wb + kQ + 32 * r + kStep * j);
        for (int g = 0; g < G; ++g) acc[r][g] = _mm512_dpbusd_epi32(acc[r][g], b, a[g]);
      }
    }
    for (int g = 0; g < G; ++g) {
      const __m512 da = _mm512_load_ps(ab[g] + L::k80D);
      const __m512i off = _mm512_load_si512(ab[g] + L::k80Corr);  // corr (i32), or s_a (f32) with kMin
      for (int r = 0; r < kR; ++r) {
        const __m512 dd = _mm512_mul_ps(da, _mm512_set1_ps(loadf(wb + kD + 4 * r)));
        if constexpr (kMin) {
          facc[r][g] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(token_sums<L>(acc[r][g])), dd, facc[r][g]);
          facc[r][g] = _mm512_fmadd_ps(_mm512_castsi512_ps(off), _mm512_set1_ps(loadf(wb + kW81M + 4 * r)), facc[r][g]);
        } else {
          facc[r][g] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(token_sums<L>(_mm512_add_epi32(acc[r][g], off))), dd, facc[r][g]);
        }
      }
    }
  }
}

// ---- weights with a min (Q4_1, Q5_1) and Q8_1 activations: u8 = q, x = d * q + m ------------

template <class L>
void pack_group_q8_1(const float* x, int64_t cols, int64_t n_tokens, int64_t group, uint8_t* dst) {
  pack_act_q8_1<L>(detail::avx512_kernels(DType::Q8_1)->quantize_row, x, cols, n_tokens, group, dst);
}

// Integer sums of kSteps consecutive steps (of layout L) starting at step s0 into acc.
template <class L, int G, int kSteps>
inline void dp_steps(const uint8_t* wq, const uint8_t* const (&aq)[G], int s0, __m512i (&acc)[kR][G]) {
  for (int r = 0; r < kR; ++r)
    for (int g = 0; g < G; ++g) acc[r][g] = _mm512_setzero_si512();
#pragma GCC unroll 8
  for (int s = s0; s < s0 + kSteps; ++s) {
    __m512i a[G];
    for (int g = 0; g < G; ++g) a[g] = _mm512_load_si512(aq[g] + 64 * s);
    for (int r = 0; r < kR; ++r) {
      const __m512i b = bcast_step<L::kStepElems>(wq + 256 * r + L::kStepElems * s);
      for (int g = 0; g < G; ++g) acc[r][g] = _mm512_dpbusd_epi32(acc[r][g], b, a[g]);
    }
  }
}

template <class L, int G>
inline void tile_w45(const uint8_t* ws, int64_t nb, const uint8_t* act, int64_t gb, const Prefetch& pf,
                     __m512 (&facc)[kR][G]) {
  for (int r = 0; r < kR; ++r)
    for (int g = 0; g < G; ++g) facc[r][g] = _mm512_setzero_ps();
  for (int64_t k = 0; k < nb; ++k) {
    prefetch_part(pf, k);
    const uint8_t* wb = ws + k * kW45Block;
    const uint8_t* ab[G];
    const uint8_t* aq[G];
    for (int g = 0; g < G; ++g) {
      ab[g] = act + g * gb + k * L::k8KBlock;
      aq[g] = ab[g] + L::k8KQ;
    }
    constexpr int kStep = L::kStepElems;
    __m512i isum[kR][G], acc[kR][G];
    for (int r = 0; r < kR; ++r)
      for (int g = 0; g < G; ++g) isum[r][g] = _mm512_setzero_si512();
#pragma GCC unroll 1
    for (int grp = 0; grp < 8; ++grp) {
      dp_steps<L, G, 32 / kStep>(wb + kW45Q, aq, 32 / kStep * grp, acc);
      for (int r = 0; r < kR; ++r) {
        const __m512i sc = bcast32(wb + kW45Sc + 32 * r + 4 * grp);
        for (int g = 0; g < G; ++g) isum[r][g] = _mm512_add_epi32(isum[r][g], _mm512_mullo_epi32(acc[r][g], sc));
      }
    }
    // mins: sum over groups of m * (sum of the group's activations)
    for (int r = 0; r < kR; ++r)
      for (int g = 0; g < G; ++g) acc[r][g] = _mm512_setzero_si512();
    for (int p = 0; p < 16 / kStep; ++p) {
      __m512i bs[G];
      for (int g = 0; g < G; ++g) bs[g] = _mm512_load_si512(ab[g] + L::k8KBs32 + 64 * p);
      for (int r = 0; r < kR; ++r) {
        const __m512i m = bcast_step<kStep>(wb + kW45Mp + 16 * r + kStep * p);
        for (int g = 0; g < G; ++g) acc[r][g] = _mm512_dpwssd_epi32(acc[r][g], bs[g], m);
      }
    }
    for (int g = 0; g < G; ++g) {
      const __m512 da = _mm512_load_ps(ab[g] + L::k8KD);
      for (int r = 0; r < kR; ++r) {
        const __m512 dd = _mm512_mul_ps(da, _mm512_set1_ps(loadf(wb + kW45D + 4 * r)));
        const __m512 dm = _mm512_mul_ps(da, _mm512_set1_ps(loadf(wb + kW45Dmin + 4 * r)));
        facc[r][g] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(token_sums<L>(isum[r][g])), dd, facc[r][g]);
        facc[r][g] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(token_sums<L>(acc[r][g])), dm, facc[r][g]);
      }
    }
  }
}

// kMin (Q2_K): the first pass sums mins x block sums, which are taken off scaled by dmin before
// the scale pass starts from zero; otherwise (Q6_K, Q3_K) they are the levels' offsets and the
// scale pass adds to them. kSmall (Q3_K, Q2_K: levels 0..7 / 0..3): a group's integer sum fits
// in int16 (16 x 7 x 127 = 14224), so it is scaled with one vpdpwssd against the scale in the low
// half of each lane (the sum's high half is its sign, times 0) instead of vpmulld (two uops) and
// vpaddd: the same integers.
template <bool kMin, bool kSmall, class L, int G>
inline void tile_w6(const uint8_t* ws, int64_t nb, const uint8_t* act, int64_t gb, const Prefetch& pf,
                     __m512 (&facc)[kR][G]) {
  for (int r = 0; r < kR; ++r)
    for (int g = 0; g < G; ++g) facc[r][g] = _mm512_setzero_ps();
  for (int64_t k = 0; k < nb; ++k) {
    prefetch_part(pf, k);
    const uint8_t* wb = ws + k * kW6Block;
    const uint8_t* ab[G];
    const uint8_t* aq[G];
    for (int g = 0; g < G; ++g) {
      ab[g] = act + g * gb + k * L::k8KBlock;
      aq[g] = ab[g] + L::k8KQ;
    }
    constexpr int kStep = L::kStepElems;
    __m512i isum[kR][G], acc[kR][G];
    // q - 32: start from -32 * sum_g sc[g] * bsum16[g].
    for (int r = 0; r < kR; ++r)
      for (int g = 0; g < G; ++g) isum[r][g] = _mm512_setzero_si512();
    for (int p = 0; p < 32 / kStep; ++p) {
      __m512i bs[G];
      for (int g = 0; g < G; ++g) bs[g] = _mm512_load_si512(ab[g] + L::k8KBs16 + 64 * p);
      for (int r = 0; r < kR; ++r) {
        const __m512i o = bcast_step<kStep>(wb + kW6Op + 32 * r + kStep * p);
        for (int g = 0; g < G; ++g) isum[r][g] = _mm512_dpwssd_epi32(isum[r][g], bs[g], o);
      }
    }
    if constexpr (kMin) {
      for (int g = 0; g < G; ++g) {
        const __m512 da = _mm512_load_ps(ab[g] + L::k8KD);
        for (int r = 0; r < kR; ++r) {
          const __m512 dm = _mm512_mul_ps(da, _mm512_set1_ps(loadf(wb + kW6Dmin + 4 * r)));
          facc[r][g] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(token_sums<L>(isum[r][g])), dm, facc[r][g]);
          isum[r][g] = _mm512_setzero_si512();
        }
      }
    }
#pragma GCC unroll 2
    for (int grp = 0; grp < 16; ++grp) {
      dp_steps<L, G, 16 / kStep>(wb + kW6Q, aq, 16 / kStep * grp, acc);
      for (int r = 0; r < kR; ++r) {
        const __m512i sc = bcast32(wb + kW6Sc + 64 * r + 4 * grp);
        if constexpr (kSmall) {
          const __m512i sc_lo = _mm512_and_si512(sc, _mm512_set1_epi32(0xFFFF));
          for (int g = 0; g < G; ++g) isum[r][g] = _mm512_dpwssd_epi32(isum[r][g], acc[r][g], sc_lo);
        } else {
          for (int g = 0; g < G; ++g) isum[r][g] = _mm512_add_epi32(isum[r][g], _mm512_mullo_epi32(acc[r][g], sc));
        }
      }
    }
    for (int g = 0; g < G; ++g) {
      const __m512 da = _mm512_load_ps(ab[g] + L::k8KD);
      for (int r = 0; r < kR; ++r) {
        const __m512 dd = _mm512_mul_ps(da, _mm512_set1_ps(loadf(wb + kW6D + 4 * r)));
        facc[r][g] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(token_sums<L>(isum[r][g])), dd, facc[r][g]);
      }
    }
  }
}

// ---- drivers ------------------------------------------------------------------------------

using PackW = void (*)(const uint8_t* w, int64_t wrb, int64_t nr, int64_t nb, uint8_t* ws);

// Row quads: unpack 4 weight rows once, then run them against the token groups (of layout L),
// three at a time (a 4 x 48 register tile: 12 integer accumulators, 12 group sums), then two,
// then one. The first tile of each quad prefetches the rows the next unpack reads (the next
// quad, or after the last quad the first rows of next_w, the caller's next work item).
template <PackW kPack, int64_t kElemsPerBlock, template <class, int> class Tile, class L>
void rows_driver(const uint8_t* w, int64_t wrb, int64_t nr, int64_t cols, const uint8_t* act, int64_t n_tokens,
                 float* y, int64_t ys, uint8_t* ws, const uint8_t* next_w, int64_t next_nr, int64_t gb) {
  const int64_t nb = cols / kElemsPerBlock;
  constexpr int64_t kT = L::kTokens;
  const int64_t n_groups = (n_tokens + kT - 1) / kT;
  for (int64_t r0 = 0; r0 < nr; r0 += kR) {
    const int64_t rq = min_i64(kR, nr - r0);
    kPack(w + r0 * wrb, wrb, rq, nb, ws);
    Prefetch pf = next_quad_prefetch(w, wrb, nr, r0, nb, next_w, next_nr);
    int64_t g0 = 0;
    for (; g0 + 3 <= n_groups; g0 += 3) {
      __m512 facc[kR][3];
      Tile<L, 3>::run(ws, nb, act + g0 * gb, gb, pf, facc);
      store_tile<L, 3>(facc, rq, n_tokens - g0 * kT, y + g0 * kT * ys + r0, ys);
      pf.p = nullptr;
    }
    for (; g0 + 2 <= n_groups; g0 += 2) {
      __m512 facc[kR][2];
      Tile<L, 2>::run(ws, nb, act + g0 * gb, gb, pf, facc);
      store_tile<L, 2>(facc, rq, n_tokens - g0 * kT, y + g0 * kT * ys + r0, ys);
      pf.p = nullptr;
    }
    if (g0 < n_groups) {
      __m512 facc[kR][1];
      Tile<L, 1>::run(ws, nb, act + g0 * gb, gb, pf, facc);
      store_tile<L, 1>(facc, rq, n_tokens - g0 * kT, y + g0 * kT * ys + r0, ys);
    }
  }
}

#define STRATA_TILE(Name, call)                                                                              \
  template <class L, int G>                                                                                   \
  struct Name {                                                                                               \
    static void run(const uint8_t* ws, int64_t nb, const uint8_t* a, int64_t gb, const Prefetch& pf,        \
                    __m512 (&f)[kR][G]) {                                                                     \
      call(ws, nb, a, gb, pf, f);                                                                             \
    }                                                                                                         \
  };
STRATA_TILE(TileW80, (tile_w8<false, L, G>))
STRATA_TILE(TileW81, (tile_w8<true, L, G>))
STRATA_TILE(TileW45, (tile_w45<L, G>))
STRATA_TILE(TileW6, (tile_w6<false, false, L, G>))
STRATA_TILE(TileW3, (tile_w6<false, true, L, G>))
STRATA_TILE(TileW2, (tile_w6<true, true, L, G>))
#undef STRATA_TILE

template <DType T, class L>
void rows_w80(const uint8_t* w, int64_t wrb, int64_t nr, int64_t cols, const uint8_t* act, int64_t n_tokens, float* y,
              int64_t ys, uint8_t* ws, const uint8_t* next_w, int64_t next_nr) {
  rows_driver<&pack_w80<T>, 32, TileW80, L>(w, wrb, nr, cols, act, n_tokens, y, ys, ws, next_w, next_nr,
                                            group_bytes_q8_0(cols));
}
// ---- in-place tiles: 2-8 tokens of Q8_0 / Q4_0 / Q5_0 / Q4_1 / Q5_1 weights, no weight scratch --

// The kSteps = 32 / kStep steps of one block, each step (elements [kStep s, kStep s + kStep)) in
// every token's lanes (the block's d and m: block_scales). Q8_0: its bytes broadcast from
// the block with the sign bit flipped (w + 128, as the scratch pack_w80 holds). The nibble types:
// their levels 0..15 / 0..31, without the scratch's + 120 / + 112 (tile_in_place takes that from
// the offset slot instead: corr_i >> 4 / >> 3, lane by lane, the same integers): the 16 nibble
// bytes broadcast and masked in place, and the fifth bits of Q5_0 / Q5_1 added under a byte mask
// per step; in pairs (4 steps) those two unpack the block once in a register and pick each step
// out with one vpermq instead (measured: quads 1.15x faster with the masks, pairs 1.3x slower).
template <DType T>
constexpr bool kFifthBits = T == DType::Q5_0 || T == DType::Q5_1;

template <DType T, int kStep>
inline void weight_steps(const uint8_t* blk, __m512i (&w)[32 / kStep]) {
  constexpr int kSteps = 32 / kStep;
  if constexpr (T == DType::Q8_0) {
    const uint8_t* qs = blk + offsetof(BlockQ8_0, qs);
    for (int s = 0; s < kSteps; ++s)
      w[s] = _mm512_xor_si512(bcast_step<kStep>(qs + kStep * s), _mm512_set1_epi8(static_cast<char>(0x80)));
    return;
  }
  const uint8_t* qs;
  uint32_t qh = 0;
  if constexpr (T == DType::Q4_0) {
    qs = reinterpret_cast<const BlockQ4_0*>(blk)->qs;
  } else if constexpr (T == DType::Q5_0) {
    qs = reinterpret_cast<const BlockQ5_0*>(blk)->qs;
    std::memcpy(&qh, reinterpret_cast<const BlockQ5_0*>(blk)->qh, 4);
  } else if constexpr (T == DType::Q4_1) {
    qs = reinterpret_cast<const BlockQ4_1*>(blk)->qs;
  } else {
    qs = reinterpret_cast<const BlockQ5_1*>(blk)->qs;
    std::memcpy(&qh, reinterpret_cast<const BlockQ5_1*>(blk)->qh, 4);
  }
  if constexpr (kFifthBits<T> && kStep == 8) {  // pairs: unpack once, a vpermq a step
    const __m128i m4 = _mm_set1_epi8(0x0F);
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m256i q = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), m4), _mm_and_si128(v, m4));
    const __m512i u = _mm512_castsi256_si512(_mm256_mask_add_epi8(q, _cvtu32_mask32(qh), q, _mm256_set1_epi8(16)));
    for (int s = 0; s < kSteps; ++s) w[s] = _mm512_permutexvar_epi64(_mm512_set1_epi64(s), u);
    return;
  }
  // Nibble byte i holds element i (low) and element i + 16 (high).
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  if constexpr (kStep == 32) {  // the 16 bytes in every 128-bit lane: low nibbles, high, low, high
    const __m512i v = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
    const long long k4 = 0x0004000400040004LL;  // vpsrlvw: a count per 16-bit word
    w[0] = _mm512_and_si512(_mm512_srlv_epi16(v, _mm512_set_epi64(k4, k4, 0, 0, k4, k4, 0, 0)), m4);
  } else if constexpr (kStep == 16) {
    const __m512i v = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
    w[0] = _mm512_and_si512(v, m4);
    w[1] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
  } else {
    const __m512i v0 = bcast_step<8>(qs), v1 = bcast_step<8>(qs + 8);
    w[0] = _mm512_and_si512(v0, m4);
    w[1] = _mm512_and_si512(v1, m4);
    w[2] = _mm512_and_si512(_mm512_srli_epi16(v0, 4), m4);
    w[3] = _mm512_and_si512(_mm512_srli_epi16(v1, 4), m4);
  }
  if constexpr (kFifthBits<T> && kStep >= 16) {  // quads and octets (pairs returned above)
    // Step s holds elements [kStep s, kStep s + kStep) in each of its 64 / kStep copies: their
    // fifth bits (qh bits kStep s ...) repeated as often make its byte mask.
    constexpr uint64_t kRepeat = kStep == 32 ? 0x0000000100000001ULL : 0x0001000100010001ULL;
    constexpr uint64_t kStepBits = (uint64_t{1} << kStep) - 1;
    for (int s = 0; s < kSteps; ++s) {
      const __mmask64 hi = _cvtu64_mask64(((uint64_t{qh} >> (kStep * s)) & kStepBits) * kRepeat);
      w[s] = _mm512_mask_add_epi8(w[s], hi, w[s], _mm512_set1_epi8(16));
    }
  }
}

constexpr int kInPlaceRows = 8;

constexpr int64_t kScaleChunk = 64;  // blocks whose scales block_scales converts at once

// The fp16 d (and m: Q4_1 / Q5_1) of blocks [k0, k0 + kn) of the kInPlaceRows rows (row[r]: a
// row's first block), as f32 in d[k][r] (m[k][r]): gathered with plain 16-bit moves, then
// converted 8 at a time (one block's 8 rows), so that the tile multiplies by a broadcast from memory
// instead of converting each block's d on its own (vpinsrw, vcvtph2ps, vbroadcastss per row and
// block). The conversion is exact: the same floats as h2f.
template <DType T>
inline void block_scales(const uint8_t* const (&row)[kInPlaceRows], int64_t k0, int64_t kn,
                         float (&d)[kScaleChunk][kInPlaceRows], float (&m)[kScaleChunk][kInPlaceRows]) {
  static_assert(kInPlaceRows == 8, "one 8-wide conversion per block");
  constexpr int64_t kBB = kBlockBytes32<T>;
  alignas(16) uint16_t h[2][kScaleChunk][kInPlaceRows];
  for (int r = 0; r < kInPlaceRows; ++r)
    for (int64_t k = 0; k < kn; ++k) {
      const uint8_t* blk = row[r] + (k0 + k) * kBB;
      std::memcpy(&h[0][k][r], blk, 2);                           // d: every block's first field
      if constexpr (kHasMin<T>) std::memcpy(&h[1][k][r], blk + 2, 2);  // m: Q4_1 / Q5_1's second
    }
  for (int64_t k = 0; k < kn; ++k) {
    _mm256_store_ps(d[k], _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(h[0][k]))));
    if constexpr (kHasMin<T>)
      _mm256_store_ps(m[k], _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(h[1][k]))));
  }
}

// Quads (4 lanes a token) add their lanes for 4 rows at once: one transpose of the rows' sums
// within each token's 128 bits leaves lane 4 t + j holding row j's sum for token t, so the float
// steps run 4 rows in one vector (facc[h]: rows 4 h .. 4 h + 3), each lane tile_w8's operations of
// one lane on the same integer. Pairs (2 lanes a token) do the same for 2 rows (lane 2 t + j: row
// j of token t; facc[h]: rows 2 h, 2 h + 1). Octets keep a vector a row (token_sums).
template <class L>
constexpr int kRowsInLanes = L::kLanes == 4 || L::kLanes == 2 ? L::kLanes : 1;

// The four rows' integer sums of each token: lane 4 t + j <- the sum of row j's 4 lanes of token t
// (int32 adds wrap: exact in any order).
inline __m512i row_sums4(__m512i a0, __m512i a1, __m512i a2, __m512i a3) {
  const __m512i v01 = _mm512_add_epi32(_mm512_unpacklo_epi32(a0, a1), _mm512_unpackhi_epi32(a0, a1));
  const __m512i v23 = _mm512_add_epi32(_mm512_unpacklo_epi32(a2, a3), _mm512_unpackhi_epi32(a2, a3));
  return _mm512_add_epi32(_mm512_unpacklo_epi64(v01, v23), _mm512_unpackhi_epi64(v01, v23));
}
// The same for pairs: lane 2 t + j <- the sum of row j's 2 lanes of token t.
inline __m512i row_sums2(__m512i a0, __m512i a1) {
  const __m512i lo = _mm512_unpacklo_epi32(a0, a1), hi = _mm512_unpackhi_epi32(a0, a1);
  return _mm512_add_epi32(_mm512_unpacklo_epi64(lo, hi), _mm512_unpackhi_epi64(lo, hi));
}
// P rows in lanes (kRowsInLanes: 2 or 4): their sums transposed (lane P t + j: row j of token t),
// P consecutive per-row floats at p (16-byte aligned for P = 4) repeated over the lanes, and each
// token's first lane copied to its other P - 1.
template <int P>
inline __m512i row_sums(const __m512i (&a)[P]) {
  if constexpr (P == 2) return row_sums2(a[0], a[1]);
  else return row_sums4(a[0], a[1], a[2], a[3]);
}
template <int P>
inline __m512 row_scales(const float* p) {
  if constexpr (P == 2) {
    double v;
    std::memcpy(&v, p, sizeof v);
    return _mm512_castpd_ps(_mm512_set1_pd(v));
  } else {
    return _mm512_broadcast_f32x4(_mm_load_ps(p));
  }
}
template <int P>
inline __m512 token_first_lane(__m512 v) {
  if constexpr (P == 2) return _mm512_moveldup_ps(v);
  else return _mm512_permute_ps(v, 0);
}

// kInPlaceRows rows (row[r]: a row's first block) x one group of layout L (pairs, quads or
// octets) over all nb blocks, read in place: per block, per row, the integer sum of the steps
// (vpdpbusd from the lane's offset, or from zero for Q4_1 / Q5_1), then tile_w8's float
// operations in its order (for Q4_1 / Q5_1, s_a m_w after the conversion) on the same integers,
// lane by lane, so pairs give rows_pairs' bits. Quads: kRowsInLanes.
template <DType T, class L>
inline void tile_in_place(const uint8_t* const (&row)[kInPlaceRows], int64_t nb, const uint8_t* act, int64_t ahead,
                          __m512 (&facc)[kInPlaceRows]) {
  constexpr int kStep = L::kStepElems, kSteps = 32 / kStep;
  constexpr int64_t kBB = kBlockBytes32<T>;
  for (int r = 0; r < kInPlaceRows; ++r) facc[r] = _mm512_setzero_ps();
  alignas(64) float dw[kScaleChunk][kInPlaceRows], mw[kScaleChunk][kInPlaceRows];
  for (int64_t k0 = 0; k0 < nb; k0 += kScaleChunk) {
    const int64_t kn = min_i64(kScaleChunk, nb - k0);
    block_scales<T>(row, k0, kn, dw, mw);
    for (int64_t kc = 0; kc < kn; ++kc) {
      const int64_t k = k0 + kc;
      const uint8_t* ab = act + k * L::k80Block;
      __m512i a[kSteps];
      for (int s = 0; s < kSteps; ++s) a[s] = _mm512_load_si512(ab + L::k80Q + 64 * s);
      const __m512 da = _mm512_load_ps(ab + L::k80D);
      // per lane, -128 x the sum of the activations it meets (i32), scaled to the levels'
      // offset: Q8_0's w + 128 takes it whole, Q4_0's w + 8 and Q5_0's w + 16 a 16th and an 8th
      // (exact); or for Q4_1 / Q5_1 the activations' s (f32)
      const __m512i corr = _mm512_load_si512(ab + L::k80Corr);
      const __m512i off = T == DType::Q4_0   ? _mm512_srai_epi32(corr, 4)
                          : T == DType::Q5_0 ? _mm512_srai_epi32(corr, 3)
                                             : corr;
      // integer sums are exact: starting from the offset is adding it last
      auto row_sum = [&](int r) {
        const uint8_t* blk = row[r] + k * kBB;
        _mm_prefetch(reinterpret_cast<const char*>(blk + ahead), _MM_HINT_T1);
        __m512i w[kSteps];
        weight_steps<T, kStep>(blk, w);
        __m512i acc = kHasMin<T> ? _mm512_setzero_si512() : off;
        for (int s = 0; s < kSteps; ++s) acc = _mm512_dpbusd_epi32(acc, w[s], a[s]);
        return acc;
      };
      if constexpr (constexpr int P = kRowsInLanes<L>; P > 1) {
        for (int h = 0; h < kInPlaceRows / P; ++h) {
          __m512i rs[P];
          for (int j = 0; j < P; ++j) rs[j] = row_sum(P * h + j);
          const __m512i isum = row_sums<P>(rs);
          const __m512 dd = _mm512_mul_ps(da, row_scales<P>(&dw[kc][P * h]));
          facc[h] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), dd, facc[h]);
          if constexpr (kHasMin<T>)  // s_a: the first lane of each token's P
            facc[h] = _mm512_fmadd_ps(token_first_lane<P>(_mm512_castsi512_ps(off)), row_scales<P>(&mw[kc][P * h]),
                                      facc[h]);
        }
      } else {
        for (int r = 0; r < kInPlaceRows; ++r) {
          const __m512i acc = row_sum(r);
          const __m512 dd = _mm512_mul_ps(da, _mm512_set1_ps(dw[kc][r]));
          facc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(token_sums<L>(acc)), dd, facc[r]);
          if constexpr (kHasMin<T>)
            facc[r] = _mm512_fmadd_ps(_mm512_castsi512_ps(off), _mm512_set1_ps(mw[kc][r]), facc[r]);
        }
      }
    }
  }
}

// GemmKernels::in_place rows: kInPlaceRows rows at a time, each read once, in place. Rows of a
// tile past nr read the last row again (their results are not stored). Token t of the group is
// the first of its lanes [kLanes t, kLanes t + kLanes) (store_tile's); quads: row r's is lane
// 4 t + r % 4 of facc[r / 4], pairs' lane 2 t + r % 2 of facc[r / 2] (kRowsInLanes).
template <DType T, class L>
void rows_in_place(const uint8_t* w, int64_t wrb, int64_t nr, int64_t cols, const uint8_t* act, int64_t n_tokens,
                   float* y, int64_t ys, uint8_t*, const uint8_t*, int64_t) {
  const int64_t nb = cols / 32;
  const int64_t ahead = in_place_prefetch_offset(wrb, kInPlaceRows);
  for (int64_t r0 = 0; r0 < nr; r0 += kInPlaceRows) {
    const int64_t rn = min_i64(kInPlaceRows, nr - r0);
    const uint8_t* row[kInPlaceRows];
    for (int r = 0; r < kInPlaceRows; ++r) row[r] = w + (r0 + min_i64(r, rn - 1)) * wrb;
    __m512 facc[kInPlaceRows];
    tile_in_place<T, L>(row, nb, act, ahead, facc);
    alignas(64) float o[kInPlaceRows][16];
    for (int r = 0; r < kInPlaceRows; ++r) _mm512_store_ps(o[r], facc[r]);
    for (int64_t t = 0; t < min_i64(n_tokens, L::kTokens); ++t)
      for (int64_t r = 0; r < rn; ++r)
        y[t * ys + r0 + r] = kRowsInLanes<L> > 1 ? o[r / kRowsInLanes<L>][kRowsInLanes<L> * t + r % kRowsInLanes<L>]
                                                 : o[r][L::kLanes * t];
  }
}

template <DType T, class L>
void rows_w81(const uint8_t* w, int64_t wrb, int64_t nr, int64_t cols, const uint8_t* act, int64_t n_tokens, float* y,
              int64_t ys, uint8_t* ws, const uint8_t* next_w, int64_t next_nr) {
  rows_driver<&pack_w81<T>, 32, TileW81, L>(w, wrb, nr, cols, act, n_tokens, y, ys, ws, next_w, next_nr,
                                            group_bytes_q8_0(cols));
}
template <bool kFive, class L>
void rows_w45(const uint8_t* w, int64_t wrb, int64_t nr, int64_t cols, const uint8_t* act, int64_t n_tokens, float* y,
              int64_t ys, uint8_t* ws, const uint8_t* next_w, int64_t next_nr) {
  rows_driver<&pack_w45<kFive>, 256, TileW45, L>(w, wrb, nr, cols, act, n_tokens, y, ys, ws, next_w, next_nr,
                                                 group_bytes_q8_k(cols));
}
template <PackW kPack, template <class, int> class Tile, class L>
void rows_w6(const uint8_t* w, int64_t wrb, int64_t nr, int64_t cols, const uint8_t* act, int64_t n_tokens, float* y,
             int64_t ys, uint8_t* ws, const uint8_t* next_w, int64_t next_nr) {
  rows_driver<kPack, 256, Tile, L>(w, wrb, nr, cols, act, n_tokens, y, ys, ws, next_w, next_nr,
                                   group_bytes_q8_k(cols));
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
const GemmKernels kQ8_0{kMinTokensW80, &group_bytes_q8_0, &pack_group_q8_0<Wide>, &scratch_bytes_w80,
                        &rows_w80<DType::Q8_0, Wide>, &pack_group_q8_0<Pairs>, &rows_w80<DType::Q8_0, Pairs>,
                        kInPlace<DType::Q8_0>};
const GemmKernels kQ4_0{kMinTokensW80, &group_bytes_q8_0, &pack_group_q8_0<Wide>, &scratch_bytes_w80,
                        &rows_w80<DType::Q4_0, Wide>, &pack_group_q8_0<Pairs>, &rows_w80<DType::Q4_0, Pairs>,
                        kInPlace<DType::Q4_0>};
const GemmKernels kQ5_0{kMinTokensW80, &group_bytes_q8_0, &pack_group_q8_0<Wide>, &scratch_bytes_w80,
                        &rows_w80<DType::Q5_0, Wide>, &pack_group_q8_0<Pairs>, &rows_w80<DType::Q5_0, Pairs>,
                        kInPlace<DType::Q5_0>};
const GemmKernels kQ4_1{kMinTokensW81, &group_bytes_q8_0, &pack_group_q8_1<Wide>, &scratch_bytes_w81,
                        &rows_w81<DType::Q4_1, Wide>, &pack_group_q8_1<Pairs>, &rows_w81<DType::Q4_1, Pairs>,
                        kInPlaceMin<DType::Q4_1>};
const GemmKernels kQ5_1{kMinTokensW81, &group_bytes_q8_0, &pack_group_q8_1<Wide>, &scratch_bytes_w81,
                        &rows_w81<DType::Q5_1, Wide>, &pack_group_q8_1<Pairs>, &rows_w81<DType::Q5_1, Pairs>,
                        kInPlaceMin<DType::Q5_1>};
const GemmKernels kQ4_K{kMinTokensW45, &group_bytes_q8_k, &pack_group_q8_k<Wide>, &scratch_bytes_w45,
                        &rows_w45<false, Wide>, &pack_group_q8_k<Pairs>, &rows_w45<false, Pairs>};
const GemmKernels kQ5_K{kMinTokensW45, &group_bytes_q8_k, &pack_group_q8_k<Wide>, &scratch_bytes_w45,
                        &rows_w45<true, Wide>, &pack_group_q8_k<Pairs>, &rows_w45<true, Pairs>};
const GemmKernels kQ6_K{kMinTokensW6, &group_bytes_q8_k, &pack_group_q8_k<Wide>, &scratch_bytes_w6,
                        &rows_w6<&pack_w6, TileW6, Wide>, &pack_group_q8_k<Pairs>, &rows_w6<&pack_w6, TileW6, Pairs>};
const GemmKernels kQ3_K{kMinTokensW3, &group_bytes_q8_k, &pack_group_q8_k<Wide>, &scratch_bytes_w6,
                        &rows_w6<&pack_w3, TileW3, Wide>, &pack_group_q8_k<Pairs>, &rows_w6<&pack_w3, TileW3, Pairs>};
const GemmKernels kQ2_K{kMinTokensW2, &group_bytes_q8_k, &pack_group_q8_k<Wide>, &scratch_bytes_w6,
                        &rows_w6<&pack_w2, TileW2, Wide>, &pack_group_q8_k<Pairs>, &rows_w6<&pack_w2, TileW2, Pairs>};

}  // namespace
}  // namespace strata::kernels::gemm_avx512

namespace strata::kernels::detail {
const GemmKernels* avx512_gemm(DType t) {
  using namespace gemm_avx512;
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
