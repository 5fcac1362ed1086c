// engine/arch/phi3.cpp — phi3's block: llama's arithmetic on fused Q/K/V and gate/up tensors
// (the binder makes row-range views of them), NeoX RoPE with long-context factors.
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

extern const ArchForward kPhi3Forward{attention, ffn};

}  // namespace strata::arch
