// kernels/cuda/attention_wide.h — internal interface between attention.cu (the entry point, which
// writes the new keys and values into the cache) and attention_wide.cu (heads longer than
// attn_kernel's 256 elements, up to kMaxWideHeadDim).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/cuda_kernels.h"

namespace strata::kernels::cuda {

// The longest head it takes: kMaxAttentionHeadDim (cuda_kernels.h), 32 lanes x 32 elements.
constexpr int64_t kMaxWideHeadDim = kMaxAttentionHeadDim;

// Attention of a.n_tokens new rows over the cache (already holding their keys and values), for
// 256 < a.head_dim <= kMaxWideHeadDim; the semantics of attention() (cuda_kernels.h), no workspace.
cudaError_t attention_wide(const AttentionArgs& a, cudaStream_t stream);

}  // namespace strata::kernels::cuda
