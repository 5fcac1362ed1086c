// tests/cuda_emu/emu_cublas.cpp — the emulated GPU (tests only): cuBLAS as a plain reference GEMM
// queued on the handle's stream. Inputs are read in their declared type (f32, f16, bf16), products
// accumulate in the compute type (f32 for CUBLAS_COMPUTE_32F*, in k order), the result is written in
// the output type with round-to-nearest-even.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstring>
#include <vector>

#include "emu_internal.h"

namespace strata_emu {
struct CublasContext {
  cudaStream_t stream = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};
}  // namespace strata_emu

namespace {

float load(const void* p, cudaDataType_t t, int64_t i) {
  switch (t) {
    case CUDA_R_32F: return static_cast<const float*>(p)[i];
    case CUDA_R_16F: return __half2float(__ushort_as_half(static_cast<const uint16_t*>(p)[i]));
    case CUDA_R_16BF: return __bfloat162float(__ushort_as_bfloat16(static_cast<const uint16_t*>(p)[i]));
  }
  return 0.f;
}
void store(void* p, cudaDataType_t t, int64_t i, float v) {
  switch (t) {
    case CUDA_R_32F: static_cast<float*>(p)[i] = v; break;
    case CUDA_R_16F: static_cast<uint16_t*>(p)[i] = __half_as_ushort(__float2half_rn(v)); break;
    case CUDA_R_16BF: static_cast<uint16_t*>(p)[i] = __bfloat16_as_ushort(__float2bfloat16_rn(v)); break;
  }
}
size_t elem_bytes(cudaDataType_t t) { return t == CUDA_R_32F ? 4 : 2; }
bool known(cudaDataType_t t) { return t == CUDA_R_32F || t == CUDA_R_16F || t == CUDA_R_16BF; }

// Column-major: element (r, c) of a matrix with leading dimension ld is at r + c * ld.
cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n, int64_t k,
                    float alpha, const void* a, cudaDataType_t at, int64_t lda, const void* b, cudaDataType_t bt,
                    int64_t ldb, float beta, void* c, cudaDataType_t ct, int64_t ldc, cublasComputeType_t compute) {
  if (h == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (m < 0 || n < 0 || k < 0 || (ta != CUBLAS_OP_N && ta != CUBLAS_OP_T) || (tb != CUBLAS_OP_N && tb != CUBLAS_OP_T))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (!known(at) || !known(bt) || !known(ct)) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (compute != CUBLAS_COMPUTE_32F && compute != CUBLAS_COMPUTE_32F_FAST_16F &&
      compute != CUBLAS_COMPUTE_32F_FAST_16BF && compute != CUBLAS_COMPUTE_32F_FAST_TF32)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  const int64_t a_rows = ta == CUBLAS_OP_N ? m : k, a_cols = ta == CUBLAS_OP_N ? k : m;
  const int64_t b_rows = tb == CUBLAS_OP_N ? k : n, b_cols = tb == CUBLAS_OP_N ? n : k;
  if (lda < (a_rows > 1 ? a_rows : 1) || ldb < (b_rows > 1 ? b_rows : 1) || ldc < (m > 1 ? m : 1))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
  // Device pointers only: a host pointer here is the bug the emulation should show.
  if ((k > 0 && (!strata_emu::is_device_range(a, elem_bytes(at) * ((a_cols - 1) * lda + a_rows)) ||
                 !strata_emu::is_device_range(b, elem_bytes(bt) * ((b_cols - 1) * ldb + b_rows)))) ||
      !strata_emu::is_device_range(c, elem_bytes(ct) * ((n - 1) * ldc + m)))
    return CUBLAS_STATUS_INVALID_VALUE;
  const cudaError_t e = strata_emu::enqueue_host_work(h->stream, [=] {
    // op(B) and each row of op(A) are read once into f32 (exact: f16 and bf16 widen without
    // rounding). Output (i, j) is still one sum in k order; the loop runs over j innermost, so the
    // n independent sums of a row advance together (the compiler vectorizes across outputs, never
    // within one sum): the same bits as one dot product at a time, without a type switch and a
    // conversion per multiply-add.
    std::vector<float> bt_rows(static_cast<size_t>(k * n)), arow(static_cast<size_t>(k)), acc(static_cast<size_t>(n));
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < n; ++j)
        bt_rows[static_cast<size_t>(p * n + j)] = load(b, bt, tb == CUBLAS_OP_N ? p + j * ldb : j + p * ldb);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t p = 0; p < k; ++p) arow[static_cast<size_t>(p)] = load(a, at, ta == CUBLAS_OP_N ? i + p * lda : p + i * lda);
      float* sums = acc.data();
      for (int64_t j = 0; j < n; ++j) sums[j] = 0.f;
      for (int64_t p = 0; p < k; ++p) {
        const float av = arow[static_cast<size_t>(p)];
        const float* brow = bt_rows.data() + p * n;
        for (int64_t j = 0; j < n; ++j) sums[j] += av * brow[j];
      }
      for (int64_t j = 0; j < n; ++j) {
        const float old = beta == 0.f ? 0.f : load(c, ct, i + j * ldc);  // beta 0: C is not read (may be NaN)
        store(c, ct, i + j * ldc, beta == 0.f ? alpha * sums[j] : alpha * sums[j] + beta * old);
      }
    }
  });
  return e == cudaSuccess ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
}

}  // namespace

cublasStatus_t cublasCreate(cublasHandle_t* handle) {
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *handle = new strata_emu::CublasContext;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy(cublasHandle_t handle) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetStream(cublasHandle_t handle, cudaStream_t* stream) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (stream == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *stream = handle->stream;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetWorkspace(cublasHandle_t handle, void* workspace, size_t bytes) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (bytes > 0 && !strata_emu::is_device_range(workspace, bytes)) return CUBLAS_STATUS_INVALID_VALUE;
  handle->workspace = workspace;
  handle->workspace_bytes = bytes;
  return CUBLAS_STATUS_SUCCESS;
}
const char* cublasGetStatusName(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}
const char* cublasGetStatusString(cublasStatus_t s) { return cublasGetStatusName(s); }

cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const float* alpha, const float* a, int lda, const float* b, int ldb, const float* beta,
                           float* c, int ldc) {
  if (alpha == nullptr || beta == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  return gemm(handle, ta, tb, m, n, k, *alpha, a, CUDA_R_32F, lda, b, CUDA_R_32F, ldb, *beta, c, CUDA_R_32F, ldc,
              CUBLAS_COMPUTE_32F);
}

cublasStatus_t cublasGemmEx_64(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
                               int64_t n, int64_t k, const void* alpha, const void* a, cudaDataType_t a_type,
                               int64_t lda, const void* b, cudaDataType_t b_type, int64_t ldb, const void* beta,
                               void* c, cudaDataType_t c_type, int64_t ldc, cublasComputeType_t compute,
                               cublasGemmAlgo_t algo) {
  (void)algo;
  if (alpha == nullptr || beta == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  // With a 32F compute type alpha and beta are f32 host scalars (the default pointer mode).
  return gemm(handle, ta, tb, m, n, k, *static_cast<const float*>(alpha), a, a_type, lda, b, b_type, ldb,
              *static_cast<const float*>(beta), c, c_type, ldc, compute);
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const void* alpha, const void* a, cudaDataType_t a_type, int lda, const void* b,
                            cudaDataType_t b_type, int ldb, const void* beta, void* c, cudaDataType_t c_type, int ldc,
                            cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  return cublasGemmEx_64(handle, ta, tb, m, n, k, alpha, a, a_type, lda, b, b_type, ldb, beta, c, c_type, ldc, compute,
                         algo);
}
