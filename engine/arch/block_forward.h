// engine/arch/block_forward.h — the steps a pre-norm decoder block is composed of (norms, Q/K/V,
// RoPE and attention, gated FFN, mixture of experts), written once against the backend Ops table
// so they run on every backend (cpu, sim, cuda), and the BlockForward the pipeline drives. Each
// architecture's forward (engine/arch/<name>.cpp, an ArchForward) composes its attention and FFN
// from these steps; data that differs between architectures (RoPE style, windows, activation,
// scales) is read from ModelConfig, i.e. from the arch table. Depends on model/ and backend/ops.h
// only, never on exec's pipeline.
// Works on a whole block or one tensor-parallel shard of it: attention and FFN each produce a
// partial sum of the residual update ([n_tokens][n_embd]) that the caller sums (all-reduce) and
// hands to residual_add. A mixture-of-experts FFN (qwen2moe, qwen3moe, Mixtral-style llama) is
// two steps that may run on different devices: moe_route (norm, router, top-k on the host, shared
// expert) and moe_experts (the routed experts a device holds, tokens grouped by expert).
// Calling thread: one device's worker; every pointer is in that device's memory.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/backend/ops.h"
#include "engine/core/status.h"
#include "engine/model/model_config.h"
#include "engine/model/model_weights.h"

namespace strata::arch {

// One block's weights as one device holds them (whole, or a shard's rows/columns): the views of
// model::LayerWeights (one per row of the arch table's layer tensors), data pointers in that
// device's memory, views of the parts the device does not hold absent. The routed experts
// [expert_begin, expert_end) are 3-D tensors of expert_end - expert_begin matrices: global
// expert e is matrix e - expert_begin.
struct ShardWeights : model::LayerWeights {
  int64_t n_heads = 0;     // local query heads
  int64_t n_kv_heads = 0;  // local KV heads
  int64_t n_ff = 0;        // local FFN units
  int64_t expert_begin = 0, expert_end = 0;  // routed experts held

