// kernels/cpu/attention_block_avx512.cpp — the AVX-512 attention block kernels (see
// attention_block.h): one on f32 copies of a key block (prompts), one on the block where it lies
// in an F32 / F16 / Q8_0 cache (decode). Both need a head size that is a multiple of 16.
//
// Arithmetic, the same in both so that a token's output does not depend on the path:
// - score of (row, key): one 16-float accumulator over d in 16-float chunks from zero (FMA), then
//   a fixed tree over its 16 lanes (totals16);
// - softmax: 16 keys at a time, the AVX2 kernel's polynomial exp, l summed over 16-key chunks in
//   key order and then by a fixed tree (masked keys add exactly 0);
// - values: per (row, lane) one FMA chain in key order from zero (a key a row does not see has
//   probability exactly 0, and fma(0, v, acc) == acc).
// Tiles: scores 4 rows x 4 keys (16 accumulators: a K chunk feeds 4 FMAs, a Q chunk 4), values
// 4 rows x 64 floats (a V row is read once for the 4 rows). The AVX2 kernel sums a score over
// 8-float chunks, so its bits differ from these: attention.cpp takes both paths from one family.
// Decode prefetches the next key block into L2, half of it during the scores, half during the values.
#include <immintrin.h>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/attention_block.h"
#include "kernels/common/scalar_math.h"

// GCC 12 reports the _mm512_undefined_* inside the AVX-512 cast and convert intrinsics as
// (maybe-)uninitialized.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace strata::kernels::detail {

#include "kernels/cpu/attention_block_x86.inc"

namespace {

constexpr int64_t B = kAttentionKeyBlock;

// e^x for x <= 0, lane by lane the same operations as attention_block_avx2.cpp's exp_nonpositive.
inline __m512 exp_nonpositive(__m512 x) {
  using E = ExpPoly;
  x = _mm512_max_ps(x, _mm512_set1_ps(E::kMin));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(E::kLog2e)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(E::kLn2Hi), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(E::kLn2Lo), r);
  __m512 y = _mm512_set1_ps(E::kP5);
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(E::kP4));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(E::kP3));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(E::kP2));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(E::kP1));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(E::kP0));
  y = _mm512_fmadd_ps(y, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  return _mm512_mul_ps(y, _mm512_castsi512_ps(e));
}

// The two 8-float halves added: the first step of every reduction here.
inline __m256 fold(__m512 v) { return _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1)); }

inline float hsum(__m512 v) {
  const __m256 h = fold(v);
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// The totals of 16 accumulators s[r][k] (4 rows x 4 keys) as one vector, lane 4 r + k: each
// total is ((x0 + x2) + (x1 + x3)) within each 4-lane quarter Q0..Q3, then (Q0 + Q1) + (Q2 + Q3),
// whatever the other accumulators hold. 45 shuffles and adds for the 16, where reducing each
// accumulator alone (fold to 8, two hadds) takes about 76.
inline __m512 pair_lanes(__m512 a, __m512 b) {  // per quarter: a0+a2, b0+b2, a1+a3, b1+b3
  return _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
}
inline __m512 quad_keys(__m512 t01, __m512 t23) {  // per quarter: the 4 keys' partial totals
  const __m512d a = _mm512_castps_pd(t01), b = _mm512_castps_pd(t23);
  return _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)), _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
}
inline __m512 halves(__m512 u, __m512 w) {  // u Q0+Q1, u Q2+Q3, w Q0+Q1, w Q2+Q3
  return _mm512_add_ps(_mm512_shuffle_f32x4(u, w, _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_f32x4(u, w, _MM_SHUFFLE(3, 1, 3, 1)));
}
inline __m512 totals16(__m512 s00, __m512 s01, __m512 s02, __m512 s03, __m512 s10, __m512 s11, __m512 s12,
                       __m512 s13, __m512 s20, __m512 s21, __m512 s22, __m512 s23, __m512 s30, __m512 s31,
                       __m512 s32, __m512 s33) {
  const __m512 u0 = quad_keys(pair_lanes(s00, s01), pair_lanes(s02, s03));
  const __m512 u1 = quad_keys(pair_lanes(s10, s11), pair_lanes(s12, s13));
  const __m512 u2 = quad_keys(pair_lanes(s20, s21), pair_lanes(s22, s23));
  const __m512 u3 = quad_keys(pair_lanes(s30, s31), pair_lanes(s32, s33));
  return halves(halves(u0, u1), halves(u2, u3));
}

// Lanes j0 .. j0 + 15 that lie in [lo, hi).
inline __mmask16 key_mask(int64_t j0, int32_t lo, int32_t hi) {
  const __m512i idx = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int32_t>(j0)),
                                       _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
  return _mm512_cmpge_epi32_mask(idx, _mm512_set1_epi32(lo)) & _mm512_cmplt_epi32_mask(idx, _mm512_set1_epi32(hi));
}

