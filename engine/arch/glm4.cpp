// engine/arch/glm4.cpp — glm4's block: x += post_norm(attn(rms_norm(x))), the Q/K/V projections with
// their biases and interleaved RoPE on the first rope_dims of each head (half of it in GLM-4-0414);
// x += post_norm(SwiGLU FFN(rms_norm(x))) with gate and up as the two halves of one ffn_up tensor
// (the weights binder's row ranges). The post-norms are residual_add's, as gemma's.
#include "engine/arch/block_forward.h"

namespace strata::arch {

extern const ArchForward kGlm4Forward{pre_norm_attention, pre_norm_gated_ffn};

}  // namespace strata::arch
