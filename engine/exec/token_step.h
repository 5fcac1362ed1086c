// engine/exec/token_step.h — one generated token of one sequence, from its row of logits to its
// text: logit bias, constraint mask, log-probabilities, sampling, the end-of-generation check, and
// detokenizing through the stop strings. generate() (one sequence) and the Scheduler (many) both
// run it, so the per-token rules exist once. The caller owns the sequence's state (sampler, stop
// strings, decoder) and decides what a token means for its request (counting, callbacks, limits).
// Not thread-safe: one sequence's state is stepped on one thread.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/sample/sampler.h"
#include "engine/sample/stop_strings.h"
#include "engine/tokenizer/stream_decoder.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/trace/recorder.h"

namespace strata::exec {

// One generated token as on_token reports it.
struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0;             // natural log of its probability
};
struct TokenInfo {
  int32_t token = 0;
  float logprob = 0;             // of the sampled token (when logprobs were asked; else 0)
  std::vector<TokenLogprob> top; // the top_logprobs most likely tokens, most likely first
};

// Restricts which tokens may come next (constrained decoding, e.g. a JSON grammar). Used on the
// generating thread only, by one request.
class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;
  // Sets the logits of every token that may not come next to -infinity. logits: [n_vocab].
  virtual void mask(float* logits) = 0;
  // The token that was sampled (always one mask() allowed).
  virtual void accept(int32_t token) = 0;
  // True when the output is complete: generation stops (finish Stop).
  virtual bool complete() const = 0;
};

// What a request asks of each of its tokens.
struct TokenRules {
  const std::vector<std::pair<int32_t, float>>* logit_bias = nullptr;  // (token, added to its logit); may be null
  TokenConstraint* constraint = nullptr;  // may be null
  // -1: no log probabilities. 0..20: the sampled token's logprob and this many alternatives, from
  // the distribution after logit_bias and the constraint, before penalties, temperature, truncation.
  int32_t top_logprobs = -1;
  bool ignore_eog = false;                // an end-of-generation token is kept like any other
};

// One sequence's state, owned by the caller; the step advances it.
struct TokenState {
  sample::Sampler& sampler;
  sample::StopStrings& stops;
  tokenizer::StreamDecoder& decoder;
};

// Where the step's Sample and Detokenize spans go (no recorder: none).
struct TokenTrace {
  trace::Recorder* recorder = nullptr;
  int32_t lane = -1;
  int32_t seq = -1;
  int64_t position = -1;         // the token's position in the sequence
};

// Scratch of the log-softmax, reused from token to token (one per generating thread).
class LogprobScratch {
 public:
  // Log-softmax of one row (n_vocab logits): keeps a copy for logprob() and fills info.top.
  void softmax_top(const float* logits, int32_t n_vocab, int32_t top_n, TokenInfo& info);
  // The logprob of `token` in the last row given to softmax_top.
  float logprob(int32_t token) const;

 private:
  float lse_ = 0;                // log-sum-exp of the last row
  std::vector<float> saved_;     // that row, before sampling changed it
  std::vector<int32_t> ids_;     // token ids for the top-k sort
};

struct TokenOutcome {
  // An end-of-generation token (or BOS: the model started a new document, llama2.c's rule) was
  // sampled and the rules do not ignore it: the state was not advanced, text is empty.
  bool end = false;
  TokenInfo info;                // the token and, when asked, its logprobs
  std::string text;              // valid UTF-8 this token adds, after what the stop strings hold back
  bool stopped = false;          // a stop string matched, or the constraint is complete
};

// Samples the next token from `logits` ([n_vocab], changed in place) and advances the state.
TokenOutcome token_step(float* logits, int32_t n_vocab, const tokenizer::Tokenizer& tok, const TokenRules& rules,
                        TokenState state, LogprobScratch& scratch, const TokenTrace& trace = {});

// At the end of a generation that was neither stopped nor cancelled: the bytes the decoder and
// the stop strings still hold. *stopped is set when a stop string matched in them (the text then
// ends before it).
std::string token_flush(TokenState state, bool* stopped);

}  // namespace strata::exec
