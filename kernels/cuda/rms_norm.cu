// kernels/cuda/rms_norm.cu — out[r] = x[r] / sqrt(mean(x[r]^2) + eps) * weight, per row.
// One variant: a block per row, float4 accesses when n % 4 == 0 and the pointers allow, else
// scalar. out may alias x (each thread rewrites only what it read, after the reduction).
#include "kernels/cuda/common.cuh"

namespace strata::kernels::cuda {
namespace {

// Launch: grid (n_rows) (rows past 65535 * 32768 loop), block 256. The block strides over the
// row summing squares (f32, per thread), reduces them (warp shuffles + shared memory), then
// strides again writing x * inv * weight.
__global__ void __launch_bounds__(256) rms_norm_kernel(const float* x, const float* weight, float* out, int64_t n_rows,
                                                       int64_t n, float eps, bool vec) {
  __shared__ float scratch[32];
  for (int64_t r = blockIdx.x; r < n_rows; r += gridDim.x) {
    const float* xr = x + r * n;
    float* orow = out + r * n;
    float ss = 0.f;
    if (vec) {
      for (int64_t i = threadIdx.x; i < n / 4; i += blockDim.x) {
        const float4 v = reinterpret_cast<const float4*>(xr)[i];
        ss += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
      }
    } else {
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x) ss += xr[i] * xr[i];
    }
    ss = block_sum(ss, scratch);
    const float inv = 1.0f / sqrtf(ss / static_cast<float>(n) + eps);
    if (vec) {
      for (int64_t i = threadIdx.x; i < n / 4; i += blockDim.x) {
        const float4 v = reinterpret_cast<const float4*>(xr)[i];
        const float4 w = reinterpret_cast<const float4*>(weight)[i];
        reinterpret_cast<float4*>(orow)[i] = make_float4(v.x * inv * w.x, v.y * inv * w.y, v.z * inv * w.z, v.w * inv * w.w);
      }
    } else {
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x) orow[i] = xr[i] * inv * weight[i];
    }
  }
}

}  // namespace

cudaError_t rms_norm(const float* x, const float* weight, float* out, int64_t n_rows, int64_t n, float eps,
                     cudaStream_t stream) {
  if (n_rows < 0 || n < 0) return cudaErrorInvalidValue;
  if (n_rows == 0 || n == 0) return cudaSuccess;
  const bool vec = n % 4 == 0 && aligned_to(x, 16) && aligned_to(weight, 16) && aligned_to(out, 16);
  const unsigned grid = static_cast<unsigned>(n_rows < (1 << 30) ? n_rows : (1 << 30));
  rms_norm_kernel<<<grid, 256, 0, stream>>>(x, weight, out, n_rows, n, eps, vec);
  return cudaGetLastError();
}

}  // namespace strata::kernels::cuda
