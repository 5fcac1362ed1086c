// kernels/cpu/bandwidth.cpp — streaming-read bandwidth probe. A roofline is only as good as its
// probe: the best reader of a machine sets the bound, so the probe runs several readers and keeps
// the fastest (issue 50: on a 2-core Xeon VM the one plain reader measured 17 GB/s while llama.cpp's
// Q8_0 decode read 20 GB/s, and our own decode came out at "106% of roofline"):
//   plain       one stream a thread, 16-byte loads, the hardware prefetchers alone;
//   prefetched  the same with a software prefetch 1 KiB ahead (what the decode kernels do,
//               type_kernels_x86.inc "prefetch_ahead");
//   4 streams   each thread's slice read as 4 streams side by side, one line of each an iteration,
//               each prefetched 1 KiB ahead;
//   4 rows      8 KiB rows, 4 side by side, each line prefetched into L2 4 rows on (the decode-rows
//               kernels read weight rows so).
// On this project's shared 2-core EPYC VM the fastest of them changes from run to run (the
// machine's bandwidth moves by 30% within a minute), which is why all of them run, interleaved.
// SSE2 loads: reads are memory-bound long before the load width matters.
#include "kernels/cpu/bandwidth.h"

#include <emmintrin.h>
#include <xmmintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <new>

namespace strata::kernels {
namespace {

constexpr int64_t kAhead = 1024;  // bytes a software prefetch runs ahead of the loads

inline __m128i line_sum(const uint8_t* p, __m128i acc) {
  const __m128i* v = reinterpret_cast<const __m128i*>(p);
  const __m128i s = _mm_add_epi64(_mm_add_epi64(_mm_sad_epu8(_mm_load_si128(v), _mm_setzero_si128()),
                                                _mm_sad_epu8(_mm_load_si128(v + 1), _mm_setzero_si128())),
                                  _mm_add_epi64(_mm_sad_epu8(_mm_load_si128(v + 2), _mm_setzero_si128()),
                                                _mm_sad_epu8(_mm_load_si128(v + 3), _mm_setzero_si128())));
  return _mm_add_epi64(acc, s);
}

uint64_t total(__m128i s) {
  uint64_t out[2];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), s);
  return out[0] + out[1];
}

// Each reader returns the sum of the bytes it read (so that the loads cannot be dropped, and so that
// a test can check every byte was read once). bytes: a multiple of 256.
uint64_t read_plain(const uint8_t* p, int64_t bytes) {
  __m128i a0 = _mm_setzero_si128(), a1 = a0;
  for (int64_t i = 0; i < bytes; i += 128) {
    a0 = line_sum(p + i, a0);
    a1 = line_sum(p + i + 64, a1);
  }
  return total(_mm_add_epi64(a0, a1));
}

uint64_t read_prefetched(const uint8_t* p, int64_t bytes) {
  __m128i a0 = _mm_setzero_si128(), a1 = a0;
  for (int64_t i = 0; i < bytes; i += 128) {
    _mm_prefetch(reinterpret_cast<const char*>(p + i + kAhead), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(p + i + kAhead + 64), _MM_HINT_T0);
    a0 = line_sum(p + i, a0);
    a1 = line_sum(p + i + 64, a1);
  }
  return total(_mm_add_epi64(a0, a1));
}

uint64_t read_four_streams(const uint8_t* p, int64_t bytes) {
  const int64_t quarter = bytes / 4 / 64 * 64;
  const uint8_t* s[4] = {p, p + quarter, p + 2 * quarter, p + 3 * quarter};
  __m128i a[4] = {_mm_setzero_si128(), _mm_setzero_si128(), _mm_setzero_si128(), _mm_setzero_si128()};
  for (int64_t i = 0; i < quarter; i += 64) {
    for (int r = 0; r < 4; ++r) {
      _mm_prefetch(reinterpret_cast<const char*>(s[r] + i + kAhead), _MM_HINT_T0);
      a[r] = line_sum(s[r] + i, a[r]);
    }
  }
  uint64_t sum = total(_mm_add_epi64(_mm_add_epi64(a[0], a[1]), _mm_add_epi64(a[2], a[3])));
  // What the four equal streams left over (bytes not a multiple of 4 lines).
  for (int64_t i = 4 * quarter; i < bytes; i += 64) sum += total(line_sum(p + i, _mm_setzero_si128()));
  return sum;
}