// Softmax of each row over its keys, in place in a.p, for key chunks up to j_end16; keys outside
// a row's [lo, hi) (whatever a.p held there) get probability exactly 0.
void softmax_rows(const AttentionBlockArgs& a, int64_t j_end16) {
  const __m512 neg_inf = _mm512_set1_ps(kNegativeInfinity);
  const __m512 scale = _mm512_set1_ps(a.scale);
  for (int64_t r = 0; r < a.n_rows; ++r) {
    float* p = a.p + r * B;
    const int32_t lo = a.lo[r], hi = a.hi[r];
    __m512 mv = neg_inf;
    for (int64_t j = 0; j < j_end16; j += 16) {
      const __m512 s = _mm512_mask_mul_ps(neg_inf, key_mask(j, lo, hi), _mm512_loadu_ps(p + j), scale);
      _mm512_storeu_ps(p + j, s);
      mv = _mm512_max_ps(mv, s);
    }
    if (a.softcap > 0.0f) {  // gemma2: capped scores of the row's keys (scalar tanh, as the reference)
      mv = neg_inf;
      for (int32_t j = lo; j < hi; ++j) p[j] = softcap(p[j], a.softcap);
      for (int64_t j = 0; j < j_end16; j += 16) mv = _mm512_max_ps(mv, _mm512_loadu_ps(p + j));
    }
    const float m = _mm512_reduce_max_ps(mv);  // a max: exact in any order
    const __m512 m16 = _mm512_set1_ps(m);
    __m512 lv = _mm512_setzero_ps();
    for (int64_t j = 0; j < j_end16; j += 16) {
      const __m512 e =
          _mm512_maskz_mov_ps(key_mask(j, lo, hi), exp_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(p + j), m16)));
      _mm512_storeu_ps(p + j, e);
      lv = _mm512_add_ps(lv, e);
    }
    a.m[r] = m;
    a.l[r] = hsum(lv);
  }
}

// 16 elements [d, d + 16) of a row as f32, exactly as dequantize_row gives them. A row is read in
// spans of 32 elements: scale(row, d32) once per span (Q8_0: the block's scale), then load(row, d, s).
struct LoadF32 {
  static __m512 scale(const uint8_t*, int64_t) { return _mm512_setzero_ps(); }
  static __m512 load(const uint8_t* row, int64_t d, __m512) {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + d);
  }
};
struct LoadF16 {
  static __m512 scale(const uint8_t*, int64_t) { return _mm512_setzero_ps(); }
  static __m512 load(const uint8_t* row, int64_t d, __m512) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * d)));
  }
};
// Q8_0: 34-byte blocks of 32 (an f16 scale, 32 int8); element = scale * q, one rounding, as in
// dequantize_q8_0.
struct LoadQ8_0 {
  static __m512 scale(const uint8_t* row, int64_t d32) {
    return _mm512_cvtph_ps(_mm256_set1_epi16(static_cast<short>(q8_0_scale_bits(row, d32))));
  }
  static __m512 load(const uint8_t* row, int64_t d, __m512 s) {
    const __m512i q = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q8_0_quants(row, d))));
    return _mm512_mul_ps(s, _mm512_cvtepi32_ps(q));
  }
};
// f32 copies: rows of hdp floats (the prompt kernel's K and V).
struct RowsF32 {
  const float* base;
  int64_t hdp;
  const uint8_t* row(int64_t j) const { return reinterpret_cast<const uint8_t*>(base + j * hdp); }
};
// Rows where they lie in the cache.
struct RowsCache {
  const uint8_t* base;
  int64_t stride;
  const uint8_t* row(int64_t j) const { return base + j * stride; }
};

