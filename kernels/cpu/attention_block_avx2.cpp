// kernels/cpu/attention_block_avx2.cpp — the AVX2 + FMA attention block kernel (see
// attention_block.h). Scores: 2 query rows x 4 keys per step (8 accumulators, each pair's dot
// product summed over d in 8-float chunks, then one fixed reduction tree), so a K row loaded from
// L1 feeds two FMAs and a Q chunk four. Softmax: 8 keys at a time with a polynomial exp (Cephes
// expf coefficients, ~1 ulp on [-87, 0]). Values: 2 rows x 32 floats per step, each V chunk
// feeding two rows. A row's arithmetic is the same whichever row it is paired with: keys outside
// its [lo, hi) get probability exactly 0, and fma(0, v, acc) == acc.
#include <immintrin.h>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/attention_block.h"
#include "kernels/common/scalar_math.h"

namespace strata::kernels::detail {

#include "kernels/cpu/attention_block_x86.inc"

namespace {

// e^x for x <= 0 (scores minus their max); lanes below -87.3 give ~2^-126 (callers mask them).
inline __m256 exp_nonpositive(__m256 x) {
  using E = ExpPoly;
  x = _mm256_max_ps(x, _mm256_set1_ps(E::kMin));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(E::kLog2e)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(E::kLn2Hi), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(E::kLn2Lo), r);
  __m256 y = _mm256_set1_ps(E::kP5);
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(E::kP4));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(E::kP3));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(E::kP2));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(E::kP1));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(E::kP0));
  y = _mm256_fmadd_ps(y, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

#include "kernels/cpu/hsum_x86.inc"

inline float hmax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// The four totals of a0..a3, each ((x0+x1)+(x2+x3)) + ((x4+x5)+(x6+x7)) whatever the others hold.
inline __m128 reduce4(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
  const __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
  return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
}

// Lanes j0 .. j0 + 7 that lie in [lo, hi).
inline __m256 key_mask(int64_t j0, int32_t lo, int32_t hi) {
  const __m256i idx = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int32_t>(j0)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  const __m256i ge_lo = _mm256_cmpgt_epi32(idx, _mm256_set1_epi32(lo - 1));
  const __m256i lt_hi = _mm256_cmpgt_epi32(_mm256_set1_epi32(hi), idx);
  return _mm256_castsi256_ps(_mm256_and_si256(ge_lo, lt_hi));
}

// Softmax of each row over its keys, in place in a.p; masked keys (and lanes up to j_end8 outside
// a row's [lo, hi), whatever a.p held there) get probability exactly 0.
void softmax_rows(const AttentionBlockArgs& a, int64_t j_end8) {
  constexpr int64_t B = kAttentionKeyBlock;
  const __m256 neg_inf = _mm256_set1_ps(kNegativeInfinity);
  const __m256 scale = _mm256_set1_ps(a.scale);
  for (int64_t r = 0; r < a.n_rows; ++r) {
    float* p = a.p + r * B;
    const int32_t lo = a.lo[r], hi = a.hi[r];
    __m256 mv = neg_inf;
    for (int64_t j = 0; j < j_end8; j += 8) {
      const __m256 s = _mm256_blendv_ps(neg_inf, _mm256_mul_ps(_mm256_loadu_ps(p + j), scale), key_mask(j, lo, hi));
      _mm256_storeu_ps(p + j, s);
      mv = _mm256_max_ps(mv, s);
    }
    if (a.softcap > 0.0f) {  // gemma2: capped scores of the row's keys (scalar tanh, as the reference)
      mv = neg_inf;
      for (int32_t j = lo; j < hi; ++j) p[j] = softcap(p[j], a.softcap);
      for (int64_t j = 0; j < j_end8; j += 8) mv = _mm256_max_ps(mv, _mm256_loadu_ps(p + j));
    }
    const float m = hmax(mv);
    const __m256 m8 = _mm256_set1_ps(m);
    __m256 lv = _mm256_setzero_ps();
    for (int64_t j = 0; j < j_end8; j += 8) {
      const __m256 e = _mm256_and_ps(exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(p + j), m8)), key_mask(j, lo, hi));
      _mm256_storeu_ps(p + j, e);
      lv = _mm256_add_ps(lv, e);
    }
    a.m[r] = m;
    a.l[r] = hsum_ps(lv);
  }
}

