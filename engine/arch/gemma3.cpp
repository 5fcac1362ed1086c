// engine/arch/gemma3.cpp — gemma3's block: Q/K head norms, interleaved local (sliding window,
// own RoPE base) and global layers, a GeGLU FFN, and post-norms of both updates (residual_add
// applies them). The embedding scale, window pattern and activation are the row's data.
#include "engine/arch/block_forward.h"

namespace strata::arch {

extern const ArchForward kGemma3Forward{pre_norm_qk_norm_attention, pre_norm_gated_ffn};

}  // namespace strata::arch
