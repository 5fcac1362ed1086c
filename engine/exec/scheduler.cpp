// engine/exec/scheduler.cpp — the slot / queue / step machinery of the multi-request scheduler.
// Depends on the pipeline, sampler, stop strings and stream decoder; nothing above exec/.
#include "engine/exec/scheduler.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <tuple>

#include "engine/sample/stop_strings.h"
#include "kernels/cpu/ops_f32.h"
#include "engine/tokenizer/stream_decoder.h"

namespace strata::exec {

namespace {
using Clock = std::chrono::steady_clock;
double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}
constexpr auto kRateWindow = std::chrono::seconds(2);
}  // namespace

// One sequence slot of the pipeline. Touched only by the scheduler thread (and by shutdown()
// after that thread has been joined).
struct Scheduler::Slot {
  int32_t seq = 0;
  bool busy = false;
  bool embedding = false;        // held by an embedding (Scheduler::EmbedJob), not a request
  uint64_t id = 0;
  GenerationRequest req;
  std::unique_ptr<sample::Sampler> sampler;
  std::unique_ptr<sample::StopStrings> stops;
  std::unique_ptr<tokenizer::StreamDecoder> decoder;
  std::vector<int32_t> history;  // tokens whose keys and values are in this sequence's cache
  size_t prompt_done = 0;        // prompt tokens in the cache
  // After a lost device: tokens (prompt and generated) to evaluate again, without sampling, to
  // rebuild the cache; `pending` follows them.
  std::vector<int32_t> replay;
  size_t replay_done = 0;
  int32_t pending = -1;          // sampled token evaluated by the next step
  bool callback_stopped = false; // on_text returned false
  std::vector<float> logits;     // [n_vocab]
  // Speculative step: the guesses for the tokens after `pending` (empty: a plain step), the
  // tokens evaluated ([pending, draft...]) and their logits ([1 + draft.size()][n_vocab]).
  std::vector<int32_t> draft;
  DraftPacer pacer;
  std::vector<int32_t> step_tokens;
  std::vector<float> step_logits;
  GenerationResult result;
  Clock::time_point submitted, started;
};

Scheduler::Scheduler(Pipeline& pipeline, SchedulerOptions options)
    : pipeline_(pipeline), options_(options) {
  n_slots_ = pipeline.n_seq();
  n_ctx_ = pipeline.n_ctx();
  n_vocab_ = static_cast<int32_t>(pipeline.model().config().n_vocab);
  if (options_.prompt_chunk <= 0) options_.prompt_chunk = pipeline.placement().max_batch;
  for (int64_t i = 0; i < n_slots_; ++i) {
    auto s = std::make_unique<Slot>();
    s->seq = static_cast<int32_t>(i);
    s->logits.resize(static_cast<size_t>(n_vocab_));
    slots_.push_back(std::move(s));
  }
  thread_ = std::thread([this] { loop(); });
}

Scheduler::~Scheduler() { shutdown(); }

Expected<uint64_t> Scheduler::submit(GenerationRequest request) {
  if (request.prompt.empty()) return Error{Code::InvalidArgument, "empty prompt: at least one token is needed"};
  if (static_cast<int64_t>(request.prompt.size()) > n_ctx_)
    return Error{Code::InvalidArgument, "prompt of " + std::to_string(request.prompt.size()) +
                                            " tokens exceeds the context length " + std::to_string(n_ctx_)};
  for (int32_t t : request.prompt) {
    if (t < 0 || t >= n_vocab_)
      return Error{Code::InvalidArgument, "token id " + std::to_string(t) + " outside [0, " + std::to_string(n_vocab_) + ")"};
  }
  if (request.max_tokens < 0 || request.max_tokens > (int64_t{1} << 24))
    return Error{Code::InvalidArgument, "max tokens " + std::to_string(request.max_tokens) + " outside [0, 16777216]"};
  STRATA_RETURN_IF_ERROR(sample::validate(request.sampling));
  STRATA_RETURN_IF_ERROR(validate(request.speculative));
  if (request.speculative.mode == DraftMode::Model && !options_.draft)
    return Error{Code::InvalidArgument, "speculative decoding with a draft model was asked for, but no draft model is loaded"};
  if (request.top_logprobs > 20)
    return Error{Code::InvalidArgument, "top logprobs " + std::to_string(request.top_logprobs) + " outside [0, 20]"};
  for (const auto& [t, bias] : request.logit_bias) {
    if (t < 0 || t >= n_vocab_)
      return Error{Code::InvalidArgument, "logit bias token " + std::to_string(t) + " outside [0, " + std::to_string(n_vocab_) + ")"};
    if (!std::isfinite(bias)) return Error{Code::InvalidArgument, "logit bias of token " + std::to_string(t) + " is not finite"};
  }
  uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_) return Error{Code::Cancelled, "the scheduler is shut down"};
    const int64_t free_slots = n_slots_ - active_;
    if (static_cast<int64_t>(waiting_.size()) - free_slots >= options_.max_waiting)
      return Error{Code::OutOfRange, "the queue is full: " + std::to_string(waiting_.size()) + " requests waiting for " +
                                         std::to_string(n_slots_) + " slots"};
    id = next_id_++;
    waiting_.push_back(Waiting{id, std::move(request), Clock::now()});
  }
  cv_.notify_all();
  return id;
}