// 8 elements [d, d + 8) of a cache row as f32, exactly as dequantize_row would give them. A row
// is read in spans of 32 elements: scale(row, d32) once per span (Q8_0: the block's scale; the
// float types have none), then load(row, d, s) for each 8 elements of it.
struct LoadF32 {
  static __m256 scale(const uint8_t*, int64_t) { return _mm256_setzero_ps(); }
  static __m256 load(const uint8_t* row, int64_t d, __m256) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + d);
  }
};
struct LoadF16 {
  static __m256 scale(const uint8_t*, int64_t) { return _mm256_setzero_ps(); }
  static __m256 load(const uint8_t* row, int64_t d, __m256) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * d)));
  }
};
// Q8_0: 34-byte blocks of 32 (an f16 scale, 32 int8); element = scale * q, one rounding, as in
// dequantize_q8_0. The scale is converted once per block (a 16-bit broadcast and vcvtph2ps),
// not once per 8 elements.
struct LoadQ8_0 {
  static __m256 scale(const uint8_t* row, int64_t d32) {
    return _mm256_cvtph_ps(_mm_set1_epi16(static_cast<short>(q8_0_scale_bits(row, d32))));
  }
  static __m256 load(const uint8_t* row, int64_t d, __m256 s) {
    const __m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q8_0_quants(row, d))));
    return _mm256_mul_ps(s, _mm256_cvtepi32_ps(q));
  }
};

// Scores p[r][j], p[r][j + 1] of R query rows (R <= 4) against keys j and j + 1 (one key when
// !two): each key chunk is converted once and feeds R FMAs. Per (row, key): one accumulator over
// d in 8-float chunks from zero, then reduce4's fixed tree, as in attention_block_avx2. Named
// accumulators (see values_tile16).
template <class L, int R>
inline void scores_tile(const float* q, int64_t hdp, const uint8_t* k0, const uint8_t* k1, bool two, float* p,
                        int64_t j) {
  constexpr int64_t B = kAttentionKeyBlock;
  __m256 s00 = _mm256_setzero_ps(), s01 = s00, s10 = s00, s11 = s00, s20 = s00, s21 = s00, s30 = s00, s31 = s00;
  if (!two) k1 = k0;
  __m256 sa = _mm256_setzero_ps(), sb = sa;
  for (int64_t d = 0; d < hdp; d += 8) {
    if ((d & 31) == 0) sa = L::scale(k0, d), sb = L::scale(k1, d);
    const __m256 ka = L::load(k0, d, sa), kb = L::load(k1, d, sb);
    const __m256 x0 = _mm256_loadu_ps(q + d);
    s00 = _mm256_fmadd_ps(x0, ka, s00);
    s01 = _mm256_fmadd_ps(x0, kb, s01);
    if constexpr (R > 1) {
      const __m256 x1 = _mm256_loadu_ps(q + hdp + d);
      s10 = _mm256_fmadd_ps(x1, ka, s10);
      s11 = _mm256_fmadd_ps(x1, kb, s11);
    }
    if constexpr (R > 2) {
      const __m256 x2 = _mm256_loadu_ps(q + 2 * hdp + d);
      s20 = _mm256_fmadd_ps(x2, ka, s20);
      s21 = _mm256_fmadd_ps(x2, kb, s21);
    }
    if constexpr (R > 3) {
      const __m256 x3 = _mm256_loadu_ps(q + 3 * hdp + d);
      s30 = _mm256_fmadd_ps(x3, ka, s30);
      s31 = _mm256_fmadd_ps(x3, kb, s31);
    }
  }
  alignas(16) float t[8];
  _mm_store_ps(t, reduce4(s00, s01, s10, s11));
  if constexpr (R > 2) _mm_store_ps(t + 4, reduce4(s20, s21, s30, s31));
  for (int r = 0; r < R; ++r) {
    p[r * B + j] = t[2 * r];
    if (two) p[r * B + j + 1] = t[2 * r + 1];
  }
}

