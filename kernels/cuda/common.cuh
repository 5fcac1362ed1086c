// kernels/cuda/common.cuh — small helpers shared by the CUDA kernels: the call-checking macro,
// warp / block reductions, alignment tests, launch-size arithmetic. Device code and host launch
// code of kernels/cuda only; no engine types.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/cuda_kernels.h"

// Evaluates a CUDA runtime call and returns its error from the enclosing function when it fails.
// (The engine glue turns the returned cudaError_t into a Status naming the op.)
#define STRATA_CUDA_TRY(expr)                       \
  do {                                              \
    const cudaError_t strata_cuda_err_ = (expr);    \
    if (strata_cuda_err_ != cudaSuccess) return strata_cuda_err_; \
  } while (0)

namespace strata::kernels::cuda {

constexpr int kWarp = 32;

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline bool aligned_to(const void* p, size_t bytes) {
  return (reinterpret_cast<uintptr_t>(p) & (bytes - 1)) == 0;
}

// Blocks for a grid-stride loop over n items: enough to fill any current GPU, never zero.
inline unsigned grid_for(int64_t n, int threads, int64_t max_blocks = 65536) {
  int64_t b = ceil_div(n, threads);
  if (b < 1) b = 1;
  if (b > max_blocks) b = max_blocks;
  return static_cast<unsigned>(b);
}

// The KV cache row of a position: itself, or its place in a ring of `cells` rows (attention.cu,
// attention_wide.cu).
__host__ __device__ __forceinline__ int64_t cache_row(int64_t pos, int64_t cells) { return cells > 0 ? pos % cells : pos; }

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Sum / max over the whole block (blockDim.x a multiple of 32, at most 1024); every thread gets
// the result. `scratch`: __shared__ float[32]. Contains __syncthreads: call from all threads.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp, n_warps = blockDim.x / kWarp;
  v = warp_sum(v);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < n_warps ? scratch[lane] : 0.f;
  return warp_sum(v);
}

__device__ __forceinline__ float block_max(float v, float* scratch) {
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp, n_warps = blockDim.x / kWarp;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < n_warps ? scratch[lane] : -INFINITY;
  return warp_max(v);
}

__device__ __forceinline__ uint16_t f32_to_f16_rn(float f) { return __half_as_ushort(__float2half_rn(f)); }
__device__ __forceinline__ float f16_to_f32(uint16_t h) { return __half2float(__ushort_as_half(h)); }

}  // namespace strata::kernels::cuda
