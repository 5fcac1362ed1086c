// engine/arch/olmo2.cpp — olmo2's block (OLMo 2, Olmo 3): no input norm, so Q, K, V and the FFN
// project the residual stream itself; Q and K each RMS-normalised over the whole row ([q_dim],
// [kv_dim] weights) before NeoX RoPE; the attention and FFN updates post-normed (residual_add's
// post_attn_norm / post_ffn_norm, as gemma's). Olmo 3's local layers (window, plain RoPE) are the
// config's (ModelConfig::layer_attention).
#include "engine/arch/block_forward.h"

namespace strata::arch {
namespace {

Status olmo2_attention(BlockForward& b, const ShardWeights& w, int64_t layer, const float* hidden, int64_t n,
                       std::span<const SeqRows> seqs, float* out) {
  STRATA_RETURN_IF_ERROR(b.qkv(w, n, hidden));
  STRATA_RETURN_IF_ERROR(b.qk_norm(w, n));
  return b.rope_attend(w, layer, n, seqs, out);
}

Status olmo2_ffn(BlockForward& b, const ShardWeights& w, const float* hidden, int64_t n, float* out) {
  return b.gated_ffn(w, n, out, hidden);
}

}  // namespace

extern const ArchForward kOlmo2Forward{olmo2_attention, olmo2_ffn};

}  // namespace strata::arch