  // Holds a part of an MoE block (the router, or experts); hides LayerWeights::is_moe, which
  // looks at the router only.
  bool is_moe() const { return ffn_gate_inp.present() || ffn_gate_exps.present(); }
};

// The routing of one block of n tokens through one MoE layer, in host memory: moe_route writes
// it, moe_experts reads it (on the same device or another; copy it by value). Sized to the last
// block; reused between calls so decode allocates nothing.
struct MoeRouting {
  int64_t n_tokens = 0;
  int64_t n_expert = 0;
  int64_t k = 0;                  // experts per token (config.n_expert_used)
  std::vector<int32_t> expert;    // [n_tokens][k] chosen experts, most probable first
  std::vector<float> weight;      // [n_tokens][k] their weights (renormalised where the arch says)
  // The same choices grouped by expert, so that each expert runs once over all its tokens: expert
  // e's tokens are token_of[offset[e] .. offset[e + 1]) (ascending), weights in weight_of.
  std::vector<int32_t> offset;    // [n_expert + 1]
  std::vector<int32_t> token_of;  // [n_tokens * k]
  std::vector<float> weight_of;   // [n_tokens * k]
  // Set want_x_norm before moe_route when the experts run on another device: moe_route then also
  // copies the normalised FFN input here ([n_tokens][n_embd] f32), for that device's x_norm.
  bool want_x_norm = false;
  std::vector<float> x_norm;
  std::vector<float> logits;      // [n_tokens][n_expert]: the router's output, copied to the host
};

// One sequence's keys and values of one shard: position p of local KV head j at element
// row(p) * stride + j * head_dim of k (and of v), elements of kv_type; row(p) = p, or p mod cells
// in a ring (a sliding-window layer's cache, plan::kv_cells).
struct KvView {
  void* k = nullptr;
  void* v = nullptr;
  kernels::DType kv_type = kernels::DType::F32;
  int64_t stride = 0;  // elements between rows
  int64_t n_ctx = 0;   // positions of the sequence
  int64_t cells = 0;   // 0: n_ctx rows, one per position; else the rows of a ring
};

// One sequence's rows inside a block of several sequences' tokens stacked ([n_total][n_embd]):
// rows [row0, row0 + n) are that sequence's positions pos0..pos0+n-1, its keys and values in kv.
struct SeqRows {
  int64_t row0 = 0;
  int64_t n = 0;
  int64_t pos0 = 0;
  KvView kv;
};

// Scratch floats, carved from one device buffer according to a plan::ScratchLayout (by exec).
struct ScratchViews {
  float *hidden = nullptr, *norm = nullptr, *q = nullptr, *k = nullptr, *v = nullptr, *attn_out = nullptr,
        *proj = nullptr, *gate = nullptr, *up = nullptr, *scores = nullptr, *logits = nullptr;
  float *router = nullptr, *moe_x = nullptr, *moe_y = nullptr;  // MoE models only (plan::ScratchLayout)
  float* mla = nullptr;  // MLA models only (plan::ScratchLayout::mla)
  int64_t scores_per_thread = 0;  // n_ctx
};
// A weight tensor as the Ops table takes it; matrix i of a 3-D tensor (a routed expert's, or a
// head's in MLA's per-head k_b / v_b).
backend::MatrixView matrix(const model::TensorView& t);
backend::MatrixView matrix(const model::TensorView& t, int64_t i);
// An f32 vector tensor's elements (norm weights, biases), in the device's memory.
inline const float* f32(const model::TensorView& t) { return reinterpret_cast<const float*>(t.data); }

class BlockForward;

// An architecture's forward: how its attention and its FFN are composed from BlockForward's
// steps. One per architecture, in engine/arch/<name>.cpp; forward_for finds it. Each function
// runs on the device's worker; `out` receives the shard's partial residual update [n][n_embd].
struct ArchForward {
  Status (*attention)(BlockForward& b, const ShardWeights& w, int64_t layer, const float* hidden, int64_t n,
                      std::span<const SeqRows> seqs, float* out);
  Status (*ffn)(BlockForward& b, const ShardWeights& w, const float* hidden, int64_t n, float* out);
};
const ArchForward& forward_for(model::Arch arch);

// The compositions several architectures share (engine/arch/block_steps.cpp):
//   pre_norm_attention:          rms_norm(x) -> Q/K/V (+ biases where present) -> RoPE -> attention.
//   pre_norm_qk_norm_attention:  the same with per-head RMS norms of Q and K before RoPE.
//   pre_norm_gated_ffn:          rms_norm(x) -> gate/up -> activation (SwiGLU or GeGLU, the row's) -> down.
//   gated_ffn_or_experts:        routed experts where the layer has them, else pre_norm_gated_ffn.
//   routed_experts_ffn:          routed experts on every layer (moe_ffn norms its own input).
Status pre_norm_attention(BlockForward& b, const ShardWeights& w, int64_t layer, const float* hidden, int64_t n,
                          std::span<const SeqRows> seqs, float* out);
Status pre_norm_qk_norm_attention(BlockForward& b, const ShardWeights& w, int64_t layer, const float* hidden,
                                  int64_t n, std::span<const SeqRows> seqs, float* out);
Status pre_norm_gated_ffn(BlockForward& b, const ShardWeights& w, const float* hidden, int64_t n, float* out);
Status gated_ffn_or_experts(BlockForward& b, const ShardWeights& w, const float* hidden, int64_t n, float* out);
Status routed_experts_ffn(BlockForward& b, const ShardWeights& w, const float* hidden, int64_t n, float* out);

class BlockForward {
 public:
  // rope_freqs: optional per-pair divisors ([rope_dims/2] floats, device memory) or null. The
  // architecture's forward is forward_for(config.arch).
  BlockForward(const model::ModelConfig& config, backend::Ops& ops, ScratchViews scratch, const float* rope_freqs);

  // hidden: [n][n_embd] <- rows of the embedding table (times config.embd_scale); tokens in host memory.
  Status embed(const model::TensorView& token_embd, const int32_t* tokens, int64_t n, float* hidden);

