// tests/engine/exec/test_part_placement.cpp — blocks placed in parts (docs/placement.md, "Parts
// of a block"): a block's attention on one device, its FFN part on another (and, for MoE models,
// its routed experts on a third or by ranges). Checked: the logits are bit-identical to one
// device's (every backend here runs the same CPU kernels, so moving a part changes where the
// arithmetic runs, not what it is); the memory estimate equals the bytes each part allocates on
// each device; the trace shows the parts' compute and the crossings between them.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "engine/backend/device.h"
#include "engine/exec/pipeline.h"
#include "engine/exec/session.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/model.h"
#include "engine/model/random_model.h"
#include "engine/plan/auto_planner.h"
#include "engine/plan/placement_options.h"
#include "engine/plan/memory_estimate.h"
#include "engine/plan/placement_parts.h"
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

Fixture load(const std::filesystem::path& path, const std::string& devices) {
  Fixture f;
  auto m = model::Model::load(path);
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().to_string());
  if (!m.ok()) return f;
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

// Greedy tokens and every step's logits of `steps` tokens after a prompt.
struct GreedyRun {
  std::vector<int32_t> tokens;
  std::vector<std::vector<float>> logits;
};

GreedyRun greedy(const model::Model& m, const Placement& p, const std::vector<backend::Device*>& devices,
           const std::vector<int32_t>& prompt, int steps, trace::Recorder* rec = nullptr) {
  GreedyRun r;
  auto pipeline = exec::Pipeline::create(m, devices, p, rec);
  EXPECT_TRUE(pipeline.ok()) << pipeline.error().to_string();
  if (!pipeline.ok()) return r;
  exec::Session s(**pipeline, 0);
  auto out = s.eval(prompt);
  const int64_t n_vocab = m.config().n_vocab;
  for (int i = 0; i < steps; ++i) {
    EXPECT_TRUE(out.ok()) << out.error().to_string();
    if (!out.ok()) return r;
    r.logits.emplace_back(*out, *out + n_vocab);
    const int32_t t = static_cast<int32_t>(std::max_element(*out, *out + n_vocab) - *out);
    r.tokens.push_back(t);
    out = s.eval(std::span<const int32_t>(&t, 1));
  }
  return r;
}

// Every device's bytes by use, and its weight bytes by part, as estimated and as allocated.
void expect_estimate_allocated(const plan::MemoryEstimate& estimate, const exec::Pipeline& pipeline) {
  const auto actual = pipeline.memory_by_device();
  const auto parts = pipeline.part_bytes_by_device();
  for (const plan::DeviceMemory& want : estimate.devices) {
    SCOPED_TRACE(want.device);
    const backend::MemoryUse& got = actual.at(want.device);
    EXPECT_EQ(got.weights, want.weight_bytes);
    EXPECT_EQ(got.kv, want.kv_bytes);
    EXPECT_EQ(got.scratch, want.scratch_bytes);
    EXPECT_EQ(got.overhead, want.overhead_bytes);
    const exec::PartBytes part = parts.count(want.device) ? parts.at(want.device) : exec::PartBytes{};
    EXPECT_EQ(part.attention, want.attention_bytes);
    EXPECT_EQ(part.ffn, want.ffn_bytes);
    EXPECT_EQ(part.experts, want.experts_bytes);
  }
}

// Attention of blocks 1-3 on gpu0, their FFN on gpu1; blocks 0 and 4 whole on gpu0.
Placement ffn_apart(const model::ModelConfig& c) {
  Placement p = exec::single_device_placement(c, "gpu0", 256, 1, 16);
  for (int64_t l = 1; l < 4 && l < c.n_layers; ++l) p.layers[static_cast<size_t>(l)].ffn_device = "gpu1";
  return p;
}

