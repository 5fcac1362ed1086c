// engine/exec/cpu_transformer.h — the forward pass of a llama / qwen2 decoder on the CPU,
// cut into embed / one layer / head so that a stage can run any run of consecutive layers.
// Calling thread: one driver thread at a time; matrix products fan out to the ThreadPool.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/exec/kv_cache.h"
#include "engine/model/model_config.h"
#include "engine/model/model_weights.h"
#include "kernels/cpu/thread_pool.h"

namespace strata::exec {

class CpuTransformer {
 public:
  // config, weights and pool must outlive this object.
  CpuTransformer(const model::ModelConfig& config, const model::ModelWeights& weights, kernels::ThreadPool& pool);

  // hidden: [n_tokens][n_embd] <- embedding rows of tokens (ids already validated).
  void embed(const int32_t* tokens, int64_t n_tokens, float* hidden);

  // One transformer block on hidden [n_tokens][n_embd] (updated in place) for positions
  // pos0 .. pos0 + n_tokens - 1; writes their keys and values into kv at layer `layer`.
  void layer(int64_t layer, float* hidden, int64_t n_tokens, int64_t pos0, KvCache& kv);

  // logits: [n_rows][n_vocab] <- output head of hidden rows [n_rows][n_embd].
  void head(const float* hidden, int64_t n_rows, float* logits);

  const model::ModelConfig& config() const { return config_; }

 private:
  void ensure_scratch(int64_t n_tokens);
  void attention(int64_t layer, int64_t n_tokens, int64_t pos0, KvCache& kv);

  const model::ModelConfig& config_;
  const model::ModelWeights& weights_;
  kernels::ThreadPool& pool_;

  int64_t scratch_tokens_ = 0;
  std::vector<float> norm_;      // [n_tokens][n_embd]   normalized input of a sub-block
  std::vector<float> q_;         // [n_tokens][q_dim]
  std::vector<float> k_;         // [n_tokens][kv_dim]
  std::vector<float> v_;         // [n_tokens][kv_dim]
  std::vector<float> attn_out_;  // [n_tokens][q_dim]
  std::vector<float> proj_;      // [n_tokens][n_embd]   output of wo / w_down
  std::vector<float> gate_;      // [n_tokens][n_ff]
  std::vector<float> up_;        // [n_tokens][n_ff]
  std::vector<std::vector<float>> scores_;  // per thread: [n_ctx] attention scores
  std::vector<uint8_t> matmul_scratch_;     // quantized activations
};

}  // namespace strata::exec
