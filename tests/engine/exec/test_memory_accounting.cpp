// tests/engine/exec/test_memory_accounting.cpp — the planner's memory estimate against what the
// devices really hold after the pipeline is built (issue: within 5%; the rules are shared, so
// we expect and check exact equality per device and per use), and the auto-planner's plans for
// a model that fits on no single device: built, no device over capacity, same tokens.
#include <gtest/gtest.h>

#include "engine/backend/device.h"
#include "engine/exec/pipeline.h"
#include "engine/exec/session.h"
#include "engine/model/model.h"
#include "engine/plan/auto_planner.h"
#include "engine/plan/memory_estimate.h"
#include "test_support.h"
#include "engine/backend/registry/registry.h"

namespace strata {
namespace {

using plan::Placement;

struct Fixture {
  std::unique_ptr<model::Model> model;
  std::vector<std::unique_ptr<backend::Device>> devices;
  std::vector<backend::Device*> list;
  std::vector<DeviceInfo> infos;
};

Fixture load(const std::string& devices) {
  Fixture f;
  auto m = model::Model::load(test::shared_model("stories260K.gguf"));
  EXPECT_TRUE(m.ok());
  f.model = std::move(*m);
  auto d = backend::make_devices(devices, 1, 20.0);
  EXPECT_TRUE(d.ok()) << d.error().to_string();
  f.devices = std::move(d).value();
  for (auto& dev : f.devices) {
    f.list.push_back(dev.get());
    f.infos.push_back(dev->info());
  }
  return f;
}

Placement layer_split(const model::ModelConfig& c) {
  Placement p = exec::single_device_placement(c, "gpu0", 256, 2, 32);
  for (int64_t l = 3; l < c.n_layers; ++l) p.layers[static_cast<size_t>(l)].target.devices = {"gpu1"};
  p.head.devices = {"gpu1"};
  return p;
}

Placement tensor_split(const model::ModelConfig& c) {
  Placement p = exec::single_device_placement(c, "gpu0", 256, 1, 32);
  for (auto& l : p.layers) l.target = plan::Target{{"gpu0", "gpu1"}, {3, 1}};
  p.head.devices = {"cpu"};
  return p;
}

Placement kv_on_cpu(const model::ModelConfig& c) {
  Placement p = layer_split(c);
  for (auto& l : p.layers) l.kv_device = "kvhost";  // a device that only holds KV caches
  p.layers[1].target = plan::Target{{"gpu0", "gpu1"}, {1, 1}};
  return p;
}

class MemoryAccounting : public ::testing::TestWithParam<int> {};

TEST_P(MemoryAccounting, EstimateEqualsAllocatedBytesPerDevice) {
  if (!test::have(test::shared_model("stories260K.gguf"))) GTEST_FAIL();
  Fixture f = load("cpu,sim:gpu0:64MiB:overhead=1MiB,sim:gpu1:64MiB,sim:kvhost:64MiB:overhead=2MiB");
  const model::ModelConfig& c = f.model->config();
  const Placement p = GetParam() == 0 ? layer_split(c) : GetParam() == 1 ? tensor_split(c) : kv_on_cpu(c);
  auto estimate = plan::estimate_memory(p, c, f.model->weights(), f.infos);
  ASSERT_TRUE(estimate.ok()) << estimate.error().to_string();
  auto pipeline = exec::Pipeline::create(*f.model, f.list, p);
  ASSERT_TRUE(pipeline.ok()) << pipeline.error().to_string();
  const auto actual = (*pipeline)->memory_by_device();
  for (const plan::DeviceMemory& want : estimate->devices) {
    SCOPED_TRACE(want.device);
    const backend::MemoryUse& got = actual.at(want.device);
    EXPECT_EQ(got.weights, want.weight_bytes);
    EXPECT_EQ(got.kv, want.kv_bytes);
    EXPECT_EQ(got.scratch, want.scratch_bytes);
    EXPECT_EQ(got.overhead, want.overhead_bytes);
    // The bound, stated separately: within 5% of the total.
    EXPECT_NEAR(static_cast<double>(got.total()), static_cast<double>(want.total_bytes), 0.05 * want.total_bytes);
  }
  // Freed again when the pipeline goes.
  pipeline->reset();
  for (auto* d : f.list) EXPECT_EQ(d->memory_use().total(), 0u) << d->id();
}

INSTANTIATE_TEST_SUITE_P(Placements, MemoryAccounting, ::testing::Values(0, 1, 2));

TEST(AutoPlan, ModelThatFitsNoSingleDeviceIsSplitWithinCapacity) {
  if (!test::have(test::shared_model("stories260K.gguf"))) GTEST_FAIL();
  // stories260K needs ~3.5 MiB at ctx 512 with batch 256; each device holds 2.5 MiB.
  Fixture f = load("sim:gpu0:2560KiB,sim:gpu1:2560KiB");
  const model::ModelConfig& c = f.model->config();
  plan::AutoPlanOptions opts;
  opts.n_ctx = 512;
  opts.kv_type = kernels::DType::F32;  // the sizes above count an f32 cache
  auto single = plan::auto_plan(c, f.model->weights(), {f.infos[0]}, opts);
  ASSERT_FALSE(single.ok()) << "should not fit one device";
  auto result = plan::auto_plan(c, f.model->weights(), f.infos, opts);
  ASSERT_TRUE(result.ok()) << result.error().to_string();
  EXPECT_GT(plan::stages_of(result->placement).size(), 1u);
  auto pipeline = exec::Pipeline::create(*f.model, f.list, result->placement);
  ASSERT_TRUE(pipeline.ok()) << pipeline.error().to_string();
  for (auto* d : f.list) {
    EXPECT_LE(d->memory_use().total(), d->info().bytes_total) << d->id();
    EXPECT_GT(d->memory_use().weights, 0u) << d->id() << " holds nothing";
  }
  // Same greedy tokens as the CPU.
  kernels::ThreadPool pool(1);
  auto cpu = exec::Session::create(*f.model, pool, 512);
  ASSERT_TRUE(cpu.ok());
  exec::Session split(**pipeline, 0);
  std::vector<int32_t> prompt = f.model->tokenizer().encode("Once upon a time", true, true);
  auto a = (*cpu)->eval(prompt);
  auto b = split.eval(prompt);
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(a.ok() && b.ok());
    const int32_t ta = static_cast<int32_t>(std::max_element(*a, *a + c.n_vocab) - *a);
    const int32_t tb = static_cast<int32_t>(std::max_element(*b, *b + c.n_vocab) - *b);
    ASSERT_EQ(ta, tb) << "token " << i;
    a = (*cpu)->eval(std::span<const int32_t>(&ta, 1));
    b = split.eval(std::span<const int32_t>(&tb, 1));
  }
}

TEST(AutoPlan, NothingFitsReportsShortfallPerDeviceAndLargestContext) {
  if (!test::have(test::shared_model("stories260K.gguf"))) GTEST_FAIL();
  Fixture f = load("sim:gpu0:800KiB,sim:gpu1:800KiB");
  plan::AutoPlanOptions opts;
  opts.n_ctx = 512;
  opts.max_batch = 8;
  opts.kv_type = kernels::DType::F32;  // sized so that an f32 cache is short on both devices
  auto result = plan::auto_plan(f.model->config(), f.model->weights(), f.infos, opts);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, Code::OutOfMemory);
  const std::string& m = result.error().message;
  EXPECT_NE(m.find("gpu0 short"), std::string::npos) << m;
  EXPECT_NE(m.find("gpu1 short"), std::string::npos) << m;
  EXPECT_NE(m.find("largest context that fits is"), std::string::npos) << m;
}

}  // namespace
}  // namespace strata
