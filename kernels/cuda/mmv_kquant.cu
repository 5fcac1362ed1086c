// kernels/cuda/mmv_kquant.cu — mmv instantiations of the K-quants (Q2_K .. Q6_K). The kernels
// live in mmv_kernel.cuh; the entry point in mmv.cu.
#include "kernels/cuda/mmv_kernel.cuh"

namespace strata::kernels::cuda::detail {
template cudaError_t mmv_launch<DecQ2_K>(MmvParams, cudaStream_t);
template cudaError_t mmv_launch<DecQ3_K>(MmvParams, cudaStream_t);
template cudaError_t mmv_launch<DecQ4_K>(MmvParams, cudaStream_t);
template cudaError_t mmv_launch<DecQ5_K>(MmvParams, cudaStream_t);
template cudaError_t mmv_launch<DecQ6_K>(MmvParams, cudaStream_t);
}  // namespace strata::kernels::cuda::detail
