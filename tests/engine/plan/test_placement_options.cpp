// tests/engine/plan/test_placement_options.cpp — llama.cpp-style requests on stories260K (5 blocks)
// over cpu + gpu0 + gpu1: split modes none / layer / tensor, split ratios, --gpu-layers, --kv-on-cpu,
// a placement file and "auto".
#include <gtest/gtest.h>

#include "engine/plan/placement_options.h"
#include "plan_test_models.h"

namespace strata::plan {
namespace {

using Ids = std::vector<std::string>;

class Options : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = test::load_stories();
    if (!model_) GTEST_FAIL() << "stories260K.gguf missing";
    // gpu0 has three times gpu1's capacity: the default layer split is 3:1.
    devices_ = {test::device("cpu", 1 << 30, 20, 1), test::device("gpu0", 3 << 20, 500),
                test::device("gpu1", 1 << 20, 500)};
  }
  Expected<Placement> place(const PlacementRequest& r) {
    return placement_from_options(model_->config(), model_->weights(), devices_, r);
  }
  static Ids layer_ids(const Placement& p) {
    Ids out;
    for (const auto& l : p.layers) out.push_back(l.target.is_group() ? "group" : l.target.devices[0]);
    return out;
  }
  std::unique_ptr<model::Model> model_;
  std::vector<DeviceInfo> devices_;
};

struct LayerCase {
  const char* name;
  int64_t gpu_layers;
  std::vector<double> ratio;
  Ids layers;
  std::string embedding, head;
};

class LayerSplit : public Options, public ::testing::WithParamInterface<LayerCase> {};

TEST_P(LayerSplit, Assignments) {
  const LayerCase& c = GetParam();
  PlacementRequest r;
  r.split_mode = SplitMode::Layer;
  r.gpu_layers = c.gpu_layers;
  r.split_ratio = c.ratio;
  auto p = place(r);
  ASSERT_TRUE(p.ok()) << p.error().to_string();
  EXPECT_EQ(layer_ids(*p), c.layers);
  EXPECT_EQ(p->embedding.devices[0], c.embedding);
  EXPECT_EQ(p->head.devices[0], c.head);
  EXPECT_EQ(p->n_ctx, 512);  // stories260K's n_ctx_train (under 4096)
  EXPECT_EQ(p->n_seq, 1);
  EXPECT_EQ(p->max_batch, 256);
}

const LayerCase kLayerCases[] = {
    // Default: everything offloaded, 3:1 by capacity: blocks b/5 < 0.75 -> gpu0 (0-3), 4 -> gpu1.
    {"all_by_capacity", -1, {}, {"gpu0", "gpu0", "gpu0", "gpu0", "gpu1"}, "gpu0", "gpu1"},
    {"all_1_1", -1, {1, 1}, {"gpu0", "gpu0", "gpu0", "gpu1", "gpu1"}, "gpu0", "gpu1"},
    {"all_0_1", -1, {0, 1}, {"gpu1", "gpu1", "gpu1", "gpu1", "gpu1"}, "gpu1", "gpu1"},
    // -ngl 3: the last 3 blocks offloaded (1:1 -> 2 on gpu0, 1 on gpu1); embedding and head on the CPU.
    {"ngl3", 3, {1, 1}, {"cpu", "cpu", "gpu0", "gpu0", "gpu1"}, "cpu", "cpu"},
    {"ngl0", 0, {}, {"cpu", "cpu", "cpu", "cpu", "cpu"}, "cpu", "cpu"},
    // -ngl 5 = every block, the head stays on the CPU; -ngl 6 (> blocks) offloads the head too.
    {"ngl5", 5, {1, 1}, {"gpu0", "gpu0", "gpu0", "gpu1", "gpu1"}, "cpu", "cpu"},
    {"ngl6", 6, {1, 1}, {"gpu0", "gpu0", "gpu0", "gpu1", "gpu1"}, "cpu", "gpu1"},
    {"ngl99", 99, {}, {"gpu0", "gpu0", "gpu0", "gpu0", "gpu1"}, "cpu", "gpu1"},
};

INSTANTIATE_TEST_SUITE_P(All, LayerSplit, ::testing::ValuesIn(kLayerCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST_F(Options, SplitModeNoneUsesTheMainDevice) {
  PlacementRequest r;
  r.split_mode = SplitMode::None;
  auto p = place(r);
  ASSERT_TRUE(p.ok()) << p.error().to_string();
  EXPECT_EQ(p->devices(), Ids{"gpu0"});
  r.main_device = "gpu1";
  p = place(r);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->devices(), Ids{"gpu1"});
  r.gpu_layers = 2;
  p = place(r);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(layer_ids(*p), (Ids{"cpu", "cpu", "cpu", "gpu1", "gpu1"}));
  EXPECT_EQ(p->head.devices[0], "cpu");
  r.main_device = "gpu5";
  p = place(r);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().code, Code::NotFound);
  EXPECT_NE(p.error().message.find("main device 'gpu5' is not among: cpu, gpu0, gpu1"), std::string::npos);
}

