// engine/arch/cohere2.cpp — cohere2's parallel block: one LayerNorm (no bias) whose output both
// attention and the SwiGLU FFN read; the attention step computes both updates and sums them (the
// FFN's in scratch().moe_y, which plan::ScratchLayout sizes for parallel blocks), so the block has
// one partial sum (one all-reduce under a tensor split) and the executor skips its FFN step. A
// tensor-split shard may hold heads without FFN units or units without heads: each half runs only
// where the shard has it.
#include "engine/arch/block_forward.h"

namespace strata::arch {
namespace {

Status cohere2_block(BlockForward& b, const ShardWeights& w, int64_t layer, const float* hidden, int64_t n,
                     std::span<const SeqRows> seqs, float* out) {
  const ScratchViews& s = b.scratch();
  if (!s.moe_y) return Error{Code::InvalidArgument, "cohere2: the device's scratch has no buffer for the FFN's update"};
  STRATA_RETURN_IF_ERROR(b.input_norm(w.attn_norm, hidden, n));
  if (w.n_kv_heads > 0) {
    STRATA_RETURN_IF_ERROR(b.qkv(w, n));
    STRATA_RETURN_IF_ERROR(b.rope_attend(w, layer, n, seqs, out));  // reads scratch().norm only through qkv
  } else {
    STRATA_RETURN_IF_ERROR(b.ops().zero(out, n * b.config().n_embd));
  }
  if (w.n_ff == 0) return {};
  STRATA_RETURN_IF_ERROR(b.gated_ffn(w, n, s.moe_y));  // the same normalised rows, scratch().norm
  return b.ops().add(out, s.moe_y, n * b.config().n_embd);
}

// Never called by the executor for a parallel block (ffn_partial answers zeros for it).
Status cohere2_ffn(BlockForward& b, const ShardWeights&, const float*, int64_t n, float* out) {
  return b.ops().zero(out, n * b.config().n_embd);
}

}  // namespace

extern const ArchForward kCohere2Forward{cohere2_block, cohere2_ffn};

}  // namespace strata::arch
