// kernels/cpu/matmul_probe.h — measured rates of the CPU's matrix products, for the planner's cost
// model: what a one-token product (decode) reads per second of one weight type, and the FLOP rate
// of a prompt-shaped product. Depends on matmul.h and thread_pool.h; no engine types.
#pragma once

#include <cstdint>

#include "kernels/cpu/dtype.h"
#include "kernels/cpu/thread_pool.h"

namespace strata::kernels {

// One-token products y = x W^T with W of type `t` streamed from memory (copies of a weight matrix
// of `bytes` in all, larger than the caches, read in turn): the median of 8 passes. A row costs
// a fixed time (its horizontal sums, the store, the start of its 4-row group) beyond its bytes at
// the streaming rate, which makes short rows slower per byte: q8_0 at 1 thread on a Zen 3 VM read
// 16.5 GB/s with 2048-column rows and 10.7 GB/s with 576-column ones (SmolLM2-135M's). So two row
// lengths are timed (2048 columns, and 576 or for the 256-element types 768) and
// t(row) = row_ns + row_bytes / gbps is fitted through them. This is what decode reads weights at, below the memory's read bandwidth when the
// kernel's dequantize-and-dot work is the limit. {0, 0} when the buffers cannot be allocated or
// `t` has no matrix product.
struct MatvecSpeed {
  double gbps = 0;    // weight bytes per second of long rows, 1e9 bytes/s
  double row_ns = 0;  // fixed nanoseconds per weight row, >= 0
};
MatvecSpeed measure_matvec(ThreadPool& pool, DType t, int64_t bytes = int64_t{64} << 20);

// The fixed time of one one-token product call, in microseconds, beyond its rows and bytes at
// `q8_0` (measure_matvec of Q8_0): the hand-out to the pool's threads, the wait for the last one,
// the activations' quantization. Timed on small q8_0 matrices (192 rows of 576 columns: a
// SmolLM2-135M K or V projection) streamed from memory, copies of `bytes` in all read in turn, less
// what their rows and bytes account for. At 2 threads on the Zen 3 VM a SmolLM2-135M block's 7
// products ran about 5 us a call slower than their rows and bytes alone; back-to-back calls of a
// matrix in L1 show only 0.7 us, so the small products' own imbalance is most of it. 0 when it
// cannot be measured.
double measure_matvec_call_us(ThreadPool& pool, const MatvecSpeed& q8_0, int64_t bytes = int64_t{64} << 20);

// Products of `tokens` tokens at once with W of type `t` (prompt processing): the best of a few, in
// TFLOP/s (2 x rows x cols x tokens per product).
double measure_matmul_tflops(ThreadPool& pool, DType t, int64_t tokens = 64);

}  // namespace strata::kernels
