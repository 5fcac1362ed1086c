// kernels/cuda/convert.cu — f32 -> f16 (round to nearest even) of activations, for gemm_f16.
// One variant: 4 elements per thread (16-byte load, 8-byte store) when both pointers allow it,
// else one; a grid-stride loop.
#include "kernels/cuda/common.cuh"

namespace strata::kernels::cuda {
namespace {

// Launch: grid-stride over n / 4 groups of 4 (vec) or n elements, 256 threads per block.
__global__ void __launch_bounds__(256) convert_f32_f16_kernel(const float* x, uint16_t* out, int64_t n, bool vec) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (vec) {
    const int64_t n4 = n / 4;
    for (int64_t i = first; i < n4; i += stride) {
      const float4 v = reinterpret_cast<const float4*>(x)[i];
      uint2 pk;
      pk.x = f32_to_f16_rn(v.x) | (static_cast<uint32_t>(f32_to_f16_rn(v.y)) << 16);
      pk.y = f32_to_f16_rn(v.z) | (static_cast<uint32_t>(f32_to_f16_rn(v.w)) << 16);
      reinterpret_cast<uint2*>(out)[i] = pk;
    }
    for (int64_t i = n4 * 4 + first; i < n; i += stride) out[i] = f32_to_f16_rn(x[i]);
  } else {
    for (int64_t i = first; i < n; i += stride) out[i] = f32_to_f16_rn(x[i]);
  }
}

}  // namespace

cudaError_t convert_f32_to_f16(const float* x, void* out_f16, int64_t n, cudaStream_t stream) {
  if (n < 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  const bool vec = aligned_to(x, 16) && aligned_to(out_f16, 8);
  convert_f32_f16_kernel<<<grid_for(vec ? ceil_div(n, 4) : n, 256), 256, 0, stream>>>(
      x, static_cast<uint16_t*>(out_f16), n, vec);
  return cudaGetLastError();
}

}  // namespace strata::kernels::cuda
