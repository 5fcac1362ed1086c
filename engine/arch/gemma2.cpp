// engine/arch/gemma2.cpp — gemma2's block: x += post_norm(attn(rms_norm(x))) with NeoX RoPE and the
// attention scores soft-capped (AttentionArgs::softcap from ModelConfig::attn_softcap, applied in
// rope_attend), every other layer windowed; x += post_norm(GeGLU FFN(rms_norm(x))). The post-norms are
// residual_add's; the embedding scale and the final logit soft-cap are embed()'s and head()'s.
#include "engine/arch/block_forward.h"

namespace strata::arch {
namespace {

Status attention(BlockForward& b, const ShardWeights& w, int64_t layer, const float* hidden, int64_t n,
                 std::span<const SeqRows> seqs, float* out) {
  STRATA_RETURN_IF_ERROR(b.input_norm(w.attn_norm, hidden, n));
  STRATA_RETURN_IF_ERROR(b.qkv(w, n));
  return b.rope_attend(w, layer, n, seqs, out);
}

Status ffn(BlockForward& b, const ShardWeights& w, const float* hidden, int64_t n, float* out) {
  STRATA_RETURN_IF_ERROR(b.input_norm(w.ffn_norm, hidden, n));
  return b.gated_ffn(w, n, out);
}

}  // namespace

extern const ArchForward kGemma2Forward{attention, ffn};

}  // namespace strata::arch
