// engine/exec/session.cpp — a sequence's bookkeeping over a Pipeline.
#include "engine/exec/session.h"
#include "engine/backend/cpu/cpu_device.h"

#include <algorithm>

namespace strata::exec {

plan::Placement single_device_placement(const model::ModelConfig& c, const std::string& device, int64_t n_ctx,
                                        int64_t n_seq, int64_t max_batch) {
  plan::Placement p;
  p.embedding.devices = {device};
  p.head.devices = {device};
  p.layers.resize(static_cast<size_t>(c.n_layers));
  for (auto& l : p.layers) l.target.devices = {device};
  p.n_ctx = n_ctx;
  p.n_seq = n_seq;
  p.max_batch = max_batch;
  return p;
}

Session::Session(Pipeline& pipeline, int32_t seq) : pipeline_(&pipeline), seq_(seq) {
  logits_.resize(static_cast<size_t>(pipeline.model().config().n_vocab));
}

Expected<std::unique_ptr<Session>> Session::create(const model::Model& model, kernels::ThreadPool& pool, int64_t n_ctx,
                                                   int64_t max_batch, kernels::DType kv_type) {
  const model::ModelConfig& c = model.config();
  if (n_ctx < 0 || n_ctx > (1 << 24))
    return Error{Code::InvalidArgument, "context length " + std::to_string(n_ctx) + " outside [1, 16777216]"};
  if (n_ctx == 0) n_ctx = c.n_ctx_train;
  if (max_batch <= 0 || max_batch > 65536)
    return Error{Code::InvalidArgument, "batch size " + std::to_string(max_batch) + " outside [1, 65536]"};
  auto device = std::make_unique<backend::CpuDevice>(pool, backend::host_memory_available() + model.weight_bytes(), 0.0);
  plan::Placement placement = single_device_placement(c, "cpu", n_ctx, 1, max_batch);
  placement.kv_type = kv_type;
  STRATA_ASSIGN_OR_RETURN(auto pipeline, Pipeline::create(model, {device.get()}, placement));
  auto session = std::make_unique<Session>(*pipeline, 0);
  session->own_device_ = std::move(device);
  session->own_pipeline_ = std::move(pipeline);
  return session;
}

void Session::reset() {
  history_.clear();
  pipeline_->truncate(seq_, 0);
}

int64_t Session::keep_common_prefix(std::span<const int32_t> tokens) {
  size_t n = 0;
  while (n < history_.size() && n < tokens.size() && history_[n] == tokens[n]) ++n;
  // A sliding-window ring may hold less than the common prefix (Pipeline::truncate keeps 0 then).
  n = static_cast<size_t>(pipeline_->truncate(seq_, static_cast<int64_t>(n)));
  history_.resize(n);
  return static_cast<int64_t>(n);
}

Expected<const float*> Session::eval(std::span<const int32_t> tokens) {
  Pipeline::Request r;
  r.seq = seq_;
  r.tokens = tokens;
  r.logits = logits_.data();
  STRATA_RETURN_IF_ERROR(pipeline_->eval(std::span<const Pipeline::Request>(&r, 1)));
  note_evaluated(tokens);
  return static_cast<const float*>(logits_.data());
}

Expected<const float*> Session::eval_all(std::span<const int32_t> tokens) {
  rows_.resize(tokens.size() * logits_.size());
  Pipeline::Request r;
  r.seq = seq_;
  r.tokens = tokens;
  r.logits = rows_.data();
  r.all_logits = true;
  STRATA_RETURN_IF_ERROR(pipeline_->eval(std::span<const Pipeline::Request>(&r, 1)));
  note_evaluated(tokens);
  return static_cast<const float*>(rows_.data());
}

void Session::truncate(int64_t n) {
  n = std::clamp<int64_t>(n, 0, static_cast<int64_t>(history_.size()));
  n = pipeline_->truncate(seq_, n);
  history_.resize(static_cast<size_t>(n));
}

}  // namespace strata::exec
