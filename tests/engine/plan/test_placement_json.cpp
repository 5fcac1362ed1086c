// tests/engine/plan/test_placement_json.cpp — placement JSON: round trips, compact ranges,
// stages, file load/save, and one case per structural parse error.
#include <gtest/gtest.h>

#include <fstream>

#include "engine/plan/placement.h"
#include "test_support.h"

namespace strata::plan {
namespace {

using nlohmann::json;

// The example of docs/placement.md, for a 22-layer model.
const char* kExample = R"({ "version": 1, "n_ctx": 2048, "n_seq": 1, "max_batch": 256,
  "embedding": {"device": "gpu0"},
  "layers": [ {"layers": "0-17", "device": "gpu0"},
              {"layers": "18-20", "group": ["gpu0", "gpu1"], "ratio": [2, 1]},
              {"layers": 21, "device": "cpu", "kv_device": "cpu"} ],
  "head": {"device": "gpu1"} })";

TEST(PlacementJson, ParsesTheDocumentedExample) {
  auto p = placement_from_json(json::parse(kExample), 22);
  ASSERT_TRUE(p.ok()) << p.error().to_string();
  EXPECT_EQ(p->n_ctx, 2048);
  EXPECT_EQ(p->n_seq, 1);
  EXPECT_EQ(p->max_batch, 256);
  EXPECT_EQ(p->embedding.devices, std::vector<std::string>{"gpu0"});
  EXPECT_EQ(p->head.devices, std::vector<std::string>{"gpu1"});
  ASSERT_EQ(p->layers.size(), 22u);
  for (int i = 0; i <= 17; ++i) {
    EXPECT_EQ(p->layers[i].target.devices, std::vector<std::string>{"gpu0"}) << i;
    EXPECT_TRUE(p->layers[i].kv_device.empty());
  }
  for (int i = 18; i <= 20; ++i) {
    EXPECT_EQ(p->layers[i].target.devices, (std::vector<std::string>{"gpu0", "gpu1"}));
    EXPECT_EQ(p->layers[i].target.ratio, (std::vector<double>{2.0, 1.0}));
  }
  EXPECT_EQ(p->layers[21].target.devices, std::vector<std::string>{"cpu"});
  EXPECT_EQ(p->layers[21].kv_device, "cpu");
  EXPECT_EQ(p->devices(), (std::vector<std::string>{"gpu0", "gpu1", "cpu"}));

  const auto stages = stages_of(*p);
  ASSERT_EQ(stages.size(), 3u);
  EXPECT_EQ(stages[0].first_layer, 0);
  EXPECT_EQ(stages[0].end_layer, 18);
  EXPECT_EQ(stages[1].first_layer, 18);
  EXPECT_EQ(stages[1].end_layer, 21);
  EXPECT_TRUE(stages[1].target.is_group());
  EXPECT_EQ(stages[2].first_layer, 21);
  EXPECT_EQ(stages[2].end_layer, 22);
  EXPECT_EQ(stages[2].kv_device, "cpu");
}

TEST(PlacementJson, RoundTripIsExactAndCompact) {
  auto p = placement_from_json(json::parse(kExample), 22);
  ASSERT_TRUE(p.ok());
  const json j = to_json(*p);
  EXPECT_EQ(j, json::parse(kExample));  // same ranges, same fields
  auto again = placement_from_json(j, 22);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *p);
}

// swa_full: false by default and then not written; true round-trips; anything but a boolean is
// refused by name.
TEST(PlacementJson, SwaFullIsABooleanWrittenOnlyWhenSet) {
  json j = json::parse(kExample);
  auto p = placement_from_json(j, 22);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->swa_full);
  EXPECT_FALSE(to_json(*p).contains("swa_full"));
  j["swa_full"] = true;
  auto full = placement_from_json(j, 22);
  ASSERT_TRUE(full.ok()) << full.error().to_string();
  EXPECT_TRUE(full->swa_full);
  EXPECT_EQ(to_json(*full), j);
  EXPECT_NE(*full, *p);
  j["swa_full"] = 1;
  auto bad = placement_from_json(j, 22);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "placement: 'swa_full' must be true or false, not an integer");
}

TEST(PlacementJson, ToJsonMergesConsecutiveEqualLayersOnly) {
  Placement p;
  p.n_ctx = 512;
  p.embedding.devices = {"a"};
  p.head.devices = {"b"};
  p.layers.resize(7);
  for (int i : {0, 1, 2}) p.layers[i].target.devices = {"a"};
  p.layers[3].target.devices = {"a"};
  p.layers[3].kv_device = "cpu";  // different KV device: its own entry
  for (int i : {4, 5}) p.layers[i].target.devices = {"b"};
  p.layers[6].target.devices = {"a"};  // back on a: not merged with 0-2
  const json j = to_json(p);
  const json expect = json::parse(R"([{"layers": "0-2", "device": "a"},
    {"layers": 3, "device": "a", "kv_device": "cpu"}, {"layers": "4-5", "device": "b"},
    {"layers": 6, "device": "a"}])");
  EXPECT_EQ(j["layers"], expect);
  EXPECT_EQ(stages_of(p).size(), 4u);
  auto back = placement_from_json(j, 7);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, p);
}

