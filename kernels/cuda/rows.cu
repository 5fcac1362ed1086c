// kernels/cuda/rows.cu — row gather and scaled row scatter-add by an index list: how a
// mixture-of-experts layer collects the tokens routed to one expert and adds that expert's output
// back, weighted. One variant each: rows are independent, so one block per row with a
// block-stride loop over its n floats (coalesced); the index list is small (tokens x top-k).
#include "kernels/cuda/common.cuh"

namespace strata::kernels::cuda {
namespace {

// Launch: one block of 256 threads per output row i (grid.x = min(n_rows, 65535), grid-stride
// over rows); thread t copies elements t, t + 256, ... of row rows[i] of src into row i of dst.
__global__ void __launch_bounds__(256) gather_rows_kernel(const float* src, int64_t n, const int32_t* rows,
                                                          int64_t n_rows, float* dst) {
  for (int64_t i = blockIdx.x; i < n_rows; i += gridDim.x) {
    const float* s = src + static_cast<int64_t>(rows[i]) * n;
    float* d = dst + i * n;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) d[j] = s[j];
  }
}

// Launch: as gather_rows_kernel; thread t adds scales[i] * src[i][j] into dst[rows[i]][j] for
// j = t, t + 256, .... The rows are distinct, so no two blocks write the same element.
__global__ void __launch_bounds__(256) scale_add_rows_kernel(float* dst, int64_t n, const float* src,
                                                             const int32_t* rows, const float* scales,
                                                             int64_t n_rows) {
  for (int64_t i = blockIdx.x; i < n_rows; i += gridDim.x) {
    float* d = dst + static_cast<int64_t>(rows[i]) * n;
    const float* s = src + i * n;
    const float w = scales[i];
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) d[j] += w * s[j];
  }
}

unsigned row_grid(int64_t n_rows) { return static_cast<unsigned>(n_rows < 65535 ? n_rows : 65535); }

}  // namespace

cudaError_t gather_rows(const float* src, int64_t n, const int32_t* rows, int64_t n_rows, float* dst,
                        cudaStream_t stream) {
  if (n < 0 || n_rows < 0) return cudaErrorInvalidValue;
  if (n == 0 || n_rows == 0) return cudaSuccess;
  gather_rows_kernel<<<row_grid(n_rows), 256, 0, stream>>>(src, n, rows, n_rows, dst);
  return cudaGetLastError();
}

cudaError_t scale_add_rows(float* dst, int64_t n, const float* src, const int32_t* rows, const float* scales,
                           int64_t n_rows, cudaStream_t stream) {
  if (n < 0 || n_rows < 0) return cudaErrorInvalidValue;
  if (n == 0 || n_rows == 0) return cudaSuccess;
  scale_add_rows_kernel<<<row_grid(n_rows), 256, 0, stream>>>(dst, n, src, rows, scales, n_rows);
  return cudaGetLastError();
}

}  // namespace strata::kernels::cuda
