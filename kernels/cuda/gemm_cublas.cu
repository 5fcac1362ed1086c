// kernels/cuda/gemm_cublas.cu — the prompt-batch matrix product on tensor cores through cuBLAS:
// f16 inputs, f32 accumulation (CUBLAS_COMPUTE_32F) and f32 output, default (tensor-core)
// algorithm. No kernels of our own.
#include "kernels/cuda/common.cuh"

namespace strata::kernels::cuda {

// Row-major to column-major: cuBLAS sees a row-major [R][C] matrix as the column-major [C][R]
// matrix (its transpose), leading dimension C. So
//   W (row-major [rows][cols])      = column-major A  [cols][rows], lda = cols  (A = W^T)
//   X (row-major [n_tokens][cols])  = column-major B  [cols][n_tokens], ldb = cols  (B = X^T)
//   y (row-major [n_tokens][rows])  = column-major C  [rows][n_tokens], ldc = rows  (C = y^T)
// and y = X W^T  <=>  y^T = W X^T  <=>  C = A^T B: op(A) = CUBLAS_OP_T, op(B) = CUBLAS_OP_N,
// m = rows, n = n_tokens, k = cols.
cublasStatus_t gemm_f16(cublasHandle_t handle, const void* w_f16, const void* x_f16, float* y, int64_t rows,
                        int64_t cols, int64_t n_tokens) {
  if (rows < 0 || cols < 0 || n_tokens < 0) return CUBLAS_STATUS_INVALID_VALUE;
  if (rows == 0 || n_tokens == 0) return CUBLAS_STATUS_SUCCESS;
  const float alpha = 1.0f, beta = 0.0f;  // host scalars (the default pointer mode)
  return cublasGemmEx_64(handle, CUBLAS_OP_T, CUBLAS_OP_N, rows, n_tokens, cols, &alpha, w_f16, CUDA_R_16F, cols,
                         x_f16, CUDA_R_16F, cols, &beta, y, CUDA_R_32F, rows, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

}  // namespace strata::kernels::cuda
