// kernels/cpu/bandwidth.h — a measured memory read bandwidth, for the planner's cost model.
// Depends on thread_pool.h only.
#pragma once

#include <cstdint>

#include "kernels/cpu/thread_pool.h"

namespace strata::kernels {

// Streams through a buffer of `bytes` (larger than the caches) with every thread of the pool,
// each reading its own slice; returns the best of a few runs in GB/s (1e9 bytes/s), or 0 when
// the buffer cannot be allocated. Takes ~0.5 s for the default size.
double measure_read_bandwidth_gbps(ThreadPool& pool, int64_t bytes = int64_t{512} << 20);

}  // namespace strata::kernels
