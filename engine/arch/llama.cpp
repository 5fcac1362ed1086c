// engine/arch/llama.cpp — llama's block (Llama 2/3, Mistral, TinyLlama, SmolLM2; Mixtral when the
// file has experts): x += attn(rms_norm(x)), Q/K/V with the biases a file may carry, interleaved
// RoPE; x += SwiGLU FFN(rms_norm(x)), or the routed experts of a Mixtral-style block.
#include "engine/arch/block_forward.h"

namespace strata::arch {

extern const ArchForward kLlamaForward{pre_norm_attention, gated_ffn_or_experts};

}  // namespace strata::arch