  // out: [n][n_embd] <- this shard's share of attention(rms_norm(hidden)) · Wo for block `layer`
  // (which picks the layer's window and RoPE). Writes the keys/values of positions
  // pos0..pos0+n-1 into kv and attends over 0..pos (the last `window` of them on local layers).
  Status attention_partial(const ShardWeights& w, int64_t layer, const float* hidden, int64_t n, int64_t pos0,
                           const KvView& kv, float* out);
  // The same for a block of several sequences stacked row-wise (hidden, out: [n][n_embd], n the
  // sum of seqs[i].n): the projections (Q, K, V, O) are one matrix product over all n rows, so
  // each weight matrix is read once for every sequence of the block; RoPE and attention run per
  // sequence on its own rows, positions and KV.
  Status attention_partial(const ShardWeights& w, int64_t layer, const float* hidden, int64_t n,
                           std::span<const SeqRows> seqs, float* out);
  // out: [n][n_embd] <- this shard's share of the FFN (the architecture's: a gated FFN, or on an
  // MoE layer moe_route then moe_experts over the experts w holds, on this device).
  Status ffn_partial(const ShardWeights& w, const float* hidden, int64_t n, float* out);

  // ---- The steps architectures compose (rows: n tokens; scratch() holds the intermediates) ----
  // out <- norm(x) ([n][n_embd]): rms_norm with `weight` ([n_embd] f32), or LayerNorm with weight and
  // bias (absent: none) where config.layer_norm (starcoder2).
  Status norm_rows(const model::TensorView& weight, const model::TensorView& bias, const float* x, float* out, int64_t n);
  // norm <- norm_rows(hidden) into scratch().norm.
  Status input_norm(const model::TensorView& weight, const float* hidden, int64_t n, const model::TensorView& bias = {});
  // q, k, v <- x · Wq, Wk, Wv ([n][local q_dim], [n][local kv_dim] x 2), plus the biases the
  // shard holds (one matrix product call, so a batch reads each matrix once). x: [n][n_embd],
  // scratch().norm (after input_norm) unless given (olmo2 projects the residual stream itself).
  Status qkv(const ShardWeights& w, int64_t n, const float* x = nullptr);
  // Each head row of q and k RMS-normalised with the shard's [head_dim] q_norm / k_norm weights;
  // with config.qk_norm_full each whole row ([q_dim], [kv_dim] weights; olmo2, never tensor-split).
  Status qk_norm(const ShardWeights& w, int64_t n);
  // Per sequence: RoPE of its q and k rows from its own position (the layer's RoPE base and
  // window), its keys and values into its KV, attention over its positions; then out <- attn · Wo.
  Status rope_attend(const ShardWeights& w, int64_t layer, int64_t n, std::span<const SeqRows> seqs, float* out);
  // out <- W_down · (act(W_gate·x) * W_up·x), act from config.ffn_activation; the shard's units.
  // x: [n][n_embd], scratch().norm unless given (olmo2: the residual stream).
  Status gated_ffn(const ShardWeights& w, int64_t n, float* out, const float* x = nullptr);
  // A non-gated FFN (starcoder2): out <- W_down · gelu(W_up · x + b_up) + b_down (the biases the
  // shard holds); x: [n][n_embd], scratch().norm unless given.
  Status plain_ffn(const ShardWeights& w, int64_t n, float* out, const float* x = nullptr);
  // RoPE of block `layer` (its base, scaling, YaRN and cos/sin factor; the model's style).
  backend::RopeParams rope_params(int64_t layer) const;
  // One sequence's attention call in block `layer` with its cache, positions, window, scale and
  // soft-cap filled in; the caller sets q, k, v, the head counts and sizes, sinks and out.
  backend::AttentionArgs sequence_attention(const SeqRows& sr, int64_t layer) const;
  // Every sequence's attention: one call, or one batched call for several.
  Status attend(std::span<const backend::AttentionArgs> args);
  // Host row indices an architecture's step builds for gather_rows / scale_add_rows, and weights
  // of 1 for those rows' scale_add_rows (at least `count`); reused between calls so decode
  // allocates nothing once warm.
  std::vector<int32_t>& host_rows(int which) { return host_rows_[which & 1]; }
  const float* host_ones(size_t count) {
    if (host_ones_.size() < count) host_ones_.assign(count, 1.0f);
    return host_ones_.data();
  }
  // The per-sequence attention calls of a step (reused between calls).
  std::vector<backend::AttentionArgs>& attention_args() { return attention_args_; }
  // gate[i] <- act(gate[i], up[i]) for count elements, act the architecture's (config.ffn_activation:
  // SwiGLU, GeGLU or gpt-oss's clamped SwiGLU).
  Status activate(float* gate, const float* up, int64_t count);
  // The MoE FFN on one device: moe_route, then moe_experts over the experts w holds.
  Status moe_ffn(const ShardWeights& w, const float* hidden, int64_t n, float* out);