TEST(PlacementJson, DefaultsAndEqualGroupRatio) {
  auto p = placement_from_json(json::parse(R"({"version": 1, "n_ctx": 64, "embedding": {"device": "x"},
    "layers": [{"layers": "0-1", "group": ["x", "y"]}], "head": {"device": "y"}})"),
                               2);
  ASSERT_TRUE(p.ok()) << p.error().to_string();
  EXPECT_EQ(p->n_seq, 1);
  EXPECT_EQ(p->max_batch, 256);
  EXPECT_EQ(p->layers[1].target.ratio, (std::vector<double>{1.0, 1.0}));
}

TEST(PlacementJson, FileSaveAndLoad) {
  auto p = placement_from_json(json::parse(kExample), 22);
  ASSERT_TRUE(p.ok());
  const auto path = (test::temp_dir("placement") / "p.json").string();
  ASSERT_TRUE(save_placement_file(*p, path).ok());
  auto back = load_placement_file(path, 22);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(*back, *p);

  auto missing = load_placement_file(path + ".nope", 22);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, Code::Io);
  EXPECT_NE(missing.error().message.find("p.json.nope"), std::string::npos);

  { std::ofstream(path) << "{\"version\": 1,"; }
  auto broken = load_placement_file(path, 22);
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.error().message.find("not valid JSON"), std::string::npos) << broken.error().message;

  { std::ofstream(path) << R"({"version": 1, "n_ctx": 8, "embedding": {"device": "a"}, "layers": [], "head": {"device": "a"}})"; }
  auto empty = load_placement_file(path, 3);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message.find("layers 0-2 of 3 have no placement"), std::string::npos)
      << empty.error().message;
}

struct BadCase {
  const char* name;
  const char* layers;  // JSON of the "layers" array (22-layer model) or a whole document if starting with '{'
  const char* expect;  // substring of the error message
};

std::string document(const BadCase& c) {
  if (c.layers[0] == '{') return c.layers;
  return std::string(R"({"version": 1, "n_ctx": 2048, "embedding": {"device": "gpu0"}, "head": {"device": "gpu1"},
    "layers": )") + c.layers + "}";
}

class PlacementJsonError : public ::testing::TestWithParam<BadCase> {};

TEST_P(PlacementJsonError, ClearMessage) {
  const BadCase& c = GetParam();
  auto p = placement_from_json(json::parse(document(c)), 22);
  ASSERT_FALSE(p.ok()) << c.name;
  EXPECT_EQ(p.error().code, Code::InvalidArgument);
  EXPECT_NE(p.error().message.find(c.expect), std::string::npos)
      << c.name << ": got '" << p.error().message << "', want '" << c.expect << "'";
}

