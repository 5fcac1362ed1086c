// engine/exec/layer_compute.h — the arithmetic of a decoder block on host cores, for a whole
// block or one tensor-parallel shard of it: attention and FFN each produce a partial sum of
// the residual update ([n_tokens][n_embd]) that the caller adds (or all-reduces, then adds).
// Runs on one device's worker thread; fans matrix products out to that device's pool.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/model/model_config.h"
#include "engine/model/model_weights.h"
#include "engine/plan/scratch_layout.h"
#include "kernels/cpu/thread_pool.h"

namespace strata::exec {

// One block's weights as one device holds them (whole, or a shard's rows/columns).
struct ShardWeights {
  model::TensorView attn_norm, wq, wk, wv, bq, bk, bv, wo, ffn_norm, w_gate, w_up, w_down;
  int64_t n_heads = 0;     // local query heads
  int64_t n_kv_heads = 0;  // local KV heads
  int64_t n_ff = 0;        // local FFN units
};

// One sequence's keys and values of one shard: [n_ctx][stride] floats each.
struct KvView {
  float* k = nullptr;
  float* v = nullptr;
  int64_t stride = 0;  // local kv dim
  int64_t n_ctx = 0;
};

// Scratch floats, carved from one device buffer according to a plan::ScratchLayout.
struct ScratchViews {
  float *hidden = nullptr, *norm = nullptr, *q = nullptr, *k = nullptr, *v = nullptr, *attn_out = nullptr,
        *proj = nullptr, *gate = nullptr, *up = nullptr, *scores = nullptr, *logits = nullptr;
  int64_t scores_per_thread = 0;  // n_ctx
};
ScratchViews carve_scratch(float* base, const plan::ScratchLayout& layout, int threads);

class LayerCompute {
 public:
  // rope_freqs: optional per-pair divisors ([rope_dims/2] floats) or null.
  LayerCompute(const model::ModelConfig& config, kernels::ThreadPool& pool, ScratchViews scratch,
               const float* rope_freqs, size_t matmul_scratch_bytes);

  // hidden: [n][n_embd] <- rows of the embedding table.
  void embed(const model::TensorView& token_embd, const int32_t* tokens, int64_t n, float* hidden);

  // out: [n][n_embd] <- this shard's share of attention(rms_norm(hidden)) · Wo. Writes the
  // keys/values of positions pos0..pos0+n-1 into kv and attends over 0..pos.
  void attention_partial(const ShardWeights& w, const float* hidden, int64_t n, int64_t pos0, const KvView& kv,
                         float* out);
  // out: [n][n_embd] <- this shard's share of W_down · (silu(W_gate·x) * W_up·x), x = rms_norm(hidden).
  void ffn_partial(const ShardWeights& w, const float* hidden, int64_t n, float* out);

  // logits: [n_vocab] <- output(rms_norm(row)) for one hidden row.
  void head(const model::TensorView& output_norm, const model::TensorView& output, const float* row, float* logits);

  const ScratchViews& scratch() const { return scratch_; }

 private:
  void matmul(const model::TensorView& w, const float* x, int64_t n, float* y);

  const model::ModelConfig& config_;
  kernels::ThreadPool& pool_;
  ScratchViews scratch_;
  const float* rope_freqs_;
  std::vector<uint8_t> matmul_scratch_;
};

}  // namespace strata::exec
