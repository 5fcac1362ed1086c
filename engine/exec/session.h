// engine/exec/session.h — one sequence being evaluated on the CPU: its KV cache, the tokens
// already in it, and the forward pass that extends it. Driven by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/core/status.h"
#include "engine/exec/cpu_transformer.h"
#include "engine/exec/kv_cache.h"
#include "engine/model/model.h"
#include "kernels/cpu/thread_pool.h"

namespace strata::exec {

class Session {
 public:
  // n_ctx: positions of the KV cache; 0 means the model's training context.
  // max_batch: tokens per forward pass when processing a prompt (the rest goes in further passes).
  static Expected<std::unique_ptr<Session>> create(const model::Model& model, kernels::ThreadPool& pool,
                                                   int64_t n_ctx, int64_t max_batch = 256);

  // Appends tokens at the current position; returns the logits of the last one ([n_vocab],
  // valid until the next call). OutOfRange when they do not fit in the context.
  Expected<const float*> eval(std::span<const int32_t> tokens);

  // Keeps the longest common prefix of history() and tokens (dropping the rest of the cache),
  // so a chat turn only evaluates what is new. Returns the number of tokens kept.
  int64_t keep_common_prefix(std::span<const int32_t> tokens);

  void reset() { history_.clear(); }
  int64_t position() const { return static_cast<int64_t>(history_.size()); }
  int64_t n_ctx() const { return kv_.n_ctx(); }
  const std::vector<int32_t>& history() const { return history_; }
  const model::Model& model() const { return model_; }
  uint64_t kv_bytes() const { return kv_.n_bytes(); }

 private:
  Session(const model::Model& model, kernels::ThreadPool& pool, KvCache kv, int64_t max_batch);

  const model::Model& model_;
  CpuTransformer transformer_;
  KvCache kv_;
  int64_t max_batch_;
  std::vector<int32_t> history_;  // tokens whose keys and values are in kv_
  std::vector<float> hidden_;     // [max_batch][n_embd]
  std::vector<float> logits_;     // [n_vocab]
};

}  // namespace strata::exec
