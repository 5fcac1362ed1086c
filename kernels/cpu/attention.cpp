// kernels/cpu/attention.cpp — blocked attention over F32 / F16 / Q8_0 KV caches (see attention.h):
// the decode split over (KV head, key block) with a log-sum-exp merge, the prompt tiles over
// (KV head, query tile), and the block loads that convert cache rows to f32.
#include "kernels/cpu/attention.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>

#include "kernels/cpu/attention_block.h"
#include "kernels/cpu/type_kernels.h"

namespace strata::kernels {

namespace {

constexpr int64_t B = kAttentionKeyBlock;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

int64_t pad8(int64_t n) { return (n + 7) & ~int64_t{7}; }

// Query tokens per prompt tile: about 64 rows (tokens x heads of a group) share each key block.
int64_t tile_tokens(int64_t group) { return std::max<int64_t>(1, 64 / group); }

// Cache positions [p0, p0 + n) of one KV head (within one key block: consecutive rows, also in a
// ring) as f32 rows of hdp floats (padding zeroed).
void load_rows(const uint8_t* base, const KvCacheView& kv, const TypeKernels* tk, int64_t p0, int64_t n, int64_t hd,
               int64_t hdp, float* dst) {
  const int64_t row0 = kv.row_of(p0);
  for (int64_t j = 0; j < n; ++j) {
    const uint8_t* src = base + (row0 + j) * kv.row_stride_bytes;
    float* row = dst + j * hdp;
    if (kv.type == DType::F32) {
      std::memcpy(row, src, static_cast<size_t>(hd) * sizeof(float));
    } else {
      tk->dequantize_row(src, row, hd);
    }
    for (int64_t d = hd; d < hdp; ++d) row[d] = 0.0f;
  }
}

// Query rows of heads [h0, h0 + count) of token row q_tok, padded to hdp.
void load_queries(const float* q_tok, int64_t h0, int64_t count, int64_t hd, int64_t hdp, float* dst) {
  for (int64_t i = 0; i < count; ++i) {
    std::memcpy(dst + i * hdp, q_tok + (h0 + i) * hd, static_cast<size_t>(hd) * sizeof(float));
    for (int64_t d = hd; d < hdp; ++d) dst[i * hdp + d] = 0.0f;
  }
}

// state (m, l, acc) <- the log-sum-exp merge of state and one block's partial. The same code for
// decode and prompts, so a row's result does not depend on the path.
void merge_partial(float& m, float& l, float* acc, float m_b, float l_b, const float* acc_b, int64_t hdp) {
  const float m_new = std::max(m, m_b);
  const float sa = std::exp(m - m_new);  // 0 for an empty state (m = -inf)
  const float sb = std::exp(m_b - m_new);
  l = l * sa + l_b * sb;
  for (int64_t d = 0; d < hdp; ++d) acc[d] = acc[d] * sa + acc_b[d] * sb;
  m = m_new;
}

// state (m, l, acc) <- the merge of a sink: a partial of score `sink`, weight 1 and no value.
void merge_sink(float& m, float& l, float* acc, float sink, int64_t hdp) {
  const float m_new = std::max(m, sink);
  const float sa = std::exp(m - m_new);
  l = l * sa + std::exp(sink - m_new);
  for (int64_t d = 0; d < hdp; ++d) acc[d] *= sa;
  m = m_new;
}

void finish_row(const float* acc, float l, int64_t hd, float* out) {
  const float inv = 1.0f / l;
  for (int64_t d = 0; d < hd; ++d) out[d] = acc[d] * inv;
}

// One thread's scratch for rows of up to max_rows query rows.
struct ThreadScratch {
  float* q;      // [max_rows][hdp]
  float* k;      // [kv_heads][B][hdp]
  float* v;      // [kv_heads][B][hdp]
  float* p;      // [max_rows][B]
  float* m_b;    // [max_rows]
  float* l_b;    // [max_rows]
  float* acc_b;  // [max_rows][hdp]
  float* m;      // [max_rows]  running state (prompts)
  float* l;      // [max_rows]
  float* acc;    // [max_rows][hdp]
  int32_t* lo;   // [max_rows]
  int32_t* hi;   // [max_rows]
};

// kv_heads: how many KV heads' blocks the scratch holds at once (decode: all; prompts: one).
int64_t scratch_floats(int64_t max_rows, int64_t hdp, int64_t kv_heads) {
  return max_rows * hdp * 3 + 2 * kv_heads * B * hdp + max_rows * B + 4 * max_rows + 16;
}

ThreadScratch scratch_of(AttentionWorkspace& ws, int thread, int64_t max_rows, int64_t hdp, int64_t kv_heads) {
  float* f = ws.per_thread.data() + thread * scratch_floats(max_rows, hdp, kv_heads);
  ThreadScratch s;
  s.q = f;
  s.k = s.q + max_rows * hdp;
  s.v = s.k + kv_heads * B * hdp;
  s.p = s.v + kv_heads * B * hdp;
  s.m_b = s.p + max_rows * B;
  s.l_b = s.m_b + max_rows;
  s.acc_b = s.l_b + max_rows;
  s.m = s.acc_b + max_rows * hdp;
  s.l = s.m + max_rows;
  s.acc = s.l + max_rows;
  s.lo = ws.bounds.data() + thread * 2 * max_rows;
  s.hi = s.lo + max_rows;
  return s;
}

struct Plan {
  const float* q;
  KvCacheView kv;
  AttentionShape s;
  const TypeKernels* tk;  // the cache type's dequantizer (unused for F32)
  detail::AttentionBlockFamily family;  // decode and prompts take their kernels from one family
  int64_t group, hdp, q_dim;
  // Token t's visible positions.
  int64_t end_of(int64_t t) const { return s.causal ? s.pos0 + t + 1 : s.pos0 + s.n_tokens; }
  int64_t begin_of(int64_t t) const { return s.window > 0 ? std::max<int64_t>(0, end_of(t) - s.window) : 0; }
  void load_block(int64_t kv_head, int64_t p0, int64_t n, const ThreadScratch& sc) const {
    const int64_t off = kv_head * kv.head_stride_bytes;
    load_rows(kv.k + off, kv, tk, p0, n, s.head_dim, hdp, sc.k);
    load_rows(kv.v + off, kv, tk, p0, n, s.head_dim, hdp, sc.v);
  }
  // Positions [p0, p0 + n) (one key block) of every KV head, position by position (sequential in
  // the cache), into sc.k / sc.v [kv head][B][hdp].
  void load_all_heads(int64_t p0, int64_t n, const ThreadScratch& sc) const {
    const int64_t hd = s.head_dim, row0 = kv.row_of(p0);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t g = 0; g < s.n_kv_heads; ++g) {
        const int64_t off = (row0 + j) * kv.row_stride_bytes + g * kv.head_stride_bytes;
        float* kr = sc.k + (g * B + j) * hdp;
        float* vr = sc.v + (g * B + j) * hdp;
        if (kv.type == DType::F32) {
          std::memcpy(kr, kv.k + off, static_cast<size_t>(hd) * sizeof(float));
          std::memcpy(vr, kv.v + off, static_cast<size_t>(hd) * sizeof(float));
        } else {
          tk->dequantize_row(kv.k + off, kr, hd);
          tk->dequantize_row(kv.v + off, vr, hd);
        }
        for (int64_t d = hd; d < hdp; ++d) kr[d] = vr[d] = 0.0f;
      }
  }
  // The block kernel on n_rows query rows against the block of KV head slot `slot` of the scratch.
  // The block kernels' arguments for n_rows query rows of the thread's scratch (keys and values
  // not set: each caller points at its own).
  detail::AttentionBlockArgs block_args(const ThreadScratch& sc, int64_t n_rows) const {
    detail::AttentionBlockArgs a;
    a.q = sc.q;
    a.n_rows = n_rows;
    a.hdp = hdp;
    a.lo = sc.lo;
    a.hi = sc.hi;
    a.scale = s.scale;
    a.softcap = s.softcap;
    a.p = sc.p;
    a.m = sc.m_b;
    a.l = sc.l_b;
    a.acc = sc.acc_b;
    return a;
  }
  void run_block(const ThreadScratch& sc, int64_t n_rows, int64_t slot = 0) const {
    detail::AttentionBlockArgs a = block_args(sc, n_rows);
    a.k = sc.k + slot * B * hdp;
    a.v = sc.v + slot * B * hdp;
    family.block(a);
  }
  // The family's in-place kernel on n_rows query rows against keys [kb, kb + 64) of KV head
  // kv_head, read where they lie (attention_block_cache_supported). Prefetches the cache rows of
  // positions [next_p0, next_p1) of `next`'s cache meanwhile (all KV heads; next: this plan or
  // another sequence's in a decode batch).
  void run_cache_block(const ThreadScratch& sc, int64_t n_rows, int64_t kb, int64_t kv_head, const Plan& next,
                       int64_t next_p0, int64_t next_p1) const {
    const detail::AttentionBlockArgs a = block_args(sc, n_rows);
    detail::CacheBlock c;
    const int64_t off = kv.row_of(kb) * kv.row_stride_bytes + kv_head * kv.head_stride_bytes;
    c.k = kv.k + off;
    c.v = kv.v + off;
    c.row_stride_bytes = kv.row_stride_bytes;
    c.type = kv.type;
    if (next_p1 > next_p0) {
      // [next_p0, next_p1) lies within one key block: consecutive rows, also in a ring.
      c.next_k = next.kv.k + next.kv.row_of(next_p0) * next.kv.row_stride_bytes;
      c.next_v = next.kv.v + next.kv.row_of(next_p0) * next.kv.row_stride_bytes;
      c.next_bytes = (next_p1 - next_p0) * next.kv.row_stride_bytes;
    }
    family.cache(a, c);
  }
};

// A one-token job of a decode batch: its plan, its visible key blocks, and where its items,
// heads and partials ([n_heads][n_blocks][hdp + 2] floats) start in the batch's.
struct DecodeJob {
  Plan pl;
  float* out = nullptr;
  int64_t begin = 0, end = 0, b_first = 0, n_blocks = 0;
  int64_t item0 = 0, head0 = 0;
  size_t partials = 0;
  bool in_place = false;
};
// Decode jobs per parallel region pair at most (attention_many takes more in chunks of this).
constexpr size_t kDecodeBatch = 16;

DecodeJob decode_job(const Plan& pl, float* out) {
  DecodeJob j;
  j.pl = pl;
  j.out = out;
  j.end = pl.end_of(0);
  j.begin = pl.begin_of(0);
  j.b_first = j.begin / B;
  j.n_blocks = (j.end - 1) / B - j.b_first + 1;
  // The AVX2 / AVX-512 kernels read F32 / F16 / Q8_0 blocks where they lie in the cache,
  // converting each element in registers (once per 4 query rows); otherwise the block's rows of
  // every KV head are converted to f32 copies first.
  j.in_place = detail::attention_block_cache_supported(pl.family.isa, pl.kv.type, pl.s.head_dim);
  return j;
}

// The job holding item `item` of a field counted by `first` (item0 or head0; jobs in order).
template <int64_t DecodeJob::*first>
const DecodeJob& job_at(std::span<const DecodeJob> jobs, int64_t item) {
  size_t i = 0;
  while (i + 1 < jobs.size() && jobs[i + 1].*first <= item) ++i;
  return jobs[i];
}

// One query token per job (a decode step of one or several sequences): every key block of every
// job is an item (its rows of all KV heads read in one sequential sweep of the cache, which is
// position-major), then every (job, head) merges its partials in block order. A row's partials
// and merge do not depend on the other items, so each job gets the bits it gets alone.
// Scratch geometry (max_rows, hdp, n_kv): the largest of the jobs'.
void decode_many(ThreadPool& pool, std::span<DecodeJob> jobs, AttentionWorkspace& ws, int64_t max_rows,
                 int64_t scratch_hdp, int64_t scratch_kv) {
  int64_t items = 0, heads = 0;
  size_t need = 0;
  for (DecodeJob& j : jobs) {
    j.item0 = items;
    j.head0 = heads;
    j.partials = need;
    items += j.n_blocks;
    heads += j.pl.s.n_heads;
    need += static_cast<size_t>(j.pl.s.n_heads * j.n_blocks * (j.pl.hdp + 2));
  }
  if (ws.partials.size() < need) ws.partials.resize(need);
  float* partials = ws.partials.data();
  const std::span<const DecodeJob> all(jobs.data(), jobs.size());
  std::atomic<int64_t> next{0};
  pool.run([&](int thread, int) {
    const ThreadScratch sc = scratch_of(ws, thread, max_rows, scratch_hdp, scratch_kv);
    // The next item is claimed before this one is run, so that its rows can be prefetched.
    for (int64_t it = next.fetch_add(1, std::memory_order_relaxed), in; it < items; it = in) {
      in = next.fetch_add(1, std::memory_order_relaxed);
      const DecodeJob& j = job_at<&DecodeJob::item0>(all, it);
      const Plan& pl = j.pl;
      const int64_t bi = it - j.item0, part = pl.hdp + 2, n_kv = pl.s.n_kv_heads;
      const int64_t kb = (j.b_first + bi) * B;
      const int64_t n_keys = std::min(B, j.end - kb);
      if (!j.in_place) pl.load_all_heads(kb, n_keys, sc);
      for (int64_t r = 0; r < pl.group; ++r) {
        sc.lo[r] = static_cast<int32_t>(std::max<int64_t>(0, j.begin - kb));
        sc.hi[r] = static_cast<int32_t>(n_keys);
      }
      for (int64_t g = 0; g < n_kv; ++g) {
        load_queries(pl.q, g * pl.group, pl.group, pl.s.head_dim, pl.hdp, sc.q);
        if (j.in_place) {
          // While KV head g runs, the g-th slice of the next item's positions (every KV head's
          // rows: one sequential sweep of that cache over the block) streams in.
          int64_t p0 = 0, p1 = 0;
          const DecodeJob& jn = job_at<&DecodeJob::item0>(all, in < items ? in : it);
          if (in < items) {
            const int64_t nb = (jn.b_first + in - jn.item0) * B, n_next = std::min(B, jn.end - nb);
            p0 = nb + n_next * g / n_kv;
            p1 = nb + n_next * (g + 1) / n_kv;
          }
          pl.run_cache_block(sc, pl.group, kb, g, jn.pl, p0, p1);
        } else {
          pl.run_block(sc, pl.group, g);
        }
        for (int64_t r = 0; r < pl.group; ++r) {
          float* dst = partials + j.partials + ((g * pl.group + r) * j.n_blocks + bi) * part;
          std::memcpy(dst, sc.acc_b + r * pl.hdp, static_cast<size_t>(pl.hdp) * sizeof(float));
          dst[pl.hdp] = sc.m_b[r];
          dst[pl.hdp + 1] = sc.l_b[r];
        }
      }
    }
  });
  std::atomic<int64_t> next_head{0};
  pool.run([&](int thread, int) {
    const ThreadScratch sc = scratch_of(ws, thread, max_rows, scratch_hdp, scratch_kv);
    for (int64_t hi = next_head.fetch_add(1, std::memory_order_relaxed); hi < heads;
         hi = next_head.fetch_add(1, std::memory_order_relaxed)) {
      const DecodeJob& j = job_at<&DecodeJob::head0>(all, hi);
      const Plan& pl = j.pl;
      const int64_t h = hi - j.head0, part = pl.hdp + 2;
      float m = kNegInf, l = 0.0f;
      std::fill(sc.acc, sc.acc + pl.hdp, 0.0f);
      for (int64_t bi = 0; bi < j.n_blocks; ++bi) {
        const float* src = partials + j.partials + (h * j.n_blocks + bi) * part;
        merge_partial(m, l, sc.acc, src[pl.hdp], src[pl.hdp + 1], src, pl.hdp);
      }
      if (pl.s.sinks) merge_sink(m, l, sc.acc, pl.s.sinks[h], pl.hdp);
      finish_row(sc.acc, l, pl.s.head_dim, j.out + h * pl.s.head_dim);
    }
  });
}

// Several tokens: every (KV head, tile of query tokens) pair is an item, the last tiles (most
// key blocks under a causal mask) first; each walks its key blocks in order.
void prompt(ThreadPool& pool, const Plan& pl, AttentionWorkspace& ws, int64_t max_rows, float* out) {
  const int64_t tq = tile_tokens(pl.group);
  const int64_t n_tiles = (pl.s.n_tokens + tq - 1) / tq;
  const int64_t items = n_tiles * pl.s.n_kv_heads;
  std::atomic<int64_t> next{0};
  pool.run([&](int thread, int) {
    const ThreadScratch sc = scratch_of(ws, thread, max_rows, pl.hdp, pl.s.n_kv_heads);
    for (int64_t item = next.fetch_add(1, std::memory_order_relaxed); item < items;
         item = next.fetch_add(1, std::memory_order_relaxed)) {
      const int64_t tile = n_tiles - 1 - item / pl.s.n_kv_heads, g = item % pl.s.n_kv_heads;
      const int64_t t0 = tile * tq, nt = std::min(tq, pl.s.n_tokens - t0);
      const int64_t n_rows = nt * pl.group;
      int64_t tile_begin = std::numeric_limits<int64_t>::max(), tile_end = 0;
      for (int64_t i = 0; i < nt; ++i) {
        load_queries(pl.q + (t0 + i) * pl.q_dim, g * pl.group, pl.group, pl.s.head_dim, pl.hdp,
                     sc.q + i * pl.group * pl.hdp);
        tile_begin = std::min(tile_begin, pl.begin_of(t0 + i));
        tile_end = std::max(tile_end, pl.end_of(t0 + i));
      }
      std::fill(sc.m, sc.m + n_rows, kNegInf);
      std::fill(sc.l, sc.l + n_rows, 0.0f);
      std::fill(sc.acc, sc.acc + n_rows * pl.hdp, 0.0f);
      for (int64_t b = tile_begin / B; b * B < tile_end; ++b) {
        const int64_t kb = b * B;
        const int64_t n_keys = std::min(B, tile_end - kb);
        bool any = false;
        for (int64_t i = 0; i < nt; ++i) {
          const int64_t lo = std::max<int64_t>(0, pl.begin_of(t0 + i) - kb);
          const int64_t hi = std::min(n_keys, pl.end_of(t0 + i) - kb);
          const bool sees = lo < hi;
          any = any || sees;
          for (int64_t r = i * pl.group; r < (i + 1) * pl.group; ++r) {
            sc.lo[r] = sees ? static_cast<int32_t>(lo) : 0;
            sc.hi[r] = sees ? static_cast<int32_t>(hi) : 0;
          }
        }
        if (!any) continue;
        pl.load_block(g, kb, n_keys, sc);
        pl.run_block(sc, n_rows);
        for (int64_t r = 0; r < n_rows; ++r)
          if (sc.lo[r] < sc.hi[r])
            merge_partial(sc.m[r], sc.l[r], sc.acc + r * pl.hdp, sc.m_b[r], sc.l_b[r], sc.acc_b + r * pl.hdp, pl.hdp);
      }
      for (int64_t r = 0; r < n_rows; ++r) {
        const int64_t t = t0 + r / pl.group, h = g * pl.group + r % pl.group;
        if (pl.s.sinks) merge_sink(sc.m[r], sc.l[r], sc.acc + r * pl.hdp, pl.s.sinks[h], pl.hdp);
        finish_row(sc.acc + r * pl.hdp, sc.l[r], pl.s.head_dim, out + t * pl.q_dim + h * pl.s.head_dim);
      }
    }
  });
}

}  // namespace

