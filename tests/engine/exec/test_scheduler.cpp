// tests/serve/test_scheduler.cpp — exec::Scheduler alone (no HTTP): several requests over one
// pipeline give exactly generate()'s single-sequence text, the queue limit, cancellation from the
// text callback and from cancel(), prefix reuse and exclusive tasks.
#include <gtest/gtest.h>

#include <condition_variable>
#include <future>

#include "engine/exec/generate.h"
#include "engine/exec/scheduler.h"
#include "engine/exec/session.h"
#include "test_support.h"
#include "engine/backend/cpu/cpu_device.h"

namespace strata::test {
namespace {

struct Fixture {
  std::unique_ptr<model::Model> model;
  std::unique_ptr<backend::CpuDevice> cpu;
  std::unique_ptr<exec::Pipeline> pipeline;
};

Fixture make(int64_t n_seq) {
  Fixture f;
  auto m = model::Model::load(shared_model("stories260K.gguf"));
  EXPECT_TRUE(m.ok());
  f.model = std::move(*m);
  f.cpu = std::make_unique<backend::CpuDevice>(1, uint64_t{1} << 32, 10.0);
  auto p = exec::Pipeline::create(*f.model, {f.cpu.get()},
                                  exec::single_device_placement(f.model->config(), "cpu", 256, n_seq, 64));
  EXPECT_TRUE(p.ok()) << p.error().message;
  f.pipeline = std::move(*p);
  return f;
}

std::vector<int32_t> tokens(const model::Model& m, const std::string& text) { return m.tokenizer().encode(text, true, true); }

sample::SamplerParams greedy() {
  sample::SamplerParams s;
  s.temperature = 0;
  return s;
}

// What the single-sequence loop gives.
std::string reference(const model::Model& m, const std::string& prompt, int64_t n) {
  kernels::ThreadPool pool(1);
  auto session = exec::Session::create(m, pool, 256, 64);
  EXPECT_TRUE(session.ok());
  exec::GenerateOptions o;
  o.max_tokens = n;
  o.sampling = greedy();
  auto r = exec::generate(**session, tokens(m, prompt), o, nullptr);
  EXPECT_TRUE(r.ok());
  return r->text;
}

struct Outcome {
  std::promise<exec::GenerationResult> promise;
  std::string streamed;
};

exec::GenerationRequest request_for(const model::Model& m, const std::string& prompt, int64_t n, Outcome& out) {
  exec::GenerationRequest r;
  r.prompt = tokens(m, prompt);
  r.sampling = greedy();
  r.max_tokens = n;
  r.on_text = [&out](std::string_view t) {
    out.streamed.append(t);
    return true;
  };
  r.on_done = [&out](const exec::GenerationResult& res) { out.promise.set_value(res); };
  return r;
}

// Holds the scheduler thread inside an exclusive task from construction (which returns once the
// task runs) until destruction, so that requests submitted meanwhile are admitted together.
class SchedulerHold {
 public:
  explicit SchedulerHold(exec::Scheduler& sched) {
    thread_ = std::thread([this, &sched] {
      (void)sched.run_exclusive([this](exec::Pipeline&) {
        std::unique_lock<std::mutex> lock(m_);
        entered_ = true;
        cv_.notify_all();
        cv_.wait(lock, [this] { return release_; });
        return Status{};
      });
    });
    std::unique_lock<std::mutex> lock(m_);
    cv_.wait(lock, [this] { return entered_; });
  }
  ~SchedulerHold() {
    {
      std::lock_guard<std::mutex> lock(m_);
      release_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool release_ = false, entered_ = false;
  std::thread thread_;
};

TEST(Scheduler, SevenRequestsOnThreeSlotsEqualSingleSequenceText) {
  Fixture f = make(3);
  exec::Scheduler sched(*f.pipeline, {});
  const std::vector<std::string> prompts = {"Once upon a time", "The cat", "Lily and Ben", "One day",
                                            "The sun",          "Tom had", "A little dog"};
  std::vector<Outcome> out(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) ASSERT_TRUE(sched.submit(request_for(*f.model, prompts[i], 40, out[i])).ok());
  for (size_t i = 0; i < prompts.size(); ++i) {
    const exec::GenerationResult r = out[i].promise.get_future().get();
    EXPECT_TRUE(r.status.ok());
    EXPECT_EQ(r.text, reference(*f.model, prompts[i], 40)) << prompts[i];
    EXPECT_EQ(out[i].streamed, r.text);
    EXPECT_EQ(r.n_prompt, static_cast<int64_t>(tokens(*f.model, prompts[i]).size()));
  }
  const exec::SchedulerStats st = sched.stats();
  EXPECT_EQ(st.active, 0);
  EXPECT_EQ(st.waiting, 0);
  EXPECT_EQ(st.slots, 3);
  EXPECT_EQ(st.requests_done, prompts.size());
  EXPECT_GT(st.tokens_generated, 100u);
}

TEST(Scheduler, QueueLimitCancellationAndPrefixReuse) {
  Fixture f = make(2);
  exec::SchedulerOptions so;
  so.max_waiting = 1;
  exec::Scheduler sched(*f.pipeline, so);

  // Hold the scheduler thread in an exclusive task while submitting: 2 slots + 1 queue place.
  auto holder = std::make_unique<SchedulerHold>(sched);
  std::vector<Outcome> out(5);
  int accepted = 0, full = 0;
  for (auto& o : out) {
    auto id = sched.submit(request_for(*f.model, "Once upon a time", 8, o));
    if (id.ok()) ++accepted;
    else if (id.error().code == Code::OutOfRange) ++full;
  }
  EXPECT_EQ(accepted, 3);
  EXPECT_EQ(full, 2);
  EXPECT_EQ(sched.stats().waiting, 3);
  holder.reset();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(out[i].promise.get_future().get().n_generated, 8);

  // The text callback stops a generation; cancel() stops another.
  Outcome stopped;
  exec::GenerationRequest r = request_for(*f.model, "The cat", 200, stopped);
  int pieces = 0;
  r.on_text = [&](std::string_view) { return ++pieces < 3; };
  ASSERT_TRUE(sched.submit(std::move(r)).ok());
  const exec::GenerationResult rs = stopped.promise.get_future().get();
  EXPECT_EQ(rs.finish, exec::FinishReason::Cancelled);
  EXPECT_EQ(pieces, 3);
  EXPECT_LE(rs.n_generated, 4);
  Outcome cancelled;
  exec::GenerationRequest rc = request_for(*f.model, "The dog", 100000, cancelled);
  rc.ignore_eog = true;
  rc.max_tokens = 250;
  auto id = sched.submit(std::move(rc));
  ASSERT_TRUE(id.ok());
  sched.cancel(*id);
  EXPECT_EQ(cancelled.promise.get_future().get().finish, exec::FinishReason::Cancelled);

  // The same prompt again reuses the slot's cache (all but the last prompt token), same text.
  Outcome a, b;
  ASSERT_TRUE(sched.submit(request_for(*f.model, "Lily went to the park", 16, a)).ok());
  const exec::GenerationResult ra = a.promise.get_future().get();
  ASSERT_TRUE(sched.submit(request_for(*f.model, "Lily went to the park", 16, b)).ok());
  const exec::GenerationResult rb = b.promise.get_future().get();
  EXPECT_EQ(rb.text, ra.text);
  EXPECT_EQ(rb.n_prompt_cached, rb.n_prompt - 1);
  EXPECT_EQ(ra.text, reference(*f.model, "Lily went to the park", 16));

  // Bad requests are refused up front.
  exec::GenerationRequest empty;
  EXPECT_EQ(sched.submit(std::move(empty)).error().code, Code::InvalidArgument);
  exec::GenerationRequest huge;
  huge.prompt.assign(300, 5);
  EXPECT_EQ(sched.submit(std::move(huge)).error().code, Code::InvalidArgument);
}

// The n choices of one request (the same prompt submitted together) evaluate the prompt once:
// the older sequence reads it, the others wait and copy its keys and values, and every text is
// the single-sequence one. A prompt that shares only a prefix copies that prefix and reads the rest.
TEST(Scheduler, SequencesSharingAPromptEvaluateItOnce) {
  Fixture f = make(4);
  exec::Scheduler sched(*f.pipeline, {});
  const std::string prompt =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her "
      "friends. One day";
  const int64_t n = static_cast<int64_t>(tokens(*f.model, prompt).size());
  ASSERT_GE(n, 30);
  // Hold the scheduler thread in an exclusive task so that all three are admitted in one step.
  auto holder = std::make_unique<SchedulerHold>(sched);
  std::vector<Outcome> out(3);
  for (auto& o : out) ASSERT_TRUE(sched.submit(request_for(*f.model, prompt, 24, o)).ok());
  holder.reset();
  const std::string want = reference(*f.model, prompt, 24);
  int64_t cached = 0;
  for (auto& o : out) {
    const exec::GenerationResult r = o.promise.get_future().get();
    EXPECT_TRUE(r.status.ok());
    EXPECT_EQ(r.text, want);
    cached += r.n_prompt_cached;
  }
  // Two of the three copied all but the last prompt token: n + 2 prompt tokens were evaluated.
  EXPECT_EQ(cached, 2 * (n - 1));
  EXPECT_EQ(sched.stats().prompt_tokens, static_cast<uint64_t>(n + 2));
}

TEST(Scheduler, ANewSequenceCopiesTheCachedPrefixOfABusyOne) {
  Fixture f = make(2);
  exec::Scheduler sched(*f.pipeline, {});
  const std::string first = "Once upon a time, there was a little girl named Lily. She loved to play outside.";
  const std::string second = "Once upon a time, there was a little girl named Lily. She loved to eat apples.";
  const std::vector<int32_t> a_ids = tokens(*f.model, first), b_ids = tokens(*f.model, second);
  size_t shared = 0;
  while (shared < a_ids.size() && shared < b_ids.size() && a_ids[shared] == b_ids[shared]) ++shared;
  ASSERT_GE(shared, 10u);
  // The first request's first piece of text holds the scheduler thread until the second request
  // is queued: the second then takes the empty slot while the first one still decodes.
  Outcome a, b;
  exec::GenerationRequest ra = request_for(*f.model, first, 24, a);
  std::promise<void> queued;
  std::shared_future<void> gate = queued.get_future().share();
  ra.on_text = [&a, gate](std::string_view t) {
    if (a.streamed.empty()) gate.wait();
    a.streamed.append(t);
    return true;
  };
  ASSERT_TRUE(sched.submit(std::move(ra)).ok());
  ASSERT_TRUE(sched.submit(request_for(*f.model, second, 24, b)).ok());
  queued.set_value();
  const exec::GenerationResult rb = b.promise.get_future().get();
  const exec::GenerationResult rab = a.promise.get_future().get();
  EXPECT_EQ(rab.text, reference(*f.model, first, 24));
  EXPECT_EQ(rb.text, reference(*f.model, second, 24));
  EXPECT_EQ(rb.n_prompt_cached, static_cast<int64_t>(shared));
  EXPECT_EQ(sched.stats().prompt_tokens, static_cast<uint64_t>(a_ids.size() + b_ids.size() - shared));
}

TEST(Scheduler, ShutdownFinishesEveryRequestAsCancelled) {
  Fixture f = make(1);
  auto sched = std::make_unique<exec::Scheduler>(*f.pipeline, exec::SchedulerOptions{});
  std::vector<Outcome> out(3);
  for (auto& o : out) {
    exec::GenerationRequest r = request_for(*f.model, "Once upon a time", 250, o);
    r.ignore_eog = true;
    ASSERT_TRUE(sched->submit(std::move(r)).ok());
  }
  sched->shutdown();
  int cancelled = 0;
  for (auto& o : out) cancelled += o.promise.get_future().get().finish == exec::FinishReason::Cancelled;
  EXPECT_GE(cancelled, 2);  // the first may have finished already
  EXPECT_EQ(sched->submit(exec::GenerationRequest{}).error().code, Code::InvalidArgument);
  sched.reset();
}

}  // namespace
}  // namespace strata::test
