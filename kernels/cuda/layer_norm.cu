// kernels/cuda/layer_norm.cu — out[r] = (x[r] - mean) / sqrt(var + eps) * weight + bias, per row
// (LayerNorm: starcoder2). A block per row: one pass for the mean, one for the variance around it
// (two reductions, as the CPU's two sums), one writing. out may alias x (each thread rewrites only
// what it read, after both reductions).
#include "kernels/cuda/common.cuh"

namespace strata::kernels::cuda {
namespace {

// Launch: grid (n_rows) (more rows loop), block 256.
__global__ void __launch_bounds__(256) layer_norm_kernel(const float* x, const float* weight, const float* bias,
                                                         float* out, int64_t n_rows, int64_t n, float eps) {
  __shared__ float scratch[32];
  for (int64_t r = blockIdx.x; r < n_rows; r += gridDim.x) {
    const float* xr = x + r * n;
    float* orow = out + r * n;
    float s = 0.f;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += xr[i];
    const float mean = block_sum(s, scratch) / static_cast<float>(n);
    float ss = 0.f;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const float d = xr[i] - mean;
      ss += d * d;
    }
    const float inv = 1.0f / sqrtf(block_sum(ss, scratch) / static_cast<float>(n) + eps);
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const float y = (xr[i] - mean) * inv * weight[i];
      orow[i] = bias ? y + bias[i] : y;
    }
  }
}

}  // namespace

cudaError_t layer_norm(const float* x, const float* weight, const float* bias, float* out, int64_t n_rows, int64_t n,
                       float eps, cudaStream_t stream) {
  if (n_rows < 0 || n < 0) return cudaErrorInvalidValue;
  if (n_rows == 0 || n == 0) return cudaSuccess;
  const unsigned grid = static_cast<unsigned>(n_rows < (1 << 30) ? n_rows : (1 << 30));
  layer_norm_kernel<<<grid, 256, 0, stream>>>(x, weight, bias, out, n_rows, n, eps);
  return cudaGetLastError();
}

}  // namespace strata::kernels::cuda
