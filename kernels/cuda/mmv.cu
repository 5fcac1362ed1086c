// kernels/cuda/mmv.cu — entry point of the matrix product of every weight type (decode and
// prompts, any token count, batch-invariant): argument checks and the dispatch to the per-type kernels that
// mmv_float.cu, mmv_q32.cu and mmv_kquant.cu instantiate from mmv_kernel.cuh.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/mmv_launch.h"
#include "kernels/cuda/quant_blocks.cuh"

namespace strata::kernels::cuda {

bool supports_weight_type(DType type) {
  return visit_decoder(type, [](auto) {});
}

cudaError_t mmv(const MatView& w, const float* x, int64_t n_tokens, float* y, cudaStream_t stream) {
  if (n_tokens < 1 || w.rows < 0 || w.cols < 0) return cudaErrorInvalidValue;
  const QbGeometry g = qb_geometry(w.type);
  if (g.block_elems == 0 || w.cols % g.block_elems != 0) return cudaErrorInvalidValue;
  if (w.rows == 0) return cudaSuccess;
  if (w.cols == 0) {  // empty sums
    return cudaMemsetAsync(y, 0, static_cast<size_t>(n_tokens * w.rows) * sizeof(float), stream);
  }
  // Blocks are read with 16-bit loads (F32 elements with 32-bit ones, MXFP4 blocks by bytes).
  if (!aligned_to(w.data, qb_data_alignment(w.type))) return cudaErrorInvalidValue;
  detail::MmvParams p;
  p.w = static_cast<const uint8_t*>(w.data);
  p.row_bytes = qb_row_bytes(w.type, w.cols);
  p.w_end = p.w + p.row_bytes * w.rows;
  p.rows = w.rows;
  p.cols = w.cols;
  p.x = x;
  p.y = y;
  p.n_tokens = n_tokens;
  cudaError_t err = cudaErrorInvalidValue;
  visit_decoder(w.type, [&](auto tag) { err = detail::mmv_launch<typename decltype(tag)::type>(p, stream); });
  return err;
}

}  // namespace strata::kernels::cuda