// A range [at, end) of the next block's bytes (K and V alike), prefetched a slice of whole cache
// lines per step into L2 (see attention_block_avx2.cpp's cache_rows for why L2). A macro, not a
// helper function: GCC takes a function that only prefetches for a pure one and drops its calls.
struct PrefetchRange {
  const uint8_t* k = nullptr;
  const uint8_t* v = nullptr;
  int64_t at = 0, end = 0, slice = 0;  // bytes; slice: whole cache lines per step
  void plan(int64_t steps) { slice = steps > 0 ? ((end - at + 63) / 64 + steps - 1) / steps * 64 : 0; }
};
#define STRATA_PREFETCH_STEP(pr)                                                              \
  for (const int64_t stop_ = lesser((pr).at + (pr).slice, (pr).end); (pr).at < stop_; (pr).at += 64) { \
    _mm_prefetch(reinterpret_cast<const char*>((pr).k + (pr).at), _MM_HINT_T1);            \
    _mm_prefetch(reinterpret_cast<const char*>((pr).v + (pr).at), _MM_HINT_T1);            \
  }

// Scores p[r][j .. j + 4) of R query rows (R <= 4) against keys j .. j + 3, of which the first
// n_keys are read (the others are computed on key j again).
template <class L, int R, class Rows>
inline void scores_tile(const float* q, int64_t hdp, const Rows& rows, int64_t j, int64_t n_keys, float* p) {
  const uint8_t* k0 = rows.row(j);
  const uint8_t* k1 = n_keys > 1 ? rows.row(j + 1) : k0;
  const uint8_t* k2 = n_keys > 2 ? rows.row(j + 2) : k0;
  const uint8_t* k3 = n_keys > 3 ? rows.row(j + 3) : k0;
  const __m512 z = _mm512_setzero_ps();
  __m512 s00 = z, s01 = z, s02 = z, s03 = z, s10 = z, s11 = z, s12 = z, s13 = z;
  __m512 s20 = z, s21 = z, s22 = z, s23 = z, s30 = z, s31 = z, s32 = z, s33 = z;
  __m512 c0 = z, c1 = z, c2 = z, c3 = z;
  for (int64_t d = 0; d < hdp; d += 16) {
    if ((d & 31) == 0) c0 = L::scale(k0, d), c1 = L::scale(k1, d), c2 = L::scale(k2, d), c3 = L::scale(k3, d);
    const __m512 ka = L::load(k0, d, c0), kb = L::load(k1, d, c1), kc = L::load(k2, d, c2), kd = L::load(k3, d, c3);
    const __m512 x0 = _mm512_loadu_ps(q + d);
    s00 = _mm512_fmadd_ps(x0, ka, s00);
    s01 = _mm512_fmadd_ps(x0, kb, s01);
    s02 = _mm512_fmadd_ps(x0, kc, s02);
    s03 = _mm512_fmadd_ps(x0, kd, s03);
    if constexpr (R > 1) {
      const __m512 x1 = _mm512_loadu_ps(q + hdp + d);
      s10 = _mm512_fmadd_ps(x1, ka, s10);
      s11 = _mm512_fmadd_ps(x1, kb, s11);
      s12 = _mm512_fmadd_ps(x1, kc, s12);
      s13 = _mm512_fmadd_ps(x1, kd, s13);
    }
    if constexpr (R > 2) {
      const __m512 x2 = _mm512_loadu_ps(q + 2 * hdp + d);
      s20 = _mm512_fmadd_ps(x2, ka, s20);
      s21 = _mm512_fmadd_ps(x2, kb, s21);
      s22 = _mm512_fmadd_ps(x2, kc, s22);
      s23 = _mm512_fmadd_ps(x2, kd, s23);
    }
    if constexpr (R > 3) {
      const __m512 x3 = _mm512_loadu_ps(q + 3 * hdp + d);
      s30 = _mm512_fmadd_ps(x3, ka, s30);
      s31 = _mm512_fmadd_ps(x3, kb, s31);
      s32 = _mm512_fmadd_ps(x3, kc, s32);
      s33 = _mm512_fmadd_ps(x3, kd, s33);
    }
  }
  // All 4 lanes of each row are stored (j is a multiple of 4, so j + 4 <= B): a key past the
  // block's last gets a finite score that the softmax masks.
  const __m512 t = totals16(s00, s01, s02, s03, s10, s11, s12, s13, s20, s21, s22, s23, s30, s31, s32, s33);
  _mm_storeu_ps(p + j, _mm512_castps512_ps128(t));
  if constexpr (R > 1) _mm_storeu_ps(p + B + j, _mm512_extractf32x4_ps(t, 1));
  if constexpr (R > 2) _mm_storeu_ps(p + 2 * B + j, _mm512_extractf32x4_ps(t, 2));
  if constexpr (R > 3) _mm_storeu_ps(p + 3 * B + j, _mm512_extractf32x4_ps(t, 3));
}