// acc[r][d, d + 16) = sum over keys [lo, hi) of p[r][j] v_j for R rows (R <= 4): each value
// chunk is converted once and feeds R FMAs; per (row, lane) one FMA chain in key order from zero,
// as in attention_block_avx2. Named accumulators, not an array: GCC keeps an array of __m256 in
// memory and stores it back every key.
template <class L, int R>
inline void values_tile16(const float* p, const CacheBlock& kv, int64_t lo, int64_t hi, int64_t d, int64_t hdp,
                          float* acc) {
  constexpr int64_t B = kAttentionKeyBlock;
  __m256 a0 = _mm256_setzero_ps(), b0 = a0, a1 = a0, b1 = a0, a2 = a0, b2 = a0, a3 = a0, b3 = a0;
  const uint8_t* row = kv.v + lo * kv.row_stride_bytes;
  for (int64_t j = lo; j < hi; ++j, row += kv.row_stride_bytes) {
    // d is a multiple of 16: [d, d + 16) lies in one 32-element span.
    const __m256 sv = L::scale(row, d);
    const __m256 va = L::load(row, d, sv), vb = L::load(row, d + 8, sv);
    const __m256 w0 = _mm256_broadcast_ss(p + j);
    a0 = _mm256_fmadd_ps(w0, va, a0);
    b0 = _mm256_fmadd_ps(w0, vb, b0);
    if constexpr (R > 1) {
      const __m256 w1 = _mm256_broadcast_ss(p + B + j);
      a1 = _mm256_fmadd_ps(w1, va, a1);
      b1 = _mm256_fmadd_ps(w1, vb, b1);
    }
    if constexpr (R > 2) {
      const __m256 w2 = _mm256_broadcast_ss(p + 2 * B + j);
      a2 = _mm256_fmadd_ps(w2, va, a2);
      b2 = _mm256_fmadd_ps(w2, vb, b2);
    }
    if constexpr (R > 3) {
      const __m256 w3 = _mm256_broadcast_ss(p + 3 * B + j);
      a3 = _mm256_fmadd_ps(w3, va, a3);
      b3 = _mm256_fmadd_ps(w3, vb, b3);
    }
  }
  _mm256_storeu_ps(acc + d, a0);
  _mm256_storeu_ps(acc + d + 8, b0);
  if constexpr (R > 1) {
    _mm256_storeu_ps(acc + hdp + d, a1);
    _mm256_storeu_ps(acc + hdp + d + 8, b1);
  }
  if constexpr (R > 2) {
    _mm256_storeu_ps(acc + 2 * hdp + d, a2);
    _mm256_storeu_ps(acc + 2 * hdp + d + 8, b2);
  }
  if constexpr (R > 3) {
    _mm256_storeu_ps(acc + 3 * hdp + d, a3);
    _mm256_storeu_ps(acc + 3 * hdp + d + 8, b3);
  }
}

// The same for the last 8 lanes of a head whose size is not a multiple of 16, one row at a time.
template <class L>
inline void values_tile8(const float* p, const CacheBlock& kv, int64_t lo, int64_t hi, int64_t d, float* acc) {
  __m256 a0 = _mm256_setzero_ps();
  const uint8_t* row = kv.v + lo * kv.row_stride_bytes;
  for (int64_t j = lo; j < hi; ++j, row += kv.row_stride_bytes)
    a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(p + j), L::load(row, d, L::scale(row, d)), a0);
  _mm256_storeu_ps(acc + d, a0);
}

// Scores of R query rows (a tile of the block's rows starting at row r0) against keys
// [j_lo, j_hi) of the cache block; the first tile also prefetches the next block's rows.
template <class L, int R>
void cache_rows(const AttentionBlockArgs& a, const CacheBlock& kv, int64_t r0, int64_t j_lo, int64_t j_hi) {
  constexpr int64_t B = kAttentionKeyBlock;
  const int64_t hdp = a.hdp;
  const float* q = a.q + r0 * hdp;
  float* p = a.p + r0 * B;
  // The prefetch range in equal slices of whole cache lines, one slice per pair of keys. Written
  // out here, not in a helper: GCC takes a function that only prefetches for a pure one and
  // drops its calls. Into L2 (T1), not L1: the next block's K and V rows (64 positions of every
  // KV head: 64 KiB for 4 KV heads of 64 f16) do not fit beside this block in a 32 KiB L1. A/B
  // on the 2-core EPYC, attention_bench 2 threads depth 4096, two rounds: median 0.570 / 0.505 ms
  // per call with T1, 0.656 / 0.540 with T0, 0.646 / 0.539 with T2, 0.946 / 1.084 with none.
  const int64_t n_pairs = (j_hi - j_lo + 1) / 2;
  const int64_t slice = r0 == 0 && n_pairs > 0 ? ((kv.next_bytes + 63) / 64 + n_pairs - 1) / n_pairs * 64 : 0;
  int64_t next_at = 0;
  for (int64_t j = j_lo; j < j_hi; j += 2) {
    for (const int64_t stop = lesser(next_at + slice, kv.next_bytes); next_at < stop; next_at += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(kv.next_k + next_at), _MM_HINT_T1);
      _mm_prefetch(reinterpret_cast<const char*>(kv.next_v + next_at), _MM_HINT_T1);
    }
    const uint8_t* k0 = kv.k + j * kv.row_stride_bytes;
    scores_tile<L, R>(q, hdp, k0, k0 + kv.row_stride_bytes, j + 1 < j_hi, p, j);
  }
}