void Scheduler::cancel(uint64_t id) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_) return;
    auto it = std::find_if(waiting_.begin(), waiting_.end(), [&](const Waiting& w) { return w.id == id; });
    if (it != waiting_.end()) {
      cancelled_waiting_.push_back(std::move(*it));
      waiting_.erase(it);
    } else {
      cancel_requests_.push_back(id);
    }
  }
  cv_.notify_all();
}

Status Scheduler::run_exclusive(std::function<Status(Pipeline&)> fn) {
  Task task;
  task.fn = std::move(fn);
  std::unique_lock<std::mutex> lock(mutex_);
  if (stop_) return Error{Code::Cancelled, "the scheduler is shut down"};
  tasks_.push_back(&task);
  cv_.notify_all();
  cv_.wait(lock, [&] { return task.done; });
  return task.result;
}

Scheduler::Slot* Scheduler::free_slot() {
  Slot* best = nullptr;
  for (auto& s : slots_) {
    if (s->busy || s->embedding) continue;
    if (!best || s->history.size() < best->history.size()) best = s.get();
  }
  return best;
}

Expected<std::vector<float>> Scheduler::embedding(std::vector<int32_t> tokens, Pooling pooling) {
  if (tokens.empty()) return Error{Code::InvalidArgument, "empty input: at least one token is needed"};
  if (static_cast<int64_t>(tokens.size()) > n_ctx_)
    return Error{Code::OutOfRange, std::to_string(tokens.size()) + " tokens exceed the context length " +
                                       std::to_string(n_ctx_)};
  const model::Model& model = pipeline_.model();
  const model::ModelConfig& c = model.config();
  const model::TensorView& norm = model.weights().output_norm;
  if (!norm.present() || norm.type != kernels::DType::F32 || norm.cols != c.n_embd)
    return Error{Code::Unsupported, "the model's output norm is not an f32 vector of n_embd values"};
  const size_t dim = static_cast<size_t>(c.n_embd);
  std::vector<float> hidden(tokens.size() * dim);
  EmbedJob job;
  job.tokens = std::move(tokens);
  job.hidden = hidden.data();
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (stop_) return Error{Code::Cancelled, "the scheduler is shut down"};
    embeds_.push_back(&job);
    cv_.notify_all();
    cv_.wait(lock, [&] { return job.finished; });
  }
  STRATA_RETURN_IF_ERROR(job.result);
  tokens = std::move(job.tokens);
  // The head's output norm on every row (the same f32 kernel as the CPU head), then the pool.
  const float* w = reinterpret_cast<const float*>(norm.data);
  std::vector<double> pooled(dim, 0.0);
  std::vector<float> row(dim);
  const size_t first = pooling == Pooling::Last ? tokens.size() - 1 : 0;
  for (size_t t = first; t < tokens.size(); ++t) {
    if (c.layer_norm) {
      const model::TensorView& bias = model.weights().output_norm_b;
      kernels::layer_norm_f32(hidden.data() + t * dim, w, bias.present() ? reinterpret_cast<const float*>(bias.data) : nullptr,
                              row.data(), c.n_embd, c.rms_eps);
    } else {
      kernels::rms_norm_f32(hidden.data() + t * dim, w, row.data(), c.n_embd, c.rms_eps);
    }
    for (size_t i = 0; i < dim; ++i) pooled[i] += row[i];
  }
  const double count = static_cast<double>(tokens.size() - first);
  double sum_sq = 0;
  for (double& v : pooled) {
    v /= count;
    sum_sq += v * v;
  }
  const double scale = sum_sq > 0 ? 1.0 / std::sqrt(sum_sq) : 0.0;
  std::vector<float> out(dim);
  for (size_t i = 0; i < dim; ++i) out[i] = static_cast<float>(pooled[i] * scale);
  return out;
}

