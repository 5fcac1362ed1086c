// engine/arch/qwen3.cpp — qwen3's block: per-head RMS norms of Q and K before NeoX RoPE, no
// biases; a SwiGLU FFN.
#include "engine/arch/block_forward.h"

namespace strata::arch {

extern const ArchForward kQwen3Forward{pre_norm_qk_norm_attention, pre_norm_gated_ffn};

}  // namespace strata::arch
