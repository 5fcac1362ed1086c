// engine/arch/qwen2moe.cpp — qwen2moe's block: qwen2's attention; every FFN routed experts plus a
// shared expert scaled by its sigmoid gate (moe_route runs it).
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
  return b.moe_ffn(w, hidden, n, out);
}

}  // namespace

extern const ArchForward kQwen2MoeForward{attention, ffn};

}  // namespace strata::arch