TEST(PartPlacement, FfnOnAnotherDeviceGivesTheSameLogits) {
  Fixture f = load(test::shared_model("stories260K.gguf"), "cpu,sim:gpu0:64MiB,sim:gpu1:64MiB");
  ASSERT_TRUE(f.model);
  const model::ModelConfig& c = f.model->config();
  const std::vector<int32_t> prompt = f.model->tokenizer().encode("Once upon a time", true, true);
  const GreedyRun one = greedy(*f.model, exec::single_device_placement(c, "gpu0", 256, 1, 16), f.list, prompt, 12);
  trace::Recorder rec;
  for (const auto& info : f.infos) rec.add_lane(info.id, info.simulated);
  const GreedyRun parts = greedy(*f.model, ffn_apart(c), f.list, prompt, 12, &rec);
  ASSERT_EQ(one.tokens.size(), 12u);
  EXPECT_EQ(parts.tokens, one.tokens);
  ASSERT_EQ(parts.logits.size(), one.logits.size());
  for (size_t i = 0; i < one.logits.size(); ++i) EXPECT_EQ(parts.logits[i], one.logits[i]) << "step " << i;
  // The trace: gpu1 computes blocks 1-3 (their FFN), and the hidden state crosses both ways.
  int32_t gpu0 = -1, gpu1 = -1;
  for (const auto& lane : rec.lanes()) {
    if (lane.name == "gpu0") gpu0 = lane.id;
    if (lane.name == "gpu1") gpu1 = lane.id;
  }
  std::set<int32_t> gpu1_layers;
  int to_gpu1 = 0, to_gpu0 = 0;
  for (const trace::Event& e : rec.snapshot()) {
    if (e.kind == trace::EventKind::Compute && e.lane == gpu1) gpu1_layers.insert(e.layer);
    if (e.kind == trace::EventKind::Transfer && e.lane == gpu0 && e.peer_lane == gpu1) {
      ++to_gpu1;
      EXPECT_EQ(e.bytes, static_cast<uint64_t>(e.n_tokens * c.n_embd) * sizeof(float));
    }
    if (e.kind == trace::EventKind::Transfer && e.lane == gpu1 && e.peer_lane == gpu0) ++to_gpu0;
  }
  EXPECT_EQ(gpu1_layers, (std::set<int32_t>{1, 2, 3}));
  // 13 evals (the prompt, then 12 tokens... the last one unread) x 3 blocks, each way.
  EXPECT_EQ(to_gpu1, 13 * 3);
  EXPECT_EQ(to_gpu0, 13 * 3);
}

TEST(PartPlacement, EstimateEqualsAllocatedBytesPerDeviceAndPart) {
  Fixture f = load(test::shared_model("stories260K.gguf"), "cpu,sim:gpu0:64MiB:overhead=1MiB,sim:gpu1:64MiB");
  ASSERT_TRUE(f.model);
  const model::ModelConfig& c = f.model->config();
  Placement p = ffn_apart(c);
  p.layers[4].ffn_device = "cpu";  // the CPU reads its part in place from the mapping
  auto estimate = plan::estimate_memory(p, c, f.model->weights(), f.infos);
  ASSERT_TRUE(estimate.ok()) << estimate.error().to_string();
  auto pipeline = exec::Pipeline::create(*f.model, f.list, p);
  ASSERT_TRUE(pipeline.ok()) << pipeline.error().to_string();
  expect_estimate_allocated(*estimate, **pipeline);
  // gpu1 holds FFN parts only, gpu0 the attention of every block and the FFN of 0 and 5+.
  const plan::DeviceMemory* gpu1 = estimate->find("gpu1");
  ASSERT_NE(gpu1, nullptr);
  EXPECT_EQ(gpu1->attention_bytes, 0u);
  EXPECT_GT(gpu1->ffn_bytes, 0u);
  EXPECT_EQ(gpu1->kv_bytes, 0u);
}

