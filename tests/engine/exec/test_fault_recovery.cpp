// tests/engine/exec/test_fault_recovery.cpp — a device lost in the middle of generation: the
// scheduler re-plans over the devices left, rebuilds every sequence's cache by evaluating its
// tokens again, and each stream's greedy text is exactly the text of a run without the fault.
// Faults are simulated devices' fault options (fail_after ops, oom_after bytes), so every case is
// deterministic: an op count, not a time.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <mutex>

#include "engine/backend/device.h"
#include "engine/exec/generate.h"
#include "engine/exec/pipeline.h"
#include "engine/exec/scheduler.h"
#include "engine/exec/session.h"
#include "engine/model/model.h"
#include "engine/model/random_model.h"
#include "device_set.h"
#include "test_support.h"
#include "engine/backend/registry/registry.h"
#include "engine/backend/sim/sim_device.h"
#include "engine/backend/cpu/cpu_device.h"

namespace strata::test {
namespace {

namespace fs = std::filesystem;

fs::path random_model_path() {
  const fs::path out = temp_dir("fault") / "random8-q8_0.gguf";
  if (fs::exists(out)) return out;
  auto vocab = gguf::GgufFile::open(shared_model("stories260K.gguf"));
  EXPECT_TRUE(vocab.ok());
  model::RandomModelSpec spec;
  spec.n_embd = 128;
  spec.n_layers = 8;
  spec.n_heads = 4;
  spec.n_kv_heads = 2;
  spec.n_ff = 256;
  spec.n_ctx = 256;
  spec.type = "q8_0";
  spec.stddev = 0.08f;  // large enough that greedy choices are not near-ties
  spec.n_threads = 1;
  EXPECT_TRUE(model::write_random_model(spec, *vocab, out).ok());
  return out;
}

std::unique_ptr<model::Model> load(const fs::path& path) {
  auto m = model::Model::load(path);
  EXPECT_TRUE(m.ok()) << m.error().to_string();
  return m.ok() ? std::move(*m) : nullptr;
}

// Blocks [0, half) on gpu0 and [half, n) on gpu1; embedding on gpu0, head on gpu1.
plan::Placement split_over_two(const model::ModelConfig& c, int64_t n_seq) {
  plan::Placement p = exec::single_device_placement(c, "gpu0", 256, n_seq, 16);
  for (int64_t l = c.n_layers / 2; l < c.n_layers; ++l) p.layers[static_cast<size_t>(l)].target.devices = {"gpu1"};
  p.head.devices = {"gpu1"};
  return p;
}

// What the single-sequence loop on the CPU gives.
std::string reference(const model::Model& m, const std::vector<int32_t>& prompt, int64_t n) {
  kernels::ThreadPool pool(1);
  auto session = exec::Session::create(m, pool, 256, 16);
  EXPECT_TRUE(session.ok());
  exec::GenerateOptions o;
  o.max_tokens = n;
  o.sampling.temperature = 0;
  o.ignore_eog = true;
  auto r = exec::generate(**session, prompt, o, nullptr);
  EXPECT_TRUE(r.ok());
  return r.ok() ? r->text : std::string();
}

struct RunOutcome {
  std::vector<exec::GenerationResult> results;
  exec::SchedulerStats stats;
  std::vector<Expected<exec::ReplanReport>> replans;
};

// Submits every prompt at once (greedy, ignore_eog, n tokens each) and waits for all of them.
RunOutcome generate_all(exec::Pipeline& pipeline, const std::vector<std::vector<int32_t>>& prompts, int64_t n,
                 int64_t prompt_chunk = 0) {
  RunOutcome run;
  std::mutex mutex;
  exec::SchedulerOptions so;
  so.prompt_chunk = prompt_chunk;
  so.on_replan = [&](const Expected<exec::ReplanReport>& r) {
    std::lock_guard<std::mutex> lock(mutex);
    run.replans.push_back(r);
  };
  exec::Scheduler sched(pipeline, so);
  std::vector<std::promise<exec::GenerationResult>> done(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    exec::GenerationRequest r;
    r.prompt = prompts[i];
    r.sampling.temperature = 0;
    r.max_tokens = n;
    r.ignore_eog = true;
    r.on_done = [&done, i](const exec::GenerationResult& res) { done[i].set_value(res); };
    EXPECT_TRUE(sched.submit(std::move(r)).ok());
  }
  for (auto& d : done) run.results.push_back(d.get_future().get());
  run.stats = sched.stats();
  return run;
}

std::vector<std::vector<int32_t>> prompts_for(const model::Model& m) {
  std::vector<std::vector<int32_t>> out;
  for (const char* text : {"Once upon a time", "The little dog ran to the park and", "Lily and Ben"})
    out.push_back(m.tokenizer().encode(text, true, true));
  return out;
}

bool uses(const plan::Placement& p, const std::string& id) {
  for (const auto& l : p.layers) {
    for (const auto& d : l.target.devices) {
      if (d == id) return true;
    }
  }
  return p.embedding.devices[0] == id || p.head.devices[0] == id;
}

// Every stream ended well, with the greedy text of a run without faults (n tokens each).
void expect_fault_free_texts(const model::Model& m, const std::vector<std::vector<int32_t>>& prompts,
                             const RunOutcome& run, int64_t n) {
  ASSERT_EQ(run.results.size(), prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_TRUE(run.results[i].status.ok()) << "stream " << i << ": " << run.results[i].status.error().to_string();
    EXPECT_EQ(run.results[i].text, reference(m, prompts[i], n)) << "stream " << i;
  }
}

// gpu1 is lost after `fail_after` of its ops; the texts must equal the fault-free ones.
void lost_mid_generation(const fs::path& model_path, int64_t fail_after, int64_t n_tokens, int64_t prompt_chunk,
                         bool expect_generated_replayed) {
  auto m = load(model_path);
  ASSERT_TRUE(m);
  DeviceSet devices = make_device_set("cpu,sim:gpu0:4GiB,sim:gpu1:4GiB:fail_after=" + std::to_string(fail_after));
  auto pipeline = exec::Pipeline::create(*m, devices.list(), split_over_two(m->config(), 3));
  ASSERT_TRUE(pipeline.ok()) << pipeline.error().to_string();
  const auto prompts = prompts_for(*m);
  const RunOutcome run = generate_all(**pipeline, prompts, n_tokens, prompt_chunk);
  ASSERT_EQ(run.replans.size(), 1u);
  ASSERT_TRUE(run.replans[0].ok()) << run.replans[0].error().to_string();
  EXPECT_EQ(run.replans[0]->lost, std::vector<std::string>{"gpu1"});
  EXPECT_GT(run.replans[0]->moved_blocks, 0);
  EXPECT_FALSE(uses((*pipeline)->placement(), "gpu1"));
  EXPECT_EQ(run.stats.replans, 1u);
  size_t prompt_total = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const exec::GenerationResult& r = run.results[i];
    EXPECT_TRUE(r.status.ok()) << r.status.error().to_string();
    EXPECT_EQ(r.finish, exec::FinishReason::Length);
    EXPECT_EQ(r.n_generated, n_tokens);
    EXPECT_EQ(r.text, reference(*m, prompts[i], n_tokens)) << "stream " << i;
    prompt_total += prompts[i].size();
  }
  // Mid-decode: generated tokens were evaluated again too (more than the prompts); mid-prompt:
  // only prompt tokens were read when the device went.
  if (expect_generated_replayed) EXPECT_GT(run.stats.replayed_tokens, prompt_total);
  else EXPECT_EQ(run.stats.replayed_tokens, 0u);
}

TEST(FaultRecovery, LostMidDecodeKeepsEveryStreamsText_Stories) {
  // stories260K: 5 blocks, 2 on gpu0 and 3 on gpu1 (about 40 ops a pass there): the prompts'
  // passes and a few decode steps run before op 400.
  lost_mid_generation(shared_model("stories260K.gguf"), 400, 24, 0, true);
}

TEST(FaultRecovery, LostMidDecodeKeepsEveryStreamsText_RandomModel) {
  lost_mid_generation(random_model_path(), 600, 20, 0, true);
}

TEST(FaultRecovery, LostMidPromptReadsThePromptAgain) {
  // Chunks of 2 prompt tokens: the device goes while the prompts are still being read.
  lost_mid_generation(shared_model("stories260K.gguf"), 30, 12, 2, false);
}

TEST(FaultRecovery, ADeviceOutOfMemoryIsLeftOutOfTheNewPlan) {
  auto m = load(shared_model("stories260K.gguf"));
  ASSERT_TRUE(m);
  // gpu0 keeps what it holds but cannot take one byte more: gpu1's blocks must go to the CPU.
  DeviceSet devices = make_device_set("cpu,sim:gpu0:4GiB,sim:gpu1:4GiB:fail_after=400");
  auto pipeline = exec::Pipeline::create(*m, devices.list(), split_over_two(m->config(), 3));
  ASSERT_TRUE(pipeline.ok()) << pipeline.error().to_string();
  devices.owned[1]->limit_allocations(0);
  const auto prompts = prompts_for(*m);
  const RunOutcome run = generate_all(**pipeline, prompts, 16);
  ASSERT_EQ(run.replans.size(), 1u);
  ASSERT_TRUE(run.replans[0].ok()) << run.replans[0].error().to_string();
  EXPECT_EQ(run.replans[0]->excluded, std::vector<std::string>{"gpu0"});
  const plan::Placement& now = (*pipeline)->placement();
  EXPECT_FALSE(uses(now, "gpu1"));
  EXPECT_FALSE(uses(now, "gpu0"));
  expect_fault_free_texts(*m, prompts, run, 16);
}

TEST(FaultRecovery, ADeviceLostWhileRePlacingIsLeftOutToo) {
  auto m = load(shared_model("stories260K.gguf"));
  ASSERT_TRUE(m);
  // gpu1 is lost mid-decode. The new plan cannot stay on gpu0 (it takes no byte more) and gpu2 dies
  // at its second op, while its new blocks are uploaded: the re-plan must go on to the CPU, with gpu2
  // reported lost (not refused) and the text of a run without faults.
  DeviceSet devices = make_device_set("cpu,sim:gpu0:4GiB,sim:gpu1:4GiB:fail_after=400,sim:gpu2:4GiB:fail_after=1");
  auto pipeline = exec::Pipeline::create(*m, devices.list(), split_over_two(m->config(), 3));
  ASSERT_TRUE(pipeline.ok()) << pipeline.error().to_string();
  ASSERT_FALSE(devices.owned[3]->failed()) << "gpu2 holds nothing before the fault, so it ran no op";
  devices.owned[1]->limit_allocations(0);
  const auto prompts = prompts_for(*m);
  const RunOutcome run = generate_all(**pipeline, prompts, 16);
  ASSERT_EQ(run.replans.size(), 1u);
  ASSERT_TRUE(run.replans[0].ok()) << run.replans[0].error().to_string();
  EXPECT_EQ(run.replans[0]->lost, (std::vector<std::string>{"gpu1", "gpu2"}));
  EXPECT_EQ(run.replans[0]->excluded, std::vector<std::string>{"gpu0"});
  const plan::Placement& now = (*pipeline)->placement();
  for (const char* id : {"gpu0", "gpu1", "gpu2"}) EXPECT_FALSE(uses(now, id)) << id;
  expect_fault_free_texts(*m, prompts, run, 16);
}

TEST(FaultRecovery, AHungDeviceIsGivenUpAtItsTimeoutAndTheTextIsKept) {
  auto m = load(shared_model("stories260K.gguf"));
  ASSERT_TRUE(m);
  // gpu1's op 400 never finishes on its own: only the pipeline's device timeout ends the wait.
  DeviceSet devices = make_device_set("cpu,sim:gpu0:4GiB,sim:gpu1:4GiB:hang_after=400");
  auto pipeline = exec::Pipeline::create(*m, devices.list(), split_over_two(m->config(), 3));
  ASSERT_TRUE(pipeline.ok()) << pipeline.error().to_string();
  (*pipeline)->set_device_timeout(std::chrono::milliseconds(1500));
  const auto prompts = prompts_for(*m);
  const RunOutcome run = generate_all(**pipeline, prompts, 24);
  ASSERT_EQ(run.replans.size(), 1u);
  ASSERT_TRUE(run.replans[0].ok()) << run.replans[0].error().to_string();
  EXPECT_EQ(run.replans[0]->lost, std::vector<std::string>{"gpu1"});
  EXPECT_NE(run.replans[0]->cause.find("did not answer within 1.5 s"), std::string::npos) << run.replans[0]->cause;
  EXPECT_TRUE(devices.owned[2]->failed());
  EXPECT_NE(devices.owned[2]->failure().find("hung"), std::string::npos) << devices.owned[2]->failure();
  EXPECT_FALSE(devices.owned[1]->failed());
  EXPECT_FALSE(uses((*pipeline)->placement(), "gpu1"));
  expect_fault_free_texts(*m, prompts, run, 24);
}

TEST(FaultRecovery, ADeviceOutOfMemoryMidDecodeIsLeftOutAndTheTextIsKept) {
  auto m = load(shared_model("stories260K.gguf"));
  ASSERT_TRUE(m);
  // gpu1's scratch stops growing at its op 400 (something else took its memory): every op there
  // fails with OutOfMemory from then on, but the device is not lost.
  DeviceSet devices = make_device_set("cpu,sim:gpu0:4GiB,sim:gpu1:4GiB:oom_after_ops=400");
  auto pipeline = exec::Pipeline::create(*m, devices.list(), split_over_two(m->config(), 3));
  ASSERT_TRUE(pipeline.ok()) << pipeline.error().to_string();
  const auto prompts = prompts_for(*m);
  const RunOutcome run = generate_all(**pipeline, prompts, 24);
  ASSERT_EQ(run.replans.size(), 1u);
  ASSERT_TRUE(run.replans[0].ok()) << run.replans[0].error().to_string();
  EXPECT_TRUE(run.replans[0]->lost.empty());
  EXPECT_EQ(run.replans[0]->full, std::vector<std::string>{"gpu1"});
  EXPECT_NE(run.replans[0]->cause.find("out of memory"), std::string::npos) << run.replans[0]->cause;
  EXPECT_FALSE(devices.owned[2]->failed());
  EXPECT_FALSE(uses((*pipeline)->placement(), "gpu1"));
  EXPECT_EQ(run.stats.replans, 1u);
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_TRUE(run.results[i].status.ok()) << run.results[i].status.error().to_string();
    EXPECT_EQ(run.results[i].n_generated, 24);
    EXPECT_EQ(run.results[i].text, reference(*m, prompts[i], 24)) << "stream " << i;
  }
}

