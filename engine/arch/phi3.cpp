// engine/arch/phi3.cpp — phi3's block: llama's arithmetic on fused Q/K/V and gate/up tensors
// (the binder makes row-range views of them), NeoX RoPE with long-context factors.
#include "engine/arch/block_forward.h"

namespace strata::arch {

extern const ArchForward kPhi3Forward{pre_norm_attention, pre_norm_gated_ffn};

}  // namespace strata::arch
