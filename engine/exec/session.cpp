// engine/exec/session.cpp — prompt chunking and context bookkeeping around CpuTransformer.
#include "engine/exec/session.h"

#include <algorithm>

namespace strata::exec {

Session::Session(const model::Model& model, kernels::ThreadPool& pool, KvCache kv, int64_t max_batch)
    : model_(model),
      transformer_(model.config(), model.weights(), pool),
      kv_(std::move(kv)),
      max_batch_(max_batch) {
  hidden_.resize(static_cast<size_t>(max_batch_ * model.config().n_embd));
  logits_.resize(static_cast<size_t>(model.config().n_vocab));
}

Expected<std::unique_ptr<Session>> Session::create(const model::Model& model, kernels::ThreadPool& pool,
                                                   int64_t n_ctx, int64_t max_batch) {
  const model::ModelConfig& c = model.config();
  if (n_ctx < 0 || n_ctx > (1 << 24))
    return Error{Code::InvalidArgument, "context length " + std::to_string(n_ctx) + " outside [1, 16777216]"};
  if (n_ctx == 0) n_ctx = c.n_ctx_train;
  if (max_batch <= 0 || max_batch > 65536)
    return Error{Code::InvalidArgument, "batch size " + std::to_string(max_batch) + " outside [1, 65536]"};
  STRATA_ASSIGN_OR_RETURN(KvCache kv, KvCache::create(c.n_layers, n_ctx, c.kv_dim()));
  return std::unique_ptr<Session>(new Session(model, pool, std::move(kv), max_batch));
}

int64_t Session::keep_common_prefix(std::span<const int32_t> tokens) {
  size_t n = 0;
  while (n < history_.size() && n < tokens.size() && history_[n] == tokens[n]) ++n;
  history_.resize(n);
  return static_cast<int64_t>(n);
}

Expected<const float*> Session::eval(std::span<const int32_t> tokens) {
  const model::ModelConfig& c = model_.config();
  if (tokens.empty()) return Error{Code::InvalidArgument, "eval of zero tokens"};
  const int64_t n_total = static_cast<int64_t>(tokens.size());
  if (position() + n_total > n_ctx())
    return Error{Code::OutOfRange, std::to_string(n_total) + " tokens at position " + std::to_string(position()) +
                                       " exceed the context length " + std::to_string(n_ctx())};
  for (int32_t t : tokens) {
    if (t < 0 || t >= c.n_vocab)
      return Error{Code::InvalidArgument, "token id " + std::to_string(t) + " outside [0, " +
                                              std::to_string(c.n_vocab) + ")"};
  }
  for (int64_t start = 0; start < n_total; start += max_batch_) {
    const int64_t n = std::min(max_batch_, n_total - start);
    const int64_t pos0 = position();
    transformer_.embed(tokens.data() + start, n, hidden_.data());
    for (int64_t l = 0; l < c.n_layers; ++l) transformer_.layer(l, hidden_.data(), n, pos0, kv_);
    history_.insert(history_.end(), tokens.begin() + start, tokens.begin() + start + n);
    if (start + n == n_total) transformer_.head(hidden_.data() + (n - 1) * c.n_embd, 1, logits_.data());
  }
  return static_cast<const float*>(logits_.data());
}

}  // namespace strata::exec