// Rows of a weight matrix, 4 side by side, a line of each an iteration, as the decode-rows kernels
// read them; each line prefetched into L2 at the same place 4 rows on (the next group), which gives
// a whole group of lead time and covers the rows' starts (type_kernels_x86.inc "prefetch_rows_step",
// whose lead is one group for groups of 4 KB or more, as these 32 KB ones).
template <int64_t kRowBytes>
uint64_t read_rows(const uint8_t* p, int64_t bytes) {
  constexpr int64_t kGroup = 4 * kRowBytes;
  __m128i a[4] = {_mm_setzero_si128(), _mm_setzero_si128(), _mm_setzero_si128(), _mm_setzero_si128()};
  int64_t g = 0;
  for (; g + kGroup <= bytes; g += kGroup) {
    const uint8_t* base = p + g;
    for (int64_t i = 0; i < kRowBytes; i += 64) {
      for (int r = 0; r < 4; ++r) {
        if (g + kGroup + r * kRowBytes + i < bytes)
          _mm_prefetch(reinterpret_cast<const char*>(base + kGroup + r * kRowBytes + i), _MM_HINT_T1);
        a[r] = line_sum(base + r * kRowBytes + i, a[r]);
      }
    }
  }
  uint64_t sum = total(_mm_add_epi64(_mm_add_epi64(a[0], a[1]), _mm_add_epi64(a[2], a[3])));
  for (int64_t i = g; i < bytes; i += 64) sum += total(line_sum(p + i, _mm_setzero_si128()));
  return sum;
}

using Reader = uint64_t (*)(const uint8_t*, int64_t);
constexpr Reader kReaders[] = {&read_plain, &read_prefetched, &read_four_streams, &read_rows<8192>};
constexpr const char* kReaderNames[] = {"plain", "prefetched", "4 streams", "4 rows"};

}  // namespace

uint64_t read_probe_sum(int reader, const uint8_t* p, int64_t bytes) {
  if (reader < 0 || reader >= kReadBandwidthReaders || bytes % 256 != 0) return 0;
  return kReaders[reader](p, bytes);
}

const char* read_probe_name(int reader) {
  return reader >= 0 && reader < kReadBandwidthReaders ? kReaderNames[reader] : "?";
}

double measure_read_bandwidth_gbps(ThreadPool& pool, int64_t bytes, int* best_reader) {
  if (best_reader) *best_reader = -1;
  bytes = std::max<int64_t>(bytes, int64_t{1} << 20) / 4096 * 4096;
  // kAhead bytes past the end stay inside the allocation: the last prefetches read nothing stale.
  std::unique_ptr<uint8_t[]> raw(new (std::nothrow) uint8_t[bytes + 64 + kAhead]);
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
  // Readers take turns rep by rep, so that a slow moment of a shared machine does not fall on one.
  for (int rep = 0; rep < 4; ++rep) {
    for (int r = 0; r < kReadBandwidthReaders; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      pool.run([&](int ith, int) {
        int64_t off, len;
        slice(ith, &off, &len);
        sink.fetch_add(kReaders[r](buf + off, len), std::memory_order_relaxed);
      });
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double gbps = s > 0 ? static_cast<double>(bytes) / s / 1e9 : 0.0;
      if (gbps > best) {
        best = gbps;
        if (best_reader) *best_reader = r;
      }
    }
  }
  return best;
}

}  // namespace strata::kernels
