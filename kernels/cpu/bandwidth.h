// kernels/cpu/bandwidth.h — a measured memory read bandwidth, for the planner's cost model.
// Depends on thread_pool.h only.
#pragma once

#include <cstdint>

#include "kernels/cpu/thread_pool.h"

namespace strata::kernels {

// Streams through a buffer of `bytes` (larger than the caches) with every thread of the pool,
// each reading its own slice, with each of the readers below; returns the best of a few runs of the
// fastest in GB/s (1e9 bytes/s), or 0 when the buffer cannot be allocated. best_reader (optional)
// <- which reader that was. Takes ~0.5 s for the default size.
double measure_read_bandwidth_gbps(ThreadPool& pool, int64_t bytes = int64_t{512} << 20, int* best_reader = nullptr);

// The readers (bandwidth.cpp says how each reads): their number, names, and for tests the sum of
// the bytes a reader reads from [p, p + bytes) (bytes a multiple of 256; p 64-byte aligned, with
// 1 KiB readable past the end for its prefetches); 0 for a bad reader or size.
inline constexpr int kReadBandwidthReaders = 4;
const char* read_probe_name(int reader);
uint64_t read_probe_sum(int reader, const uint8_t* p, int64_t bytes);

}  // namespace strata::kernels
