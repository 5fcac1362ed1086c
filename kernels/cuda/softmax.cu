// kernels/cuda/softmax.cu — in-place softmax of each row of x: [n_rows][n]. One variant: a block
// per row, two passes over it (an online max / sum, then the normalised exponentials).
#include "kernels/cuda/common.cuh"

namespace strata::kernels::cuda {
namespace {

// Launch: grid (n_rows) (more rows loop), block 256 or 1024 (long rows). Pass 1: each thread
// keeps a running max and sum of exp(x - max) over its stride of the row; the block merges them
// (max, then the sums rescaled to it). Pass 2: x = exp(x - max) / sum.
__global__ void softmax_kernel(float* x, int64_t n_rows, int64_t n) {
  __shared__ float scratch[32];
  for (int64_t r = blockIdx.x; r < n_rows; r += gridDim.x) {
    float* xr = x + r * n;
    float m = -INFINITY, s = 0.f;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const float v = xr[i];
      if (v > m) {
        s = s * __expf(m - v) + 1.f;
        m = v;
      } else if (m != -INFINITY) {  // (v == m == -inf adds nothing)
        s += __expf(v - m);
      }
    }
    const float row_max = block_max(m, scratch);
    const float sum = block_sum(m == -INFINITY ? 0.f : s * __expf(m - row_max), scratch);
    const float inv = 1.0f / sum;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) xr[i] = __expf(xr[i] - row_max) * inv;
  }
}

}  // namespace

cudaError_t softmax_rows(float* x, int64_t n_rows, int64_t n, cudaStream_t stream) {
  if (n_rows < 0 || n < 0) return cudaErrorInvalidValue;
  if (n_rows == 0 || n == 0) return cudaSuccess;
  const unsigned grid = static_cast<unsigned>(n_rows < (1 << 30) ? n_rows : (1 << 30));
  softmax_kernel<<<grid, n >= 8192 ? 1024 : 256, 0, stream>>>(x, n_rows, n);
  return cudaGetLastError();
}

}  // namespace strata::kernels::cuda
