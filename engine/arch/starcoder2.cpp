// engine/arch/starcoder2.cpp — starcoder2's block: LayerNorm (weight and bias) before attention and
// before the FFN, attention with Q/K/V biases and the output bias (rope_attend adds it), and a
// non-gated GELU FFN with its up and down biases.
#include "engine/arch/block_forward.h"

namespace strata::arch {
namespace {

Status starcoder2_attention(BlockForward& b, const ShardWeights& w, int64_t layer, const float* hidden, int64_t n,
                            std::span<const SeqRows> seqs, float* out) {
  STRATA_RETURN_IF_ERROR(b.input_norm(w.attn_norm, hidden, n, w.attn_norm_b));
  STRATA_RETURN_IF_ERROR(b.qkv(w, n));
  return b.rope_attend(w, layer, n, seqs, out);
}

Status starcoder2_ffn(BlockForward& b, const ShardWeights& w, const float* hidden, int64_t n, float* out) {
  STRATA_RETURN_IF_ERROR(b.input_norm(w.ffn_norm, hidden, n, w.ffn_norm_b));
  return b.plain_ffn(w, n, out);
}

}  // namespace

extern const ArchForward kStarcoder2Forward{starcoder2_attention, starcoder2_ffn};

}  // namespace strata::arch