TEST(PartPlacement, PlanTableNamesEveryPart) {
  Fixture f = load(test::shared_model("stories260K.gguf"), "cpu,sim:gpu0:64MiB,sim:gpu1:64MiB");
  ASSERT_TRUE(f.model);
  const model::ModelConfig& c = f.model->config();
  const nlohmann::json j = plan::parts_json(ffn_apart(c), c, f.model->weights());
  ASSERT_EQ(j.size(), 3u) << j.dump();
  EXPECT_EQ(j[0]["layers"], "0");
  EXPECT_EQ(j[1]["layers"], "1-3");
  EXPECT_EQ(j[1]["attention"]["devices"], nlohmann::json::array({"gpu0"}));
  EXPECT_EQ(j[1]["ffn"]["devices"], nlohmann::json::array({"gpu1"}));
  EXPECT_FALSE(j[1].contains("experts"));  // a dense model
  const model::LayerWeights& l1 = f.model->weights().layers[1];
  EXPECT_EQ(j[1]["ffn"]["bytes"].get<uint64_t>(),
            3 * (l1.ffn_norm.n_bytes + l1.w_gate.n_bytes + l1.w_up.n_bytes + l1.w_down.n_bytes));
}


// A random qwen3moe model: 4 blocks of 16 experts, top-4, F32 weights (so the planner's byte
// counts are the tensors' own), 128-wide.
std::filesystem::path moe_model() {
  const auto out = test::temp_dir("parts") / "qwen3moe-16x4.gguf";
  if (std::filesystem::exists(out)) return out;
  auto vocab = gguf::GgufFile::open(test::shared_model("stories260K.gguf"));
  EXPECT_TRUE(vocab.ok());
  model::RandomModelSpec spec;
  spec.arch = model::Arch::Qwen3Moe;
  spec.n_embd = 128;
  spec.n_layers = 4;
  spec.n_heads = 4;
  spec.n_kv_heads = 2;
  spec.n_ff = 192;
  spec.n_ctx = 256;
  spec.n_expert = 16;
  spec.n_expert_used = 4;
  spec.n_ff_exp = 96;
  spec.type = "f32";
  spec.stddev = 0.08f;
  spec.n_threads = 2;
  const Status st = model::write_random_model(spec, *vocab, out);
  EXPECT_TRUE(st.ok()) << st.error().to_string();
  return out;
}

// Attention (and router) on gpu0; experts: blocks 0-1 all on the CPU, block 2 split 0-5 gpu0 /
// 6-15 cpu, block 3 with its FFN part on gpu1 and experts 0-9 on gpu1, 10-15 on the CPU.
Placement experts_apart(const model::ModelConfig& c) {
  Placement p = exec::single_device_placement(c, "gpu0", 256, 1, 16);
  p.layers[0].experts = {plan::ExpertRange{0, plan::kAllExperts, "cpu"}};
  p.layers[1].experts = {plan::ExpertRange{0, plan::kAllExperts, "cpu"}};
  p.layers[2].experts = {plan::ExpertRange{0, 6, "gpu0"}, plan::ExpertRange{6, plan::kAllExperts, "cpu"}};
  p.layers[3].ffn_device = "gpu1";
  p.layers[3].experts = {plan::ExpertRange{0, 10, "gpu1"}, plan::ExpertRange{10, 16, "cpu"}};
  return p;
}