TEST_F(Options, SplitModeTensorGroupsEveryBlock) {
  PlacementRequest r;
  r.split_mode = SplitMode::Tensor;
  r.split_ratio = {3, 1};
  auto p = place(r);
  ASSERT_TRUE(p.ok()) << p.error().to_string();
  for (const auto& l : p->layers) {
    EXPECT_EQ(l.target.devices, (Ids{"gpu0", "gpu1"}));
    EXPECT_EQ(l.target.ratio, (std::vector<double>{3, 1}));
  }
  EXPECT_EQ(p->embedding.devices[0], "gpu0");
  EXPECT_EQ(p->head.devices[0], "gpu0");
  // -ngl 2 with tensor split: blocks 3-4 grouped, the rest on the CPU.
  r.gpu_layers = 2;
  p = place(r);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(layer_ids(*p), (Ids{"cpu", "cpu", "cpu", "group", "group"}));
  // A zero share leaves a device out: one device left, no group.
  r.gpu_layers = -1;
  r.split_ratio = {0, 1};
  p = place(r);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->layers[0].target, (Target{{"gpu1"}, {}}));
}

TEST_F(Options, KvOnCpu) {
  PlacementRequest r;
  r.kv_on_cpu = true;
  r.gpu_layers = 3;
  r.split_ratio = {1, 1};
  auto p = place(r);
  ASSERT_TRUE(p.ok()) << p.error().to_string();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(p->layers[i].kv_device, i < 2 ? "" : "cpu") << i;
  auto res = plan_from_options(model_->config(), model_->weights(), devices_, r);
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->memory.find("gpu0")->kv_bytes, 0u);
  EXPECT_EQ(res->memory.find("cpu")->kv_bytes, 5u * 2 * 512 * 32 * 2);  // f16 elements (the default)
}

TEST_F(Options, Errors) {
  PlacementRequest r;
  r.split_ratio = {1, 1, 1};
  auto p = place(r);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("split_ratio has 3 values for 2 accelerators (gpu0, gpu1)"), std::string::npos)
      << p.error().message;
  r.split_ratio = {0, 0};
  EXPECT_NE(place(r).error().message.find("all 0"), std::string::npos);
  r = {};
  r.gpu_layers = -2;
  EXPECT_NE(place(r).error().message.find("gpu_layers -2"), std::string::npos);
  // No CPU device: -ngl 2 leaves blocks with nowhere to go, --kv-on-cpu has no CPU.
  devices_.erase(devices_.begin());
  r = {};
  r.gpu_layers = 2;
  EXPECT_NE(place(r).error().message.find("no CPU device is given"), std::string::npos);
  r = {};
  r.kv_on_cpu = true;
  EXPECT_NE(place(r).error().message.find("kv_on_cpu needs a CPU device"), std::string::npos);
  // Only a CPU: everything on it.
  devices_ = {test::device("cpu", 1 << 30)};
  r = {};
  auto cpu = place(r);
  ASSERT_TRUE(cpu.ok()) << cpu.error().to_string();
  EXPECT_EQ(cpu->devices(), Ids{"cpu"});
}

TEST_F(Options, SizesAndFileAndAuto) {
  PlacementRequest r;
  r.n_ctx = 64;
  r.n_seq = 2;
  r.max_batch = 16;
  auto p = place(r);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->n_ctx, 64);
  EXPECT_EQ(p->n_seq, 2);
  EXPECT_EQ(p->max_batch, 16);

  const auto path = (test::temp_dir("options") / "plan.json").string();
  ASSERT_TRUE(save_placement_file(*p, path).ok());
  PlacementRequest f;
  f.placement = path;
  f.n_ctx = 128;  // overrides the file's 64; n_seq and max_batch stay the file's
  auto loaded = place(f);
  ASSERT_TRUE(loaded.ok()) << loaded.error().to_string();
  EXPECT_EQ(loaded->n_ctx, 128);
  EXPECT_EQ(loaded->n_seq, 2);
  EXPECT_EQ(loaded->layers, p->layers);
  f.placement = path + ".missing";
  EXPECT_EQ(place(f).error().code, Code::Io);

  PlacementRequest a;
  a.placement = "auto";
  a.n_ctx = 64;
  auto autop = place(a);
  ASSERT_TRUE(autop.ok()) << autop.error().to_string();
  AutoPlanOptions o;
  o.n_ctx = 64;
  auto direct = auto_plan(model_->config(), model_->weights(), devices_, o);
  ASSERT_TRUE(direct.ok());
  EXPECT_EQ(*autop, direct->placement);
  auto res = plan_from_options(model_->config(), model_->weights(), devices_, a);
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->explanation, direct->explanation);
}