void Scheduler::end_embedding(EmbedJob& job, Status result) {
  if (job.slot) {
    pipeline_.truncate(job.slot->seq, 0);
    job.slot->history.clear();
    job.slot->embedding = false;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (job.slot) --active_;
  job.slot = nullptr;
  job.result = std::move(result);
  job.finished = true;
  embeds_.erase(std::find(embeds_.begin(), embeds_.end(), &job));
  cv_.notify_all();
}

void Scheduler::run_embeddings() {
  std::vector<EmbedJob*> jobs;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    jobs.assign(embeds_.begin(), embeds_.end());
  }
  const size_t dim = static_cast<size_t>(pipeline_.model().config().n_embd);
  // Fixed pieces: the vector must not depend on how busy the server is.
  const size_t piece = static_cast<size_t>(
      std::max<int64_t>(1, std::min(options_.prompt_chunk, pipeline_.placement().max_batch)));
  for (EmbedJob* job : jobs) {
    if (!job->slot) {
      Slot* slot = free_slot();
      if (!slot) continue;  // every slot is taken: after the next step
      slot->embedding = true;
      // The slot's cache is overwritten from position 0: forget it first, so that no later
      // request reuses (or copies) a prefix that is no longer there.
      slot->history.clear();
      slot->prompt_done = 0;
      job->slot = slot;
      job->done = 0;
      pipeline_.truncate(slot->seq, 0);
      std::lock_guard<std::mutex> lock(mutex_);
      ++active_;
    }
    // A re-plan after a lost device drops every cache: start again from the first token.
    if (pipeline_.position(job->slot->seq) != static_cast<int64_t>(job->done)) {
      pipeline_.truncate(job->slot->seq, 0);
      job->done = 0;
    }
    Pipeline::Request r;
    r.seq = job->slot->seq;
    const size_t n = std::min(piece, job->tokens.size() - job->done);
    r.tokens = std::span<const int32_t>(job->tokens.data() + job->done, n);
    r.hidden = job->hidden + job->done * dim;
    Status st;
    try {
      st = pipeline_.eval(std::span<const Pipeline::Request>(&r, 1));
    } catch (const std::exception& e) {
      st = Error{Code::Internal, std::string("embedding step threw: ") + e.what()};
    }
    if (!st.ok()) {
      if (recover(st)) continue;  // the next round starts it again on the new placement
      end_embedding(*job, std::move(st));
      continue;
    }
    job->done += n;
    if (job->done == job->tokens.size()) end_embedding(*job, {});
  }
}

SchedulerStats Scheduler::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  SchedulerStats s;
  s.active = active_;
  s.waiting = static_cast<int64_t>(waiting_.size());
  s.slots = n_slots_;
  s.tokens_generated = tokens_generated_;
  s.prompt_tokens = prompt_tokens_;
  s.requests_done = requests_done_;
  s.replans = replans_;
  s.replayed_tokens = replayed_tokens_;
  s.draft_tokens = draft_tokens_;
  s.draft_accepted = draft_accepted_;
  const auto now = Clock::now();
  int64_t n = 0;
  Clock::time_point first = now;
  for (const RateSample& r : rate_) {
    if (now - r.t1 > kRateWindow) continue;
    n += r.n;
    first = std::min(first, r.t0);
  }
  if (n > 0) s.decode_tokens_per_s = n / std::max(1e-3, std::chrono::duration<double>(now - first).count());
  return s;
}

void Scheduler::shutdown() {
  std::lock_guard<std::mutex> once(shutdown_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  if (!thread_.joinable()) return;
  thread_.join();
  // The scheduler thread is gone: finish everything here.
  std::deque<Waiting> waiting;
  std::vector<Waiting> cancelled;
  std::deque<Task*> tasks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    waiting.swap(waiting_);
    cancelled.swap(cancelled_waiting_);
    tasks.swap(tasks_);
    for (Task* t : tasks) {
      t->result = Error{Code::Cancelled, "the scheduler is shut down"};
      t->done = true;
    }
    for (EmbedJob* job : embeds_) {
      job->result = Error{Code::Cancelled, "the scheduler is shut down"};
      job->finished = true;
    }
    embeds_.clear();
  }
  cv_.notify_all();
  for (auto& slot : slots_) {
    if (slot->busy) finish(*slot, FinishReason::Cancelled);
  }
  for (auto* list : {&cancelled}) {
    for (Waiting& w : *list) waiting.push_back(std::move(w));
  }
  for (Waiting& w : waiting) {
    GenerationResult r;
    r.finish = FinishReason::Cancelled;
    r.n_prompt = static_cast<int64_t>(w.request.prompt.size());
    r.total_ms = ms_between(w.submitted, Clock::now());
    if (w.request.on_done) w.request.on_done(r);
  }
}

void Scheduler::admit_locked(std::vector<std::pair<Slot*, Waiting>>& admitted) {
  while (!waiting_.empty() && active_ < n_slots_) {
    Waiting& w = waiting_.front();
    Slot* best = nullptr;
    size_t best_len = 0;
    for (auto& s : slots_) {
      if (s->busy || s->embedding) continue;
      size_t n = 0;
      if (options_.reuse_prefix) {
        while (n < s->history.size() && n < w.request.prompt.size() && s->history[n] == w.request.prompt[n]) ++n;
      }
      if (!best || n > best_len) {
        best = s.get();
        best_len = n;
      }
    }
    if (!best) break;
    best->busy = true;
    ++active_;
    admitted.emplace_back(best, std::move(w));
    waiting_.pop_front();
  }
}