bool kv_type_supported(DType kv_type, int64_t head_dim) {
  switch (kv_type) {
    case DType::F32:
    case DType::F16: return head_dim > 0;
    case DType::Q8_0: return head_dim > 0 && head_dim % 32 == 0;
    default: return false;
  }
}

namespace {

Plan make_plan(const float* q, const KvCacheView& kv, const AttentionShape& s, Isa isa) {
  Plan pl;
  pl.q = q;
  pl.kv = kv;
  pl.s = s;
  pl.tk = kv.type == DType::F32 ? nullptr : &best_type_kernels(kv.type, isa);
  pl.family = detail::attention_block_family(isa, s.head_dim);
  pl.group = s.n_heads / s.n_kv_heads;
  pl.hdp = pad8(s.head_dim);
  pl.q_dim = s.n_heads * s.head_dim;
  return pl;
}

// Grows the per-thread scratch and bounds for rows of max_rows query rows.
void reserve_scratch(AttentionWorkspace& ws, int threads, int64_t max_rows, int64_t hdp, int64_t kv_heads) {
  const size_t floats = static_cast<size_t>(threads * scratch_floats(max_rows, hdp, kv_heads));
  if (ws.per_thread.size() < floats) ws.per_thread.resize(floats);
  const size_t bounds = static_cast<size_t>(threads * 2 * max_rows);
  if (ws.bounds.size() < bounds) ws.bounds.resize(bounds);
}

}  // namespace

