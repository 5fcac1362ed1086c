// kernels/cpu/bandwidth.cpp — streaming-read bandwidth probe (SSE2 loads; reads are memory-
// bound long before the load width matters).
#include "kernels/cpu/bandwidth.h"

#include <emmintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <new>

namespace strata::kernels {
namespace {

uint64_t sum_slice(const uint8_t* p, int64_t bytes) {
  __m128i a0 = _mm_setzero_si128(), a1 = a0, a2 = a0, a3 = a0;
  const __m128i* v = reinterpret_cast<const __m128i*>(p);
  const int64_t n = bytes / 64;
  for (int64_t i = 0; i < n; ++i) {
    a0 = _mm_add_epi64(a0, _mm_load_si128(v + 4 * i));
    a1 = _mm_add_epi64(a1, _mm_load_si128(v + 4 * i + 1));
    a2 = _mm_add_epi64(a2, _mm_load_si128(v + 4 * i + 2));
    a3 = _mm_add_epi64(a3, _mm_load_si128(v + 4 * i + 3));
  }
  const __m128i s = _mm_add_epi64(_mm_add_epi64(a0, a1), _mm_add_epi64(a2, a3));
  uint64_t out[2];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), s);
  return out[0] + out[1];
}

}  // namespace

double measure_read_bandwidth_gbps(ThreadPool& pool, int64_t bytes) {
  bytes = std::max<int64_t>(bytes, int64_t{1} << 20) / 4096 * 4096;
  std::unique_ptr<uint8_t[]> raw(new (std::nothrow) uint8_t[bytes + 64]);
  if (!raw) return 0.0;
  uint8_t* buf = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(raw.get()) + 63) & ~uintptr_t{63});
  const int nth = pool.n_threads();
  auto slice = [&](int ith, int64_t* off, int64_t* len) {
    const int64_t chunks = bytes / 4096;
    const int64_t c0 = chunks * ith / nth, c1 = chunks * (ith + 1) / nth;
    *off = c0 * 4096;
    *len = (c1 - c0) * 4096;
  };
  // First touch by the thread that will read the slice (NUMA placement), non-zero content.
  pool.run([&](int ith, int) {
    int64_t off, len;
    slice(ith, &off, &len);
    std::memset(buf + off, ith + 1, static_cast<size_t>(len));
  });
  std::atomic<uint64_t> sink{0};
  double best = 0.0;
  for (int rep = 0; rep < 4; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.run([&](int ith, int) {
      int64_t off, len;
      slice(ith, &off, &len);
      sink.fetch_add(sum_slice(buf + off, len), std::memory_order_relaxed);
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > 0) best = std::max(best, static_cast<double>(bytes) / s / 1e9);
  }
  return best;
}

}  // namespace strata::kernels
