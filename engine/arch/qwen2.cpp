// engine/arch/qwen2.cpp — qwen2's block: llama's, with Q/K/V biases and NeoX RoPE (the row's
// traits; the biases are required tensors there).
#include "engine/arch/block_forward.h"

namespace strata::arch {

extern const ArchForward kQwen2Forward{pre_norm_attention, pre_norm_gated_ffn};

}  // namespace strata::arch
