// kernels/cuda/mmv_q32.cu — mmv instantiations of the 32-element block types (Q4_0, Q4_1, Q5_0,
// Q5_1, Q8_0). The kernels live in mmv_kernel.cuh; the entry point in mmv.cu.
#include "kernels/cuda/mmv_kernel.cuh"

namespace strata::kernels::cuda::detail {
template cudaError_t mmv_launch<DecQ4_0>(MmvParams, cudaStream_t);
template cudaError_t mmv_launch<DecQ4_1>(MmvParams, cudaStream_t);
template cudaError_t mmv_launch<DecQ5_0>(MmvParams, cudaStream_t);
template cudaError_t mmv_launch<DecQ5_1>(MmvParams, cudaStream_t);
template cudaError_t mmv_launch<DecQ8_0>(MmvParams, cudaStream_t);
}  // namespace strata::kernels::cuda::detail
