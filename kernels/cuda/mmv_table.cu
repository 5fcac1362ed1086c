// kernels/cuda/mmv_table.cu — mmv instantiations of the 4-bit table types (IQ4_NL, IQ4_XS, MXFP4:
// gpt-oss's experts). The kernels live in mmv_kernel.cuh; the entry point in mmv.cu.
#include "kernels/cuda/mmv_kernel.cuh"

namespace strata::kernels::cuda::detail {
template cudaError_t mmv_launch<DecIQ4_NL>(MmvParams, cudaStream_t);
template cudaError_t mmv_launch<DecIQ4_XS>(MmvParams, cudaStream_t);
template cudaError_t mmv_launch<DecMXFP4>(MmvParams, cudaStream_t);
}  // namespace strata::kernels::cuda::detail
