// engine/eval/perplexity.h — perplexity of a model over a token sequence, computed the way
// llama.cpp's llama-perplexity does so that both tools' figures compare on the same text and
// context: the tokens are cut into non-overlapping windows of n_ctx; each window starts from an
// empty cache (its first token replaced by BOS when the model adds one), and only the second
// half is scored: the logits at positions [n_ctx/2, n_ctx-1) predict the next token.
// PPL = exp(mean negative log-likelihood). Also the quantization checks users run: KL divergence
// and top-1 agreement of these logits against saved logits of a base model.
// Calling thread: any one thread; the session's pipeline does the work.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "engine/core/status.h"
#include "engine/exec/session.h"

namespace strata::eval {

struct PerplexityOptions {
  int64_t n_ctx = 512;        // window length in tokens (<= the session's context)
  int64_t max_chunks = 0;     // 0: every whole window of the text
  int32_t bos = -1;           // >= 0: replaces each window's first token (the model adds BOS)
};

// Running figures after each window.
struct PerplexityProgress {
  int64_t chunk = 0;          // windows done
  int64_t n_chunks = 0;       // windows in all
  double ppl = 0.0;           // over the windows so far
  double ppl_stderr = 0.0;    // of the estimate, from the spread of the per-token NLL
  int64_t scored = 0;         // tokens scored so far
};

// One scored position: the logits at position i of a window ([n_vocab], valid during the call)
// and the token they predict.
using ScoredLogitsSink = std::function<Status(const float* logits, int64_t n_vocab, int32_t next_token)>;

// Perplexity over `tokens`. InvalidArgument when the text has fewer than n_ctx tokens or n_ctx is
// under 4 or past the session's context. on_progress (may be empty) is called after each window;
// sink (may be empty) gets every scored position's logits in order.
Expected<PerplexityProgress> perplexity(exec::Session& session, std::span<const int32_t> tokens,
                                        const PerplexityOptions& options,
                                        const std::function<void(const PerplexityProgress&)>& on_progress,
                                        const ScoredLogitsSink& sink);

// log(softmax(logits)) into out; [n].
void log_softmax(const float* logits, int64_t n, std::vector<double>& out);

// Running comparison of a model's logits against a base model's, position by position.
class LogitComparison {
 public:
  // Adds one position: KL(base || test) = sum p_base (log p_base - log p_test), top-1 agreement,
  // and both models' NLL of the actual next token.
  void add(const float* base_logits, const float* test_logits, int64_t n_vocab, int32_t next_token);

  int64_t count() const { return count_; }
  double mean_kl() const { return count_ ? kl_sum_ / static_cast<double>(count_) : 0.0; }
  double kl_stderr() const;
  double max_kl() const { return kl_max_; }
  double top1_agreement() const { return count_ ? static_cast<double>(top1_same_) / static_cast<double>(count_) : 0.0; }
  double base_ppl() const;
  double test_ppl() const;

 private:
  std::vector<double> base_lp_, test_lp_;  // scratch, [n_vocab]
  int64_t count_ = 0, top1_same_ = 0;
  double kl_sum_ = 0.0, kl_sq_sum_ = 0.0, kl_max_ = 0.0;
  double base_nll_ = 0.0, test_nll_ = 0.0;
};

}  // namespace strata::eval