TEST(PartPlacement, MoeExpertsOnTheCpuGiveTheSameTokensAndLogits) {
  Fixture f = load(moe_model(), "cpu,sim:gpu0:64MiB,sim:gpu1:64MiB");
  ASSERT_TRUE(f.model);
  const model::ModelConfig& c = f.model->config();
  ASSERT_TRUE(c.is_moe());
  const std::vector<int32_t> prompt = f.model->tokenizer().encode("Once upon a time there was", true, true);
  const GreedyRun one = greedy(*f.model, exec::single_device_placement(c, "gpu0", 256, 1, 16), f.list, prompt, 10);
  trace::Recorder rec;
  for (const auto& info : f.infos) rec.add_lane(info.id, info.simulated);
  const GreedyRun parts = greedy(*f.model, experts_apart(c), f.list, prompt, 10, &rec);
  ASSERT_EQ(one.tokens.size(), 10u);
  EXPECT_EQ(parts.tokens, one.tokens);
  ASSERT_EQ(parts.logits.size(), one.logits.size());
  // Experts split into ranges add their terms in another order: equal within float rounding.
  for (size_t i = 0; i < one.logits.size(); ++i)
    EXPECT_LT(test::relative_error(parts.logits[i], one.logits[i]), 1e-5) << "step " << i;
  // The CPU computes the experts of every block; gpu1 the FFN part of block 3 only.
  int32_t cpu = -1, gpu1 = -1;
  for (const auto& lane : rec.lanes()) {
    if (lane.name == "cpu") cpu = lane.id;
    if (lane.name == "gpu1") gpu1 = lane.id;
  }
  std::set<int32_t> cpu_layers, gpu1_layers;
  uint64_t into_cpu_bytes = 0;
  for (const trace::Event& e : rec.snapshot()) {
    if (e.kind == trace::EventKind::Compute && e.lane == cpu) cpu_layers.insert(e.layer);
    if (e.kind == trace::EventKind::Compute && e.lane == gpu1) gpu1_layers.insert(e.layer);
    if (e.kind == trace::EventKind::Transfer && e.peer_lane == cpu) into_cpu_bytes += e.bytes;
  }
  EXPECT_EQ(cpu_layers, (std::set<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(gpu1_layers, (std::set<int32_t>{3}));
  EXPECT_GT(into_cpu_bytes, 0u);
}

TEST(PartPlacement, MoeEstimateEqualsAllocatedBytesPerDeviceAndPart) {
  Fixture f = load(moe_model(), "cpu,sim:gpu0:64MiB:overhead=1MiB,sim:gpu1:64MiB");
  ASSERT_TRUE(f.model);
  const model::ModelConfig& c = f.model->config();
  const Placement p = experts_apart(c);
  auto estimate = plan::estimate_memory(p, c, f.model->weights(), f.infos);
  ASSERT_TRUE(estimate.ok()) << estimate.error().to_string();
  auto pipeline = exec::Pipeline::create(*f.model, f.list, p);
  ASSERT_TRUE(pipeline.ok()) << pipeline.error().to_string();
  expect_estimate_allocated(*estimate, **pipeline);
  const auto parts = (*pipeline)->part_bytes_by_device();
  // Independently of the estimate: the experts' bytes by device from the tensors themselves.
  const model::LayerWeights& l0 = f.model->weights().layers[0];
  const uint64_t per_expert = l0.ffn_gate_exps.mat_stride + l0.ffn_up_exps.mat_stride + l0.ffn_down_exps.mat_stride;
  EXPECT_EQ(parts.at("cpu").experts, (16 + 16 + 10 + 6) * per_expert);
  EXPECT_EQ(parts.at("gpu0").experts, 6 * per_expert);
  EXPECT_EQ(parts.at("gpu1").experts, 10 * per_expert);
  EXPECT_EQ(parts.at("gpu1").ffn, l0.ffn_norm.n_bytes + l0.ffn_gate_inp.n_bytes);
  EXPECT_EQ(parts.at("cpu").attention, 0u);
}

// gpt-oss's per-expert biases (and its router bias) travel with the experts: ranges of experts on
// three devices give the single device's tokens and logits (within the rounding of another order
// of the experts' sum), the estimate equals what the devices allocate, and each device's expert
// bytes are its experts' matrices and bias rows.
TEST(PartPlacement, GptOssExpertBiasesFollowTheirExperts) {
  const auto path = test::temp_dir("parts") / "gpt-oss-16x4.gguf";
  if (!std::filesystem::exists(path)) {
    auto vocab = gguf::GgufFile::open(test::shared_model("stories260K.gguf"));
    ASSERT_TRUE(vocab.ok());
    model::RandomModelSpec spec;
    spec.arch = model::Arch::GptOss;
    spec.n_embd = 128, spec.n_layers = 4, spec.n_heads = 4, spec.n_kv_heads = 2, spec.n_ff = 192;
    spec.n_ctx = 256, spec.sliding_window = 8, spec.n_expert = 16, spec.n_expert_used = 4, spec.n_ff_exp = 96;
    spec.type = "f32", spec.stddev = 0.08f, spec.n_threads = 2;
    const Status st = model::write_random_model(spec, *vocab, path);
    ASSERT_TRUE(st.ok()) << st.error().to_string();
  }
  Fixture f = load(path, "cpu,sim:gpu0:64MiB:overhead=1MiB,sim:gpu1:64MiB");
  ASSERT_TRUE(f.model);
  const model::ModelConfig& c = f.model->config();
  ASSERT_TRUE(c.has_moe_biases);
  const std::vector<int32_t> prompt = f.model->tokenizer().encode("Once upon a time there was", true, true);
  const GreedyRun one = greedy(*f.model, exec::single_device_placement(c, "gpu0", 256, 1, 16), f.list, prompt, 8);
  const GreedyRun parts = greedy(*f.model, experts_apart(c), f.list, prompt, 8);
  ASSERT_EQ(one.tokens.size(), 8u);
  EXPECT_EQ(parts.tokens, one.tokens);
  ASSERT_EQ(parts.logits.size(), one.logits.size());
  for (size_t i = 0; i < one.logits.size(); ++i)
    EXPECT_LT(test::relative_error(parts.logits[i], one.logits[i]), 1e-5) << "step " << i;

  const Placement p = experts_apart(c);
  auto estimate = plan::estimate_memory(p, c, f.model->weights(), f.infos);
  ASSERT_TRUE(estimate.ok()) << estimate.error().to_string();
  auto pipeline = exec::Pipeline::create(*f.model, f.list, p);
  ASSERT_TRUE(pipeline.ok()) << pipeline.error().to_string();
  expect_estimate_allocated(*estimate, **pipeline);
  const auto bytes = (*pipeline)->part_bytes_by_device();
  const model::LayerWeights& l0 = f.model->weights().layers[0];
  const uint64_t biases = (96 + 96 + 128) * sizeof(float);  // one expert's gate, up and down bias rows
  ASSERT_EQ(l0.ffn_gate_exps_b.mat_stride + l0.ffn_up_exps_b.mat_stride + l0.ffn_down_exps_b.mat_stride, biases);
  const uint64_t per_expert = l0.ffn_gate_exps.mat_stride + l0.ffn_up_exps.mat_stride + l0.ffn_down_exps.mat_stride + biases;
  EXPECT_EQ(bytes.at("cpu").experts, (16 + 16 + 10 + 6) * per_expert);
  EXPECT_EQ(bytes.at("gpu0").experts, 6 * per_expert);
  EXPECT_EQ(bytes.at("gpu1").experts, 10 * per_expert);
  // gpu1 holds block 3's FFN part: its norm (post_attention_norm.weight), router and router bias.
  EXPECT_EQ(bytes.at("gpu1").ffn, l0.ffn_norm.n_bytes + l0.ffn_gate_inp.n_bytes + l0.ffn_gate_inp_b.n_bytes);
}

TEST(PartPlacement, ExpertsOnCpuOptionAndOverridesGiveTheExactPlacement) {
  Fixture f = load(moe_model(), "cpu,sim:gpu0:64MiB,sim:gpu1:64MiB");
  ASSERT_TRUE(f.model);
  const model::ModelConfig& c = f.model->config();
  plan::PlacementRequest r;
  r.split_mode = plan::SplitMode::None;
  r.n_ctx = 256;
  r.experts_on_cpu = 2;
  auto p = plan::placement_from_options(c, f.model->weights(), f.infos, r);
  ASSERT_TRUE(p.ok()) << p.error().to_string();
  EXPECT_EQ(plan::to_json(*p)["layers"],
            nlohmann::json::parse(R"([{"layers": "0-1", "device": "gpu0", "experts": "cpu"},
                                      {"layers": "2-3", "device": "gpu0"}])"));
  // llama.cpp's -ot: every block's experts, and block 3's FFN part, by tensor name.
  r.experts_on_cpu = 0;
  auto ot = plan::parse_overrides({"blk\\.3\\.ffn_(gate_inp|norm)=gpu1,exps=CPU"});
  ASSERT_TRUE(ot.ok()) << ot.error().to_string();
  r.overrides = *ot;
  p = plan::placement_from_options(c, f.model->weights(), f.infos, r);
  ASSERT_TRUE(p.ok()) << p.error().to_string();
  EXPECT_EQ(plan::to_json(*p)["layers"],
            nlohmann::json::parse(R"([{"layers": "0-2", "device": "gpu0", "experts": "cpu"},
                                      {"layers": 3, "device": "gpu0", "ffn_device": "gpu1", "experts": "cpu"}])"));
  // A part whose tensors are sent to two devices is refused, naming both tensors.
  r.overrides = {"ffn_gate_exps=cpu", "ffn_up_exps=gpu1"};
  p = plan::placement_from_options(c, f.model->weights(), f.infos, r);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("blk.0.ffn_gate_exps.weight"), std::string::npos) << p.error().message;
  EXPECT_NE(p.error().message.find("blk.0.ffn_up_exps.weight"), std::string::npos) << p.error().message;
  // Experts on a dense model are refused.
  Fixture dense = load(test::shared_model("stories260K.gguf"), "cpu,sim:gpu0:64MiB");
  ASSERT_TRUE(dense.model);
  plan::PlacementRequest d;
  d.experts_on_cpu = -1;
  auto q = plan::placement_from_options(dense.model->config(), dense.model->weights(), dense.infos, d);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.error().message.find("dense FFN"), std::string::npos) << q.error().message;
}

