// engine/arch/llama.cpp — llama's block (Llama 2/3, Mistral, TinyLlama, SmolLM2; Mixtral when the
// file has experts): x += attn(rms_norm(x)), Q/K/V with the biases a file may carry, interleaved
// RoPE; x += SwiGLU FFN(rms_norm(x)), or the routed experts of a Mixtral-style block.
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

extern const ArchForward kLlamaForward{attention, ffn};

}  // namespace strata::arch
