// tests/cuda_emu/kernels/emu_semantics.cu — the emulation's own test kernels: each probes one
// guarantee of CUDA (per-block __shared__, warp exchanges with masks, threads that return, warps
// with different trip counts, dynamic shared memory, atomics). Written as ordinary CUDA: it goes
// through the same rewrite (cuda_emu_rewrite.py) as kernels/cuda.
#include "emu_semantics.h"

namespace emu_test {
namespace {

__global__ void shared_per_block_kernel(int* out, int n) {
  __shared__ int vals[1024];
  vals[threadIdx.x] = static_cast<int>(blockIdx.x);
  __syncthreads();
  out[blockIdx.x * n + threadIdx.x] = vals[(threadIdx.x + 1) % n];
}

__global__ void warp_ops_kernel(int* out) {
  const int lane = threadIdx.x;
  int v = lane;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  out[lane * 8 + 0] = v;
  out[lane * 8 + 1] = __shfl_down_sync(0xffffffffu, lane * 10, 1);
  out[lane * 8 + 2] = __shfl_up_sync(0xffffffffu, lane * 10, 2);
  out[lane * 8 + 3] = __shfl_sync(0xffffffffu, lane * 10, 5, 16);
  out[lane * 8 + 4] = static_cast<int>(__ballot_sync(0xffffffffu, lane & 1));
  out[lane * 8 + 5] = __any_sync(0xffffffffu, lane == 7);
  out[lane * 8 + 6] = __all_sync(0xffffffffu, lane < 32);
  if (lane < 16) {
    int h = lane;
    for (int o = 8; o > 0; o >>= 1) h += __shfl_xor_sync(0x0000ffffu, h, o);
    out[lane * 8 + 7] = h;
  } else {
    out[lane * 8 + 7] = -1;
  }
}

__global__ void early_exit_kernel(int* out) {
  const int tid = threadIdx.x;
  if (tid % 3 == 0) {
    out[tid] = 0;
    return;
  }
  __syncthreads();
  __syncwarp();
  const int live = __syncthreads_count(1);
  __syncwarp();
  out[tid] = 1 + live;
}

__global__ void uneven_warps_kernel(int* out) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int total = 0;
  for (int it = 0; it <= warp; ++it) {
    __syncwarp();
    int v = lane + it;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    total += v;
  }
  out[threadIdx.x] = total;
}

__global__ void dynamic_shared_kernel(int* out, int n) {
  extern __shared__ int buf[];
  buf[threadIdx.x] = static_cast<int>(threadIdx.x) * 3;
  __syncthreads();
  out[threadIdx.x] = buf[n - 1 - threadIdx.x];
}

__global__ void atomics_kernel(int* counter, float* fsum) {
  atomicAdd(counter, 1);
  atomicAdd(fsum, 0.5f);
}

__global__ void bad_mask_kernel(int* out) {
  if (threadIdx.x == 0) __syncwarp(0xfffffffeu);
  out[threadIdx.x] = 1;
}

__global__ void divergent_barrier_kernel(int* out) {
  // Lane 0 waits for the block at __syncthreads, lanes 1..31 wait for lane 0 at __syncwarp: neither
  // barrier can complete (a hang on a GPU).
  if (threadIdx.x == 0) __syncthreads();
  else __syncwarp();
  out[threadIdx.x] = 1;
}

__global__ void twice_kernel(const float* x, float* y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = 2.0f * x[i];
}

}  // namespace

cudaError_t shared_per_block(int* out, int grid, int n, cudaStream_t s) {
  shared_per_block_kernel<<<grid, n, 0, s>>>(out, n);
  return cudaGetLastError();
}
cudaError_t warp_ops(int* out, cudaStream_t s) {
  warp_ops_kernel<<<1, 32, 0, s>>>(out);
  return cudaGetLastError();
}
cudaError_t early_exit(int* out, int n, cudaStream_t s) {
  early_exit_kernel<<<1, n, 0, s>>>(out);
  return cudaGetLastError();
}
cudaError_t uneven_warps(int* out, cudaStream_t s) {
  uneven_warps_kernel<<<1, 128, 0, s>>>(out);
  return cudaGetLastError();
}
cudaError_t dynamic_shared(int* out, int n, cudaStream_t s) {
  dynamic_shared_kernel<<<1, n,
                          n * sizeof(int), s>>>(  // a launch over two lines, as some files write them
      out, n);
  return cudaGetLastError();
}
cudaError_t atomics(int* counter, float* fsum, int grid, int block, cudaStream_t s) {
  atomics_kernel<<<grid, block, 0, s>>>(counter, fsum);
  return cudaGetLastError();
}
cudaError_t bad_launch(cudaStream_t s) {
  twice_kernel<<<1, 2048, 0, s>>>(nullptr, nullptr, 0);
  return cudaGetLastError();
}
cudaError_t bad_mask(int* out, cudaStream_t s) {
  bad_mask_kernel<<<1, 32, 0, s>>>(out);
  return cudaGetLastError();
}
cudaError_t divergent_barrier(int* out, cudaStream_t s) {
  divergent_barrier_kernel<<<1, 32, 0, s>>>(out);
  return cudaGetLastError();
}
cudaError_t twice(const float* x, float* y, int n, cudaStream_t s) {
  twice_kernel<<<4, 64, 0, s>>>(x, y, n);
  return cudaGetLastError();
}

}  // namespace emu_test
