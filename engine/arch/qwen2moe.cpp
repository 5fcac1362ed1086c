// engine/arch/qwen2moe.cpp — qwen2moe's block: qwen2's attention; every FFN routed experts plus a
// shared expert scaled by its sigmoid gate (moe_route runs it).
#include "engine/arch/block_forward.h"

namespace strata::arch {

extern const ArchForward kQwen2MoeForward{pre_norm_attention, routed_experts_ffn};

}  // namespace strata::arch
