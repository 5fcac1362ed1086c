// engine/arch/block_steps.cpp — the attention and FFN compositions that several architectures share
// (declared in block_forward.h). An architecture whose block is one of these names them in its
// ArchForward; one with its own order of steps (a norm elsewhere, a fused projection) writes its own.
// Each runs on the device's worker, as ArchForward's functions do.
#include "engine/arch/block_forward.h"

namespace strata::arch {

Status pre_norm_attention(BlockForward& b, const ShardWeights& w, int64_t layer, const float* hidden, int64_t n,
                          std::span<const SeqRows> seqs, float* out) {
  STRATA_RETURN_IF_ERROR(b.input_norm(w.attn_norm, hidden, n));
  STRATA_RETURN_IF_ERROR(b.qkv(w, n));
  return b.rope_attend(w, layer, n, seqs, out);
}

Status pre_norm_qk_norm_attention(BlockForward& b, const ShardWeights& w, int64_t layer, const float* hidden,
                                  int64_t n, std::span<const SeqRows> seqs, float* out) {
  STRATA_RETURN_IF_ERROR(b.input_norm(w.attn_norm, hidden, n));
  STRATA_RETURN_IF_ERROR(b.qkv(w, n));
  STRATA_RETURN_IF_ERROR(b.qk_norm(w, n));
  return b.rope_attend(w, layer, n, seqs, out);
}

Status pre_norm_gated_ffn(BlockForward& b, const ShardWeights& w, const float* hidden, int64_t n, float* out) {
  STRATA_RETURN_IF_ERROR(b.input_norm(w.ffn_norm, hidden, n));
  return b.gated_ffn(w, n, out);
}

Status gated_ffn_or_experts(BlockForward& b, const ShardWeights& w, const float* hidden, int64_t n, float* out) {
  if (w.is_moe()) return b.moe_ffn(w, hidden, n, out);
  return pre_norm_gated_ffn(b, w, hidden, n, out);
}

Status routed_experts_ffn(BlockForward& b, const ShardWeights& w, const float* hidden, int64_t n, float* out) {
  return b.moe_ffn(w, hidden, n, out);
}

}  // namespace strata::arch