// acc[r][d, d + 16 NC) = sum over keys [lo, hi) of p[r][j] v_j for R rows (R <= 4), NC chunks of
// 16 floats (NC = 4 or 1; d a multiple of 64 when NC = 4, so the chunks pair into Q8_0 spans).
// Named accumulators, not an array: GCC keeps an array of vectors in memory.
template <class L, int R, int NC, class Rows>
inline void values_tile(const float* p, const Rows& rows, int64_t lo, int64_t hi, int64_t d, int64_t hdp, float* acc,
                        PrefetchRange* pf) {
  static_assert(NC == 4 || NC == 1);
  const __m512 z = _mm512_setzero_ps();
  __m512 a00 = z, a01 = z, a02 = z, a03 = z, a10 = z, a11 = z, a12 = z, a13 = z;
  __m512 a20 = z, a21 = z, a22 = z, a23 = z, a30 = z, a31 = z, a32 = z, a33 = z;
  if (pf != nullptr) pf->plan(hi - lo);
  for (int64_t j = lo; j < hi; ++j) {
    if (pf != nullptr) STRATA_PREFETCH_STEP(*pf)
    const uint8_t* row = rows.row(j);
    __m512 v0, v1 = z, v2 = z, v3 = z;
    if constexpr (NC == 4) {
      const __m512 sa = L::scale(row, d), sb = L::scale(row, d + 32);
      v0 = L::load(row, d, sa), v1 = L::load(row, d + 16, sa);
      v2 = L::load(row, d + 32, sb), v3 = L::load(row, d + 48, sb);
    } else {
      v0 = L::load(row, d, L::scale(row, d & ~int64_t{31}));
    }
    const __m512 w0 = _mm512_set1_ps(p[j]);
    a00 = _mm512_fmadd_ps(w0, v0, a00);
    if constexpr (NC == 4) {
      a01 = _mm512_fmadd_ps(w0, v1, a01);
      a02 = _mm512_fmadd_ps(w0, v2, a02);
      a03 = _mm512_fmadd_ps(w0, v3, a03);
    }
    if constexpr (R > 1) {
      const __m512 w1 = _mm512_set1_ps(p[B + j]);
      a10 = _mm512_fmadd_ps(w1, v0, a10);
      if constexpr (NC == 4) {
        a11 = _mm512_fmadd_ps(w1, v1, a11);
        a12 = _mm512_fmadd_ps(w1, v2, a12);
        a13 = _mm512_fmadd_ps(w1, v3, a13);
      }
    }
    if constexpr (R > 2) {
      const __m512 w2 = _mm512_set1_ps(p[2 * B + j]);
      a20 = _mm512_fmadd_ps(w2, v0, a20);
      if constexpr (NC == 4) {
        a21 = _mm512_fmadd_ps(w2, v1, a21);
        a22 = _mm512_fmadd_ps(w2, v2, a22);
        a23 = _mm512_fmadd_ps(w2, v3, a23);
      }
    }
    if constexpr (R > 3) {
      const __m512 w3 = _mm512_set1_ps(p[3 * B + j]);
      a30 = _mm512_fmadd_ps(w3, v0, a30);
      if constexpr (NC == 4) {
        a31 = _mm512_fmadd_ps(w3, v1, a31);
        a32 = _mm512_fmadd_ps(w3, v2, a32);
        a33 = _mm512_fmadd_ps(w3, v3, a33);
      }
    }
  }
  const auto put = [&](float* o, __m512 c0, __m512 c1, __m512 c2, __m512 c3) {
    _mm512_storeu_ps(o + d, c0);
    if constexpr (NC == 4) {
      _mm512_storeu_ps(o + d + 16, c1);
      _mm512_storeu_ps(o + d + 32, c2);
      _mm512_storeu_ps(o + d + 48, c3);
    }
  };
  put(acc, a00, a01, a02, a03);
  if constexpr (R > 1) put(acc + hdp, a10, a11, a12, a13);
  if constexpr (R > 2) put(acc + 2 * hdp, a20, a21, a22, a23);
  if constexpr (R > 3) put(acc + 3 * hdp, a30, a31, a32, a33);
}

