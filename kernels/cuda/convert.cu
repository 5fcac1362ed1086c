// kernels/cuda/convert.cu — f32 -> f16 (round to nearest even) of activations, for gemm_f16.
// Variants: convert_f32_to_f16, the plain conversion (4 elements per thread, 16-byte load and
// 8-byte store when both pointers allow it, else one; a grid-stride loop); convert_rows_f32_to_f16,
// a block per row that scales a row whose largest |value| is past f16's range (65504) by a power
// of two first, so prompt activations above 65504 do not become inf, and scale_rows, which takes
// that power of two back out of the product's rows.
#include "kernels/cuda/common.cuh"

namespace strata::kernels::cuda {
namespace {

// Launch: grid-stride over n / 4 groups of 4 (vec) or n elements, 256 threads per block.
__global__ void __launch_bounds__(256) convert_f32_f16_kernel(const float* x, uint16_t* out, int64_t n, bool vec) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (vec) {
    const int64_t n4 = n / 4;
    for (int64_t i = first; i < n4; i += stride) {
      const float4 v = reinterpret_cast<const float4*>(x)[i];
      uint2 pk;
      pk.x = f32_to_f16_rn(v.x) | (static_cast<uint32_t>(f32_to_f16_rn(v.y)) << 16);
      pk.y = f32_to_f16_rn(v.z) | (static_cast<uint32_t>(f32_to_f16_rn(v.w)) << 16);
      reinterpret_cast<uint2*>(out)[i] = pk;
    }
    for (int64_t i = n4 * 4 + first; i < n; i += stride) out[i] = f32_to_f16_rn(x[i]);
  } else {
    for (int64_t i = first; i < n; i += stride) out[i] = f32_to_f16_rn(x[i]);
  }
}

// Launch: grid (n_rows) (more rows loop), block 256. A block takes row r: max |x| over it (f32,
// block_max), then, where that is past 65504 (and finite), k such that max * 2^k lies in
// [2^14, 2^15); else k = 0. The row is stored as f16(x * 2^k) and factor[r] = 2^-k. A power of
// two multiplies exactly (the row's f16 rounding is the unscaled one, but for values that fall
// below f16's normal range, 2^-14 of the row's largest times 2^-k: far below its rounding).
__global__ void __launch_bounds__(256) convert_rows_scaled_kernel(const float* x, uint16_t* out, float* factor,
                                                                  int64_t n_rows, int64_t n) {
  __shared__ float scratch[32];
  for (int64_t r = blockIdx.x; r < n_rows; r += gridDim.x) {
    const float* xr = x + r * n;
    uint16_t* orow = out + r * n;
    float m = 0.f;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, fabsf(xr[i]));
    m = block_max(m, scratch);
    int k = 0;
    if (m > 65504.0f && m <= 3.402823466e38f) {
      int e = 0;
      (void)frexpf(m, &e);  // m = f * 2^e, f in [0.5, 1)
      k = 15 - e;
    }
    const float s = ldexpf(1.0f, k);
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) orow[i] = f32_to_f16_rn(xr[i] * s);
    if (threadIdx.x == 0) factor[r] = ldexpf(1.0f, -k);
  }
}

// Launch: grid-stride over n_rows * n, 256 threads. y[r][i] *= factor[r] (a power of two: exact).
__global__ void __launch_bounds__(256) scale_rows_kernel(float* y, const float* factor, int64_t n_rows, int64_t n) {
  const int64_t total = n_rows * n;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float f = factor[i / n];
    if (f != 1.0f) y[i] *= f;
  }
}

}  // namespace

cudaError_t convert_rows_f32_to_f16(const float* x, void* out_f16, float* factor, int64_t n_rows, int64_t n,
                                    cudaStream_t stream) {
  if (n_rows < 0 || n < 0) return cudaErrorInvalidValue;
  if (n_rows == 0) return cudaSuccess;
  const unsigned grid = static_cast<unsigned>(n_rows < (1 << 30) ? n_rows : (1 << 30));
  convert_rows_scaled_kernel<<<grid, 256, 0, stream>>>(x, static_cast<uint16_t*>(out_f16), factor, n_rows, n);
  return cudaGetLastError();
}

cudaError_t scale_rows(float* y, const float* factor, int64_t n_rows, int64_t n, cudaStream_t stream) {
  if (n_rows < 0 || n < 0) return cudaErrorInvalidValue;
  if (n_rows == 0 || n == 0) return cudaSuccess;
  scale_rows_kernel<<<grid_for(n_rows * n, 256), 256, 0, stream>>>(y, factor, n_rows, n);
  return cudaGetLastError();
}

cudaError_t convert_f32_to_f16(const float* x, void* out_f16, int64_t n, cudaStream_t stream) {
  if (n < 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  const bool vec = aligned_to(x, 16) && aligned_to(out_f16, 8);
  convert_f32_f16_kernel<<<grid_for(vec ? ceil_div(n, 4) : n, 256), 256, 0, stream>>>(
      x, static_cast<uint16_t*>(out_f16), n, vec);
  return cudaGetLastError();
}

}  // namespace strata::kernels::cuda