TEST(PartPlacement, AutoPlannerMovesExpertsToTheCpuBeforeWholeBlocks) {
  // gpu0 holds the model without its experts, but not with them.
  Fixture f = load(moe_model(), "cpu:1GiB,sim:gpu0:3MiB");
  ASSERT_TRUE(f.model);
  const model::ModelConfig& c = f.model->config();
  const model::ModelWeights& w = f.model->weights();
  uint64_t experts = 0;
  for (const model::LayerWeights& l : w.layers) experts += plan::expert_range_bytes(c, l, 0, c.n_expert);
  ASSERT_GT(w.layers[0].n_bytes() * c.n_layers, 3u << 20) << "the whole model must not fit gpu0";
  ASSERT_LT(w.layers[0].n_bytes() * c.n_layers - experts, 2u << 20);
  plan::AutoPlanOptions o;
  o.n_ctx = 256;
  o.max_batch = 16;
  auto r = plan::auto_plan(c, w, f.infos, o);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  int64_t experts_on_cpu = 0;
  for (const plan::LayerPlacement& l : r->placement.layers) {
    EXPECT_EQ(l.target.devices, std::vector<std::string>{"gpu0"}) << "no whole block on the CPU";
    if (!l.experts.empty()) {
      ++experts_on_cpu;
      EXPECT_EQ(l.experts[0].device, "cpu");
    }
  }
  EXPECT_GT(experts_on_cpu, 0) << plan::to_json(r->placement).dump() << "\n" << r->explanation[0];
  // The first blocks' experts move, as few as fit.
  for (int64_t i = 0; i < experts_on_cpu; ++i) EXPECT_FALSE(r->placement.layers[static_cast<size_t>(i)].experts.empty());
  ASSERT_FALSE(r->explanation.empty());
  EXPECT_EQ(r->explanation[0].rfind("experts first:", 0), 0u) << r->explanation[0];
  EXPECT_TRUE(plan::check_fits(r->memory, o.margin_fraction).ok());
  // And it runs: the same greedy tokens as the CPU alone.
  const std::vector<int32_t> prompt = f.model->tokenizer().encode("Once upon a time", true, true);
  const GreedyRun cpu = greedy(*f.model, exec::single_device_placement(c, "cpu", 256, 1, 16), f.list, prompt, 8);
  const GreedyRun planned = greedy(*f.model, r->placement, f.list, prompt, 8);
  EXPECT_EQ(planned.tokens, cpu.tokens);
}

}  // namespace
}  // namespace strata
