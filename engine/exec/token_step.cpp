// engine/exec/token_step.cpp — the per-token rules of generation (see token_step.h).
#include "engine/exec/token_step.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace strata::exec {

void LogprobScratch::softmax_top(const float* logits, int32_t n_vocab, int32_t top_n, TokenInfo& info) {
  float mx = -std::numeric_limits<float>::infinity();
  for (int32_t i = 0; i < n_vocab; ++i) mx = std::max(mx, logits[i]);
  double sum = 0;
  for (int32_t i = 0; i < n_vocab; ++i) sum += std::exp(static_cast<double>(logits[i]) - mx);
  lse_ = mx + static_cast<float>(std::log(sum));
  saved_.assign(logits, logits + n_vocab);  // the sampler changes `logits` in place
  info.top.clear();
  if (top_n <= 0) return;
  ids_.resize(static_cast<size_t>(n_vocab));
  for (int32_t i = 0; i < n_vocab; ++i) ids_[static_cast<size_t>(i)] = i;
  const size_t k = std::min(static_cast<size_t>(top_n), ids_.size());
  std::partial_sort(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(k), ids_.end(),
                    [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  for (size_t i = 0; i < k; ++i) {
    const int32_t t = ids_[i];
    if (std::isinf(logits[t]) && logits[t] < 0) break;  // masked out: not a possible token
    info.top.push_back({t, logits[t] - lse_});
  }
}

float LogprobScratch::logprob(int32_t token) const {
  return saved_.empty() ? 0.0f : saved_[static_cast<size_t>(token)] - lse_;
}

TokenOutcome token_step(float* logits, int32_t n_vocab, const tokenizer::Tokenizer& tok, const TokenRules& rules,
                        TokenState state, LogprobScratch& scratch, const TokenTrace& trace) {
  TokenOutcome out;
  int32_t next = 0;
  {
    trace::Span span;
    if (trace.recorder) span = trace.recorder->span(trace.lane, trace::EventKind::Sample, -1, trace.seq, trace.position);
    if (rules.logit_bias)
      for (const auto& [t, bias] : *rules.logit_bias) logits[t] += bias;
    if (rules.constraint) rules.constraint->mask(logits);
    if (rules.top_logprobs >= 0) scratch.softmax_top(logits, n_vocab, rules.top_logprobs, out.info);
    next = state.sampler.sample(logits);
    if (rules.top_logprobs >= 0) out.info.logprob = scratch.logprob(next);
  }
  out.info.token = next;
  if ((tok.is_eog(next) || next == tok.vocab().bos_id) && !rules.ignore_eog) {
    out.end = true;
    return out;
  }
  if (rules.constraint) rules.constraint->accept(next);
  state.sampler.accept(next);
  {
    trace::Span span;
    if (trace.recorder) span = trace.recorder->span(trace.lane, trace::EventKind::Detokenize, -1, trace.seq, trace.position);
    out.text = state.stops.push(state.decoder.push(next));
  }
  out.stopped = state.stops.stopped() || (rules.constraint && rules.constraint->complete());
  return out;
}

std::string token_flush(TokenState state, bool* stopped) {
  std::string text = state.stops.push(state.decoder.flush());
  if (stopped) *stopped = state.stops.stopped();
  text += state.stops.flush();
  return text;
}

}  // namespace strata::exec
