// engine/arch/granite.cpp — granite's and granitemoe's block: llama's steps (interleaved RoPE, SwiGLU
// FFN or routed experts). Their scales are ModelConfig's and applied by the shared steps: embed()
// (embedding_scale), residual_add() (residual_scale, on every path: dense, MoE, tensor-parallel) and
// head_rows() (1 / logit_scale); the query scale is attention.scale.
#include "engine/arch/block_forward.h"

namespace strata::arch {

extern const ArchForward kGraniteForward{pre_norm_attention, gated_ffn_or_experts};

}  // namespace strata::arch
