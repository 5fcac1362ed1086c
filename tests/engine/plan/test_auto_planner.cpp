// tests/engine/plan/test_auto_planner.cpp — the auto-planner: splits a model that fits no single
// device with every device under its margin, prefers faster devices, prefers one stage when asked,
// falls back to the CPU for the embedding, and explains an out-of-memory with the largest context.
#include <gtest/gtest.h>

#include <regex>

#include "engine/plan/auto_planner.h"
#include "plan_test_models.h"

namespace strata::plan {
namespace {

std::vector<std::string> layer_devices(const Placement& p) {
  std::vector<std::string> out;
  for (const auto& l : p.layers) {
    EXPECT_FALSE(l.target.is_group());
    EXPECT_TRUE(l.kv_device.empty());
    out.push_back(l.target.devices.at(0));
  }
  return out;
}

int64_t count(const Placement& p, const std::string& id) {
  const auto d = layer_devices(p);
  return std::count(d.begin(), d.end(), id);
}

void expect_under_margin(const PlanResult& r, const std::vector<DeviceInfo>& devices, double margin) {
  for (const DeviceMemory& m : r.memory.devices) {
    for (const auto& d : devices) {
      if (d.id != m.device) continue;
      EXPECT_LE(m.total_bytes, static_cast<uint64_t>(static_cast<double>(d.bytes_total) * (1 - margin)))
          << m.device;
    }
  }
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

TEST(AutoPlanner, SplitsStoriesThatFitsNoSingleDevice) {
  auto model = test::load_stories();
  if (!model) GTEST_FAIL() << "stories260K.gguf missing";
  const std::vector<DeviceInfo> devices = {test::device("gpu0", 1 << 20, 100, 10, 10, 10, 0, 2),
                                                 test::device("gpu1", 1 << 20, 100, 10, 10, 10, 0, 2)};
  AutoPlanOptions o;
  o.n_ctx = 128;
  o.max_batch = 8;
  o.kv_type = kernels::DType::F32;  // the byte counts below are for an f32 KV cache
  // One device would need 1,366,912 B (see test_memory_estimate): more than 1 MiB.
  for (PlanGoal goal : {PlanGoal::FitMemory, PlanGoal::BalanceSpeed, PlanGoal::FewestTransfers}) {
    o.goal = goal;
    auto r = auto_plan(model->config(), model->weights(), devices, o);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    ASSERT_EQ(r->memory.devices.size(), 2u) << plan_goal_name(goal);
    expect_under_margin(*r, devices, 0.05);
    const auto d = layer_devices(r->placement);
    // Contiguous: gpu0 first, then gpu1.
    const int64_t on0 = count(r->placement, "gpu0");
    EXPECT_GE(on0, 1);
    EXPECT_LE(on0, 4);
    for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(d[i], i < on0 ? "gpu0" : "gpu1");
    EXPECT_EQ(r->placement.embedding.devices[0], "gpu0");
    EXPECT_EQ(r->placement.head.devices[0], "gpu1");
    EXPECT_EQ(r->placement.n_ctx, 128);
    EXPECT_EQ(r->explanation.size(), 3u);
  }
  // Fit memory fills gpu0 first: emb + 3 blocks = 804,480 B <= 996,147; a 4th would need 1,018,048.
  o.goal = PlanGoal::FitMemory;
  auto fit = auto_plan(model->config(), model->weights(), devices, o);
  ASSERT_TRUE(fit.ok());
  EXPECT_EQ(count(fit->placement, "gpu0"), 3);
  EXPECT_NE(fit->explanation[0].find("gpu0: layers 0-2 + embedding"), std::string::npos) << joined(fit->explanation);
  EXPECT_NE(fit->explanation[0].find("full at"), std::string::npos) << joined(fit->explanation);
}

TEST(AutoPlanner, BalancePrefersTheFasterDevice) {
  auto m = test::synthetic_model(8);
  // "slow" comes first in the preference order but reads at a tenth of the speed.
  const std::vector<DeviceInfo> devices = {test::device("slow", 1 << 30, 100),
                                                 test::device("fast", 1 << 30, 1000)};
  AutoPlanOptions o;
  o.n_ctx = 64;
  auto r = auto_plan(m.config, m.weights, devices, o);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->placement.devices(), std::vector<std::string>{"fast"});
  EXPECT_EQ(r->cost.stages.size(), 1u);
  const std::string text = joined(r->explanation);
  EXPECT_NE(text.find("slow: unused"), std::string::npos) << text;
  EXPECT_NE(text.find("fast: layers 0-7 + embedding + head"), std::string::npos) << text;
  EXPECT_NE(text.find("fastest device: all layers fit"), std::string::npos) << text;
  // Fit memory ignores speed: the first device in order takes everything.
  o.goal = PlanGoal::FitMemory;
  auto fit = auto_plan(m.config, m.weights, devices, o);
  ASSERT_TRUE(fit.ok());
  EXPECT_EQ(fit->placement.devices(), std::vector<std::string>{"slow"});
}

TEST(AutoPlanner, BalanceFillsTheFastDeviceWhenItIsSmall) {
  auto m = test::synthetic_model(8);
  // "fast" holds exactly blocks 5-7 and the head (its capacity is what they need).
  std::vector<DeviceInfo> devices = {test::device("slow", 1 << 30, 100), test::device("fast", 1 << 30, 1000)};
  Placement three;
  three.n_ctx = 64;
  three.layers.resize(8);
  for (int i = 0; i < 8; ++i) three.layers[i].target.devices = {i < 5 ? "slow" : "fast"};
  three.embedding.devices = {"slow"};
  three.head.devices = {"fast"};
  auto need = estimate_memory(three, m.config, m.weights, devices);
  ASSERT_TRUE(need.ok());
  devices[1].bytes_total = need->find("fast")->total_bytes;
  AutoPlanOptions o;
  o.n_ctx = 64;
  o.margin_fraction = 0.0;
  auto r = auto_plan(m.config, m.weights, devices, o);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  const auto d = layer_devices(r->placement);
  EXPECT_EQ(count(r->placement, "fast"), 3);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(d[i], i < 5 ? "slow" : "fast");
  EXPECT_EQ(r->placement.head.devices[0], "fast");
  expect_under_margin(*r, devices, 0.0);
  const std::string text = joined(r->explanation);
  EXPECT_NE(text.find("fast: layers 5-7 + head"), std::string::npos) << text;
  EXPECT_NE(text.find("full at"), std::string::npos) << text;

  // Fewest transfers: "slow" holds everything, so one stage, no transfer.
  o.goal = PlanGoal::FewestTransfers;
  auto one = auto_plan(m.config, m.weights, devices, o);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->placement.devices(), std::vector<std::string>{"slow"});
  EXPECT_EQ(one->cost.stages.size(), 1u);
  EXPECT_GT(one->cost.decode_ms_per_token, r->cost.decode_ms_per_token);
}

TEST(AutoPlanner, SeveralSequencesBalanceTheStages) {
  auto m = test::synthetic_model(8);
  const std::vector<DeviceInfo> devices = {test::device("a", 1 << 30, 100), test::device("b", 1 << 30, 100)};
  AutoPlanOptions o;
  o.n_ctx = 64;
  o.n_seq = 4;
  auto r = auto_plan(m.config, m.weights, devices, o);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  // Balanced by time, not by blocks: per row of a 2-row micro-batch a block takes 0.0135 ms
  // (half its weights, its activations), the head on b 0.0156 ms (half its weights, then each
  // row's logits to the host with the link's 10 us), so b takes 3 blocks and the head.
  EXPECT_EQ(count(r->placement, "a"), 5);
  EXPECT_EQ(count(r->placement, "b"), 3);
  EXPECT_EQ(r->placement.head.devices[0], "b");
  EXPECT_EQ(r->cost.stages.size(), 2u);
  // Pipelined: 4 tokens per 4 x slowest stage, better than one stage's 4 tokens per 4 x sum.
  EXPECT_GT(r->cost.decode_tokens_per_s, 1.8 * 1000 / r->cost.decode_ms_per_token);

  // One sequence: the split buys nothing, one stage is within 3% (it is faster: no transfer).
  o.n_seq = 1;
  auto single = auto_plan(m.config, m.weights, devices, o);
  ASSERT_TRUE(single.ok());
  EXPECT_EQ(single->cost.stages.size(), 1u);
  EXPECT_EQ(single->placement.devices(), std::vector<std::string>{"a"});
}

TEST(AutoPlanner, EmbeddingFallsBackToTheCpu) {
  auto m = test::synthetic_model(8, 256, 512, 8, 8, /*n_vocab*/ 20000);  // embedding 20.48 MB
  const std::vector<DeviceInfo> cpu_only = {test::device("cpu", 1 << 30, 20, 1)};
  // Capacity of gpu0: exactly 8 blocks + head + KV + scratch (its share with the embedding on the CPU).
  Placement want;
  want.n_ctx = 64;
  want.layers.resize(8);
  for (auto& l : want.layers) l.target.devices = {"gpu0"};
  want.embedding.devices = {"cpu"};
  want.head.devices = {"gpu0"};
  std::vector<DeviceInfo> devices = {test::device("gpu0", 1 << 30, 1000), test::device("cpu", 1 << 30, 20, 1)};
  auto need = estimate_memory(want, m.config, m.weights, devices);
  ASSERT_TRUE(need.ok());
  devices[0].bytes_total = need->find("gpu0")->total_bytes;
  AutoPlanOptions o;
  o.n_ctx = 64;
  o.margin_fraction = 0.0;
  auto r = auto_plan(m.config, m.weights, devices, o);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->placement, want);
  EXPECT_EQ(r->memory.find("gpu0")->total_bytes, devices[0].bytes_total);
  EXPECT_EQ(r->cost.stages.size(), 2u);  // embedding on the CPU, then gpu0
  const std::string text = joined(r->explanation);
  EXPECT_NE(text.find("cpu: embedding"), std::string::npos) << text;
  EXPECT_NE(text.find("no room for the embedding"), std::string::npos) << text;
}

