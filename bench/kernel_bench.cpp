// bench/kernel_bench.cpp — CPU matmul micro-benchmark: a [rows x cols] weight matrix of several
// types at decode (1 token) and prompt (64 tokens) shapes; prints ms per product, GB/s of
// weights streamed, GFLOP/s (2 x rows x cols x tokens per call; of the best call, the median and
// the mean beside it), the kernel path matmul took, and the machine's read bandwidth measured right after
// each row (a shared machine's bandwidth moves within seconds).
// Usage: kernel_bench [threads=2] [rows=5632] [cols=2048] [isa=best|scalar|avx2|avx512|amx]
//                     [types=q4_k,q8_0,...|all] [tokens=1,64]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "kernels/cpu/bandwidth.h"
#include "kernels/cpu/dtype.h"
#include "kernels/cpu/fp16.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/quant.h"
#include "kernels/cpu/thread_pool.h"

using namespace strata::kernels;
using strata::bench::seconds_since;

namespace {

// Weight bytes that decode like a real tensor: a few quantized rows, tiled.
std::vector<uint8_t> make_weights(DType t, int64_t rows, int64_t cols) {
  const int64_t rb = row_bytes(t, cols);
  const int64_t distinct = 16;
  std::mt19937 rng(42);
  std::normal_distribution<float> dist(0.f, 0.02f);
  std::vector<float> x(static_cast<size_t>(cols));
  std::vector<uint8_t> proto(static_cast<size_t>(rb * distinct));
  for (int64_t r = 0; r < distinct; ++r) {
    for (float& f : x) f = dist(rng);
    quantize_row(t, x.data(), proto.data() + r * rb, cols);
  }
  std::vector<uint8_t> w(static_cast<size_t>(rb * rows));
  for (int64_t r = 0; r < rows; ++r) std::memcpy(w.data() + r * rb, proto.data() + (r % distinct) * rb, rb);
  return w;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int64_t rows = argc > 2 ? std::atoll(argv[2]) : 5632;
  const int64_t cols = argc > 3 ? std::atoll(argv[3]) : 2048;
  if (argc > 4 && !strata::bench::use_isa(argv[4])) {
    std::fprintf(stderr, "kernel_bench: isa '%s' is unknown or not supported here (best, scalar, avx2, avx512, amx)\n", argv[4]);
    return 2;
  }
  std::vector<DType> types = {DType::Q4_K, DType::Q8_0, DType::Q6_K, DType::F16, DType::Q5_K, DType::Q4_0};
  if (argc > 5) {
    types.clear();
    std::string list = argv[5];
    if (list == "all") list = "f32,f16,bf16,q8_0,q4_0,q4_1,q5_0,q5_1,q2_k,q3_k,q4_k,q5_k,q6_k,iq4_nl,iq4_xs,tq1_0,tq2_0,mxfp4";
    for (const std::string& name : strata::bench::split_commas(list)) {
      const auto t = dtype_from_name(name);
      if (!t) {
        std::fprintf(stderr, "kernel_bench: unknown type '%s'\n", name.c_str());
        return 2;
      }
      if (!can_quantize(*t)) {  // its weights would be all zero bytes: no honest timing
        std::fprintf(stderr, "kernel_bench: '%s' is read but not written (no quantizer to make weights)\n", name.c_str());
        return 2;
      }
      types.push_back(*t);
    }
  }
  const std::vector<int64_t> token_counts = strata::bench::parse_positive_list(argc > 6 ? argv[6] : "1,64");
  if (token_counts.empty()) {
    std::fprintf(stderr, "kernel_bench: no token count in '%s'\n", argv[6]);
    return 2;
  }
  ThreadPool pool(threads);
  std::printf("cpu: %s\nisa %s, %d threads, W = %lld rows x %lld cols\n", cpu_description().c_str(),
              isa_name(active_isa()), threads, static_cast<long long>(rows), static_cast<long long>(cols));
  {
    // ThreadPool::run() overhead: empty runs back to back (decode does ~200 per token).
    std::atomic<int> sink{0};
    double best = 1e9;
    for (int rep = 0; rep < 20; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < 1000; ++i) pool.run([&sink](int ith, int) { sink.fetch_add(ith, std::memory_order_relaxed); });
      best = std::min(best, seconds_since(t0) / 1000);
    }
    std::printf("empty ThreadPool::run: %.2f us (best of 20 x 1000)\n", best * 1e6);
  }

  std::vector<uint8_t> scratch;
  for (DType t : types) {
    const int64_t wbytes = row_bytes(t, cols) * rows;
    // Enough distinct copies that decode streams from memory, not from the 32 MB L3; with
    // STRATA_BENCH_HOT=1 one copy (it stays in cache if small: the kernels' compute ceiling).
    const bool hot = std::getenv("STRATA_BENCH_HOT") != nullptr;
    const int copies = hot ? 1 : static_cast<int>(std::max<int64_t>(1, (int64_t{160} << 20) / wbytes));
    std::vector<std::vector<uint8_t>> ws;
    ws.push_back(make_weights(t, rows, cols));
    for (int c = 1; c < copies; ++c) ws.push_back(ws[0]);
    for (int64_t tokens : token_counts) {
      std::mt19937 rng(7);
      std::normal_distribution<float> dist(0.f, 1.f);
      std::vector<float> x(static_cast<size_t>(tokens * cols)), y(static_cast<size_t>(tokens * rows));
      for (float& f : x) f = dist(rng);
      const int warm = tokens == 1 ? copies : 2;
      for (int i = 0; i < warm; ++i) matmul(pool, t, ws[i % copies].data(), rows, cols, x.data(), tokens, y.data(), scratch);
      // Best, median and mean of many calls (see bench::Timing).
      std::vector<double> times;
      const auto t0 = std::chrono::steady_clock::now();
      do {
        const auto c0 = std::chrono::steady_clock::now();
        matmul(pool, t, ws[times.size() % copies].data(), rows, cols, x.data(), tokens, y.data(), scratch);
        times.push_back(seconds_since(c0));
      } while (seconds_since(t0) < 1.0 || times.size() < 4);
      const strata::bench::Timing timing = strata::bench::summarize(std::move(times));
      const double s = timing.best, med = timing.median, mean = timing.mean;
      const double gbps = static_cast<double>(wbytes) / s / 1e9;
      const double gops = 2.0 * rows * cols * tokens / s / 1e9;
      const double bw = measure_read_bandwidth_gbps(pool, int64_t{256} << 20);  // right after this row's calls
      // Mean beside best and median: test-backend-ops reports the mean time per run.
      std::printf("%-5s tokens=%-3lld best %8.3f ms (median %8.3f, mean %8.3f)  %6.1f GB/s weights (%3.0f%% of read bw %5.1f GB/s)  %7.1f GFLOP/s (mean %7.1f)  [%s]\n",
                  dtype_name(t), static_cast<long long>(tokens), s * 1e3, med * 1e3, mean * 1e3, gbps,
                  bw > 0 ? 100 * gbps / bw : 0.0, bw, gops, 2.0 * rows * cols * tokens / mean / 1e9, matmul_path(t, tokens).c_str());
    }
  }
  return 0;
}
