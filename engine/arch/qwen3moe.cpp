// engine/arch/qwen3moe.cpp — qwen3moe's block: qwen3's attention (Q/K head norms); every FFN
// routed experts, top-k weights renormalised.
#include "engine/arch/block_forward.h"

namespace strata::arch {

extern const ArchForward kQwen3MoeForward{pre_norm_qk_norm_attention, routed_experts_ffn};

}  // namespace strata::arch
