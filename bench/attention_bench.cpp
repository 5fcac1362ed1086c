// bench/attention_bench.cpp — decode attention micro-benchmark: one query token over a KV cache
// at a given depth, the way the CPU backend calls kernels::attention, for one layer at a time
// over `layers` distinct caches (so that, like a real model, the caches stream from memory, not
// from the L3). Prints ms per call (one layer), the KV bytes read per call and their GB/s, and the
// machine's read bandwidth measured right after each row.
// Usage: attention_bench [threads=1,2] [depths=1024,4096,8192] [kv=f16|f32|q8_0] [heads=16]
//                        [kv_heads=4] [head_dim=64] [layers=16] [isa=best|scalar|avx2|avx512]
// Defaults: the 246M benchmark model's shape (16 query heads, 4 KV heads, head_dim 64, f16 KV).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/bandwidth.h"
#include "kernels/cpu/dtype.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/thread_pool.h"

using namespace strata::kernels;
using strata::bench::parse_positive_list;
using strata::bench::seconds_since;

namespace {

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<int64_t> thread_counts = parse_positive_list(argc > 1 ? argv[1] : "1,2");
  const std::vector<int64_t> depths = parse_positive_list(argc > 2 ? argv[2] : "1024,4096,8192");
  const auto kv_type = dtype_from_name(argc > 3 ? argv[3] : "f16");
  const int64_t n_heads = argc > 4 ? std::atoll(argv[4]) : 16;
  const int64_t n_kv = argc > 5 ? std::atoll(argv[5]) : 4;
  const int64_t hd = argc > 6 ? std::atoll(argv[6]) : 64;
  const int64_t layers = argc > 7 ? std::atoll(argv[7]) : 16;
  if (argc > 8 && !strata::bench::use_isa(argv[8])) {
    std::fprintf(stderr, "attention_bench: isa '%s' is unknown or not supported here (best, scalar, avx2, avx512)\n", argv[8]);
    return 2;
  }
  if (thread_counts.empty() || depths.empty() || !kv_type || !kv_type_supported(*kv_type, hd) || n_kv <= 0 || n_heads % n_kv != 0 || layers <= 0) {
    std::fprintf(stderr, "attention_bench: unsupported shape or KV type\n");
    return 2;
  }
  const int64_t kv_dim = n_kv * hd;
  const int64_t row_b = row_bytes(*kv_type, kv_dim);
  std::printf("cpu: %s\nisa %s, decode attention: %lld heads / %lld KV heads x %lld, %s KV, %lld layers' caches\n",
              cpu_description().c_str(), isa_name(active_isa()), static_cast<long long>(n_heads),
              static_cast<long long>(n_kv), static_cast<long long>(hd), dtype_name(*kv_type),
              static_cast<long long>(layers));

  // Uniform values in [-2, 2) from a xorshift generator (a normal distribution made the setup of
  // 16 x 8k positions take longer than the measurement).
  uint64_t state = 0x9E3779B97F4A7C15ull;
  auto uniform = [&state] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return static_cast<float>(static_cast<int64_t>(state >> 40) - (int64_t{1} << 23)) * (2.0f / (1 << 23));
  };
  const int64_t max_depth = *std::max_element(depths.begin(), depths.end());
  // One distinct cache per layer, filled with random rows through store_kv_row like the backend.
  std::vector<std::vector<uint8_t>> k(static_cast<size_t>(layers)), v(static_cast<size_t>(layers));
  {
    std::vector<float> row(static_cast<size_t>(kv_dim));
    for (int64_t l = 0; l < layers; ++l) {
      k[l].resize(static_cast<size_t>((max_depth + 1) * row_b));
      v[l].resize(k[l].size());
      for (int64_t p = 0; p <= max_depth; ++p) {
        for (float& f : row) f = uniform();
        store_kv_row(row.data(), *kv_type, kv_dim, active_isa(), k[l].data() + p * row_b);
        for (float& f : row) f = uniform();
        store_kv_row(row.data(), *kv_type, kv_dim, active_isa(), v[l].data() + p * row_b);
      }
    }
  }
  std::vector<float> q(static_cast<size_t>(n_heads * hd)), out(q.size());
  for (float& f : q) f = uniform();

  for (int64_t threads : thread_counts) {
    ThreadPool pool(static_cast<int>(threads));
    AttentionWorkspace ws;
    for (int64_t depth : depths) {
      AttentionShape s;
      s.n_tokens = 1;
      s.pos0 = depth;  // the new token sits after `depth` cached positions: depth + 1 keys
      s.n_heads = n_heads;
      s.n_kv_heads = n_kv;
      s.head_dim = hd;
      s.scale = 1.0f / std::sqrt(static_cast<float>(hd));
      auto call = [&](int64_t layer) {
        KvCacheView view;
        view.k = k[layer].data();
        view.v = v[layer].data();
        view.type = *kv_type;
        view.row_stride_bytes = row_b;
        view.head_stride_bytes = row_bytes(*kv_type, hd);
        attention(pool, q.data(), view, s, active_isa(), ws, out.data());
      };
      for (int64_t l = 0; l < layers; ++l) call(l);  // warm: workspace grown, pages touched
      // Per call: a sweep over all layers is timed as one sample (ms per call = sweep / layers),
      // best and median of the sweeps.
      std::vector<double> sweeps;
      const double cpu0 = process_cpu_seconds();
      const auto t0 = std::chrono::steady_clock::now();
      do {
        const auto c0 = std::chrono::steady_clock::now();
        for (int64_t l = 0; l < layers; ++l) call(l);
        sweeps.push_back(seconds_since(c0) / static_cast<double>(layers));
      } while (seconds_since(t0) < 1.0 || sweeps.size() < 5);
      // CPU time of the process per call (all threads, spinning included): on a loaded machine it
      // leaves out the time a thread waited for a core.
      const double cpu_per_call = (process_cpu_seconds() - cpu0) / static_cast<double>(sweeps.size() * layers);
      const strata::bench::Timing timing = strata::bench::summarize(std::move(sweeps));
      const double best = timing.best, med = timing.median;
      const double bytes = 2.0 * static_cast<double>((depth + 1) * row_b);  // K and V rows read per call
      const double bw = measure_read_bandwidth_gbps(pool, int64_t{256} << 20);
      std::printf("threads=%lld depth=%-5lld best %7.3f ms (median %7.3f) per call  KV %6.2f MiB  %6.2f GB/s "
                  "(median %6.2f; read bw %5.1f GB/s)  cpu %7.3f ms per call  %lld sweeps\n",
                  static_cast<long long>(threads), static_cast<long long>(depth), best * 1e3, med * 1e3,
                  bytes / (1 << 20), bytes / best / 1e9, bytes / med / 1e9, bw, cpu_per_call * 1e3,
                  static_cast<long long>(timing.calls));
    }
  }
  return 0;
}
