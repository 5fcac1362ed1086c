// tests/engine/plan/test_straggler.cpp — compare_with_plan: measured block passes (trace events)
// against the cost model's time for the same passes, per device; a device over 2x its plan for
// at least 8 passes is a straggler. Synthetic F32 model (4 blocks) and hand-made events.
#include <gtest/gtest.h>

#include "engine/plan/cost_model.h"
#include "engine/plan/straggler.h"
#include "engine/plan/tensor_split.h"
#include "plan_test_models.h"

namespace strata::plan {
namespace {

// Blocks 0-1 on g0, 2-3 on g1.
Placement two_devices() {
  Placement p;
  p.n_ctx = 64;
  p.max_batch = 16;
  p.layers.resize(4);
  for (size_t l = 0; l < 4; ++l) p.layers[l].target.devices = {l < 2 ? "g0" : "g1"};
  p.embedding.devices = {"g0"};
  p.head.devices = {"g1"};
  return p;
}

trace::Event pass(int32_t lane, int32_t layer, int32_t n_tokens, double ms) {
  trace::Event e;
  e.lane = lane;
  e.kind = trace::EventKind::Compute;
  e.layer = layer;
  e.n_tokens = n_tokens;
  e.duration_ns = static_cast<int64_t>(ms * 1e6);
  return e;
}

TEST(Straggler, MeasuredAgainstPlannedPerDevice) {
  auto m = test::synthetic_model(4);
  const std::vector<DeviceInfo> devices = {test::device("g0", 1 << 30, 100, 10), test::device("g1", 1 << 30, 100, 10)};
  const std::vector<trace::LaneInfo> lanes = {{0, "g0", true}, {1, "g1", true}, {2, "host", false}};
  const double per_token = block_ms(m.config, m.weights.layers[0], whole_layer(m.config), true, devices[0], 1);
  const double per_token_batch8 = block_ms(m.config, m.weights.layers[0], whole_layer(m.config), true, devices[0], 8);
  std::vector<trace::Event> events;
  for (int i = 0; i < 6; ++i) {
    // g0: 1.1x its plan (decode passes); g1: 3x (decode) and 3x (an 8-token prompt pass).
    events.push_back(pass(0, i % 2, 1, 1.1 * per_token));
    events.push_back(pass(1, 2 + i % 2, 1, 3 * per_token));
  }
  events.push_back(pass(1, 2, 8, 3 * 8 * per_token_batch8));
  events.push_back(pass(1, 3, 8, 3 * 8 * per_token_batch8));
  // Not counted: a block g1 does not run alone, a host event, an event on a lane without a device.
  events.push_back(pass(1, 0, 1, 100));
  trace::Event sample = pass(2, -1, 1, 100);
  sample.kind = trace::EventKind::Sample;
  events.push_back(sample);
  events.push_back(pass(7, 2, 1, 100));

  const std::vector<DeviceSpeed> speeds = compare_with_plan(events, lanes, two_devices(), m.config, m.weights, devices);
  ASSERT_EQ(speeds.size(), 2u);
  EXPECT_EQ(speeds[0].device, "g0");
  EXPECT_EQ(speeds[0].passes, 6);
  EXPECT_NEAR(speeds[0].ratio(), 1.1, 1e-4);  // durations are whole ns
  EXPECT_FALSE(speeds[0].straggler);  // 1.1x, and only 6 passes
  EXPECT_EQ(speeds[1].device, "g1");
  EXPECT_EQ(speeds[1].passes, 8);
  EXPECT_NEAR(speeds[1].planned_ms, 6 * per_token + 16 * per_token_batch8, 1e-9);
  EXPECT_NEAR(speeds[1].ratio(), 3.0, 1e-4);
  EXPECT_TRUE(speeds[1].straggler);

  // Six passes at 3x (the decode ones only) are not yet enough evidence.
  events.resize(12);
  const std::vector<DeviceSpeed> fewer = compare_with_plan(events, lanes, two_devices(), m.config, m.weights, devices);
  ASSERT_EQ(fewer.size(), 2u);
  EXPECT_EQ(fewer[1].passes, 6);
  EXPECT_FALSE(fewer[1].straggler);
}

}  // namespace
}  // namespace strata::plan