void Scheduler::start(Slot& slot, Waiting w) {
  slot.id = w.id;
  slot.req = std::move(w.request);
  slot.submitted = w.submitted;
  slot.started = Clock::now();
  slot.result = GenerationResult{};
  slot.result.n_prompt = static_cast<int64_t>(slot.req.prompt.size());
  slot.result.queue_ms = ms_between(slot.submitted, slot.started);
  slot.callback_stopped = false;
  slot.pending = -1;
  slot.pacer.reset();
  slot.draft.clear();
  slot.replay.clear();
  slot.replay_done = 0;
  const std::vector<int32_t>& prompt = slot.req.prompt;
  // Prefix reuse: keep what the cache shares with the prompt, but evaluate at least the last
  // prompt token (its logits give the first sampled token).
  size_t kept = 0;
  if (options_.reuse_prefix) {
    while (kept < slot.history.size() && kept < prompt.size() && slot.history[kept] == prompt[kept]) ++kept;
  }
  if (kept == prompt.size()) --kept;
  // A sliding-window ring may no longer hold the window before `kept`: then nothing is kept.
  kept = static_cast<size_t>(pipeline_.truncate(slot.seq, static_cast<int64_t>(kept)));
  slot.history.resize(kept);
  slot.prompt_done = kept;
  slot.result.n_prompt_cached = static_cast<int64_t>(kept);

  const tokenizer::Tokenizer& tok = pipeline_.model().tokenizer();
  slot.sampler = std::make_unique<sample::Sampler>(slot.req.sampling, n_vocab_);
  slot.stops = std::make_unique<sample::StopStrings>(slot.req.stop);
  slot.decoder = std::make_unique<tokenizer::StreamDecoder>(tok);
  // As generate(): the prompt goes through the sampler's history and the decoder (the SPM
  // leading-space rule applies to the prompt's first piece), without being streamed.
  for (int32_t t : prompt) {
    slot.sampler->accept(t);
    (void)slot.decoder->push(t);
  }
  if (slot.req.max_tokens == 0) finish(slot, FinishReason::Length);
}

void Scheduler::emit(Slot& slot, const std::string& text) {
  if (text.empty() || slot.callback_stopped) return;
  slot.result.text += text;
  if (!slot.req.on_text) return;
  try {
    if (!slot.req.on_text(text)) slot.callback_stopped = true;
  } catch (...) {
    slot.callback_stopped = true;  // a throwing consumer is a gone consumer
  }
}

void Scheduler::finish(Slot& slot, FinishReason reason, Status status) {
  if (status.ok() && reason != FinishReason::Stop && reason != FinishReason::Cancelled) {
    bool stopped = false;
    emit(slot, token_flush({*slot.sampler, *slot.stops, *slot.decoder}, &stopped));
    if (stopped) reason = FinishReason::Stop;
  }
  slot.result.finish = reason;
  slot.result.status = std::move(status);
  slot.result.total_ms = ms_between(slot.submitted, Clock::now());
  slot.busy = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    --active_;
    ++requests_done_;
  }
  // The slot is free: a callback that throws must not leave it in use.
  GenerationRequest req = std::move(slot.req);
  slot.req = GenerationRequest{};
  if (req.on_done) {
    try {
      req.on_done(slot.result);
    } catch (...) {
    }
  }
}

void Scheduler::after_logits(Slot& slot, float* logits) {
  const int64_t position = static_cast<int64_t>(slot.history.size());
  if (slot.result.n_generated == 0) slot.result.first_token_ms = ms_between(slot.started, Clock::now());
  TokenRules rules;
  rules.logit_bias = &slot.req.logit_bias;
  rules.constraint = slot.req.constraint.get();
  rules.top_logprobs = slot.req.top_logprobs;
  rules.ignore_eog = slot.req.ignore_eog;
  TokenOutcome out = token_step(logits, n_vocab_, pipeline_.model().tokenizer(), rules,
                                {*slot.sampler, *slot.stops, *slot.decoder}, logprobs_,
                                {options_.recorder, options_.host_lane, slot.seq, position});
  if (out.end) return finish(slot, FinishReason::EndOfGeneration);
  ++slot.result.n_generated;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++tokens_generated_;
  }
  if (slot.req.on_token && !slot.callback_stopped) {
    try {
      slot.req.on_token(out.info);
    } catch (...) {
      slot.callback_stopped = true;
    }
  }
  emit(slot, out.text);
  if (out.stopped) return finish(slot, FinishReason::Stop);
  if (slot.callback_stopped) return finish(slot, FinishReason::Cancelled);
  if (slot.result.n_generated >= slot.req.max_tokens) return finish(slot, FinishReason::Length);
  if (position >= n_ctx_) return finish(slot, FinishReason::ContextFull);
  slot.pending = out.info.token;
}

namespace {
// Length of the common prefix of a and b, at most limit.
size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b, size_t limit) {
  const size_t n = std::min({a.size(), b.size(), limit});
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}
// A sequence waits for an older one to read a prefix they share when that saves at least this
// many tokens of evaluation; below it, evaluating them now costs less than a step's delay.
constexpr size_t kMinSharedWait = 16;
}  // namespace