TEST(FaultRecovery, WhenNothingFitsEveryStreamEndsWithTheError) {
  auto m = load(shared_model("stories260K.gguf"));
  ASSERT_TRUE(m);
  // A CPU with 64 KiB: after gpu1 is lost and gpu0 refuses more, no placement fits.
  DeviceSet devices;
  devices.owned.push_back(std::make_unique<backend::CpuDevice>(1, uint64_t{64} << 10, 20.0));
  for (const char* spec : {"sim:gpu0:4GiB", "sim:gpu1:4GiB:fail_after=400"}) {
    auto d = backend::make_devices(spec, 1, 20.0);
    ASSERT_TRUE(d.ok());
    devices.owned.push_back(std::move((*d)[0]));
  }
  auto pipeline = exec::Pipeline::create(*m, devices.list(), split_over_two(m->config(), 3));
  ASSERT_TRUE(pipeline.ok()) << pipeline.error().to_string();
  devices.owned[1]->limit_allocations(0);
  const RunOutcome run = generate_all(**pipeline, prompts_for(*m), 40);
  ASSERT_GE(run.replans.size(), 1u);
  EXPECT_FALSE(run.replans[0].ok());
  for (const exec::GenerationResult& r : run.results) {
    EXPECT_EQ(r.finish, exec::FinishReason::Cancelled);
    ASSERT_FALSE(r.status.ok());
    EXPECT_NE(r.status.error().message.find("lost gpu1"), std::string::npos) << r.status.error().message;
    EXPECT_LT(r.n_generated, 40);
  }
  EXPECT_EQ(run.stats.replans, 0u);
}