template <class L, int R>
void cache_values(const AttentionBlockArgs& a, const CacheBlock& kv, int64_t r0) {
  constexpr int64_t B = kAttentionKeyBlock;
  const int64_t hdp = a.hdp;
  const KeyRange keys = keys_of_rows(a, r0, R);
  const int64_t lo = keys.lo, hi = keys.hi;
  const float* p = a.p + r0 * B;
  float* acc = a.acc + r0 * hdp;
  int64_t d = 0;
  for (; d + 16 <= hdp; d += 16) values_tile16<L, R>(p, kv, lo, hi, d, hdp, acc);
  if (d < hdp)
    for (int r = 0; r < R; ++r) values_tile8<L>(p + r * B, kv, lo, hi, d, acc + r * hdp);
}

template <class L>
void cache_block(const AttentionBlockArgs& a, const CacheBlock& kv) {
  const KeyRange keys = keys_of_rows(a, 0, a.n_rows);
  // Scores of every row over [keys.lo, keys.hi) (a row's keys outside its own range are masked
  // by the softmax), 4 rows at a time.
  for_row_tiles(a.n_rows, [&]<int R>(int64_t r0) { cache_rows<L, R>(a, kv, r0, keys.lo, keys.hi); });
  softmax_rows(a, (static_cast<int64_t>(keys.hi) + 7) & ~int64_t{7});
  for_row_tiles(a.n_rows, [&]<int R>(int64_t r0) { cache_values<L, R>(a, kv, r0); });
}

}  // namespace