bool Scheduler::share_prompt(Slot& slot) {
  const std::vector<int32_t>& prompt = slot.req.prompt;
  // The last prompt token is always evaluated: its logits give the first sampled token.
  const size_t limit = prompt.size() - 1;
  Slot* source = nullptr;
  size_t have = slot.prompt_done;
  size_t coming = 0;
  for (auto& o : slots_) {
    if (o.get() == &slot) continue;
    // What o's cache holds now (a free slot keeps its last contents until it is taken again),
    // where its sliding-window rings still hold the window before that point.
    const size_t shared = common_prefix(o->history, prompt, limit);
    const size_t n = static_cast<size_t>(pipeline_.kept_prefix(o->seq, static_cast<int64_t>(shared)));
    if (n > have) {
      have = n;
      source = o.get();
    }
    // What an older sequence still reading its prompt will hold once it has read it. Only older
    // ones: waits then form chains that end at a sequence that waits for nobody.
    if (o->busy && o->prompt_done < o->req.prompt.size() &&
        std::tie(o->started, o->id) < std::tie(slot.started, slot.id))
      coming = std::max(coming, common_prefix(o->req.prompt, prompt, limit));
  }
  // Wait when that saves enough, or when the whole prompt is shared (the choices of one request).
  if (coming > have && (coming >= have + kMinSharedWait || coming == limit)) return false;
  if (!source) return true;
  if (Status s = pipeline_.copy_sequence(source->seq, slot.seq, static_cast<int64_t>(have)); !s.ok()) {
    // Nothing is lost: the sequence reads its prompt from the start instead.
    slot.history.clear();
    slot.prompt_done = 0;
    pipeline_.truncate(slot.seq, 0);
    return true;
  }
  slot.history.assign(prompt.begin(), prompt.begin() + static_cast<std::ptrdiff_t>(have));
  slot.prompt_done = have;
  slot.result.n_prompt_cached = static_cast<int64_t>(have);
  return true;
}