TEST(FaultRecovery, SimulatedFaultOptionsParseAndAct) {
  auto bad = backend::make_devices("sim:gpu0:1GiB:slow=0.5", 1, 20.0);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("slow=0.5"), std::string::npos);
  EXPECT_FALSE(backend::make_devices("sim:gpu0:1GiB:fail_after=2.5", 1, 20.0).ok());
  auto d = backend::make_devices("sim:gpu0:1GiB:oom_after=1MiB:fail_after=2", 1, 20.0);
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  auto* sim = dynamic_cast<backend::SimulatedDevice*>((*d)[0].get());
  ASSERT_NE(sim, nullptr);
  // oom_after: 1 MiB more may be held, not one byte beyond.
  auto a = sim->allocate(uint64_t{1} << 20, backend::BufferUse::Scratch);
  ASSERT_TRUE(a.ok());
  auto b = sim->allocate(1, backend::BufferUse::Scratch);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().code, Code::OutOfMemory);
  // fail_after=2: two ops run, the third finds the device lost, and so does everything after.
  EXPECT_TRUE(sim->check_alive().ok());
  EXPECT_TRUE(sim->check_alive().ok());
  EXPECT_FALSE(sim->failed());
  const Status third = sim->check_alive();
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.error().code, Code::Device);
  EXPECT_TRUE(sim->failed());
  EXPECT_EQ(sim->allocate(16, backend::BufferUse::Scratch).error().code, Code::Device);

  // hang_after=1: one op runs; the next blocks until someone gives the device up, then fails.
  EXPECT_FALSE(backend::make_devices("sim:gpu1:1GiB:hang_after=x", 1, 20.0).ok());
  // oom_after_ops=1: one op runs; every later one fails with OutOfMemory, and the device is not lost.
  auto full = backend::make_devices("sim:gpu2:1GiB:oom_after_ops=1", 1, 20.0);
  ASSERT_TRUE(full.ok()) << full.error().to_string();
  auto* gpu2 = dynamic_cast<backend::SimulatedDevice*>((*full)[0].get());
  EXPECT_TRUE(gpu2->check_alive().ok());
  for (int i = 0; i < 2; ++i) {
    const Status s = gpu2->check_alive();
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, Code::OutOfMemory);
    EXPECT_NE(s.error().message.find("device 'gpu2'"), std::string::npos);
  }
  EXPECT_FALSE(gpu2->failed());
  auto h = backend::make_devices("sim:gpu1:1GiB:hang_after=1", 1, 20.0);
  ASSERT_TRUE(h.ok()) << h.error().to_string();
  auto* hung = dynamic_cast<backend::SimulatedDevice*>((*h)[0].get());
  ASSERT_NE(hung, nullptr);
  EXPECT_TRUE(hung->check_alive().ok());
  auto blocked = std::async(std::launch::async, [hung] { return hung->check_alive(); });
  EXPECT_FALSE(hung->failed());
  hung->mark_failed("given up by the test");
  const Status after = blocked.get();
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.error().code, Code::Device);
  EXPECT_NE(after.error().message.find("given up by the test"), std::string::npos);
  // The CPU is never given up by the device timeout; simulated devices are.
  backend::CpuDevice cpu(1, uint64_t{1} << 30, 20.0);
  EXPECT_FALSE(cpu.can_be_lost());
  EXPECT_TRUE(hung->can_be_lost());
}

}  // namespace
}  // namespace strata::test
