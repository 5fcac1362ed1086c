// kernels/cpu/matmul_probe.h — measured rates of the CPU's matrix products, for the planner's cost
// model: what a one-token product (decode) reads per second of one weight type, and the FLOP rate
// of a prompt-shaped product. Depends on matmul.h and thread_pool.h; no engine types.
#pragma once

#include <cstdint>

#include "kernels/cpu/dtype.h"
#include "kernels/cpu/thread_pool.h"

namespace strata::kernels {

// One-token products y = x W^T with W of type `t` streamed from memory (copies of a weight matrix
// of `bytes` in all, larger than the caches, read in turn): the best of a few passes, in GB/s of
// weight bytes (1e9 bytes/s). This is the rate decode reads weights at, below the memory's read
// bandwidth when the kernel's dequantize-and-dot work is the limit. 0 when the buffers cannot be
// allocated or `t` has no matrix product.
double measure_matvec_gbps(ThreadPool& pool, DType t, int64_t bytes = int64_t{96} << 20);

// Products of `tokens` tokens at once with W of type `t` (prompt processing): the best of a few, in
// TFLOP/s (2 x rows x cols x tokens per product).
double measure_matmul_tflops(ThreadPool& pool, DType t, int64_t tokens = 64);

}  // namespace strata::kernels