void Scheduler::step() {
  std::vector<Pipeline::Request> requests;
  std::vector<Slot*> in_step;
  int64_t prompt_tokens = 0;
  // Sequences reading a prompt share one budget of prompt_chunk tokens a step, the one with the
  // fewest prompt tokens left first (then the oldest): a short request that arrives during a long
  // prompt reads its prompt in the next step or two instead of waiting for the whole long one
  // (1,500 tokens: 7.4 s here), and the long one still gets what the short ones leave. Decoding
  // sequences always take part.
  std::vector<Slot*> order;
  for (auto& s : slots_) {
    if (s->busy) order.push_back(s.get());
  }
  auto left = [](const Slot* s) -> size_t {
    if (s->replay_done < s->replay.size()) return s->replay.size() - s->replay_done;
    return s->prompt_done < s->req.prompt.size() ? s->req.prompt.size() - s->prompt_done : 0;
  };
  std::stable_sort(order.begin(), order.end(), [&](const Slot* a, const Slot* b) {
    const size_t la = left(a), lb = left(b);
    return la != lb ? la < lb : a->started < b->started;
  });
  // While some sequence decodes, prompts get prompt_chunk tokens a step (its next token waits for
  // that step); when every sequence is reading its prompt, a full batch.
  std::vector<Slot*> decoders;
  for (Slot* sp : order) {
    if (sp->prompt_done >= sp->req.prompt.size() && sp->replay_done >= sp->replay.size()) decoders.push_back(sp);
  }
  const bool decoding = !decoders.empty();
  size_t budget = static_cast<size_t>(options_.prompt_chunk);
  // Nothing decodes: a full batch, unless a prompt that fits in one chunk is read beside a longer
  // one; then one chunk, so that the short one's first token comes after a short step instead of
  // a full batch of the long prompt (which goes on at full batches in the steps after).
  size_t reading = 0;
  for (const Slot* sp : order) reading += left(sp) > 0 ? 1 : 0;
  const bool short_beside_long = reading > 1 && left(order.front()) > 0 && left(order.front()) <= budget;
  if (!decoding && !short_beside_long)
    budget = std::max(budget, static_cast<size_t>(std::max<int64_t>(1, pipeline_.placement().max_batch)));
  draft_for(decoders);
  for (Slot* sp : order) {
    Slot& slot = *sp;
    Pipeline::Request r;
    r.seq = slot.seq;
    const std::vector<int32_t>& prompt = slot.req.prompt;
    if (slot.replay_done < slot.replay.size()) {
      // Rebuilding the cache after a lost device: like a prompt chunk, nothing sampled.
      const size_t n = std::min(slot.replay.size() - slot.replay_done, budget);
      if (n == 0) continue;
      budget -= n;
      r.tokens = std::span<const int32_t>(slot.replay.data() + slot.replay_done, n);
      r.logits = nullptr;
    } else if (slot.prompt_done < prompt.size()) {
      // Start from another sequence's cache where it holds more of this prompt, or wait for an
      // older sequence reading the same prompt (the choices of an n > 1 request).
      if (options_.reuse_prefix && !share_prompt(slot)) continue;
      const size_t n = std::min(prompt.size() - slot.prompt_done, budget);
      if (n == 0) continue;  // its turn comes in a later step
      budget -= n;
      r.tokens = std::span<const int32_t>(prompt.data() + slot.prompt_done, n);
      r.logits = slot.prompt_done + n == prompt.size() ? slot.logits.data() : nullptr;
      prompt_tokens += static_cast<int64_t>(n);
    } else if (!slot.draft.empty()) {
      // A speculative step: the sampled token and the guesses after it, every row's logits.
      slot.step_tokens.assign(1, slot.pending);
      slot.step_tokens.insert(slot.step_tokens.end(), slot.draft.begin(), slot.draft.end());
      slot.step_logits.resize(slot.step_tokens.size() * static_cast<size_t>(n_vocab_));
      r.tokens = slot.step_tokens;
      r.logits = slot.step_logits.data();
      r.all_logits = true;
    } else {
      r.tokens = std::span<const int32_t>(&slot.pending, 1);
      r.logits = slot.logits.data();
    }
    requests.push_back(r);
    in_step.push_back(&slot);
  }
  if (requests.empty()) return;
  const auto t0 = Clock::now();
  const int64_t t0_ns = options_.recorder ? options_.recorder->now_ns() : 0;
  Status status = pipeline_.eval(requests);
  const auto t1 = Clock::now();
  if (status.ok()) {
    int64_t rows = 0;
    for (const Pipeline::Request& r : requests) rows += static_cast<int64_t>(r.tokens.size());
    pass_costs_.observe(rows, ms_between(t0, t1));
  }
  const int64_t t1_ns = options_.recorder ? options_.recorder->now_ns() : 0;
  if (!status.ok()) {
    if (recover(status)) return;
    for (Slot* slot : in_step) {
      slot->draft.clear();
      if (!slot->busy) continue;
      slot->history.clear();
      pipeline_.truncate(slot->seq, 0);
      finish(*slot, FinishReason::Cancelled, status);
    }
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    prompt_tokens_ += static_cast<uint64_t>(prompt_tokens);
  }
  int64_t sampled = 0;
  for (size_t i = 0; i < in_step.size(); ++i) {
    Slot& slot = *in_step[i];
    const Pipeline::Request& r = requests[i];
    if (r.all_logits) {
      sampled += verify(slot, t0_ns, t1_ns);
      continue;
    }
    slot.history.insert(slot.history.end(), r.tokens.begin(), r.tokens.end());
    if (slot.replay_done < slot.replay.size()) {
      slot.replay_done += r.tokens.size();
      {
        std::lock_guard<std::mutex> lock(mutex_);
        replayed_tokens_ += r.tokens.size();
      }
      if (slot.replay_done >= slot.replay.size()) {
        slot.replay.clear();
        slot.replay_done = 0;
      }
      continue;
    }
    if (slot.prompt_done < slot.req.prompt.size()) {
      slot.prompt_done += r.tokens.size();
      if (slot.req.on_prompt_progress)
        slot.req.on_prompt_progress(static_cast<int64_t>(slot.prompt_done), static_cast<int64_t>(slot.req.prompt.size()));
    }
    if (r.logits) {
      const int64_t before = slot.result.n_generated;
      after_logits(slot, slot.logits.data());
      sampled += slot.result.n_generated - before;
    }
  }
  note_rate(t0, Clock::now(), sampled);
}

void Scheduler::draft_for(const std::vector<Slot*>& decoding) {
  for (auto& s : slots_) s->draft.clear();
  if (!pipeline_.all_logits_supported()) return;  // the head on another rank: plain steps
  std::vector<Slot*> by_model;
  std::vector<int32_t> lengths;
  // The other decoding sequences' tokens share each pass: a sequence's guesses are weighed at what
  // they add to a pass of that many rows.
  const int64_t base_rows = static_cast<int64_t>(decoding.size()) - 1;
  for (Slot* slot : decoding) {
    const SpeculativeParams& sp = slot->req.speculative;
    if (sp.mode == DraftMode::Off || slot->pending < 0) continue;
    // Rows past the request's last token or the context would be evaluated for nothing.
    const int64_t room = std::min<int64_t>(slot->req.max_tokens - slot->result.n_generated - 1,
                                           n_ctx_ - static_cast<int64_t>(slot->history.size()) - 1);
    if (room <= 0) continue;
    if (sp.mode == DraftMode::Lookup) {
      const int64_t t0 = options_.recorder ? options_.recorder->now_ns() : 0;
      // The context is the cache's tokens and the pending one: history gets pending for the lookup
      // only (no copy of a whole history each step).
      slot->history.push_back(slot->pending);
      slot->draft = paced_lookup(slot->history, sp, room, slot->pacer, pass_costs_, base_rows);
      slot->history.pop_back();
      // Only lookups that guessed: a span for every plain step would bury the lane.
      if (!slot->draft.empty())
        draft_event(trace::EventKind::Draft, slot->seq, static_cast<int64_t>(slot->history.size()) + 1, t0,
                    options_.recorder ? options_.recorder->now_ns() : 0, static_cast<int64_t>(slot->draft.size()));
    } else if (options_.draft) {
      const int32_t k = paced_length(sp, room, slot->pacer, pass_costs_, base_rows, options_.draft->guess_ms());
      if (k <= 0) continue;
      by_model.push_back(slot);
      lengths.push_back(k);
    }
  }
  if (by_model.empty()) return;
  // Each asking slot's context is its history with the pending token on it, while the draft runs.
  std::vector<DraftModel::Ask> asks;
  for (size_t i = 0; i < by_model.size(); ++i) {
    by_model[i]->history.push_back(by_model[i]->pending);
    asks.push_back({by_model[i]->seq, by_model[i]->history, lengths[i], &by_model[i]->draft});
  }
  const int64_t t0 = options_.recorder ? options_.recorder->now_ns() : 0;
  // A draft model that fails (its device lost, its memory full) costs speed, not text: these
  // sequences take a plain step.
  const bool proposed = options_.draft->propose(asks).ok();
  int64_t guesses = 0;
  for (Slot* slot : by_model) {
    slot->history.pop_back();
    if (!proposed) slot->draft.clear();
    guesses += static_cast<int64_t>(slot->draft.size());
  }
  draft_event(trace::EventKind::Draft, by_model.front()->seq, static_cast<int64_t>(by_model.front()->history.size()) + 1,
              t0, options_.recorder ? options_.recorder->now_ns() : 0, guesses);
}

