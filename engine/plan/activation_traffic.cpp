// engine/plan/activation_traffic.cpp — activation bytes per token of each part of the model
// (activation_traffic.h): counted in f32 elements, op by op, in the order the executor issues
// them (engine/arch/block_forward.cpp, block_steps.cpp), then times 4 bytes.
#include "engine/plan/activation_traffic.h"

#include <algorithm>
#include <initializer_list>

namespace strata::plan {

namespace {

constexpr uint64_t kF32 = sizeof(float);

// Present in the file, or sized (the planner's tests build views with sizes and no data).
bool has(const model::TensorView& t) { return t.present() || t.n_bytes > 0; }

// Elements a product y = W x moves per token: x read ([cols]) and y written ([rows]).
uint64_t product(int64_t cols, int64_t rows) { return static_cast<uint64_t>(cols + rows); }

// The update added to the residual stream: the optional post-norm (read and write), the
// optional scale (read and write), then hidden += update (two reads, one write).
uint64_t residual_elems(const model::ModelConfig& c, const model::TensorView& post_norm) {
  const auto e = static_cast<uint64_t>(c.n_embd);
  uint64_t n = 3 * e;
  if (has(post_norm)) n += 2 * e;
  if (c.residual_scale != 1.0f) n += 2 * e;
  return n;
}

// Multi-head latent attention (deepseek2), never cut: each matrix's input and output per call
// (a head's k_b and v_b once per head), the latent norms, the latent query rows in and the
// attention's output out, the new K row. The gathers that reorder heads between products ride
// along uncounted.
uint64_t mla_elems(const model::ModelConfig& c, const model::LayerWeights& l) {
  const auto e = static_cast<uint64_t>(c.n_embd);
  uint64_t n = 2 * e;
  for (const model::TensorView* m : {&l.wq, &l.wq_a, &l.wq_b, &l.wkv_a, &l.wk_b, &l.wv_b, &l.wo})
    if (has(*m)) n += product(m->cols, m->rows) * static_cast<uint64_t>(m->n_mats);
  n += 2 * static_cast<uint64_t>(c.q_lora_rank + c.kv_lora_rank);
  const auto latent_row = static_cast<uint64_t>(c.kv_lora_rank + c.rope_dims);
  n += static_cast<uint64_t>(c.n_heads) * latent_row * 2 + latent_row;
  return n + residual_elems(c, l.post_attn_norm);
}

}  // namespace

uint64_t attention_activation_bytes(const model::ModelConfig& c, const model::LayerWeights& l,
                                    const LayerShard& s) {
  if (c.mla) return mla_elems(c, l) * kF32;
  const auto e = static_cast<uint64_t>(c.n_embd);
  // A shard without heads: its update is zeroed ([n_embd] written) and added.
  if (s.n_kv_heads() == 0) return (e + residual_elems(c, l.post_attn_norm)) * kF32;
  const int64_t group = c.n_heads / std::max<int64_t>(c.n_kv_heads, 1);
  const int64_t q = s.n_kv_heads() * group * c.head_dim;
  const int64_t kv = s.n_kv_heads() * c.head_dim;
  const auto qkv = static_cast<uint64_t>(q + 2 * kv);
  uint64_t n = 2 * e;                                                   // the input norm: x in, out
  n += product(c.n_embd, q) + 2 * product(c.n_embd, kv);                // Q, K, V, each reading x
  if (has(l.bq)) n += 2 * qkv;                                          // their biases, in place
  if (has(l.q_norm)) n += 2 * static_cast<uint64_t>(q);
  if (has(l.k_norm)) n += 2 * static_cast<uint64_t>(kv);
  if (c.rope_dims > 0) n += 2 * static_cast<uint64_t>(q + kv);          // RoPE on q and k, in place
  n += qkv + static_cast<uint64_t>(q);                                  // attention: q, k, v in; out
  n += product(q, c.n_embd);                                            // the output product
  if (has(l.bo)) n += 2 * e;
  return (n + residual_elems(c, l.post_attn_norm)) * kF32;
}

uint64_t ffn_activation_bytes(const model::ModelConfig& c, const model::LayerWeights& l, const LayerShard& s) {
  const auto e = static_cast<uint64_t>(c.n_embd);
  uint64_t n = 2 * e;  // the FFN norm
  if (l.is_moe() || has(l.ffn_gate_inp)) {
    n += product(c.n_embd, c.n_expert);  // the router's logits
    n += e;                              // the update zeroed before the experts add into it
    if (has(l.ffn_gate_shexp)) {
      const int64_t f = l.ffn_gate_shexp.rows;
      n += 2 * product(c.n_embd, f) + 3 * static_cast<uint64_t>(f) + product(f, c.n_embd);
      if (has(l.ffn_gate_inp_shexp)) n += product(c.n_embd, 1);
      n += 3 * e;  // its gated add into the update
    }
    return (n + residual_elems(c, l.post_ffn_norm)) * kF32;
  }
  if (s.n_ff() == 0) return (e + residual_elems(c, l.post_ffn_norm)) * kF32;
  // The shard's units; a whole block's are its own up rows (a dense block of an MoE model may be
  // narrower than the width whole_layer gives).
  const int64_t f = has(l.w_up) && l.w_up.rows > 0 ? std::min(s.n_ff(), l.w_up.rows) : s.n_ff();
  if (has(l.w_gate)) {
    n += 2 * product(c.n_embd, f);          // gate and up, each reading x
    n += 3 * static_cast<uint64_t>(f);      // the gated activation: gate, up in; gate out
  } else {
    n += product(c.n_embd, f);              // up alone
    if (has(l.b_up)) n += 2 * static_cast<uint64_t>(f);
    n += 2 * static_cast<uint64_t>(f);      // GELU in place
  }
  n += product(f, c.n_embd);                // down
  if (has(l.b_down)) n += 2 * e;
  return (n + residual_elems(c, l.post_ffn_norm)) * kF32;
}

uint64_t expert_activation_bytes(const model::ModelConfig& c, const model::LayerWeights& l) {
  const auto e = static_cast<uint64_t>(c.n_embd);
  const int64_t f = has(l.ffn_gate_exps) ? l.ffn_gate_exps.rows : c.n_ff_exp;
  uint64_t n = 2 * e;                                                // the expert's rows gathered
  n += 2 * product(c.n_embd, f) + 3 * static_cast<uint64_t>(f);     // gate, up, activation
  if (has(l.ffn_gate_exps_b)) n += 4 * static_cast<uint64_t>(f);
  n += product(f, c.n_embd);                                         // down
  if (has(l.ffn_down_exps_b)) n += 2 * e;
  n += 3 * e;                                                        // weighted add into the update
  return n * kF32;
}

uint64_t embedding_activation_bytes(const model::ModelConfig& c) {
  const auto e = static_cast<uint64_t>(c.n_embd);
  return (e + (c.embd_scale != 1.0f ? 2 * e : 0)) * kF32;
}

uint64_t head_activation_bytes(const model::ModelConfig& c, int64_t vocab_rows) {
  const auto e = static_cast<uint64_t>(c.n_embd);
  const auto v = static_cast<uint64_t>(std::max<int64_t>(vocab_rows, 0));
  uint64_t n = 3 * e + product(c.n_embd, static_cast<int64_t>(v));  // norm (x, weights, out); product
  if (c.logit_scale != 1.0f || c.logit_mul != 1.0f) n += 2 * v;
  if (c.final_softcap > 0.0f) n += 2 * v;
  return n * kF32;
}

}  // namespace strata::plan
