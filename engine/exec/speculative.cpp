// engine/exec/speculative.cpp — the drafters of speculative decoding (prompt lookup, a draft model).
#include "engine/exec/speculative.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "engine/exec/session.h"

namespace strata::exec {

const char* draft_mode_name(DraftMode mode) {
  switch (mode) {
    case DraftMode::Off: return "off";
    case DraftMode::Lookup: return "lookup";
    case DraftMode::Model: return "model";
  }
  return "?";
}

Expected<DraftMode> parse_draft_mode(const std::string& name) {
  if (name == "off" || name == "none") return DraftMode::Off;
  if (name == "lookup" || name == "prompt-lookup") return DraftMode::Lookup;
  if (name == "model" || name == "draft") return DraftMode::Model;
  return Error{Code::InvalidArgument, "speculative mode \"" + name + "\" is not one of off, lookup, model"};
}

Status validate(const SpeculativeParams& p) {
  if (p.max_draft < 1 || p.max_draft > 32)
    return Error{Code::InvalidArgument, "draft length " + std::to_string(p.max_draft) + " outside [1, 32]"};
  return {};
}

std::vector<int32_t> lookup_draft(std::span<const int32_t> context, int32_t max_draft, int32_t ngram_max,
                                  int32_t ngram_min, int32_t* match) {
  std::vector<int32_t> out;
  if (match) *match = 0;
  const int64_t len = static_cast<int64_t>(context.size());
  if (max_draft <= 0) return out;
  for (int64_t n = std::min<int64_t>(ngram_max, len - 1); n >= std::max<int32_t>(1, ngram_min); --n) {
    const int32_t* tail = context.data() + len - n;
    // The latest earlier occurrence: a start j < len - n whose n tokens equal the tail, with at
    // least one token after it to propose.
    for (int64_t j = len - n - 1; j >= 0; --j) {
      if (!std::equal(tail, tail + n, context.data() + j)) continue;
      const int64_t from = j + n;
      const int64_t count = std::min<int64_t>(max_draft, len - from);
      out.assign(context.begin() + from, context.begin() + from + count);
      if (match) {
        int64_t m = n;
        while (m < 64 && j - (m - n) - 1 >= 0 && context[static_cast<size_t>(len - m - 1)] == context[static_cast<size_t>(j - (m - n) - 1)])
          ++m;
        *match = static_cast<int32_t>(m);
      }
      return out;
    }
  }
  return out;
}

void PassCosts::observe(int64_t rows, double ms) {
  if (rows < 1 || rows > kMaxRows || !(ms > 0)) return;
  double& m = ms_[rows];
  m = m == 0 ? ms : 0.5 * m + 0.5 * ms;
}

double PassCosts::estimate(int64_t rows) const {
  rows = std::clamp<int64_t>(rows, 1, kMaxRows);
  if (ms_[rows] > 0) return ms_[rows];
  int64_t lo = rows - 1, hi = rows + 1;
  while (lo >= 1 && ms_[lo] == 0) --lo;
  while (hi <= kMaxRows && ms_[hi] == 0) ++hi;
  if (lo >= 1 && hi <= kMaxRows)
    return ms_[lo] + (ms_[hi] - ms_[lo]) * static_cast<double>(rows - lo) / static_cast<double>(hi - lo);
  if (lo >= 1) return ms_[lo] * (1.0 + 0.15 * static_cast<double>(rows - lo));
  if (hi <= kMaxRows) return ms_[hi] / (1.0 + 0.15 * static_cast<double>(hi - rows));
  return 0;
}

double DraftPacer::acceptance() const { return (taken_ + 0.5) / (tried_ + 1.0); }

double DraftPacer::expected_tokens(int k, double hint) const {
  const double a = std::max(acceptance(), hint);
  double e = 1, power = 1;
  for (int j = 1; j <= std::min(k, kMaxGuesses); ++j) e += (power *= a);
  return e;
}

int32_t DraftPacer::length(int32_t max_draft, const PassCosts& costs, int64_t base_rows, double hint,
                           double guess_ms) {
  max_draft = std::clamp(max_draft, 0, kMaxGuesses);
  const double plain = costs.estimate(base_rows + 1);
  if (plain == 0) return max_draft;  // nothing measured yet: the first guesses measure it
  if (!costs.measured(base_rows + 1)) return 0;  // a plain pass first: what drafting is weighed against
  double best = 1.05 / plain;
  int32_t best_k = 0;
  for (int32_t k = 1; k <= max_draft && base_rows + 1 + k <= PassCosts::kMaxRows; ++k) {
    const double rate = expected_tokens(k, hint) / (costs.estimate(base_rows + 1 + k) + k * guess_ms);
    if (rate > best) {
      best = rate;
      best_k = k;
    }
  }
  if (best_k > 0) {
    plain_run_ = 0;
    return best_k;
  }
  if (++plain_run_ >= explore_after_) {
    plain_run_ = 0;
    return max_draft;
  }
  return 0;
}

void DraftPacer::record(int64_t drafted, int64_t accepted) {
  if (drafted <= 0) return;
  // Each draft halves the weight of the ones before it: the latest weighs as much as all of them.
  // A draft tries its guesses in order until one is dropped: accepted successes, and one failure
  // when it stopped short.
  taken_ = 0.5 * taken_ + static_cast<double>(accepted);
  tried_ = 0.5 * tried_ + static_cast<double>(accepted) + (accepted < drafted ? 1.0 : 0.0);
  explore_after_ = accepted > 0 ? kFirstExplore : std::min(2 * explore_after_, 1024);
}

void DraftPacer::reset() {
  taken_ = tried_ = 0;
  plain_run_ = 0;
  explore_after_ = kFirstExplore;
}

std::vector<int32_t> paced_lookup(std::span<const int32_t> context, const SpeculativeParams& params, int64_t room,
                                  DraftPacer& pacer, const PassCosts& costs, int64_t base_rows) {
  const int32_t most = static_cast<int32_t>(std::min<int64_t>(params.max_draft, room));
  if (most <= 0) return {};
  int32_t match = 0;
  std::vector<int32_t> draft = lookup_draft(context, most, 4, 2, &match);
  if (draft.empty() || !params.adaptive) return draft;
  const int32_t k = pacer.length(static_cast<int32_t>(draft.size()), costs, base_rows, lookup_acceptance(match));
  draft.resize(static_cast<size_t>(k));
  return draft;
}

int32_t paced_length(const SpeculativeParams& params, int64_t room, DraftPacer& pacer, const PassCosts& costs,
                     int64_t base_rows, double guess_ms) {
  const int32_t most = static_cast<int32_t>(std::min<int64_t>(params.max_draft, room));
  if (most <= 0) return 0;
  return params.adaptive ? pacer.length(most, costs, base_rows, 0, guess_ms) : most;
}

Status check_draft_vocabulary(const tokenizer::Vocab& dv, int64_t dn, const tokenizer::Vocab& tv, int64_t tn) {
  // As llama.cpp's rule: vocabularies may differ by padding at the end, not in their tokens.
  if (std::abs(dn - tn) > 128)
    return Error{Code::InvalidArgument, "the draft model's vocabulary has " + std::to_string(dn) +
                                            " tokens, the target's " + std::to_string(tn) + ": not the same vocabulary"};
  const int32_t common = std::min(dv.n_tokens(), tv.n_tokens());
  for (int32_t id = 0; id < common; ++id) {
    if (dv.tokens[static_cast<size_t>(id)] != tv.tokens[static_cast<size_t>(id)])
      return Error{Code::InvalidArgument, "the draft model's token " + std::to_string(id) + " is \"" +
                                              dv.tokens[static_cast<size_t>(id)] + "\", the target's \"" +
                                              tv.tokens[static_cast<size_t>(id)] + "\": not the same vocabulary"};
  }
  if (dv.bos_id != tv.bos_id || dv.eos_id != tv.eos_id)
    return Error{Code::InvalidArgument, "the draft model's BOS/EOS ids (" + std::to_string(dv.bos_id) + ", " +
                                            std::to_string(dv.eos_id) + ") differ from the target's (" +
                                            std::to_string(tv.bos_id) + ", " + std::to_string(tv.eos_id) + ")"};
  return {};
}

plan::Placement DraftModel::placement(const model::ModelConfig& draft, const std::string& device, int64_t n_seq,
                                      int64_t n_ctx) {
  // A batch as wide as the target's prompt chunks would waste the draft's memory: its prompt
  // reading is a fraction of the target's anyway.
  return single_device_placement(draft, device, n_ctx, n_seq, kMaxBatch);
}

Expected<std::unique_ptr<DraftModel>> DraftModel::create(const model::Model& draft, const model::Model& target,
                                                         backend::Device& device, int64_t n_seq, int64_t n_ctx,
                                                         trace::Recorder* recorder) {
  STRATA_RETURN_IF_ERROR(check_draft_vocabulary(draft.tokenizer().vocab(), draft.config().n_vocab,
                                                target.tokenizer().vocab(), target.config().n_vocab));
  if (n_seq < 1 || n_ctx < 1)
    return Error{Code::InvalidArgument, "draft model for " + std::to_string(n_seq) + " sequences of " +
                                            std::to_string(n_ctx) + " positions"};
  std::unique_ptr<DraftModel> d(new DraftModel(draft, device));
  STRATA_ASSIGN_OR_RETURN(d->pipeline_, Pipeline::create(draft, {&device}, placement(draft.config(), device.id(), n_seq, n_ctx),
                                                          recorder));
  d->history_.resize(static_cast<size_t>(n_seq));
  return d;
}

Expected<LoadedDraft> load_draft_model(const std::filesystem::path& path, const model::Model& target,
                                       std::span<const std::unique_ptr<backend::Device>> devices,
                                       const std::string& device_id, int64_t n_seq, int64_t n_ctx) {
  backend::Device* device = nullptr;
  for (const auto& d : devices) {
    if (d->id() == device_id) device = d.get();
  }
  if (!device) return Error{Code::InvalidArgument, "draft device '" + device_id + "' is not one of the devices"};
  LoadedDraft d;
  STRATA_ASSIGN_OR_RETURN(d.model, model::Model::load(path));
  STRATA_ASSIGN_OR_RETURN(d.drafter, DraftModel::create(*d.model, target, *device, n_seq, n_ctx));
  return d;
}

Status DraftModel::propose(std::span<const Ask> asks) {
  const int64_t n_vocab = draft_.config().n_vocab;
  struct Live {
    const Ask* ask;
    std::vector<int32_t> feed;     // tokens the next eval appends to this sequence
    std::vector<float> logits;     // [n_vocab] after the last of them
  };
  std::vector<Live> live;
  for (const Ask& a : asks) {
    if (a.out) a.out->clear();
    if (a.seq < 0 || a.seq >= pipeline_->n_seq())
      return Error{Code::InvalidArgument, "draft for sequence " + std::to_string(a.seq) + " outside [0, " +
                                              std::to_string(pipeline_->n_seq()) + ")"};
    if (a.max_draft <= 0 || a.context.empty() || !a.out) continue;
    // Room in the draft's context for the guesses (the last one is never evaluated).
    if (static_cast<int64_t>(a.context.size()) + a.max_draft - 1 > pipeline_->n_ctx()) continue;
    std::vector<int32_t>& had = history_[static_cast<size_t>(a.seq)];
    size_t keep = 0;
    while (keep < had.size() && keep < a.context.size() && had[keep] == a.context[keep]) ++keep;
    if (keep == a.context.size()) --keep;  // the last context token's logits give the first guess
    keep = static_cast<size_t>(pipeline_->truncate(a.seq, static_cast<int64_t>(keep)));
    had.resize(keep);
    Live l{&a, std::vector<int32_t>(a.context.begin() + static_cast<std::ptrdiff_t>(keep), a.context.end()), {}};
    l.logits.resize(static_cast<size_t>(n_vocab));
    live.push_back(std::move(l));
  }
  // The ids both vocabularies have: a guess past the target's is never proposed.
  const int64_t usable = std::min<int64_t>(n_vocab, draft_.tokenizer().n_tokens());
  bool first = true;
  while (!live.empty()) {
    std::vector<Pipeline::Request> requests;
    for (Live& l : live) {
      Pipeline::Request r;
      r.seq = l.ask->seq;
      r.tokens = l.feed;
      r.logits = l.logits.data();
      requests.push_back(r);
    }
    const auto t0 = std::chrono::steady_clock::now();
    Status s = pipeline_->eval(requests);
    // The first eval also catches the caches up (a whole prompt, the first time): not a guess's price.
    if (s.ok() && !first) {
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      guess_ms_ = guess_ms_ == 0 ? ms : 0.5 * guess_ms_ + 0.5 * ms;
    }
    first = false;
    if (!s.ok()) {
      // The draft's caches are unknown now: start them again next time.
      for (Live& l : live) {
        history_[static_cast<size_t>(l.ask->seq)].clear();
        pipeline_->truncate(l.ask->seq, 0);
      }
      return s;
    }
    std::vector<Live> next;
    for (Live& l : live) {
      std::vector<int32_t>& had = history_[static_cast<size_t>(l.ask->seq)];
      had.insert(had.end(), l.feed.begin(), l.feed.end());
      // Greedy guess; its probability under the draft (softmax of the row at the max).
      const float* row = l.logits.data();
      const int64_t best = std::max_element(row, row + usable) - row;
      double sum = 0;
      for (int64_t i = 0; i < usable; ++i) sum += std::exp(static_cast<double>(row[i] - row[best]));
      const double p = 1.0 / sum;
      if (p < min_probability_) continue;
      l.ask->out->push_back(static_cast<int32_t>(best));
      if (static_cast<int32_t>(l.ask->out->size()) >= l.ask->max_draft) continue;
      l.feed.assign(1, static_cast<int32_t>(best));
      next.push_back(std::move(l));
    }
    live = std::move(next);
  }
  return {};
}

}  // namespace strata::exec
