// tests/kernels/test_attention.cpp — kernels/cpu/attention against a float64 reference over the
// same cache contents, for the scalar reference and the AVX2 and AVX-512 kernels: context lengths
// 1, 17, 256, 1,000 and 4,099 (odd sizes, key-block edges), GQA 1, 4 and 8, causal and not, F32 /
// F16 / Q8_0 caches, sliding windows; and the promise of attention.h that a token's output is
// bit-identical whether it comes alone (the decode split) or in a prompt of any chunking.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/thread_pool.h"

namespace strata::kernels {
namespace {

constexpr int64_t kKvHeads = 2;
constexpr int64_t kHeadDim = 64;

// A cache of n_ctx positions x kKvHeads heads, every position stored with store_kv_row (the way
// the CPU backend writes it), plus what it holds as floats (the reference's keys and values).
struct Cache {
  DType type;
  int64_t n_ctx;
  std::vector<uint8_t> k, v;
  std::vector<float> kf, vf;  // [n_ctx][kKvHeads * kHeadDim]
  int64_t row_bytes() const { return kernels::row_bytes(type, kKvHeads * kHeadDim); }
  KvCacheView view() const {
    KvCacheView view;
    view.k = k.data();
    view.v = v.data();
    view.type = type;
    view.row_stride_bytes = row_bytes();
    view.head_stride_bytes = kernels::row_bytes(type, kHeadDim);
    return view;
  }
};

Cache make_cache(DType type, int64_t n_ctx, uint32_t seed) {
  Cache c{type, n_ctx, {}, {}, {}, {}};
  const int64_t dim = kKvHeads * kHeadDim;
  c.k.resize(static_cast<size_t>(n_ctx * c.row_bytes()));
  c.v.resize(c.k.size());
  c.kf.resize(static_cast<size_t>(n_ctx * dim));
  c.vf.resize(c.kf.size());
  const std::vector<float> k = test::random_floats(n_ctx * dim, seed), v = test::random_floats(n_ctx * dim, seed + 1);
  for (int64_t p = 0; p < n_ctx; ++p) {
    store_kv_row(k.data() + p * dim, type, dim, best_isa(), c.k.data() + p * c.row_bytes());
    store_kv_row(v.data() + p * dim, type, dim, best_isa(), c.v.data() + p * c.row_bytes());
    dequantize_row(type, c.k.data() + p * c.row_bytes(), c.kf.data() + p * dim, dim);
    dequantize_row(type, c.v.data() + p * c.row_bytes(), c.vf.data() + p * dim, dim);
  }
  return c;
}

// out[t][h] in float64 over the cache's float contents.
std::vector<double> reference(const Cache& c, const std::vector<float>& q, const AttentionShape& s) {
  const int64_t group = s.n_heads / s.n_kv_heads, q_dim = s.n_heads * kHeadDim, dim = kKvHeads * kHeadDim;
  std::vector<double> out(static_cast<size_t>(s.n_tokens * q_dim)), w;
  for (int64_t t = 0; t < s.n_tokens; ++t)
    for (int64_t h = 0; h < s.n_heads; ++h) {
      const int64_t end = s.causal ? s.pos0 + t + 1 : s.pos0 + s.n_tokens;
      const int64_t begin = s.window > 0 ? std::max<int64_t>(0, end - s.window) : 0;
      const int64_t off = (h / group) * kHeadDim;
      const float* qh = q.data() + t * q_dim + h * kHeadDim;
      w.assign(static_cast<size_t>(end - begin), 0.0);
      double m = -INFINITY;
      for (int64_t p = begin; p < end; ++p) {
        double dot = 0;
        for (int64_t d = 0; d < kHeadDim; ++d) dot += double(qh[d]) * c.kf[p * dim + off + d];
        w[p - begin] = dot * s.scale;
        m = std::max(m, w[p - begin]);
      }
      double sum = 0;
      for (double& x : w) sum += (x = std::exp(x - m));
      for (int64_t d = 0; d < kHeadDim; ++d) {
        double o = 0;
        for (int64_t p = begin; p < end; ++p) o += w[p - begin] * c.vf[p * dim + off + d];
        out[t * q_dim + h * kHeadDim + d] = o / sum;
      }
    }
  return out;
}

std::vector<Isa> isas_here() {
  std::vector<Isa> v = {Isa::Scalar};
  if (isa_supported(Isa::Avx2)) v.push_back(Isa::Avx2);
  if (isa_supported(Isa::Avx512)) v.push_back(Isa::Avx512);
  return v;
}

// Largest relative L2 error over the rows (one row per token and head).
double worst_row_error(const std::vector<float>& got, const std::vector<double>& want) {
  double worst = 0;
  for (size_t r = 0; r < want.size() / kHeadDim; ++r) {
    double err = 0, norm = 0;
    for (size_t d = r * kHeadDim; d < (r + 1) * kHeadDim; ++d) {
      err += (got[d] - want[d]) * (got[d] - want[d]);
      norm += want[d] * want[d];
    }
    worst = std::max(worst, std::sqrt(err / std::max(norm, 1e-30)));
  }
  return worst;
}

// The query tokens of a case: at a context of L positions, a prompt of min(L, 64) tokens ending
// at L (all L from position 0 when L <= 256, so that prompt tiles, causal block skips and key
// block edges all occur), and the decode token at L - 1.
struct Step {
  int64_t pos0, n_tokens;
};
std::vector<Step> steps_for(int64_t L) {
  const int64_t n = L <= 256 ? L : 64;
  std::vector<Step> s = {{L - n, n}};
  if (n > 1) s.push_back({L - 1, 1});
  return s;
}

void check_case(ThreadPool& pool, const Cache& cache, int64_t group, bool causal, int64_t window, int64_t L) {
  AttentionShape s;
  s.n_heads = kKvHeads * group;
  s.n_kv_heads = kKvHeads;
  s.head_dim = kHeadDim;
  s.scale = 1.0f / std::sqrt(float(kHeadDim));
  s.causal = causal;
  s.window = window;
  for (const Step step : steps_for(L)) {
    s.pos0 = step.pos0;
    s.n_tokens = step.n_tokens;
    // Queries of ~4 sigma per element: scores of a few units, a softmax far from uniform.
    const std::vector<float> q =
        test::random_floats(s.n_tokens * s.n_heads * kHeadDim, static_cast<uint32_t>(7 + L + group), 4.0f);
    const std::vector<double> want = reference(cache, q, s);
    for (Isa isa : isas_here()) {
      SCOPED_TRACE(std::string(isa_name(isa)) + ", " + std::to_string(s.n_tokens) + " tokens at " +
                   std::to_string(s.pos0));
      AttentionWorkspace ws;
      std::vector<float> got(want.size(), NAN);
      attention(pool, q.data(), cache.view(), s, isa, ws, got.data());
      // Tolerance 1e-4 relative L2 per row for every cache type: the kernels read exactly the
      // values the reference reads (F16 and Q8_0 rows are converted to f32 without loss) and keep
      // the query in f32; what remains is f32 rounding of 64-term dot products, of the exp
      // (scalar: libm, AVX2: a ~1 ulp polynomial) and of sums over up to 4,099 positions.
      EXPECT_LT(worst_row_error(got, want), 1e-4);
    }
  }
}

TEST(Attention, MatchesFloat64Reference) {
  ThreadPool pool(2);
  for (DType type : {DType::F32, DType::F16, DType::Q8_0})
    for (int64_t L : {1, 17, 256, 1000, 4099}) {
      const Cache cache = make_cache(type, L, static_cast<uint32_t>(L));
      for (int64_t group : {1, 4, 8})
        for (bool causal : {true, false}) {
          SCOPED_TRACE(std::string(dtype_name(type)) + " cache, context " + std::to_string(L) + ", GQA " +
                       std::to_string(group) + (causal ? ", causal" : ", not causal"));
          check_case(pool, cache, group, causal, 0, L);
        }
    }
}

TEST(Attention, SlidingWindowMatchesReference) {
  ThreadPool pool(2);
  for (DType type : {DType::F16, DType::Q8_0})
    for (int64_t L : {17, 256, 1000}) {
      const Cache cache = make_cache(type, L, static_cast<uint32_t>(3 * L));
      for (int64_t window : {5, 64, 100}) {
        SCOPED_TRACE(std::string(dtype_name(type)) + " cache, context " + std::to_string(L) + ", window " +
                     std::to_string(window));
        check_case(pool, cache, 4, true, window, L);
      }
    }
}

// One prompt of 300 tokens in one call, in chunks of 7 (each chunk a call at its position), and
// one token at a time (the decode split): outputs equal bit for bit, per ISA and cache type.
TEST(Attention, SameBitsWhateverTheChunking) {
  ThreadPool pool(2);
  const int64_t n = 300, group = 4;
  for (DType type : {DType::F32, DType::F16, DType::Q8_0})
    for (int64_t window : {0, 70}) {
      const Cache cache = make_cache(type, n, 99);
      AttentionShape s;
      s.n_heads = kKvHeads * group;
      s.n_kv_heads = kKvHeads;
      s.head_dim = kHeadDim;
      s.scale = 0.125f;
      s.window = window;
      const int64_t q_dim = s.n_heads * kHeadDim;
      const std::vector<float> q = test::random_floats(n * q_dim, 5, 4.0f);
      for (Isa isa : isas_here()) {
        std::vector<std::vector<float>> outs;
        for (int64_t chunk : {n, int64_t{7}, int64_t{1}}) {
          AttentionWorkspace ws;
          std::vector<float> out(static_cast<size_t>(n * q_dim), NAN);
          for (int64_t p0 = 0; p0 < n; p0 += chunk) {
            s.pos0 = p0;
            s.n_tokens = std::min(chunk, n - p0);
            attention(pool, q.data() + p0 * q_dim, cache.view(), s, isa, ws, out.data() + p0 * q_dim);
          }
          outs.push_back(std::move(out));
        }
        for (size_t c = 1; c < outs.size(); ++c)
          for (size_t i = 0; i < outs[0].size(); ++i)
            ASSERT_EQ(outs[c][i], outs[0][i]) << dtype_name(type) << ", " << isa_name(isa) << ", window " << window
                                              << ": " << (c == 1 ? "chunks of 7" : "one token at a time")
                                              << " vs one call, token " << i / q_dim << " element " << i % q_dim;
      }
    }
}

// attention_many against attention() job by job, bit for bit: 19 sequences (more than one batch
// of 16) with their own caches of every type, depths on both sides of key-block edges (1, 63, 64,
// 65, 130, 300), with and without a window, GQA 4 and 1 in one batch (scratch sized for the
// largest), and two prompt jobs of several tokens among them; 1, 2 and 3 threads.
TEST(Attention, ManySequencesGetTheBitsEachGetsAlone) {
  struct Seq {
    Cache cache;
    AttentionShape s;
    std::vector<float> q;
  };
  std::vector<Seq> seqs;
  const DType types[] = {DType::F16, DType::F32, DType::Q8_0};
  const int64_t depths[] = {1, 63, 64, 65, 130, 300};
  for (int i = 0; i < 19; ++i) {
    const int64_t depth = depths[i % 6];
    const int64_t group = i % 5 == 3 ? 1 : 4;
    AttentionShape s;
    s.n_heads = kKvHeads * group;
    s.n_kv_heads = kKvHeads;
    s.head_dim = kHeadDim;
    s.scale = 0.125f;
    s.window = i % 4 == 1 ? 40 : 0;
    s.n_tokens = i == 7 || i == 12 ? std::min<int64_t>(depth, 5) : 1;  // two prompt jobs
    s.pos0 = depth - s.n_tokens;
    std::vector<float> q = test::random_floats(s.n_tokens * s.n_heads * kHeadDim, 31 + static_cast<uint32_t>(i), 4.0f);
    seqs.push_back({make_cache(types[i % 3], depth, 200 + static_cast<uint32_t>(i)), s, std::move(q)});
  }
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (Isa isa : isas_here()) {
      std::vector<std::vector<float>> alone, together;
      std::vector<AttentionJob> jobs;
      AttentionWorkspace ws_alone, ws_many;
      for (const Seq& q : seqs) {
        const size_t n = q.q.size();
        alone.emplace_back(n, NAN);
        together.emplace_back(n, NAN);
        attention(pool, q.q.data(), q.cache.view(), q.s, isa, ws_alone, alone.back().data());
      }
      for (size_t i = 0; i < seqs.size(); ++i)
        jobs.push_back({seqs[i].q.data(), seqs[i].cache.view(), seqs[i].s, together[i].data()});
      attention_many(pool, jobs, isa, ws_many);
      for (size_t i = 0; i < seqs.size(); ++i)
        for (size_t e = 0; e < alone[i].size(); ++e)
          ASSERT_EQ(std::memcmp(&together[i][e], &alone[i][e], sizeof(float)), 0)
              << isa_name(isa) << ", " << threads << " threads, sequence " << i << " (depth "
              << seqs[i].s.pos0 + seqs[i].s.n_tokens << ", " << seqs[i].s.n_tokens << " tokens), element " << e
              << ": " << together[i][e] << " vs " << alone[i][e];
    }
  }
}

// A sliding-window layer's ring (KvCacheView::cells): 700 positions with a window of 100 written
// into 192 rows (100 + one chunk of 64, rounded up to a key block) the way the backend writes
// them, row p mod 192, just before each call; the outputs equal, bit for bit, those over a cache
// of one row per position, in chunks of 64 and 7 and one token at a time (the ring wraps three
// times), per ISA and cache type. attention_many over the ring gives the same bits too.
TEST(Attention, RingOfAWindowGivesTheBitsOfAFullCache) {
  ThreadPool pool(2);
  const int64_t n = 700, group = 4, window = 100, cells = 192;
  for (DType type : {DType::F32, DType::F16, DType::Q8_0}) {
    const Cache full = make_cache(type, n, 123);
    AttentionShape s;
    s.n_heads = kKvHeads * group;
    s.n_kv_heads = kKvHeads;
    s.head_dim = kHeadDim;
    s.scale = 0.125f;
    s.window = window;
    const int64_t q_dim = s.n_heads * kHeadDim, rb = full.row_bytes();
    const std::vector<float> q = test::random_floats(n * q_dim, 17, 4.0f);
    for (Isa isa : isas_here()) {
      for (int64_t chunk : {int64_t{64}, int64_t{7}, int64_t{1}}) {
        // Rows start as another sequence's leftovers (the full cache's last rows): only what the
        // window sees may matter.
        std::vector<uint8_t> rk(full.k.end() - cells * rb, full.k.end()), rv(full.v.end() - cells * rb, full.v.end());
        KvCacheView ring = full.view();
        ring.cells = cells;
        AttentionWorkspace ws_full, ws_ring;
        std::vector<float> want(static_cast<size_t>(chunk * q_dim)), got(want.size());
        for (int64_t p0 = 0; p0 < n; p0 += chunk) {
          const int64_t len = std::min(chunk, n - p0);
          for (int64_t p = p0; p < p0 + len; ++p) {  // the call's new rows, copied as stored
            std::memcpy(rk.data() + (p % cells) * rb, full.k.data() + p * rb, static_cast<size_t>(rb));
            std::memcpy(rv.data() + (p % cells) * rb, full.v.data() + p * rb, static_cast<size_t>(rb));
          }
          ring.k = rk.data();
          ring.v = rv.data();
          s.pos0 = p0;
          s.n_tokens = len;
          attention(pool, q.data() + p0 * q_dim, full.view(), s, isa, ws_full, want.data());
          attention(pool, q.data() + p0 * q_dim, ring, s, isa, ws_ring, got.data());
          for (int64_t i = 0; i < len * q_dim; ++i)
            ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(float)), 0)
                << dtype_name(type) << ", " << isa_name(isa) << ", chunks of " << chunk << ", token " << p0 + i / q_dim
                << " element " << i % q_dim << ": ring " << got[i] << " vs full " << want[i];
          if (len == 1) {  // a decode batch: the ring's job beside a full cache's
            std::vector<float> many_ring(static_cast<size_t>(q_dim)), many_full(many_ring.size());
            const AttentionJob jobs[] = {{q.data() + p0 * q_dim, ring, s, many_ring.data()},
                                         {q.data() + p0 * q_dim, full.view(), s, many_full.data()}};
            AttentionWorkspace ws_many;
            attention_many(pool, jobs, isa, ws_many);
            ASSERT_EQ(std::memcmp(many_ring.data(), want.data(), static_cast<size_t>(q_dim) * sizeof(float)), 0)
                << dtype_name(type) << ", " << isa_name(isa) << ", attention_many at " << p0;
            ASSERT_EQ(std::memcmp(many_full.data(), want.data(), static_cast<size_t>(q_dim) * sizeof(float)), 0);
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace strata::kernels
