// engine/arch/mistral3.cpp — mistral3's block (Mistral Small 3.x, Ministral 3): llama's steps, x +=
// attn(rms_norm(x)) with interleaved RoPE (YaRN where the file says), x += SwiGLU FFN(rms_norm(x)) or
// routed experts. Files that ask for llama4-style attention temperature scaling are refused by the
// config reader (attention.temperature_scale).
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

extern const ArchForward kMistral3Forward{attention, ffn};

}  // namespace strata::arch
