// engine/arch/qwen3.cpp — qwen3's block: per-head RMS norms of Q and K before NeoX RoPE, no
// biases; a SwiGLU FFN.
#include "engine/arch/block_forward.h"

namespace strata::arch {
namespace {

Status attention(BlockForward& b, const ShardWeights& w, int64_t layer, const float* hidden, int64_t n,
                 std::span<const SeqRows> seqs, float* out) {
  STRATA_RETURN_IF_ERROR(b.input_norm(w.attn_norm, hidden, n));
  STRATA_RETURN_IF_ERROR(b.qkv(w, n));
  STRATA_RETURN_IF_ERROR(b.qk_norm(w, n));
  return b.rope_attend(w, layer, n, seqs, out);
}

Status ffn(BlockForward& b, const ShardWeights& w, const float* hidden, int64_t n, float* out) {
  STRATA_RETURN_IF_ERROR(b.input_norm(w.ffn_norm, hidden, n));
  return b.gated_ffn(w, n, out);
}

}  // namespace

extern const ArchForward kQwen3Forward{attention, ffn};

}  // namespace strata::arch