void attention_block_avx2(const AttentionBlockArgs& a) {
  constexpr int64_t B = kAttentionKeyBlock;
  const int64_t hdp = a.hdp, n = a.n_rows;
  const KeyRange keys = keys_of_rows(a, 0, n);
  const int64_t j_begin = keys.lo & ~3;
  const int64_t j_end4 = (static_cast<int64_t>(keys.hi) + 3) & ~int64_t{3};
  const int64_t j_end8 = (static_cast<int64_t>(keys.hi) + 7) & ~int64_t{7};

  // Scores: p[r][j] = q_r . k_j for j in [j_begin, j_end4).
  for (int64_t r = 0; r < n; r += 2) {
    const bool two = r + 1 < n;
    const float* q0 = a.q + r * hdp;
    const float* q1 = two ? q0 + hdp : q0;
    float* p0 = a.p + r * B;
    float* p1 = two ? p0 + B : p0;
    for (int64_t j = j_begin; j < j_end4; j += 4) {
      const float* k = a.k + j * hdp;
      __m256 s00 = _mm256_setzero_ps(), s01 = s00, s02 = s00, s03 = s00;
      __m256 s10 = s00, s11 = s00, s12 = s00, s13 = s00;
      for (int64_t d = 0; d < hdp; d += 8) {
        const __m256 x0 = _mm256_loadu_ps(q0 + d), x1 = _mm256_loadu_ps(q1 + d);
        const __m256 k0 = _mm256_loadu_ps(k + d), k1 = _mm256_loadu_ps(k + hdp + d);
        const __m256 k2 = _mm256_loadu_ps(k + 2 * hdp + d), k3 = _mm256_loadu_ps(k + 3 * hdp + d);
        s00 = _mm256_fmadd_ps(x0, k0, s00);
        s01 = _mm256_fmadd_ps(x0, k1, s01);
        s02 = _mm256_fmadd_ps(x0, k2, s02);
        s03 = _mm256_fmadd_ps(x0, k3, s03);
        s10 = _mm256_fmadd_ps(x1, k0, s10);
        s11 = _mm256_fmadd_ps(x1, k1, s11);
        s12 = _mm256_fmadd_ps(x1, k2, s12);
        s13 = _mm256_fmadd_ps(x1, k3, s13);
      }
      _mm_storeu_ps(p0 + j, reduce4(s00, s01, s02, s03));
      if (two) _mm_storeu_ps(p1 + j, reduce4(s10, s11, s12, s13));
    }
  }

  softmax_rows(a, j_end8);

  // Values: acc[r] = sum_j p[r][j] v_j over the pair's keys (zeros where a row sees none).
  for (int64_t r = 0; r < n; r += 2) {
    const bool two = r + 1 < n;
    const float* p0 = a.p + r * B;
    const float* p1 = two ? p0 + B : p0;
    float* acc0 = a.acc + r * hdp;
    float* acc1 = two ? acc0 + hdp : acc0;
    const KeyRange keys_r = keys_of_rows(a, r, two ? 2 : 1);
    const int64_t lo = keys_r.lo, hi = keys_r.hi;
    int64_t d = 0;
    for (; d + 32 <= hdp; d += 32) {
      __m256 c00 = _mm256_setzero_ps(), c01 = c00, c02 = c00, c03 = c00;
      __m256 c10 = c00, c11 = c00, c12 = c00, c13 = c00;
      for (int64_t j = lo; j < hi; ++j) {
        const float* v = a.v + j * hdp + d;
        const __m256 w0 = _mm256_broadcast_ss(p0 + j), w1 = _mm256_broadcast_ss(p1 + j);
        const __m256 v0 = _mm256_loadu_ps(v), v1 = _mm256_loadu_ps(v + 8);
        const __m256 v2 = _mm256_loadu_ps(v + 16), v3 = _mm256_loadu_ps(v + 24);
        c00 = _mm256_fmadd_ps(w0, v0, c00);
        c01 = _mm256_fmadd_ps(w0, v1, c01);
        c02 = _mm256_fmadd_ps(w0, v2, c02);
        c03 = _mm256_fmadd_ps(w0, v3, c03);
        c10 = _mm256_fmadd_ps(w1, v0, c10);
        c11 = _mm256_fmadd_ps(w1, v1, c11);
        c12 = _mm256_fmadd_ps(w1, v2, c12);
        c13 = _mm256_fmadd_ps(w1, v3, c13);
      }
      _mm256_storeu_ps(acc0 + d, c00);
      _mm256_storeu_ps(acc0 + d + 8, c01);
      _mm256_storeu_ps(acc0 + d + 16, c02);
      _mm256_storeu_ps(acc0 + d + 24, c03);
      if (two) {
        _mm256_storeu_ps(acc1 + d, c10);
        _mm256_storeu_ps(acc1 + d + 8, c11);
        _mm256_storeu_ps(acc1 + d + 16, c12);
        _mm256_storeu_ps(acc1 + d + 24, c13);
      }
    }
    for (; d < hdp; d += 8) {
      __m256 c0 = _mm256_setzero_ps(), c1 = c0;
      for (int64_t j = lo; j < hi; ++j) {
        const __m256 v0 = _mm256_loadu_ps(a.v + j * hdp + d);
        c0 = _mm256_fmadd_ps(_mm256_broadcast_ss(p0 + j), v0, c0);
        c1 = _mm256_fmadd_ps(_mm256_broadcast_ss(p1 + j), v0, c1);
      }
      _mm256_storeu_ps(acc0 + d, c0);
      if (two) _mm256_storeu_ps(acc1 + d, c1);
    }
  }
}

void attention_block_cache_avx2(const AttentionBlockArgs& a, const CacheBlock& kv) {
  switch (kv.type) {
    case DType::F32: cache_block<LoadF32>(a, kv); break;
    case DType::Q8_0: cache_block<LoadQ8_0>(a, kv); break;
    default: cache_block<LoadF16>(a, kv); break;
  }
}

}  // namespace strata::kernels::detail
