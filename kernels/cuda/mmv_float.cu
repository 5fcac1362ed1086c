// kernels/cuda/mmv_float.cu — mmv instantiations of the float weight types (F32, F16, BF16).
// The kernels live in mmv_kernel.cuh; the entry point in mmv.cu.
#include "kernels/cuda/mmv_kernel.cuh"

namespace strata::kernels::cuda::detail {
template cudaError_t mmv_launch<DecF32>(MmvParams, cudaStream_t);
template cudaError_t mmv_launch<DecF16>(MmvParams, cudaStream_t);
template cudaError_t mmv_launch<DecBF16>(MmvParams, cudaStream_t);
}  // namespace strata::kernels::cuda::detail