  // The first step of an MoE FFN, on the device holding the router (and shared expert):
  // x = rms_norm(hidden) into scratch().norm ([n][n_embd]); the router's logits come to the host
  // (Ops::to_host, n x n_expert floats), which picks each token's top-k experts and weights into
  // `routing` (softmax over all experts, then top-k, renormalised where config says); with
  // routing.want_x_norm, x is copied to routing.x_norm as well. out: [n][n_embd] <- the shared
  // expert's output (times its sigmoid gate where there is one), or zeros. The router's bias
  // (gpt-oss) is added to the logits; with config.expert_gating SoftmaxTopK the k largest logits
  // are chosen and softmaxed among themselves. w needs ffn_norm and
  // ffn_gate_inp (and the shared expert's tensors where the model has one). Calling thread: the
  // device's worker, which also does the host part (softmax, top-k, grouping: O(n x n_expert)).
  Status moe_route(const ShardWeights& w, const float* hidden, int64_t n, MoeRouting& routing, float* out);
  // The second step: out ([n][n_embd], device memory) += sum over the routed experts in
  // [w.expert_begin, w.expert_end) of weight * (down(act(gate·x + b_g, up·x + b_u)) + b_d) (the
  // biases where the model has them, act the architecture's), each expert run once
  // over the rows of its tokens (gathered from x_norm when they are not all n). x_norm:
  // [n][n_embd] in this device's memory (scratch().norm after moe_route on the same device, else
  // routing.x_norm uploaded by the caller; it must not be scratch's moe_x, gate, up or moe_y).
  // Experts outside the range are skipped: another device adds them.
  Status moe_experts(const ShardWeights& w, const float* x_norm, const MoeRouting& routing, int64_t n, float* out);
  // hidden += post_norm(update) (post_norm: w.post_attn_norm or w.post_ffn_norm, where the
  // architecture has them); update is the whole (summed) residual update, [n][n_embd], and is
  // overwritten.
  Status residual_add(const model::TensorView& post_norm, float* hidden, float* update, int64_t n);

  // logits: [rows.size()][n_vocab] (device memory) <- output(norm(row)) of hidden rows rows[i] of
  // hidden ([*][n_embd]; the output norm's bias where the model has one, output_norm_b, else an
  // absent view), as one matrix product (the output matrix is read once). At most max_batch rows
  // (they pass through the norm scratch).
  Status head_rows(const model::TensorView& output_norm, const model::TensorView& output_norm_b,
                   const model::TensorView& output, const float* hidden, std::span<const int64_t> rows, float* logits);

  const ScratchViews& scratch() const { return scratch_; }
  backend::Ops& ops() { return ops_; }
  const model::ModelConfig& config() const { return config_; }

 private:
  float logit_factor() const;  // what the head multiplies the logits by (granite's 1 / logit_scale, cohere2's logit_scale)
  const model::ModelConfig& config_;
  const ArchForward& forward_;
  backend::Ops& ops_;
  ScratchViews scratch_;
  const float* rope_freqs_;
  MoeRouting routing_;             // ffn_partial's routing of an MoE layer (host)
  std::vector<int32_t> identity_;  // [n] 0..n-1: the rows of the shared expert's weighted add
  std::vector<float> shexp_gate_;  // [n] the shared expert's per-token gate (host)
  std::vector<int32_t> host_rows_[2];
  std::vector<float> host_ones_;
  std::vector<float> selection_bias_;  // [n_expert] the layer's exp_probs_b, on the host for the ranking
  std::vector<backend::AttentionArgs> attention_args_;  // attention_partial's, one per sequence (reused)
};

}  // namespace strata::arch
