// tests/engine/plan/test_placement_validate.cpp — a placement checked against stories260K and a
// device list: one case per error, each with its message; valid plans pass.
#include <gtest/gtest.h>

#include <functional>

#include "engine/plan/placement_validate.h"
#include "plan_test_models.h"

namespace strata::plan {
namespace {

struct Case {
  const char* name;
  std::function<void(Placement&)> edit;
  Code code;
  const char* expect;  // substring; "" for a valid placement
};

Placement valid() {
  Placement p;
  p.n_ctx = 256;
  p.layers.resize(5);
  p.embedding.devices = {"gpu0"};
  for (int i = 0; i < 5; ++i) p.layers[i].target.devices = {i < 3 ? "gpu0" : "gpu1"};
  p.head.devices = {"gpu1"};
  return p;
}

class Validate : public ::testing::TestWithParam<Case> {};

TEST_P(Validate, Message) {
  auto model = test::load_stories();
  if (!model) GTEST_FAIL() << "stories260K.gguf missing";
  const std::vector<DeviceInfo> devices = {test::device("cpu", 1 << 30), test::device("gpu0", 1 << 30),
                                                 test::device("gpu1", 1 << 30), test::device("gpu2", 1 << 30),
                                                 test::device("gpu3", 1 << 30)};
  Placement p = valid();
  GetParam().edit(p);
  const Status s = validate_placement(p, model->config(), model->weights(), devices);
  if (std::string(GetParam().expect).empty()) {
    EXPECT_TRUE(s.ok()) << s.error().to_string();
    return;
  }
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, GetParam().code) << s.error().to_string();
  EXPECT_NE(s.error().message.find(GetParam().expect), std::string::npos)
      << "got '" << s.error().message << "', want '" << GetParam().expect << "'";
}

const Case kCases[] = {
    {"valid", [](Placement&) {}, Code::Ok, ""},
    {"valid_group_and_kv", [](Placement& p) {
       p.layers[2].target = Target{{"gpu0", "gpu1"}, {3, 1}};
       p.layers[4].kv_device = "cpu";
     }, Code::Ok, ""},
    {"unknown_layer_device", [](Placement& p) { p.layers[3].target.devices = {"gpu7"}; }, Code::NotFound,
     "layer 3: placement names device 'gpu7', which is not among: cpu, gpu0, gpu1, gpu2, gpu3"},
    {"unknown_group_member", [](Placement& p) { p.layers[1].target = Target{{"gpu0", "gpu9"}, {1, 1}}; },
     Code::NotFound, "device 'gpu9', which is not among"},
    {"unknown_kv_device", [](Placement& p) { p.layers[0].kv_device = "disk"; }, Code::NotFound,
     "layer 0 kv_device: placement names device 'disk'"},
    {"unknown_embedding", [](Placement& p) { p.embedding.devices = {"tpu"}; }, Code::NotFound,
     "embedding: placement names device 'tpu'"},
    {"unknown_head", [](Placement& p) { p.head.devices = {"tpu"}; }, Code::NotFound, "head: placement names"},
    {"embedding_group", [](Placement& p) { p.embedding = Target{{"gpu0", "gpu1"}, {1, 1}}; }, Code::InvalidArgument,
     "the embedding must be on one device, not a group of 2 (gpu0, gpu1)"},
    {"head_group", [](Placement& p) { p.head = Target{{"gpu0", "gpu1"}, {1, 1}}; }, Code::InvalidArgument,
     "the output head must be on one device, not a group of 2"},
    {"three_ways_ok", [](Placement& p) { p.layers[0].target = Target{{"cpu", "gpu0", "gpu1"}, {1, 1, 1}}; },
     Code::Ok, ""},
    {"too_many_ways", [](Placement& p) {
       p.layers[0].target = Target{{"cpu", "gpu0", "gpu1", "gpu2", "gpu3"}, {1, 1, 1, 1, 1}};
     }, Code::Unsupported, "layer 0: 4 head units and 172 FFN units cannot be shared by 5 devices"},
    {"ratio_count", [](Placement& p) { p.layers[0].target = Target{{"gpu0", "gpu1"}, {1}}; }, Code::InvalidArgument,
     "layer 0: 1 ratios for a group of 2 devices"},
    {"negative_ratio", [](Placement& p) { p.layers[4].target = Target{{"gpu0", "gpu1"}, {1, -1}}; },
     Code::InvalidArgument, "layer 4: ratio -1 of device 'gpu1' must be > 0"},
    {"repeated_member", [](Placement& p) { p.layers[4].target = Target{{"gpu0", "gpu0"}, {1, 1}}; },
     Code::InvalidArgument, "device 'gpu0' appears twice"},
    {"no_device", [](Placement& p) { p.layers[2].target.devices.clear(); }, Code::InvalidArgument, "layer 2: no device"},
    {"layer_count", [](Placement& p) { p.layers.pop_back(); }, Code::InvalidArgument,
     "placement has 4 layers, the model 5"},
    {"ctx_zero", [](Placement& p) { p.n_ctx = 0; }, Code::OutOfRange, "n_ctx 0 is outside 1..16777216"},
    {"ctx_huge", [](Placement& p) { p.n_ctx = (int64_t{1} << 24) + 1; }, Code::OutOfRange, "n_ctx 16777217"},
    {"ctx_max_ok", [](Placement& p) { p.n_ctx = int64_t{1} << 24; }, Code::Ok, ""},
    {"seq_zero", [](Placement& p) { p.n_seq = 0; }, Code::OutOfRange, "n_seq 0 is outside 1..256"},
    {"seq_257", [](Placement& p) { p.n_seq = 257; }, Code::OutOfRange, "n_seq 257"},
    {"batch_zero", [](Placement& p) { p.max_batch = 0; }, Code::OutOfRange, "max_batch 0 is outside 1..65536"},
    {"batch_big", [](Placement& p) { p.max_batch = 65537; }, Code::OutOfRange, "max_batch 65537"},
};

INSTANTIATE_TEST_SUITE_P(All, Validate, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ValidateDevices, DuplicateIdsAndEmptyList) {
  auto m = test::synthetic_model(2);
  Placement p;
  p.n_ctx = 16;
  p.layers.resize(2);
  for (auto& l : p.layers) l.target.devices = {"a"};
  p.embedding.devices = p.head.devices = {"a"};
  const Status dup = validate_placement(p, m.config, m.weights, {test::device("a", 1), test::device("a", 2)});
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.error().message.find("device id 'a' is given twice"), std::string::npos);
  const Status none = validate_placement(p, m.config, m.weights, {});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("not among: (no devices)"), std::string::npos) << none.error().message;
}

}  // namespace
}  // namespace strata::plan
