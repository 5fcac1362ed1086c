// engine/exec/speculative.h — exact speculative decoding: guess a sequence's next tokens cheaply
// (a draft), evaluate the last sampled token and the draft in ONE target forward pass that returns
// the logits of every position, and keep the drafted tokens the target itself samples.
//
// Why the text is exactly the text without speculation: the batch-invariant kernels (docs/
// backends.md) give each row of that pass the bits a one-token pass gives, and the verifier samples
// position i from row i with the request's own sampler, exactly as plain decoding would (same
// logits, same random draw, same penalties), then compares with drafted token i: equal, the next row
// is valid too and sampling goes on; different, the sampled token stands and the rest of the draft
// is dropped (the KV cache is cut back to the accepted tokens). So greedy text, and seeded text, are
// identical with and without speculation, and sampled text follows the target's distribution. For
// a draft that is one guess per position (prompt lookup, a greedy draft model) this is standard
// speculative rejection sampling: draft token d is accepted with probability min(1, p(d) / 1) =
// p(d), and on a rejection the token comes from p with d taken out, renormalized — which is what
// sampling p and comparing with d does.
//
// Drafters: prompt lookup (n-grams of the sequence's own context; no model) and a draft model (any
// GGUF whose vocabulary is the target's, run greedily by its own Pipeline, typically on the CPU).
// Qt-free; a drafter is driven by one thread (the generating one).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/exec/pipeline.h"
#include "engine/model/model.h"
#include "engine/trace/recorder.h"

namespace strata::exec {

enum class DraftMode {
  Off,     // one token a step
  Lookup,  // prompt lookup: the tokens that followed the latest earlier occurrence of the last n-gram
  Model,   // a draft model's greedy continuation
};
const char* draft_mode_name(DraftMode mode);  // "off", "lookup", "model"
Expected<DraftMode> parse_draft_mode(const std::string& name);

struct SpeculativeParams {
  DraftMode mode = DraftMode::Off;
  int32_t max_draft = 8;  // drafted tokens per step at most, 1..32
};
Status validate(const SpeculativeParams& params);

// Prompt lookup: the tokens that followed the most recent earlier occurrence of the context's last
// n tokens, for n from ngram_max down to ngram_min (longer matches predict better), at most
// max_draft of them. Empty when no n-gram of those lengths occurred before. O(context * ngram_max).
std::vector<int32_t> lookup_draft(std::span<const int32_t> context, int32_t max_draft, int32_t ngram_max = 4,
                                  int32_t ngram_min = 2);

// A draft model run greedily on its own Pipeline (its own KV cache, one sequence per target slot).
// Before guessing for a sequence it brings that sequence's cache to the target's context: it keeps
// the longest common prefix of what it had and evaluates the rest (after a first, full read of the
// prompt, that is the one or few tokens the target accepted since). Calling thread: one driver.
class DraftModel {
 public:
  // draft: loaded and outliving this; its vocabulary must be the target's (same size, same token
  // texts: InvalidArgument naming the first id that differs). device: where the draft runs (the
  // CPU or a device of its own); n_seq and n_ctx: the target's slots and context.
  static Expected<std::unique_ptr<DraftModel>> create(const model::Model& draft, const model::Model& target,
                                                      backend::Device& device, int64_t n_seq, int64_t n_ctx,
                                                      trace::Recorder* recorder = nullptr);

  struct Ask {
    int32_t seq = 0;                      // the target's slot
    std::span<const int32_t> context;     // every token of the sequence so far (prompt + generated)
    int32_t max_draft = 0;                // guesses wanted
    std::vector<int32_t>* out = nullptr;  // <- the guesses (fewer when the draft is unsure)
  };
  // Guesses for several sequences at once: each draft step is one eval over all of them.
  Status propose(std::span<const Ask> asks);
  // Stops guessing for a sequence once its most likely token has less than this probability (a
  // guess the target would likely reject costs a verified row for nothing). Default 0.3.
  void set_min_probability(float p) { min_probability_ = p; }

  const model::Model& model() const { return draft_; }
  Pipeline& pipeline() { return *pipeline_; }
  backend::Device& device() { return device_; }

 private:
  DraftModel(const model::Model& draft, backend::Device& device) : draft_(draft), device_(device) {}
  const model::Model& draft_;
  backend::Device& device_;
  std::unique_ptr<Pipeline> pipeline_;
  std::vector<std::vector<int32_t>> history_;  // per sequence: tokens in the draft's cache
  float min_probability_ = 0.3f;
};

// When a sequence drafts, and how much. A verified row costs a pass more work (on a CPU, 2 rows
// cost 1.8x one), so guesses that keep failing make decoding slower than plain: after a step that
// accepted none, the sequence takes 1, then 2, 4, ... up to 32 plain steps before it drafts again;
// an accepted guess resets that. The draft length follows the last run: all taken, twice as many
// next time (up to the request's maximum); some taken, one more than were. Text the model copies
// (edits, code) drafts long; free text backs off.
class DraftPacer {
 public:
  // Before a step: whether to draft now (a false counts one skipped step).
  bool should_draft() {
    if (skip_ > 0) {
      --skip_;
      return false;
    }
    return true;
  }
  // Guesses to ask for now, at most max_draft.
  int32_t length(int32_t max_draft) const { return length_ > 0 ? std::min(length_, max_draft) : max_draft; }
  void record(int64_t drafted, int64_t accepted) {
    if (drafted <= 0) return;
    length_ = static_cast<int32_t>(accepted == drafted ? 2 * drafted : accepted + 1);
    if (accepted > 0) {
      backoff_ = 0;
      return;
    }
    backoff_ = backoff_ == 0 ? 1 : std::min(2 * backoff_, 32);
    skip_ = backoff_;
  }
  void reset() { skip_ = backoff_ = length_ = 0; }

 private:
  int skip_ = 0;     // plain steps left before the next draft
  int backoff_ = 0;  // the last wait (0: the last draft was taken in part)
  int32_t length_ = 0;  // 0: the request's maximum
};

// The outcome of verifying one speculative step of one sequence.
struct VerifyResult {
  int64_t accepted = 0;  // drafted tokens the target sampled too
  bool ended = false;    // the sequence finished inside the step (stop, limit, end of generation)
};

// Walks the rows of a speculative step ([1 + draft.size()][n_vocab]): sample(row i) is the driver's
// per-token step (token_step and everything its request asks), returning the token it sampled, or
// -1 when the sequence ended there. Row i + 1 is looked at only when row i sampled draft[i].
template <typename SampleRow>
VerifyResult verify_draft(std::span<const int32_t> draft, SampleRow&& sample) {
  VerifyResult r;
  for (size_t i = 0; i <= draft.size(); ++i) {
    const int32_t t = sample(i);
    if (t < 0) {
      r.ended = true;
      return r;
    }
    if (i == draft.size() || t != draft[i]) return r;
    ++r.accepted;
  }
  return r;
}

}  // namespace strata::exec
