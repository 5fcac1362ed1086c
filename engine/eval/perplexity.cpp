// engine/eval/perplexity.cpp — llama-perplexity's windowed perplexity, and logit comparisons.
#include "engine/eval/perplexity.h"

#include <algorithm>
#include <cmath>

namespace strata::eval {

void log_softmax(const float* logits, int64_t n, std::vector<double>& out) {
  out.resize(static_cast<size_t>(n));
  double max_v = logits[0];
  for (int64_t i = 1; i < n; ++i) max_v = std::max(max_v, static_cast<double>(logits[i]));
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i]) - max_v);
  const double log_z = max_v + std::log(sum);
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = static_cast<double>(logits[i]) - log_z;
}

Expected<PerplexityProgress> perplexity(exec::Session& session, std::span<const int32_t> tokens,
                                        const PerplexityOptions& o,
                                        const std::function<void(const PerplexityProgress&)>& on_progress,
                                        const ScoredLogitsSink& sink) {
  const int64_t n_ctx = o.n_ctx;
  if (n_ctx < 4 || n_ctx > session.n_ctx())
    return Error{Code::InvalidArgument, "perplexity window of " + std::to_string(n_ctx) + " tokens: it must be in [4, " +
                                            std::to_string(session.n_ctx()) + "] (the loaded context)"};
  const int64_t n_tokens = static_cast<int64_t>(tokens.size());
  int64_t n_chunks = n_tokens / n_ctx;
  if (n_chunks == 0)
    return Error{Code::InvalidArgument, "the text has " + std::to_string(n_tokens) + " tokens; perplexity with a " +
                                            std::to_string(n_ctx) + "-token window needs at least that many"};
  if (o.max_chunks > 0) n_chunks = std::min(n_chunks, o.max_chunks);
  const int64_t n_vocab = session.model().config().n_vocab;
  const int64_t first = n_ctx / 2;

  PerplexityProgress p;
  p.n_chunks = n_chunks;
  double nll_sum = 0.0, nll_sq_sum = 0.0;
  std::vector<double> lp;
  std::vector<int32_t> window(static_cast<size_t>(n_ctx));
  for (int64_t c = 0; c < n_chunks; ++c) {
    std::copy_n(tokens.begin() + c * n_ctx, n_ctx, window.begin());
    if (o.bos >= 0) window[0] = o.bos;
    session.reset();
    // The unscored first half in one batch, then one position at a time so that each scored
    // position's logits come back (the pipeline returns the last position's logits per call).
    auto logits = session.eval(std::span<const int32_t>(window.data(), static_cast<size_t>(first + 1)));
    if (!logits.ok()) return logits.error();
    for (int64_t i = first;; ++i) {
      const int32_t next = window[static_cast<size_t>(i + 1)];
      log_softmax(*logits, n_vocab, lp);
      const double nll = -lp[static_cast<size_t>(next)];
      nll_sum += nll;
      nll_sq_sum += nll * nll;
      ++p.scored;
      if (sink) STRATA_RETURN_IF_ERROR(sink(*logits, n_vocab, next));
      if (i + 1 >= n_ctx - 1) break;
      logits = session.eval(std::span<const int32_t>(&window[static_cast<size_t>(i + 1)], 1));
      if (!logits.ok()) return logits.error();
    }
    p.chunk = c + 1;
    const double mean = nll_sum / static_cast<double>(p.scored);
    p.ppl = std::exp(mean);
    // Standard error of exp(mean NLL), by the delta method, as llama-perplexity reports it.
    const double var = std::max(0.0, nll_sq_sum / static_cast<double>(p.scored) - mean * mean);
    p.ppl_stderr = p.scored > 1 ? p.ppl * std::sqrt(var / static_cast<double>(p.scored - 1)) : 0.0;
    if (on_progress) on_progress(p);
  }
  session.reset();
  return p;
}

void LogitComparison::add(const float* base_logits, const float* test_logits, int64_t n_vocab, int32_t next_token) {
  log_softmax(base_logits, n_vocab, base_lp_);
  log_softmax(test_logits, n_vocab, test_lp_);
  double kl = 0.0;
  size_t base_top = 0, test_top = 0;
  for (size_t i = 0; i < static_cast<size_t>(n_vocab); ++i) {
    const double pb = std::exp(base_lp_[i]);
    kl += pb * (base_lp_[i] - test_lp_[i]);
    if (base_lp_[i] > base_lp_[base_top]) base_top = i;
    if (test_lp_[i] > test_lp_[test_top]) test_top = i;
  }
  kl = std::max(0.0, kl);  // rounding can leave a tiny negative sum for identical inputs
  ++count_;
  kl_sum_ += kl;
  kl_sq_sum_ += kl * kl;
  kl_max_ = std::max(kl_max_, kl);
  top1_same_ += base_top == test_top;
  base_nll_ -= base_lp_[static_cast<size_t>(next_token)];
  test_nll_ -= test_lp_[static_cast<size_t>(next_token)];
}

double LogitComparison::kl_stderr() const {
  if (count_ < 2) return 0.0;
  const double n = static_cast<double>(count_);
  const double mean = kl_sum_ / n;
  return std::sqrt(std::max(0.0, kl_sq_sum_ / n - mean * mean) / (n - 1));
}

double LogitComparison::base_ppl() const { return count_ ? std::exp(base_nll_ / static_cast<double>(count_)) : 0.0; }
double LogitComparison::test_ppl() const { return count_ ? std::exp(test_nll_ / static_cast<double>(count_)) : 0.0; }

}  // namespace strata::eval
