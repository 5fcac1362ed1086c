// engine/plan/scratch_layout.h — the activation buffers a device needs to run its share of the
// model, in floats and bytes. The memory estimate and the executor both size from this, so what
// the planner predicts is what a device allocates.
#pragma once

#include <algorithm>
#include <cstdint>

#include "engine/model/model_config.h"
#include "engine/plan/tensor_split.h"
#include "kernels/cpu/matmul.h"

namespace strata::plan {

struct ScratchLayout {
  // Sizes in floats unless named bytes. max_batch = tokens per forward pass.
  int64_t hidden = 0;     // [max_batch][n_embd]  the stage's input/output rows
  int64_t norm = 0;       // [max_batch][n_embd]
  int64_t q = 0;          // [max_batch][local q dim]
  int64_t k = 0;          // [max_batch][local kv dim]
  int64_t v = 0;          // [max_batch][local kv dim]
  int64_t attn_out = 0;   // [max_batch][local q dim]
  int64_t proj = 0;       // [max_batch][n_embd]  partial sums before the all-reduce
  int64_t gate = 0;       // [max_batch][local n_ff]
  int64_t up = 0;         // [max_batch][local n_ff]
  int64_t scores = 0;     // [threads][n_ctx]     attention scores
  int64_t logits = 0;     // [n_seq][n_vocab]     only where the head runs
  // Mixture-of-experts layers only (config.is_moe()):
  int64_t router = 0;     // [max_batch][n_expert] router logits (also the shared expert's gate logits)
  int64_t moe_x = 0;      // [max_batch][n_embd]  one expert's tokens, gathered
  int64_t moe_y = 0;      // [max_batch][n_embd]  one expert's output rows before the weighted add; with
                          //                      parallel blocks (cohere2) the FFN's update beside the attention's
  int64_t mla = 0;        // MLA only: [n_heads][max_batch][kv_lora + max(qk_nope, rope dims)], heads' rows
                          //           gathered head by head for their k_b / v_b products
  int64_t matmul_bytes = 0;  // kernels::matmul's scratch (activations quantized or packed, per-thread
                             // tiles) at its largest for any weight type and batch up to max_batch

  // Every view starts 16-byte aligned (a whole number of 4-float groups from the buffer's start):
  // the CUDA matrix-vector kernels read x in 16-byte loads only from such an address (else their
  // scalar kernel runs), and the CPU's SIMD loads are quickest there. A view after an odd-sized one
  // (scores [threads][n_ctx], logits [n_seq][n_vocab], router [max_batch][n_expert]) would not be.
  static constexpr int64_t kViewAlignFloats = 4;
  static constexpr int64_t padded(int64_t n) { return (n + kViewAlignFloats - 1) / kViewAlignFloats * kViewAlignFloats; }
  int64_t floats() const {
    return padded(hidden) + padded(norm) + padded(q) + padded(k) + padded(v) + padded(attn_out) + padded(proj) +
           padded(gate) + padded(up) + padded(scores) + padded(logits) + padded(router) + padded(moe_x) +
           padded(moe_y) + padded(mla);
  }
  uint64_t bytes() const { return static_cast<uint64_t>(floats()) * sizeof(float) + static_cast<uint64_t>(matmul_bytes); }
};

// widest: the largest shard on the device (heads and FFN units); has_head: the device runs the
// output head. threads: host threads of the device's worker.
// Rows the output head computes in one product: one per sequence of a decode step, and at least
// 8 (at most a batch), so a speculative step's drafted tokens (every token's logits of one
// sequence) read the output matrix once for 8 of them instead of once each.
inline int64_t head_rows(int64_t n_seq, int64_t max_batch) {
  return std::max<int64_t>(n_seq, std::min<int64_t>(max_batch, 8));
}

inline ScratchLayout scratch_layout(const model::ModelConfig& c, const LayerShard& widest, bool has_layers,
                                    bool has_head, int64_t max_batch, int64_t n_ctx, int64_t n_seq, int threads) {
  ScratchLayout s;
  const int64_t group = c.n_heads / c.n_kv_heads;
  const int64_t q_local = widest.n_kv_heads() * group * c.head_dim;
  const int64_t kv_local = widest.n_kv_heads() * c.head_dim;
  s.hidden = max_batch * c.n_embd;
  s.norm = max_batch * c.n_embd;
  int64_t widest_input = c.n_embd;
  if (has_layers) {
    s.q = max_batch * q_local;
    s.k = max_batch * kv_local;
    s.v = max_batch * kv_local;
    s.attn_out = max_batch * q_local;
    s.proj = max_batch * c.n_embd;
    s.gate = max_batch * widest.n_ff();
    s.up = max_batch * widest.n_ff();
    s.scores = static_cast<int64_t>(threads) * n_ctx;
    if (c.mla) {
      // MLA (engine/arch/deepseek2.cpp): q holds the low-rank query code, then the absorbed queries
      // [n_heads][head_dim], then the heads' outputs [n_heads][value_length_mla]; attn_out the
      // projected queries [n_heads][key_length_mla], then the latent attention [n_heads][head_dim];
      // v a latent [kv_lora] and one head's slice beside it.
      s.q = max_batch * std::max({q_local, c.q_lora_rank, c.n_heads * c.head_dim_v_mla});
      s.attn_out = max_batch * std::max(q_local, c.n_heads * c.head_dim_k_mla);
      s.v = max_batch * (c.kv_lora_rank + std::max(c.head_dim_k_mla - c.rope_dims, c.head_dim_v_mla));
      s.mla = max_batch * c.n_heads * (c.kv_lora_rank + std::max(c.head_dim_k_mla - c.rope_dims, c.rope_dims));
    }
    if (c.is_moe()) {
      s.router = max_batch * c.n_expert;
      s.moe_x = max_batch * c.n_embd;
      s.moe_y = max_batch * c.n_embd;
    }
    if (c.parallel_block) s.moe_y = max_batch * c.n_embd;
    widest_input = std::max<int64_t>({c.n_embd, q_local, widest.n_ff()});
    if (c.mla) widest_input = std::max<int64_t>({widest_input, c.q_lora_rank, c.kv_lora_rank, c.n_heads * c.head_dim_v_mla});
  }
  if (has_head) s.logits = head_rows(n_seq, max_batch) * c.n_vocab;
  s.matmul_bytes = kernels::matmul_scratch_bound(widest_input, max_batch, std::max(threads, 1));
  return s;
}

}  // namespace strata::plan
