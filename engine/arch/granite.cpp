// engine/arch/granite.cpp — granite's and granitemoe's block: llama's steps (interleaved RoPE, SwiGLU
// FFN or routed experts). Their scales are ModelConfig's and applied by the shared steps: embed()
// (embedding_scale), residual_add() (residual_scale, on every path: dense, MoE, tensor-parallel) and
// head() / head_rows() (1 / logit_scale); the query scale is attention.scale.
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
  if (w.is_moe()) return b.moe_ffn(w, hidden, n, out);
  STRATA_RETURN_IF_ERROR(b.input_norm(w.ffn_norm, hidden, n));
  return b.gated_ffn(w, n, out);
}

}  // namespace

extern const ArchForward kGraniteForward{attention, ffn};

}  // namespace strata::arch
