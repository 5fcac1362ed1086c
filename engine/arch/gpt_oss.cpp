// engine/arch/gpt_oss.cpp — gpt-oss's block: llama's pre-norm attention (Q/K/V biases; the output
// bias and the per-head attention sinks are rope_attend's, from the weights the shard holds) and a
// routed-experts FFN in every layer (router and expert biases, the softmax over the top-k logits,
// the clamped SwiGLU: moe_route and moe_experts read them from the config and the weights). Its
// FFN input norm is the file's post_attention_norm.weight (the arch table's tensor_name).
#include "engine/arch/block_forward.h"

namespace strata::arch {

extern const ArchForward kGptOssForward{pre_norm_attention, routed_experts_ffn};

}  // namespace strata::arch
