// engine/exec/session.h — one sequence of a (possibly split) model: the tokens in its KV cache
// and the forward pass that extends it. A session either owns a single-CPU pipeline (the
// simple case) or is one sequence slot of a shared multi-device Pipeline.
// Driven by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/core/status.h"
#include "engine/backend/device.h"
#include "engine/exec/pipeline.h"
#include "engine/model/model.h"
#include "kernels/cpu/thread_pool.h"
#include "engine/backend/cpu/cpu_device.h"

namespace strata::exec {

class Session {
 public:
  // Everything on the CPU, using `pool`. n_ctx 0: the model's training context.
  // max_batch: tokens per forward pass when processing a prompt. kv_type: the KV cache's elements.
  static Expected<std::unique_ptr<Session>> create(const model::Model& model, kernels::ThreadPool& pool,
                                                   int64_t n_ctx, int64_t max_batch = 256,
                                                   kernels::DType kv_type = kernels::DType::F16);
  // Sequence `seq` of a pipeline owned elsewhere.
  Session(Pipeline& pipeline, int32_t seq);

  // Appends tokens at the current position; returns the logits of the last one ([n_vocab],
  // valid until the next call). OutOfRange when they do not fit in the context.
  Expected<const float*> eval(std::span<const int32_t> tokens);

  // Appends tokens and returns the logits after every one of them ([tokens.size()][n_vocab], valid
  // until the next call): a speculative step's rows, each with the bits one-token evals give.
  Expected<const float*> eval_all(std::span<const int32_t> tokens);
  // Forgets positions >= n (n <= position()).
  void truncate(int64_t n);

  // Keeps the longest common prefix of history() and tokens (dropping the rest of the cache),
  // so a chat turn only evaluates what is new. Returns the number of tokens kept.
  int64_t keep_common_prefix(std::span<const int32_t> tokens);

  void reset();
  int64_t position() const { return static_cast<int64_t>(history_.size()); }
  int64_t n_ctx() const { return pipeline_->n_ctx(); }
  int32_t seq() const { return seq_; }
  const std::vector<int32_t>& history() const { return history_; }
  const model::Model& model() const { return pipeline_->model(); }
  Pipeline& pipeline() { return *pipeline_; }

  // For drivers that batch several sessions into one Pipeline::eval: record that tokens were
  // evaluated for this sequence outside eval().
  void note_evaluated(std::span<const int32_t> tokens) { history_.insert(history_.end(), tokens.begin(), tokens.end()); }
  float* logits() { return logits_.data(); }

 private:
  std::unique_ptr<backend::CpuDevice> own_device_;
  std::unique_ptr<Pipeline> own_pipeline_;
  Pipeline* pipeline_ = nullptr;
  int32_t seq_ = 0;
  std::vector<int32_t> history_;  // tokens whose keys and values are in the cache
  std::vector<float> logits_;     // [n_vocab]
  std::vector<float> rows_;       // [tokens][n_vocab]: eval_all's
};

// The placement of everything on one device.
plan::Placement single_device_placement(const model::ModelConfig& config, const std::string& device, int64_t n_ctx,
                                        int64_t n_seq, int64_t max_batch);

}  // namespace strata::exec
