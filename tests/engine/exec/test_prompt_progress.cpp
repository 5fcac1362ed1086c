// tests/engine/exec/test_prompt_progress.cpp — prompt-processing progress (issue 14, item 8): the
// scheduler and generate() report the prompt tokens in the cache after each evaluated chunk, ending
// at the prompt's length, and evaluating in chunks gives the same text as in one go.
#include <gtest/gtest.h>

#include <future>

#include "engine/exec/generate.h"
#include "engine/exec/scheduler.h"
#include "engine/exec/session.h"
#include "test_support.h"
#include "engine/backend/cpu/cpu_device.h"

namespace strata::test {
namespace {

using Steps = std::vector<std::pair<int64_t, int64_t>>;

std::string long_prompt() {
  std::string p;
  for (int i = 0; i < 12; ++i) p += "Once upon a time there was a little girl named Lily. ";
  return p;
}

TEST(PromptProgress, GenerateReportsEachChunkAndKeepsTheText) {
  auto m = model::Model::load(shared_model("stories260K.gguf"));
  ASSERT_TRUE(m.ok()) << m.error().message;
  const std::vector<int32_t> prompt = (*m)->tokenizer().encode(long_prompt(), true, true);
  ASSERT_GT(prompt.size(), 100u);
  kernels::ThreadPool pool(1);
  exec::GenerateOptions o;
  o.max_tokens = 16;
  o.sampling.temperature = 0;
  // Both sessions pass 48 tokens per forward pass: the same arithmetic, chunked by the caller or not.
  auto whole_session = exec::Session::create(**m, pool, 512, 48);
  ASSERT_TRUE(whole_session.ok());
  auto whole = exec::generate(**whole_session, prompt, o, nullptr);
  ASSERT_TRUE(whole.ok());

  Steps steps;
  o.prompt_chunk = 48;
  o.on_prompt_progress = [&](int64_t done, int64_t total) { steps.emplace_back(done, total); };
  auto chunked_session = exec::Session::create(**m, pool, 512, 48);
  ASSERT_TRUE(chunked_session.ok());
  auto chunked = exec::generate(**chunked_session, prompt, o, nullptr);
  ASSERT_TRUE(chunked.ok());
  EXPECT_EQ(chunked->text, whole->text);
  const int64_t n = static_cast<int64_t>(prompt.size());
  Steps expected;
  for (int64_t done = 48; done < n; done += 48) expected.emplace_back(done, n);
  expected.emplace_back(n, n);
  EXPECT_EQ(steps, expected);
}

TEST(PromptProgress, SchedulerReportsEachChunk) {
  auto m = model::Model::load(shared_model("stories260K.gguf"));
  ASSERT_TRUE(m.ok()) << m.error().message;
  backend::CpuDevice cpu(1, uint64_t{1} << 32, 10.0);
  auto pipeline = exec::Pipeline::create(**m, {&cpu}, exec::single_device_placement((*m)->config(), "cpu", 512, 1, 64));
  ASSERT_TRUE(pipeline.ok()) << pipeline.error().message;
  exec::Scheduler sched(**pipeline, {});
  exec::GenerationRequest r;
  r.prompt = (*m)->tokenizer().encode(long_prompt(), true, true);
  r.sampling.temperature = 0;
  r.max_tokens = 4;
  Steps steps;  // written on the scheduler thread, read after on_done
  r.on_prompt_progress = [&](int64_t done, int64_t total) { steps.emplace_back(done, total); };
  std::promise<exec::GenerationResult> finished;
  r.on_done = [&](const exec::GenerationResult& res) { finished.set_value(res); };
  const int64_t n = static_cast<int64_t>(r.prompt.size());
  ASSERT_TRUE(sched.submit(std::move(r)).ok());
  const exec::GenerationResult res = finished.get_future().get();
  ASSERT_TRUE(res.status.ok());
  Steps expected;
  for (int64_t done = 64; done < n; done += 64) expected.emplace_back(done, n);
  expected.emplace_back(n, n);
  EXPECT_EQ(steps, expected);
}

}  // namespace
}  // namespace strata::test
