// engine/arch/gemma2.cpp — gemma2's block: x += post_norm(attn(rms_norm(x))) with NeoX RoPE and the
// attention scores soft-capped (AttentionArgs::softcap from ModelConfig::attn_softcap, applied in
// rope_attend), every other layer windowed; x += post_norm(GeGLU FFN(rms_norm(x))). The post-norms are
// residual_add's; the embedding scale and the final logit soft-cap are embed()'s and head_rows()'s.
#include "engine/arch/block_forward.h"

namespace strata::arch {

extern const ArchForward kGemma2Forward{pre_norm_attention, pre_norm_gated_ffn};

}  // namespace strata::arch