void attention(ThreadPool& pool, const float* q, const KvCacheView& kv, const AttentionShape& s, Isa isa,
               AttentionWorkspace& ws, float* out) {
  if (s.n_tokens <= 0) return;
  const Plan pl = make_plan(q, kv, s, isa);
  const int64_t max_rows = s.n_tokens == 1 ? pl.group : tile_tokens(pl.group) * pl.group;
  reserve_scratch(ws, pool.n_threads(), max_rows, pl.hdp, s.n_kv_heads);
  if (s.n_tokens == 1) {
    DecodeJob j = decode_job(pl, out);
    decode_many(pool, std::span<DecodeJob>(&j, 1), ws, max_rows, pl.hdp, s.n_kv_heads);
  } else {
    prompt(pool, pl, ws, max_rows, out);
  }
}

void attention_many(ThreadPool& pool, std::span<const AttentionJob> jobs, Isa isa, AttentionWorkspace& ws) {
  std::array<DecodeJob, kDecodeBatch> batch;
  size_t n = 0;
  int64_t max_rows = 0, hdp = 0, kv_heads = 0;
  auto flush = [&] {
    if (n == 0) return;
    reserve_scratch(ws, pool.n_threads(), max_rows, hdp, kv_heads);
    decode_many(pool, std::span<DecodeJob>(batch.data(), n), ws, max_rows, hdp, kv_heads);
    n = 0;
    max_rows = hdp = kv_heads = 0;
  };
  for (const AttentionJob& job : jobs) {
    if (job.shape.n_tokens != 1) continue;
    const Plan pl = make_plan(job.q, job.kv, job.shape, isa);
    batch[n++] = decode_job(pl, job.out);
    max_rows = std::max(max_rows, pl.group);
    hdp = std::max(hdp, pl.hdp);
    kv_heads = std::max(kv_heads, job.shape.n_kv_heads);
    if (n == batch.size()) flush();
  }
  flush();
  for (const AttentionJob& job : jobs)
    if (job.shape.n_tokens > 1) attention(pool, job.q, job.kv, job.shape, isa, ws, job.out);
}

void store_kv_row(const float* src, DType type, int64_t n, Isa isa, void* dst) {
  if (type == DType::F32) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  best_type_kernels(type, isa).quantize_row(src, dst, n);
}

}  // namespace strata::kernels