// plan_that_fits: the default request falls back to the auto plan when the layer split does not fit
// (some blocks then stay on the CPU); a request with options does not; nothing that fits is an error.
TEST_F(Options, PlanThatFitsFallsBackToAutoForTheDefaultRequestOnly) {
  PlacementRequest r;
  r.n_ctx = 64;
  devices_ = {test::device("cpu", 1 << 30, 20, 1), test::device("gpu0", 1 << 30, 500), test::device("gpu1", 1 << 30, 500)};
  auto roomy = plan_that_fits(model_->config(), model_->weights(), devices_, r);
  ASSERT_TRUE(roomy.ok()) << roomy.error().to_string();
  auto asked = plan_from_options(model_->config(), model_->weights(), devices_, r);
  ASSERT_TRUE(asked.ok());
  EXPECT_EQ(roomy->placement, asked->placement) << "a default split that fits is kept";
  // Accelerators with room for about one block each: the layer split cannot fit, the CPU can help.
  const uint64_t block = model_->weights().layers[0].n_bytes();
  devices_ = {test::device("cpu", 1 << 30, 20, 1), test::device("gpu0", block * 3 / 2, 500),
              test::device("gpu1", block * 3 / 2, 500)};
  EXPECT_FALSE(check_fits(plan_from_options(model_->config(), model_->weights(), devices_, r)->memory).ok());
  auto fallback = plan_that_fits(model_->config(), model_->weights(), devices_, r);
  ASSERT_TRUE(fallback.ok()) << fallback.error().to_string();
  EXPECT_TRUE(check_fits(fallback->memory).ok());
  ASSERT_FALSE(fallback->explanation.empty());
  EXPECT_EQ(fallback->explanation[0].rfind("the default layer split does not fit (", 0), 0u) << fallback->explanation[0];
  EXPECT_NE(fallback->explanation[0].find("using the auto plan (balance)"), std::string::npos);
  // Asked for something in particular: no fallback.
  PlacementRequest none = r;
  none.split_mode = SplitMode::None;
  EXPECT_FALSE(is_default_request(none));
  auto refused = plan_that_fits(model_->config(), model_->weights(), devices_, none);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, Code::OutOfMemory);
  // No CPU and no room anywhere: OutOfMemory from the auto planner.
  devices_ = {test::device("gpu0", block / 2, 500), test::device("gpu1", block / 2, 500)};
  auto nothing = plan_that_fits(model_->config(), model_->weights(), devices_, r);
  ASSERT_FALSE(nothing.ok());
  EXPECT_EQ(nothing.error().code, Code::OutOfMemory);
}

TEST(ParseOptions, SplitModeAndRatio) {
  EXPECT_EQ(parse_split_mode("tensor").value(), SplitMode::Tensor);
  EXPECT_EQ(parse_split_mode("row").error().message, "split mode 'row' is not one of: none, layer, tensor");
  EXPECT_EQ(parse_split_ratio("3,1").value(), (std::vector<double>{3, 1}));
  EXPECT_EQ(parse_split_ratio("0.6/0.4").value(), (std::vector<double>{0.6, 0.4}));
  EXPECT_NE(parse_split_ratio("3,-1").error().message.find("-1 is negative"), std::string::npos);
  EXPECT_NE(parse_split_ratio("3,x").error().message.find("'x' is not a number"), std::string::npos);
  EXPECT_NE(parse_split_ratio("3,").error().message.find("'' is not a number"), std::string::npos);
}

}  // namespace
}  // namespace strata::plan

namespace strata::plan {
namespace {

// Issue 49: under mpirun `--devices r0:cpu,r1:cpu` with no placement put every block on rank 0.
// The default placement spreads the blocks over the named CPUs (by their memory, as the layer
// split does over GPUs), and the explanation says so.
TEST(RankCpus, DefaultPlacementSpreadsOverNamedCpus) {
  auto model = test::load_stories();
  ASSERT_TRUE(model) << "stories260K.gguf missing";
  std::vector<DeviceInfo> devices;
  for (int rank = 0; rank < 2; ++rank) {
    DeviceInfo d = test::device("cpu", 1 << 30, 20, 1);
    d.id = "r" + std::to_string(rank) + ":cpu";
    d.rank = rank;
    ASSERT_TRUE(d.caps.host_cpu);
    devices.push_back(d);
  }
  PlacementRequest r;
  auto res = plan_that_fits(model->config(), model->weights(), devices, r);
  ASSERT_TRUE(res.ok()) << res.error().message;
  std::vector<std::string> ids;
  for (const auto& l : res->placement.layers) ids.push_back(l.target.devices[0]);
  // 5 blocks, equal memory: blocks 0-2 on rank 0 (b / 5 < 1/2), 3-4 on rank 1.
  EXPECT_EQ(ids, (std::vector<std::string>{"r0:cpu", "r0:cpu", "r0:cpu", "r1:cpu", "r1:cpu"}));
  EXPECT_EQ(res->placement.embedding.devices[0], "r0:cpu");
  EXPECT_EQ(res->placement.head.devices[0], "r1:cpu");
  bool said = false;
  for (const std::string& line : res->explanation) said |= line.find("spread over the 2 CPUs named") != std::string::npos;
  EXPECT_TRUE(said);
  // One CPU: everything on it, as before.
  auto one = plan_that_fits(model->config(), model->weights(), {devices[0]}, r);
  ASSERT_TRUE(one.ok()) << one.error().message;
  for (const auto& l : one->placement.layers) EXPECT_EQ(l.target.devices[0], "r0:cpu");
}

}  // namespace
}  // namespace strata::plan