void Scheduler::draft_event(trace::EventKind kind, int32_t seq, int64_t token, int64_t start_ns, int64_t end_ns,
                            int64_t n_tokens) {
  if (!options_.recorder || options_.draft_lane < 0) return;
  trace::Event e;
  e.lane = options_.draft_lane;
  e.kind = kind;
  e.seq = seq;
  e.token = token;
  e.start_ns = start_ns;
  e.duration_ns = std::max<int64_t>(0, end_ns - start_ns);
  e.n_tokens = static_cast<int32_t>(n_tokens);
  options_.recorder->record(e);
}

int64_t Scheduler::verify(Slot& slot, int64_t pass_start_ns, int64_t pass_end_ns) {
  const std::vector<int32_t> draft = std::move(slot.draft);
  slot.draft.clear();
  const std::vector<int32_t>& tokens = slot.step_tokens;
  const int64_t before = slot.result.n_generated;
  // Counted as the rows are read, so that a request that ends inside the step (its on_done runs
  // there) reports them, and so do the stats by then.
  slot.result.n_drafted += static_cast<int64_t>(draft.size());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    draft_tokens_ += draft.size();
  }
  const VerifyResult v = verify_draft(draft, [&](size_t i) -> int32_t {
    if (i > 0) {  // row i - 1 sampled draft[i - 1]
      ++slot.result.n_draft_accepted;
      std::lock_guard<std::mutex> lock(mutex_);
      ++draft_accepted_;
    }
    // Row i follows tokens[0..i] in the cache: the same logits a one-token step there gives.
    slot.history.push_back(tokens[i]);
    after_logits(slot, slot.step_logits.data() + i * static_cast<size_t>(n_vocab_));
    return slot.busy ? slot.pending : -1;
  });
  // Keys and values past the accepted tokens belong to guesses the target did not take.
  pipeline_.truncate(slot.seq, static_cast<int64_t>(slot.history.size()));
  slot.pacer.record(static_cast<int64_t>(draft.size()), v.accepted);
  if (!draft.empty()) {
    // The pass that verified the guesses, on the draft lane, cut in proportion: the share of the
    // guesses the target took (draft-accepted), then the share it dropped (draft-rejected).
    const int64_t span = std::max<int64_t>(0, pass_end_ns - pass_start_ns);
    const int64_t taken_end = pass_start_ns + span * v.accepted / static_cast<int64_t>(draft.size());
    const int64_t token = static_cast<int64_t>(slot.history.size());
    const int64_t rejected = static_cast<int64_t>(draft.size()) - v.accepted;
    if (v.accepted > 0)
      draft_event(trace::EventKind::DraftAccepted, slot.seq, token, pass_start_ns, taken_end, v.accepted);
    if (rejected > 0)
      draft_event(trace::EventKind::DraftRejected, slot.seq, token, taken_end, pass_start_ns + span, rejected);
  }
  return slot.result.n_generated - before;
}

