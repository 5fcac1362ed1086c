// kernels/cuda/mmv_launch.h — internal interface between mmv.cu (the entry point and its type
// dispatch) and the mmv_*.cu files that instantiate the kernel of mmv_kernel.cuh per type group.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace strata::kernels::cuda::detail {

struct MmvParams {
  const uint8_t* w = nullptr;      // [rows][row_bytes], 2-byte aligned (4 for F32, 1 for MXFP4)
  const uint8_t* w_end = nullptr;  // w + rows * row_bytes: no load reaches past it
  int64_t rows = 0, cols = 0, row_bytes = 0;
  const float* x = nullptr;        // [n_tokens][cols]
  float* y = nullptr;              // [n_tokens][rows]
  int64_t n_tokens = 0;            // any count >= 1: token groups of the kernel's class T each
  int64_t token_groups = 1;        // ceil(n_tokens / T); CTA b takes row group b / token_groups,
                                   // token group b % token_groups (neighbours share weight rows in L2)
  bool x_aligned = true;           // every token row of x starts 16-byte aligned (float4 loads)
};

// Defined in mmv_kernel.cuh; explicitly instantiated for each decoder in one of the mmv_*.cu.
template <class Dec>
cudaError_t mmv_launch(MmvParams p, cudaStream_t stream);

}  // namespace strata::kernels::cuda::detail