const BadCase kBadCases[] = {
    {"overlap", R"([{"layers": "0-6", "device": "gpu0"}, {"layers": "5-9", "device": "gpu1"},
                    {"layers": "10-21", "device": "gpu1"}])",
     "layers 5-9 overlap layers 0-6 at layer 5"},
    {"same_layer_twice", R"([{"layers": "0-21", "device": "gpu0"}, {"layers": 3, "device": "gpu1"}])",
     "layer 3 overlaps layers 0-21 at layer 3"},
    {"missing_one", R"([{"layers": "0-11", "device": "gpu0"}, {"layers": "13-21", "device": "gpu1"}])",
     "layer 12 of 22 has no placement"},
    {"missing_tail", R"([{"layers": "0-19", "device": "gpu0"}])", "layers 20-21 of 22 have no placement"},
    {"out_of_range", R"([{"layers": "0-22", "device": "gpu0"}])", "layers 0-22 out of range: the model has 22 layers (0-21)"},
    {"single_out_of_range", R"([{"layers": "0-21", "device": "gpu0"}, {"layers": 40, "device": "gpu0"}])",
     "layer 40 out of range"},
    {"negative_layer", R"([{"layers": -1, "device": "gpu0"}])", "layer -1 is negative"},
    {"negative_range", R"([{"layers": "-1-3", "device": "gpu0"}])", "starts with '-'"},
    {"reversed_range", R"([{"layers": "9-3", "device": "gpu0"}])", "'9-3' ends before it starts"},
    {"range_garbage", R"([{"layers": "0-x", "device": "gpu0"}])", "'x' is not a layer number"},
    {"range_float", R"([{"layers": 2.5, "device": "gpu0"}])", "must be a layer number or a range string"},
    {"negative_ratio", R"([{"layers": "0-21", "group": ["gpu0", "gpu1"], "ratio": [1, -2]}])",
     "'ratio'[1] is -2 for device 'gpu1'; ratios must be > 0"},
    {"zero_ratio", R"([{"layers": "0-21", "group": ["gpu0", "gpu1"], "ratio": [0, 1]}])", "'ratio'[0] is 0"},
    {"string_ratio", R"([{"layers": "0-21", "group": ["gpu0", "gpu1"], "ratio": ["2", 1]}])",
     "'ratio'[0] must be a number, not a string"},
    {"ratio_count", R"([{"layers": "0-21", "group": ["gpu0", "gpu1"], "ratio": [1, 2, 3]}])",
     "'ratio' has 3 values for a group of 2 devices"},
    {"ratio_not_array", R"([{"layers": "0-21", "group": ["gpu0", "gpu1"], "ratio": 2}])", "'ratio' must be an array"},
    {"ratio_without_group", R"([{"layers": "0-21", "device": "gpu0", "ratio": [1]}])", "'ratio' needs a 'group'"},
    {"repeated_device", R"([{"layers": "0-21", "group": ["gpu0", "gpu0"]}])", "device 'gpu0' appears twice in the group"},
    {"group_of_one", R"([{"layers": "0-21", "group": ["gpu0"]}])", "a 'group' needs at least 2 devices, has 1"},
    {"device_and_group", R"([{"layers": "0-21", "device": "gpu0", "group": ["gpu0", "gpu1"]}])",
     "either 'device' or 'group', not both"},
    {"no_target", R"([{"layers": "0-21"}])", "needs 'device' (one device) or 'group'"},
    {"device_not_string", R"([{"layers": "0-21", "device": 3}])", "'device' must be a device id string, not an integer"},
    {"empty_device", R"([{"layers": "0-21", "device": ""}])", "empty device id"},
    {"unknown_layer_field", R"([{"layers": "0-21", "device": "gpu0", "kv_devce": "cpu"}])",
     "unknown field 'kv_devce'"},
    {"no_layers_key", R"([{"device": "gpu0"}])", "layers[0]: missing 'layers'"},
    {"entry_not_object", R"([["0-21", "gpu0"]])", "layers[0] must be an object, not an array"},
    {"layers_not_array", R"({"version": 1, "n_ctx": 8, "embedding": {"device": "a"}, "layers": "0-21",
       "head": {"device": "a"}})",
     "'layers' must be an array, not a string"},
    {"unknown_top_field", R"({"version": 1, "n_ctx": 8, "n_sequences": 2, "embedding": {"device": "a"},
       "layers": [{"layers": "0-21", "device": "a"}], "head": {"device": "a"}})",
     "placement: unknown field 'n_sequences'"},
    {"unknown_embedding_field", R"({"version": 1, "n_ctx": 8, "embedding": {"device": "a", "kv": 1},
       "layers": [{"layers": "0-21", "device": "a"}], "head": {"device": "a"}})",
     "embedding: unknown field 'kv'"},
    {"missing_head", R"({"version": 1, "n_ctx": 8, "embedding": {"device": "a"},
       "layers": [{"layers": "0-21", "device": "a"}]})",
     "missing 'head'"},
    {"head_not_object", R"({"version": 1, "n_ctx": 8, "embedding": {"device": "a"},
       "layers": [{"layers": "0-21", "device": "a"}], "head": "a"})",
     "head must be an object"},
    {"missing_version", R"({"n_ctx": 8, "embedding": {"device": "a"},
       "layers": [{"layers": "0-21", "device": "a"}], "head": {"device": "a"}})",
     "missing 'version'"},
    {"version_2", R"({"version": 2, "n_ctx": 8, "embedding": {"device": "a"},
       "layers": [{"layers": "0-21", "device": "a"}], "head": {"device": "a"}})",
     "version 2 is not supported"},
    {"ctx_string", R"({"version": 1, "n_ctx": "2048", "embedding": {"device": "a"},
       "layers": [{"layers": "0-21", "device": "a"}], "head": {"device": "a"}})",
     "'n_ctx' must be an integer, not a string"},
    {"ctx_float", R"({"version": 1, "n_ctx": 20.5, "embedding": {"device": "a"},
       "layers": [{"layers": "0-21", "device": "a"}], "head": {"device": "a"}})",
     "'n_ctx' must be an integer, not a number"},
    {"missing_ctx", R"({"version": 1, "embedding": {"device": "a"},
       "layers": [{"layers": "0-21", "device": "a"}], "head": {"device": "a"}})",
     "missing 'n_ctx'"},
    {"not_object", R"({"x": [1]})", "unknown field 'x'"},
};

INSTANTIATE_TEST_SUITE_P(All, PlacementJsonError, ::testing::ValuesIn(kBadCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(PlacementJson, TopLevelMustBeObject) {
  auto p = placement_from_json(json::array(), 4);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("must be a JSON object, not an array"), std::string::npos) << p.error().message;
}

}  // namespace
}  // namespace strata::plan