TEST(AutoPlanner, NothingFitsGivesShortfallAndLargestContext) {
  auto m = test::synthetic_model(8);  // weights ~21.9 MB; KV 2 KiB per position per block
  const std::vector<DeviceInfo> devices = {test::device("gpu0", 16 << 20), test::device("gpu1", 16 << 20)};
  AutoPlanOptions o;
  o.n_ctx = 4096;  // KV alone would be 64 MiB
  auto r = auto_plan(m.config, m.weights, devices, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::OutOfMemory);
  const std::string& msg = r.error().message;
  EXPECT_NE(msg.find("at ctx 4096 x 1 seq but devices hold 30.4 MiB with 5% of each kept free"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("gpu0 short "), std::string::npos) << msg;
  EXPECT_NE(msg.find("gpu1 short "), std::string::npos) << msg;
  std::smatch match;
  ASSERT_TRUE(std::regex_search(msg, match, std::regex("the largest context that fits is ([0-9]+)"))) << msg;
  const int64_t largest = std::stoll(match[1]);
  EXPECT_GT(largest, 16);
  EXPECT_LT(largest, 4096);
  o.n_ctx = largest;
  auto at = auto_plan(m.config, m.weights, devices, o);
  ASSERT_TRUE(at.ok()) << at.error().to_string();
  expect_under_margin(*at, devices, 0.05);
  o.n_ctx = largest + 1;
  EXPECT_FALSE(auto_plan(m.config, m.weights, devices, o).ok());
}

TEST(AutoPlanner, WeightsAloneTooBig) {
  auto m = test::synthetic_model(8);
  const std::vector<DeviceInfo> devices = {test::device("gpu0", 4 << 20), test::device("cpu", 4 << 20)};
  AutoPlanOptions o;
  o.n_ctx = 16;
  auto r = auto_plan(m.config, m.weights, devices, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::OutOfMemory);
  EXPECT_NE(r.error().message.find("no context fits"), std::string::npos) << r.error().message;
}

TEST(AutoPlanner, PreferenceOrderPutsTheCpuLast) {
  const auto order = preference_order({test::device("cpu", 1), test::device("gpu1", 1), test::device("gpu0", 1)});
  ASSERT_EQ(order.size(), 3u);
  EXPECT_EQ(order[0].id, "gpu1");
  EXPECT_EQ(order[1].id, "gpu0");
  EXPECT_EQ(order[2].id, "cpu");
  // A model that fits the GPU stays off the CPU even when the CPU is listed first.
  auto m = test::synthetic_model(4);
  AutoPlanOptions o;
  o.n_ctx = 64;
  o.goal = PlanGoal::FitMemory;
  auto r = auto_plan(m.config, m.weights, {test::device("cpu", 1 << 30, 20), test::device("gpu0", 1 << 30, 500)}, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->placement.devices(), std::vector<std::string>{"gpu0"});
}

TEST(AutoPlanner, RejectsBadOptions) {
  auto m = test::synthetic_model(2);
  const std::vector<DeviceInfo> devices = {test::device("a", 1 << 30)};
  AutoPlanOptions o;
  o.n_ctx = -5;
  EXPECT_EQ(auto_plan(m.config, m.weights, devices, o).error().code, Code::OutOfRange);
  o = {};
  o.n_seq = 300;
  EXPECT_NE(auto_plan(m.config, m.weights, devices, o).error().message.find("n_seq 300"), std::string::npos);
  o = {};
  o.margin_fraction = 1.0;
  EXPECT_NE(auto_plan(m.config, m.weights, devices, o).error().message.find("margin"), std::string::npos);
  o = {};
  EXPECT_NE(auto_plan(m.config, m.weights, {}, o).error().message.find("no devices"), std::string::npos);
  // n_ctx 0: min(n_ctx_train, 4096).
  auto r = auto_plan(m.config, m.weights, devices, AutoPlanOptions{});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->placement.n_ctx, 4096);
  EXPECT_EQ(parse_plan_goal("fewest-transfers").value(), PlanGoal::FewestTransfers);
  EXPECT_FALSE(parse_plan_goal("fast").ok());
}

}  // namespace
}  // namespace strata::plan