// Scores of R rows from row r0 against keys [j_lo, j_hi) (j_lo a multiple of 4), issuing pf (if
// any) in equal slices over the key quads.
template <class L, int R, class Rows>
void rows_scores(const AttentionBlockArgs& a, const Rows& rows, PrefetchRange* pf, int64_t r0, int64_t j_lo,
                 int64_t j_hi) {
  const float* q = a.q + r0 * a.hdp;
  float* p = a.p + r0 * B;
  if (pf != nullptr) pf->plan((j_hi - j_lo + 3) / 4);
  for (int64_t j = j_lo; j < j_hi; j += 4) {
    if (pf != nullptr) STRATA_PREFETCH_STEP(*pf)
    scores_tile<L, R>(q, a.hdp, rows, j, lesser<int64_t>(4, j_hi - j), p);
  }
}

// Values of R rows from row r0; the first tile issues pf (if any) in equal slices over its keys.
template <class L, int R, class Rows>
void rows_values(const AttentionBlockArgs& a, const Rows& rows, PrefetchRange* pf, int64_t r0) {
  const KeyRange keys = keys_of_rows(a, r0, R);
  const int64_t lo = keys.lo, hi = keys.hi;
  const float* p = a.p + r0 * B;
  float* acc = a.acc + r0 * a.hdp;
  int64_t d = 0;
  for (; d + 64 <= a.hdp; d += 64, pf = nullptr) values_tile<L, R, 4>(p, rows, lo, hi, d, a.hdp, acc, pf);
  for (; d < a.hdp; d += 16, pf = nullptr) values_tile<L, R, 1>(p, rows, lo, hi, d, a.hdp, acc, pf);
}

// The whole block: scores of every row over [min lo, max hi) (a row's keys outside its own range
// are masked by the softmax), softmax, values; 4 rows at a time.
template <class L, class Rows>
void block(const AttentionBlockArgs& a, const Rows& k_rows, const Rows& v_rows, const CacheBlock* kv) {
  const KeyRange keys = keys_of_rows(a, 0, a.n_rows);
  // The next block's lines: the first half while the scores run, the second while the values do
  // (the two take about as long), each by the first tile of rows; empty ranges without a next block.
  // Issued during the scores alone, the requests came in bursts that left memory idle through the
  // values: attention_bench 2 threads, depth 4096, 96 layers' f16 caches (from DRAM), median
  // 0.36-0.39 ms per call, against 0.30 with the halves (and 0.30-0.36 with a quarter first,
  // 0.33-0.37 with all during the values).
  const int64_t next_bytes = kv != nullptr ? kv->next_bytes : 0;
  const int64_t split = next_bytes / 128 * 64;  // half of the whole lines
  const uint8_t* next_k = kv != nullptr ? kv->next_k : nullptr;
  const uint8_t* next_v = kv != nullptr ? kv->next_v : nullptr;
  PrefetchRange scores_part{next_k, next_v, 0, split, 0}, values_part{next_k, next_v, split, next_bytes, 0};
  // From min lo rounded down to a key quad: the keys between that and min lo are earlier
  // positions of the block (written, finite), masked like any key a row does not see.
  const int64_t j_lo = keys.lo & ~3;
  for_row_tiles(a.n_rows, [&]<int R>(int64_t r0) {
    rows_scores<L, R>(a, k_rows, r0 == 0 ? &scores_part : nullptr, r0, j_lo, keys.hi);
  });
  softmax_rows(a, (static_cast<int64_t>(keys.hi) + 15) & ~int64_t{15});
  for_row_tiles(a.n_rows, [&]<int R>(int64_t r0) {
    rows_values<L, R>(a, v_rows, r0 == 0 ? &values_part : nullptr, r0);
  });
}

}  // namespace

void attention_block_avx512(const AttentionBlockArgs& a) {
  block<LoadF32>(a, RowsF32{a.k, a.hdp}, RowsF32{a.v, a.hdp}, nullptr);
}

void attention_block_cache_avx512(const AttentionBlockArgs& a, const CacheBlock& kv) {
  const RowsCache k{kv.k, kv.row_stride_bytes}, v{kv.v, kv.row_stride_bytes};
  switch (kv.type) {
    case DType::F32: block<LoadF32>(a, k, v, &kv); break;
    case DType::Q8_0: block<LoadQ8_0>(a, k, v, &kv); break;
    default: block<LoadF16>(a, k, v, &kv); break;
  }
}

}  // namespace strata::kernels::detail
