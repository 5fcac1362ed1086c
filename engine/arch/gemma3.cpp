// engine/arch/gemma3.cpp — gemma3's block: Q/K head norms, interleaved local (sliding window,
// own RoPE base) and global layers, a GeGLU FFN, and post-norms of both updates (residual_add
// applies them). The embedding scale, window pattern and activation are the row's data.
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

extern const ArchForward kGemma3Forward{attention, ffn};

}  // namespace strata::arch
