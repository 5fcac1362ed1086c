// tests/cuda_emu/kernels/emu_semantics.h — host entries of the emulation's own test kernels
// (emu_semantics.cu): each launches one kernel that probes one CUDA guarantee and writes what it
// saw to device memory. Returns the launch status.
#pragma once

#include <cuda_runtime.h>

namespace emu_test {

// out[b * n + t] = the value thread t of block b read from a __shared__ array the block filled
// with b (after __syncthreads), read from a neighbour's slot. grid blocks of n threads.
cudaError_t shared_per_block(int* out, int grid, int n, cudaStream_t s);
// One warp; out[lane * 8 + k]: k = 0 xor-sum of lane ids, 1 shfl_down by 1, 2 shfl_up by 2,
// 3 shfl idx 5 (width 16), 4 ballot of odd lanes, 5 any(lane == 7), 6 all(lane < 32),
// 7 the xor-sum over lanes 0..15 with mask 0xffff (lanes 16..31 write -1).
cudaError_t warp_ops(int* out, cudaStream_t s);
// Threads with tid % 3 == 0 return at once; the rest meet at __syncthreads and __syncwarp twice
// and write out[tid] = 1 + (number of live threads counted through __syncthreads_count).
cudaError_t early_exit(int* out, int n, cudaStream_t s);
// 4 warps; warp w loops w + 1 times: __syncwarp, then a warp sum of (lane + iteration) by shuffles.
// out[tid] = sum over its iterations. (Different trip counts per warp: HIP-CPU's failure case.)
cudaError_t uneven_warps(int* out, cudaStream_t s);
// Dynamic shared memory of n ints: thread t writes t * 3, __syncthreads, reads slot n - 1 - t.
cudaError_t dynamic_shared(int* out, int n, cudaStream_t s);
// Every thread of every block atomicAdds 1 to *counter and 0.5 to *fsum.
cudaError_t atomics(int* counter, float* fsum, int grid, int block, cudaStream_t s);
// A launch with 2048 threads per block (invalid configuration).
cudaError_t bad_launch(cudaStream_t s);
// Lane 0 calls __syncwarp with a mask that leaves itself out (a misuse the emulation reports).
cudaError_t bad_mask(int* out, cudaStream_t s);
// One warp: lane 0 waits at __syncthreads, lanes 1..31 at __syncwarp: a deadlock, which the
// emulation reports at once (cudaErrorLaunchTimeout, as a GPU's watchdog would).
cudaError_t divergent_barrier(int* out, cudaStream_t s);
// y[i] = x[i] * 2 over n elements (grid-stride), for the stream and event tests.
cudaError_t twice(const float* x, float* y, int n, cudaStream_t s);

}  // namespace emu_test