bool Scheduler::recover(const Status& cause) {
  if (!options_.recover_lost_devices) return false;
  // A device that ran out of memory while running (its scratch could not grow) stays out of every
  // later plan: putting blocks back on it would only run it out of memory again.
  for (const std::string& id : devices_out_of_memory(pipeline_, cause.error()))
    if (std::find(full_devices_.begin(), full_devices_.end(), id) == full_devices_.end()) full_devices_.push_back(id);
  bool uses_full = false;
  for (const std::string& id : pipeline_.placement().devices())
    uses_full = uses_full || std::find(full_devices_.begin(), full_devices_.end(), id) != full_devices_.end();
  if (pipeline_.failed_devices().empty() && !uses_full) return false;
  trace::Span span;
  if (options_.recorder) span = options_.recorder->span(options_.host_lane, trace::EventKind::Replan);
  Expected<ReplanReport> report = replan_without_failed(pipeline_, cause.error().message, full_devices_);
  span.end();
  if (options_.on_replan) {
    try {
      options_.on_replan(report);
    } catch (...) {
    }
  }
  if (!report.ok()) {
    // No placement fits what is left: every active request ends with that error.
    for (auto& s : slots_) {
      if (!s->busy) continue;
      s->history.clear();
      finish(*s, FinishReason::Cancelled, report.error());
    }
    return true;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++replans_;
  }
  for (auto& s : slots_) {
    if (!s->busy || !s->req.on_replan) continue;
    try {
      s->req.on_replan(*report, s->result.n_generated);
    } catch (...) {
    }
  }
  // Every cache is gone (Discard). Sequences reading their prompt start it again; decoding ones
  // evaluate everything they had again, then go on with the token they had sampled.
  for (auto& s : slots_) {
    Slot& slot = *s;
    std::vector<int32_t> had = std::move(slot.history);
    slot.history.clear();
    if (!slot.busy) continue;
    if (slot.replay_done < slot.replay.size()) {
      had.insert(had.end(), slot.replay.begin() + static_cast<std::ptrdiff_t>(slot.replay_done), slot.replay.end());
      slot.replay = std::move(had);
    } else if (slot.prompt_done < slot.req.prompt.size()) {
      slot.prompt_done = 0;
      slot.replay.clear();
    } else {
      slot.replay = std::move(had);
    }
    slot.replay_done = 0;
  }
  return true;
}

void Scheduler::note_rate(Clock::time_point t0, Clock::time_point t1, int64_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  rate_.push_back(RateSample{t0, t1, n});
  while (!rate_.empty() && t1 - rate_.front().t1 > kRateWindow) rate_.pop_front();
}

void Scheduler::maybe_snapshot(bool busy) {
  if (options_.memory_snapshot_ms <= 0) return;
  const auto now = Clock::now();
  const auto interval = std::chrono::milliseconds(busy ? options_.memory_snapshot_ms : 1000);
  if (now - last_snapshot_ < interval) return;
  last_snapshot_ = now;
  pipeline_.snapshot_memory();
}

void Scheduler::loop() {
  while (true) {
    std::deque<Task*> tasks;
    std::vector<uint64_t> cancels;
    std::vector<Waiting> cancelled;
    std::vector<std::pair<Slot*, Waiting>> admitted;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      auto ready = [&] {
        return stop_ || !tasks_.empty() || !cancel_requests_.empty() || !cancelled_waiting_.empty() || active_ > 0 ||
               (!waiting_.empty() && active_ < n_slots_) || (!embeds_.empty() && active_ < n_slots_);
      };
      if (!ready()) cv_.wait_for(lock, std::chrono::seconds(1), ready);
      if (stop_) break;
      tasks.swap(tasks_);
      cancels.swap(cancel_requests_);
      cancelled.swap(cancelled_waiting_);
    }
    // Exclusive tasks run with no eval in flight (placement changes, memory queries).
    for (Task* t : tasks) {
      Status result;
      try {
        result = t->fn(pipeline_);
      } catch (const std::exception& e) {
        result = Error{Code::Internal, std::string("exclusive task threw: ") + e.what()};
      } catch (...) {
        result = Error{Code::Internal, "exclusive task threw"};
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        t->result = std::move(result);
        t->done = true;
      }
      cv_.notify_all();
    }
    for (Waiting& w : cancelled) {
      GenerationResult r;
      r.finish = FinishReason::Cancelled;
      r.n_prompt = static_cast<int64_t>(w.request.prompt.size());
      r.total_ms = ms_between(w.submitted, Clock::now());
      if (w.request.on_done) {
        try {
          w.request.on_done(r);
        } catch (...) {
        }
      }
    }
    for (uint64_t id : cancels) {
      for (auto& s : slots_) {
        if (s->busy && s->id == id) finish(*s, FinishReason::Cancelled);
      }
    }
    // Embeddings take a free slot before the queue does (they hold it for a few short pieces).
    run_embeddings();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      admit_locked(admitted);
    }
    for (auto& [slot, w] : admitted) start(*slot, std::move(w));
    bool busy = false;
    for (auto& s : slots_) busy = busy || s->busy;
    if (busy) {
      try {
        step();
      } catch (const std::exception& e) {
        // A callback or the pipeline threw: fail the requests of this step, keep serving.
        for (auto& s : slots_) {
          if (!s->busy) continue;
          s->history.clear();
          pipeline_.truncate(s->seq, 0);
          finish(*s, FinishReason::Cancelled, Error{Code::Internal, std::string("generation step threw: ") + e.what()});
        }
      }
    }
    maybe_snapshot(busy);
  }
}

}  // namespace strata::exec
