// tests/engine/exec/test_pipeline_apply.cpp — a re-placement that fails half-way leaves the
// pipeline exactly as it was: the same placement, the same bytes on every device, and a
// generation that goes on to the same greedy tokens as if nothing had been tried.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>

#include "engine/backend/device.h"
#include "engine/exec/pipeline.h"
#include "engine/exec/session.h"
#include "engine/model/model.h"
#include "engine/plan/tensor_split.h"
#include "device_set.h"
#include "test_support.h"

namespace strata {
namespace {

using plan::Placement;

using Devices = test::DeviceSet;
Devices make(const std::string& spec) { return test::make_device_set(spec); }

constexpr int64_t kCtx = 128;

Placement on_cpu(const model::ModelConfig& c) { return exec::single_device_placement(c, "cpu", kCtx, 1, 16); }

Placement all_blocks_on(const model::ModelConfig& c, const std::string& id) {
  Placement p = on_cpu(c);
  for (auto& l : p.layers) l.target.devices = {id};
  return p;
}

int32_t argmax(const float* l, int64_t n) { return static_cast<int32_t>(std::max_element(l, l + n) - l); }

// Greedy tokens of the whole run; apply_at: the step at which `attempt` is called.
std::vector<int32_t> generate(exec::Pipeline& pipeline, const model::Model& m, int n,
                              const std::function<void()>& attempt = {}, int apply_at = -1) {
  exec::Session s(pipeline, 0);
  auto logits = s.eval(m.tokenizer().encode("Once upon a time, in a land far away", true, true));
  EXPECT_TRUE(logits.ok());
  std::vector<int32_t> out;
  for (int i = 0; i < n && logits.ok(); ++i) {
    const int32_t next = argmax(*logits, m.config().n_vocab);
    out.push_back(next);
    if (i == apply_at && attempt) attempt();
    logits = s.eval(std::span<const int32_t>(&next, 1));
    EXPECT_TRUE(logits.ok()) << logits.error().to_string();
  }
  return out;
}

class PipelineApply : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(test::have(test::shared_model("stories260K.gguf"))) << "setup guarantees ../shared/models";
    auto m = model::Model::load(test::shared_model("stories260K.gguf"));
    ASSERT_TRUE(m.ok()) << m.error().to_string();
    model_ = std::move(*m);
    Devices cpu = make("cpu");
    auto p = exec::Pipeline::create(*model_, cpu.list(), on_cpu(model_->config()));
    ASSERT_TRUE(p.ok());
    want_ = generate(**p, *model_, 12);
  }

  // Bytes every block needs on one device: weights + KV cache (no scratch).
  uint64_t blocks_bytes() const {
    const model::ModelConfig& c = model_->config();
    uint64_t total = 0;
    for (const auto& lw : model_->weights().layers)
      total += plan::shard_weight_bytes(c, lw, plan::whole_layer(c)) + plan::shard_kv_bytes(c, plan::whole_layer(c), kCtx, 1, Placement{}.kv_type);
    return total;
  }

  void expect_failed_apply_changes_nothing(const std::string& device_spec) {
    const model::ModelConfig& c = model_->config();
    Devices devices = make(device_spec);
    auto pipeline = exec::Pipeline::create(*model_, devices.list(), on_cpu(c));
    ASSERT_TRUE(pipeline.ok()) << pipeline.error().to_string();
    exec::Pipeline& p = **pipeline;
    std::map<std::string, backend::MemoryUse> before;
    const Placement old = p.placement();
    bool attempted = false;
    auto attempt = [&] {
      before = p.memory_by_device();
      auto moved = p.apply(all_blocks_on(c, "gpu0"));
      attempted = true;
      ASSERT_FALSE(moved.ok());
      EXPECT_EQ(moved.error().code, Code::OutOfMemory) << moved.error().to_string();
      EXPECT_NE(moved.error().message.find("nothing changed"), std::string::npos) << moved.error().message;
      EXPECT_NE(moved.error().message.find("gpu0"), std::string::npos) << moved.error().message;
      const auto after = p.memory_by_device();
      for (const auto& [id, use] : before) {
        EXPECT_EQ(after.at(id).weights, use.weights) << id;
        EXPECT_EQ(after.at(id).kv, use.kv) << id;
        EXPECT_EQ(after.at(id).scratch, use.scratch) << id;
        EXPECT_EQ(after.at(id).overhead, use.overhead) << id;
      }
      EXPECT_TRUE(p.placement() == old);
    };
    const std::vector<int32_t> got = generate(p, *model_, 12, attempt, 5);
    EXPECT_TRUE(attempted);
    EXPECT_EQ(got, want_);
  }

  std::unique_ptr<model::Model> model_;
  std::vector<int32_t> want_;
};

TEST_F(PipelineApply, OutOfMemoryHalfWayThroughTheBlocksChangesNothing) {
  // gpu0 holds about half of the blocks: the failure comes in the middle of building them.
  const uint64_t half = blocks_bytes() / 2;
  expect_failed_apply_changes_nothing("cpu,sim:gpu0:" + std::to_string(half));
}

TEST_F(PipelineApply, OutOfMemoryForTheScratchAfterAllBlocksFitChangesNothing) {
  // Every block fits on gpu0, its scratch does not: the failure comes after the blocks were
  // built, while the device runtimes are made (first beside the old ones, then without them).
  expect_failed_apply_changes_nothing("cpu,sim:gpu0:" + std::to_string(blocks_bytes() + 64));
}

TEST_F(PipelineApply, AFittingPlacementAfterAFailedOneStillApplies) {
  const model::ModelConfig& c = model_->config();
  Devices devices = make("cpu,sim:gpu0:" + std::to_string(blocks_bytes() / 2) + ",sim:gpu1:1GiB");
  auto pipeline = exec::Pipeline::create(*model_, devices.list(), on_cpu(c));
  ASSERT_TRUE(pipeline.ok());
  exec::Pipeline& p = **pipeline;
  auto attempt = [&] {
    EXPECT_FALSE(p.apply(all_blocks_on(c, "gpu0")).ok());
    auto moved = p.apply(all_blocks_on(c, "gpu1"));
    ASSERT_TRUE(moved.ok()) << moved.error().to_string();
    EXPECT_EQ(*moved, c.n_layers);
    EXPECT_EQ(p.memory_by_device().at("gpu0").total(), 0u);
    EXPECT_GT(p.memory_by_device().at("gpu1").kv, 0u);
  };
  EXPECT_EQ(generate(p, *model_, 12, attempt, 5), want_);
}

}  // namespace
}  // namespace strata
