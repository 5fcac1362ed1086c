// engine/exec/scheduler.h — generation for many requests at once over one shared Pipeline: N
// sequence slots, a bounded waiting queue, one scheduler thread. Qt-free and HTTP-free.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "engine/core/status.h"
#include "engine/exec/generate.h"
#include "engine/exec/pipeline.h"
#include "engine/exec/recovery.h"
#include "engine/exec/speculative.h"
#include "engine/exec/token_step.h"
#include "engine/sample/sampler.h"
#include "engine/trace/recorder.h"

namespace strata::exec {

struct GenerationResult {
  Status status;                 // not ok: the engine failed (finish is then Cancelled)
  FinishReason finish = FinishReason::Length;
  std::string text;              // everything streamed through on_text
  int64_t n_prompt = 0;          // prompt tokens
  int64_t n_prompt_cached = 0;   // of those, reused from the slot's cache (not evaluated again)
  int64_t n_generated = 0;       // sampled tokens (an end-of-generation token not counted)
  double queue_ms = 0;           // submit -> slot taken
  double first_token_ms = 0;     // slot taken -> first token sampled
  double total_ms = 0;           // submit -> done
  int64_t n_drafted = 0;         // tokens drafted for speculative steps (speculative.h)
  int64_t n_draft_accepted = 0;  // of those, tokens the target sampled too (each one a step saved)
};

// TokenInfo, TokenLogprob and TokenConstraint: engine/exec/token_step.h.

struct GenerationRequest {
  std::vector<int32_t> prompt;   // >= 1 token, <= the context length
  sample::SamplerParams sampling;
  int64_t max_tokens = 256;      // 0: nothing is generated (finish Length)
  std::vector<std::string> stop; // stop strings, not included in the text
  bool ignore_eog = false;
  // -1: no log probabilities. 0..20: on_token gets the sampled token's logprob and this many
  // alternatives, from the model's distribution after logit_bias and the constraint, before
  // penalties, temperature and truncation.
  int32_t top_logprobs = -1;
  std::vector<std::pair<int32_t, float>> logit_bias;  // (token, added to its logit); ids checked by submit
  std::shared_ptr<TokenConstraint> constraint;        // may be null
  // Speculative decoding (speculative.h): the text is the same with it on or off (greedy and
  // seeded); only the number of target passes changes. Model needs the scheduler's draft model
  // (InvalidArgument from submit without one).
  SpeculativeParams speculative;
  // Called on the scheduler thread for each generated token, just before its text (if any) goes
  // to on_text. May be empty.
  std::function<void(const TokenInfo&)> on_token;
  // Called on the scheduler thread with each piece of valid UTF-8, in order; return false to
  // cancel the generation (finish Cancelled). May be empty.
  std::function<bool(std::string_view)> on_text;
  // Called on the scheduler thread after each chunk of the prompt is evaluated: prompt tokens in
  // the cache now (reused ones included) of `total`; the last call has done == total. May be empty.
  std::function<void(int64_t done, int64_t total)> on_prompt_progress;
  // Called on the scheduler thread when a lost device made the engine re-plan while this request
  // held a slot and the new placement runs (its cache is rebuilt before it goes on). generated:
  // the tokens it had sampled by then (0: it was reading its prompt). May be empty.
  std::function<void(const ReplanReport& report, int64_t generated)> on_replan;
  // Called exactly once per accepted request: on the scheduler thread, or on the thread that
  // shuts the scheduler down (finish Cancelled). Must not call back into the scheduler's
  // submit/run_exclusive (cancel is fine). May be empty.
  std::function<void(const GenerationResult&)> on_done;
};

// How embedding() pools the rows of a text into one vector.
enum class Pooling {
  Mean,  // the mean of every token's row (BOS included when the text has one)
  Last,  // the last token's row
};

struct SchedulerOptions {
  int64_t max_waiting = 64;              // requests queued behind busy slots; more: submit fails
  // Prompt tokens evaluated per step while some sequence is decoding, shared by the sequences
  // reading a prompt (oldest first); the decoding sequences' tokens ride in the same step, so a
  // long prompt never stalls them for more than one chunk (chunked prefill). When no sequence is
  // decoding, a step takes up to the placement's max_batch prompt tokens. 0: max_batch.
  int64_t prompt_chunk = 0;
  // Prompt caching: a new request takes the free slot whose cache shares the longest prefix with
  // its prompt; a sequence reading its prompt copies the cached prefix of any other slot holding
  // more of it (Pipeline::copy_sequence); and it waits for an older sequence still reading the
  // same prompt, so the n choices of one request evaluate their prompt once.
  bool reuse_prefix = true;
  trace::Recorder* recorder = nullptr;   // Sample / Detokenize spans on host_lane; may be null
  int32_t host_lane = -1;
  int64_t memory_snapshot_ms = 50;       // pipeline.snapshot_memory() at most this often while busy
  // A step that fails because a device of the placement was lost re-plans over the devices left
  // (replan_without_failed), then every active sequence's cache is rebuilt by evaluating its
  // tokens again (prompt and generated so far) and generation goes on with the same text. Off,
  // or when no placement fits, the active requests end with the error.
  bool recover_lost_devices = true;
  // Called on the scheduler thread after each recovery (a re-plan that succeeded, or the error of
  // one that did not). May be empty.
  std::function<void(const Expected<ReplanReport>&)> on_replan;
  // The draft model for requests that ask for DraftMode::Model; may be null (they are refused).
  // Driven by the scheduler thread only; must outlive the scheduler.
  DraftModel* draft = nullptr;
  // The recorder lane of speculative work (draft spans, accepted and rejected guesses); -1: none.
  int32_t draft_lane = -1;
};

struct SchedulerStats {
  int64_t active = 0;            // slots generating
  int64_t waiting = 0;           // queued requests
  int64_t slots = 0;             // placement n_seq
  double decode_tokens_per_s = 0;// generated tokens per second over the last ~2 s (0 when idle)
  uint64_t tokens_generated = 0; // since start
  uint64_t prompt_tokens = 0;    // evaluated prompt tokens since start
  uint64_t requests_done = 0;
  uint64_t replans = 0;          // recoveries from a lost device
  uint64_t replayed_tokens = 0;  // tokens evaluated again to rebuild caches after them
  uint64_t draft_tokens = 0;     // drafted for speculative steps since start
  uint64_t draft_accepted = 0;   // of those, sampled by the target too
};

// Each step the scheduler thread evaluates every active sequence in ONE Pipeline::eval — prompt
// chunks for new sequences, one token for decoding ones — so sequences overlap in the pipeline
// stages (micro-batching across requests); then it samples, streams and frees finished slots.
// Thread rules: submit / cancel / stats / run_exclusive from any thread; callbacks on the
// scheduler thread. Stop protocol: shutdown() (or the destructor) cancels waiting and active
// requests (their on_done runs with Cancelled), then joins the thread; the pipeline must
// outlive shutdown().
class Scheduler {
 public:
  Scheduler(Pipeline& pipeline, SchedulerOptions options);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues a request; returns its id. InvalidArgument for a bad request (empty prompt, prompt
  // past the context, bad sampling values); OutOfRange when the waiting queue is full;
  // Cancelled after shutdown.
  Expected<uint64_t> submit(GenerationRequest request);
  // Any thread; unknown or finished ids are ignored. on_done follows on the scheduler thread.
  void cancel(uint64_t id);
  // Runs fn on the scheduler thread between steps (no eval in flight) and returns its status;
  // blocks the caller. Cancelled when the scheduler is shut down.
  Status run_exclusive(std::function<Status(Pipeline&)> fn);
  // An embedding of `tokens`: the final hidden state after the model's output norm, pooled over
  // the tokens, then scaled to unit L2 norm ([n_embd]). The tokens are evaluated on their own in a
  // free slot from position 0, in pieces of the prompt chunk (one eval per piece, nothing else in
  // it, between two generation steps, so running streams wait one piece at most), so the vector
  // depends only on the tokens: the same tokens give the same vector bit for bit whatever else is
  // running or asked with them. The slot is held from the first piece to the last (its cached
  // prefix is forgotten); the caller blocks. InvalidArgument for an empty list or bad ids,
  // OutOfRange past the context, Cancelled when the scheduler shuts down.
  Expected<std::vector<float>> embedding(std::vector<int32_t> tokens, Pooling pooling);
  SchedulerStats stats() const;
  void shutdown();

  int64_t slots() const { return n_slots_; }
  int64_t n_ctx() const { return n_ctx_; }

 private:
  struct Slot;
  struct Waiting {
    uint64_t id = 0;
    GenerationRequest request;
    std::chrono::steady_clock::time_point submitted;
  };
  struct Task {
    std::function<Status(Pipeline&)> fn;
    Status result;
    bool done = false;
  };
  // An embedding being evaluated, piece by piece, in a slot it holds (embedding()).
  struct EmbedJob {
    std::vector<int32_t> tokens;
    float* hidden = nullptr;   // [tokens][n_embd] <- final residual stream
    size_t done = 0;           // tokens evaluated
    Slot* slot = nullptr;      // held from the first piece to the last
    Status result;
    bool finished = false;
  };
  // A slot no request or embedding holds, the one with the shortest cached history (scheduler
  // thread); null when every slot is taken.
  Slot* free_slot();
  // One piece of each embedding that has or gets a slot (scheduler thread, between steps).
  void run_embeddings();
  void end_embedding(EmbedJob& job, Status result);

  void loop();
  void admit_locked(std::vector<std::pair<Slot*, Waiting>>& admitted);
  void start(Slot& slot, Waiting waiting);
  void step();
  // Before a step: where another slot's cache holds more of slot's prompt than slot's own, copies
  // those positions over (prompt_done grows). Returns false when slot should sit this step out
  // because an older sequence is still reading a long prefix of the same prompt.
  bool share_prompt(Slot& slot);
  // After a failed step: re-plans without the lost devices and those out of memory (full_devices_)
  // and sets every sequence to rebuild its cache. False when the step failed for another reason
  // (or recovery is off). Scheduler thread.
  bool recover(const Status& cause);
  // Samples the slot's next token from logits ([n_vocab], changed in place), streams it and ends
  // the request when it should; else the token becomes slot.pending.
  void after_logits(Slot& slot, float* logits);
  // Before a step: the draft of every decoding slot whose request speculates (slot.draft).
  void draft_for(const std::vector<Slot*>& decoding);
  // After a step that evaluated slot.pending and slot.draft: keeps the drafted tokens the target
  // sampled too and cuts the cache back to them. Returns tokens sampled. pass_*_ns: the eval, on
  // the recorder's clock (for the draft lane's accepted / rejected spans).
  int64_t verify(Slot& slot, int64_t pass_start_ns, int64_t pass_end_ns);
  // Records one span of speculative work on the draft lane (none without a recorder or lane).
  void draft_event(trace::EventKind kind, int32_t seq, int64_t token, int64_t start_ns, int64_t end_ns, int64_t n_tokens);
  void finish(Slot& slot, FinishReason reason, Status status = {});
  void emit(Slot& slot, const std::string& text);
  void note_rate(std::chrono::steady_clock::time_point t0, std::chrono::steady_clock::time_point t1, int64_t n);
  void maybe_snapshot(bool force);

  Pipeline& pipeline_;
  SchedulerOptions options_;
  int64_t n_slots_ = 0;
  int64_t n_ctx_ = 0;
  int32_t n_vocab_ = 0;
  std::vector<std::unique_ptr<Slot>> slots_;  // touched by the scheduler thread only
  LogprobScratch logprobs_;                   // scheduler thread: token_step's log-softmax scratch
  PassCosts pass_costs_;                      // scheduler thread: step times by rows (speculation's prices)
  std::vector<std::string> full_devices_;     // scheduler thread: ran out of memory while running

  mutable std::mutex mutex_;                  // guards everything below
  std::condition_variable cv_;
  std::deque<Waiting> waiting_;
  std::vector<uint64_t> cancel_requests_;     // ids of active slots to cancel
  std::vector<Waiting> cancelled_waiting_;    // removed from the queue, on_done pending
  std::deque<Task*> tasks_;
  std::deque<EmbedJob*> embeds_;              // waiting for a slot or part-way
  bool stop_ = false;
  uint64_t next_id_ = 1;
  int64_t active_ = 0;
  uint64_t tokens_generated_ = 0, prompt_tokens_ = 0, requests_done_ = 0, replans_ = 0, replayed_tokens_ = 0;
  uint64_t draft_tokens_ = 0, draft_accepted_ = 0;
  struct RateSample {
    std::chrono::steady_clock::time_point t0, t1;
    int64_t n;
  };
  std::deque<RateSample> rate_;               // recent decode steps

  std::chrono::steady_clock::time_point last_snapshot_{};
  std::mutex shutdown_mutex_;                 // shutdown() from several threads runs once
  std::thread thread_;
};

}  // namespace strata::exec
