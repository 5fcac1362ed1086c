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
#include <filesystem>
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
  // true: each step drafts as many tokens as pay off here (DraftPacer: measured pass times and the
  // sequence's record of taken guesses), maybe none; false: always max_draft (when the drafter has
  // that many). Either way the text is the same.
  bool adaptive = true;
};
Status validate(const SpeculativeParams& params);

// Prompt lookup: the tokens that followed the most recent earlier occurrence of the context's last
// n tokens, for n from ngram_max down to ngram_min (longer matches predict better), at most
// max_draft of them. Empty when no n-gram of those lengths occurred before. O(context * ngram_max).
// match (optional) <- how many tokens at the context's end equal those before the occurrence's
// continuation (at least the n-gram's length, at most 64; 0 when empty): a long match means the
// text is being copied, and the guesses will likely be taken.
std::vector<int32_t> lookup_draft(std::span<const int32_t> context, int32_t max_draft, int32_t ngram_max = 4,
                                  int32_t ngram_min = 2, int32_t* match = nullptr);
// The chance a prompt-lookup guess is taken, judged by its match (lookup_draft): m / (m + 2), so a
// 2-token match is even odds and a 16-token one 0.89.
inline double lookup_acceptance(int32_t match) { return match <= 0 ? 0.0 : match / (match + 2.0); }

// Whether a draft model's vocabulary is the target's (as llama.cpp's rule): sizes (n_vocab of each
// model) within 128 padding ids, the same token text for every id both have, the same BOS and EOS.
// InvalidArgument naming the first difference.
Status check_draft_vocabulary(const tokenizer::Vocab& draft, int64_t draft_n_vocab, const tokenizer::Vocab& target,
                              int64_t target_n_vocab);

// A draft model run greedily on its own Pipeline (its own KV cache, one sequence per target slot).
// Before guessing for a sequence it brings that sequence's cache to the target's context: it keeps
// the longest common prefix of what it had and evaluates the rest (after a first, full read of the
// prompt, that is the one or few tokens the target accepted since). Calling thread: one driver.
class DraftModel {
 public:
  // Tokens per forward pass of the draft's pipeline (its prompt reading; a guess is one token).
  static constexpr int64_t kMaxBatch = 128;
  // The draft's placement: everything on `device`, n_seq sequences of n_ctx positions.
  static plan::Placement placement(const model::ModelConfig& draft, const std::string& device, int64_t n_seq,
                                   int64_t n_ctx);
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
  // Milliseconds of one guessing step (one draft eval of every asking sequence), an exponential
  // average of the steps so far (0 before the first); what the pacer adds to a draft's price.
  double guess_ms() const { return guess_ms_; }

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
  double guess_ms_ = 0;
};

// The time of a forward pass by its rows, measured as the driver runs (what one more verified
// row costs differs by orders of magnitude between devices: on this project's 2-core CPU a pass of
// 2 rows takes 1.8x one row, of 9 rows 3.3x; on a GPU, reading the weights once, about 1.1x).
// An exponential average per row count, 1..kMaxRows. Calling thread: the driver's.
class PassCosts {
 public:
  static constexpr int64_t kMaxRows = 64;
  void observe(int64_t rows, double ms);
  // Milliseconds of a pass of `rows` rows: the average measured for that count; else interpolated
  // between the nearest measured counts around it; else from the nearest below, each further row
  // adding 15% of its time, or from the nearest above, each row less taking 15% off (guesses the
  // first measurement replaces); 0 when nothing is measured.
  double estimate(int64_t rows) const;
  bool measured(int64_t rows) const { return rows >= 1 && rows <= kMaxRows && ms_[rows] > 0; }

 private:
  double ms_[kMaxRows + 1] = {};  // 0: not measured
};

// When a sequence drafts, and how many guesses: the number k that makes the most tokens per unit
// of pass time, expected_tokens(k) / cost(base + 1 + k), against plain decoding's 1 / cost(base + 1)
// (with a 5% margin, so that noise in the measured times does not buy guesses that only break even).
// expected_tokens(k) = 1 + a + a^2 + ... + a^k, a = the chance that a guess is taken given the ones
// before it were: the guesses taken over those tried in the sequence's own past drafts (a draft tries
// its guesses in order until one is dropped), the latest draft weighing as much as all before it
// (guesses come in runs: while the model copies, whole drafts are taken; when it writes anew, none),
// over a prior of one half. Where no k pays, a plain step; and where even the prior would not pay (a
// CPU, whose rows cost), a sequence still drafts once after 16 plain steps in a row (the text may
// have turned to copying); each draft that fails doubles that wait (up to 1024), a taken guess makes
// it 16 again. Text the model copies (edits, code) drafts long; free text soon stops, at the cost of
// a try now and then.
class DraftPacer {
 public:
  static constexpr int kMaxGuesses = 32;
  // Guesses to ask for now (0: a plain step), at most max_draft. base_rows: the rows of the pass
  // beside this sequence's (other sequences' tokens); costs: the driver's pass times.
  // hint: what the drafter says of its guesses' chance (lookup_acceptance), used when it is
  // higher than the sequence's record (a new passage being copied after a stretch of new text).
  // guess_ms: what each guess costs to make (a draft model's step; lookup: 0), added to the pass.
  int32_t length(int32_t max_draft, const PassCosts& costs, int64_t base_rows = 0, double hint = 0,
                 double guess_ms = 0);
  // After a speculative step: drafted guesses, of which the first `accepted` were taken.
  void record(int64_t drafted, int64_t accepted);
  void reset();
  // The estimated chance that a guess is taken when the ones before it were.
  double acceptance() const;
  // 1 + a + ... + a^k: tokens a step with k guesses is expected to give, a = max(acceptance(), hint).
  double expected_tokens(int k, double hint = 0) const;

 private:
  static constexpr int kFirstExplore = 16;
  double taken_ = 0, tried_ = 0;  // decayed counts of guesses taken and tried
  int plain_run_ = 0;                    // plain steps since the last draft
  int explore_after_ = kFirstExplore;
};

// One sequence's guesses by prompt lookup for its next step: at most room (rows past the request's
// last token or the context would be wasted) and max_draft, and when the params are adaptive as many
// as pay (the pacer, hinted by the lookup's match). base_rows: the other rows of the pass.
std::vector<int32_t> paced_lookup(std::span<const int32_t> context, const SpeculativeParams& params, int64_t room,
                                  DraftPacer& pacer, const PassCosts& costs, int64_t base_rows = 0);
// How many guesses to ask a draft model for (0: a plain step), the same way; guess_ms: the draft
// model's time a guess (DraftModel::guess_ms).
int32_t paced_length(const SpeculativeParams& params, int64_t room, DraftPacer& pacer, const PassCosts& costs,
                     int64_t base_rows = 0, double guess_ms = 0);

// A draft model file loaded and placed for `target` on the device named device_id among `devices`
// (InvalidArgument when none is; the vocabulary check of DraftModel::create), n_seq sequences of
// n_ctx positions: what `run`, `chat` and the server load from --draft.
struct LoadedDraft {
  std::unique_ptr<model::Model> model;
  std::unique_ptr<DraftModel> drafter;  // refers to *model (destroyed first)
};
Expected<LoadedDraft> load_draft_model(const std::filesystem::path& path, const model::Model& target,
                                       std::span<const std::unique_ptr<backend::Device>> devices,
                                       const std::string& device_id, int64_t n_seq, int64_t n_ctx);

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
