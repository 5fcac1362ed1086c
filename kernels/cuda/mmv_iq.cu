// kernels/cuda/mmv_iq.cu — mmv instantiations of the grid types (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS,
// IQ2_S, IQ3_XXS, IQ3_S) and the ternary ones (TQ1_0, TQ2_0). The kernels live in mmv_kernel.cuh;
// the entry point in mmv.cu.
#include "kernels/cuda/mmv_kernel.cuh"

namespace strata::kernels::cuda::detail {
template cudaError_t mmv_launch<DecIQ2_XXS>(MmvParams, cudaStream_t);
template cudaError_t mmv_launch<DecIQ2_XS>(MmvParams, cudaStream_t);
template cudaError_t mmv_launch<DecIQ2_S>(MmvParams, cudaStream_t);
template cudaError_t mmv_launch<DecIQ3_XXS>(MmvParams, cudaStream_t);
template cudaError_t mmv_launch<DecIQ3_S>(MmvParams, cudaStream_t);
template cudaError_t mmv_launch<DecIQ1_S>(MmvParams, cudaStream_t);
template cudaError_t mmv_launch<DecIQ1_M>(MmvParams, cudaStream_t);
template cudaError_t mmv_launch<DecTQ1_0>(MmvParams, cudaStream_t);
template cudaError_t mmv_launch<DecTQ2_0>(MmvParams, cudaStream_t);
}  // namespace strata::kernels::cuda::detail
