// tests/engine/exec/test_moe.cpp — mixture-of-experts models (qwen3moe, Mixtral-style llama,
// qwen2moe) end to end on the cpu and sim devices:
// - the metadata and 3-D expert tensors are read as llama.cpp names them, with clear errors;
// - a prompt in one batch (tokens grouped by expert, each expert's matrices read once) gives the
//   logits of the same prompt fed one token at a time (n_tokens = 1 decode), within 1e-4
//   relative (max|a-b| / max|b|) with F32 weights: the same products summed in another order
//   (GEMM vs matrix-vector kernels) and carried through the KV cache; then the same greedy tokens;
// - a simulated GPU gives the CPU's greedy tokens and logits (it runs the CPU ops: bit for bit);
// - several sequences decoded in one batch give each sequence's one-at-a-time tokens;
// - the memory estimate equals the bytes the devices allocate, expert tensors included;
// - a tensor-parallel group on an MoE layer is refused, naming the layer;
// - the two public steps, moe_route on one device and moe_experts over expert ranges on two
//   others, add up to ffn_partial on one device (the interface placement below the layer uses).
// Logits against an independent NumPy forward pass: tests/reference/reference_forward.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>

#include "device_set.h"
#include "engine/arch/block_forward.h"
#include "engine/backend/device.h"
#include "engine/exec/pipeline.h"
#include "engine/exec/placed_weights.h"
#include "engine/exec/scratch_views.h"
#include "engine/exec/session.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/model/model.h"
#include "engine/model/random_model.h"
#include "engine/plan/memory_estimate.h"
#include "engine/plan/scratch_layout.h"
#include "test_support.h"
#include "engine/backend/registry/registry.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

struct MoeShape {
  model::Arch arch;
  std::string tag;
  int64_t experts, used, expert_ff, shared_ff;
};

const MoeShape kQwen3Moe{model::Arch::Qwen3Moe, "qwen3moe", 8, 2, 96, 0};
const MoeShape kMixtral{model::Arch::Llama, "mixtral", 4, 2, 0, 0};
const MoeShape kQwen2Moe{model::Arch::Qwen2Moe, "qwen2moe", 8, 4, 64, 128};

fs::path make(const MoeShape& s, const std::string& type = "f32") {
  const fs::path out = test::temp_dir("moe") / ("m-" + s.tag + "-" + type + ".gguf");
  if (fs::exists(out)) return out;
  auto vocab = gguf::GgufFile::open(test::shared_model("stories260K.gguf"));
  EXPECT_TRUE(vocab.ok());
  model::RandomModelSpec spec;
  spec.arch = s.arch;
  spec.n_embd = 128;
  spec.n_layers = 3;
  spec.n_heads = 4;
  spec.n_kv_heads = 2;
  spec.n_ff = 192;
  spec.n_ctx = 256;
  spec.n_expert = s.experts;
  spec.n_expert_used = s.used;
  spec.n_ff_exp = s.expert_ff;
  spec.n_ff_shexp = s.shared_ff;
  spec.type = type;
  spec.stddev = 0.08f;  // large enough that greedy choices and top-k picks are not near-ties
  spec.n_threads = 2;
  const Status st = model::write_random_model(spec, *vocab, out);
  EXPECT_TRUE(st.ok()) << st.error().to_string();
  return out;
}

std::unique_ptr<model::Model> load(const fs::path& p) {
  auto m = model::Model::load(p);
  EXPECT_TRUE(m.ok()) << m.error().to_string();
  return m.ok() ? std::move(*m) : nullptr;
}

int32_t argmax(const std::vector<float>& l) {
  return static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
}

double max_relative(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, static_cast<double>(std::fabs(a[i] - b[i])));
    scale = std::max(scale, static_cast<double>(std::fabs(b[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

// ---- configuration and weights ----------------------------------------------------------------

TEST(MoeModel, Qwen3MoeConfigAndExpertTensors) {
  auto m = load(make(kQwen3Moe));
  ASSERT_TRUE(m);
  const model::ModelConfig& c = m->config();
  EXPECT_EQ(c.arch, model::Arch::Qwen3Moe);
  EXPECT_TRUE(c.is_moe());
  EXPECT_EQ(c.n_expert, 8);
  EXPECT_EQ(c.n_expert_used, 2);
  EXPECT_EQ(c.n_ff_exp, 96);
  EXPECT_EQ(c.n_ff_shexp, 0);
  EXPECT_TRUE(c.expert_weights_norm);
  EXPECT_TRUE(c.has_qk_norm);
  EXPECT_EQ(c.rope_style, model::RopeStyle::Neox);
  EXPECT_EQ(c.ffn_width(), 96);
  const model::LayerWeights& l = m->weights().layers[1];
  EXPECT_TRUE(l.is_moe());
  EXPECT_FALSE(l.w_gate.present() || l.w_up.present() || l.w_down.present());
  EXPECT_EQ(l.ffn_gate_inp.rows, 8);
  EXPECT_EQ(l.ffn_gate_inp.cols, 128);
  EXPECT_EQ(l.ffn_gate_exps.n_mats, 8);
  EXPECT_EQ(l.ffn_gate_exps.rows, 96);
  EXPECT_EQ(l.ffn_gate_exps.cols, 128);
  EXPECT_EQ(l.ffn_down_exps.rows, 128);
  EXPECT_EQ(l.ffn_down_exps.cols, 96);
  // F32: 96 rows of 128 floats per expert, 8 experts.
  EXPECT_EQ(l.ffn_up_exps.mat_stride, 96u * 128u * 4u);
  EXPECT_EQ(l.ffn_up_exps.n_bytes, 8u * 96u * 128u * 4u);
  EXPECT_EQ(l.expert_bytes(), 3u * 8u * 96u * 128u * 4u);
  // Expert 5 of the merged tensor is the sixth block of bytes.
  const model::TensorView e5 = l.ffn_up_exps.mat(5);
  EXPECT_EQ(e5.data, l.ffn_up_exps.data + 5 * l.ffn_up_exps.mat_stride);
  EXPECT_EQ(e5.rows, 96);
  EXPECT_EQ(e5.n_mats, 1);
  EXPECT_EQ(e5.n_bytes, l.ffn_up_exps.mat_stride);
  EXPECT_EQ(e5.name, "blk.1.ffn_up_exps.weight[5]");
}

TEST(MoeModel, MixtralStyleLlamaAndQwen2MoeSharedExpert) {
  auto mix = load(make(kMixtral));
  ASSERT_TRUE(mix);
  EXPECT_EQ(mix->config().arch, model::Arch::Llama);
  EXPECT_EQ(mix->config().n_expert, 4);
  EXPECT_EQ(mix->config().n_ff_exp, 192);  // llama's experts are feed_forward_length wide
  EXPECT_TRUE(mix->config().expert_weights_norm);
  EXPECT_FALSE(mix->weights().layers[0].ffn_gate_shexp.present());

  auto q2 = load(make(kQwen2Moe));
  ASSERT_TRUE(q2);
  const model::ModelConfig& c = q2->config();
  EXPECT_EQ(c.n_ff_exp, 64);
  EXPECT_EQ(c.n_ff_shexp, 128);
  EXPECT_FALSE(c.expert_weights_norm);  // qwen2moe keeps the softmax weights of the top k
  EXPECT_TRUE(c.has_shexp_gate);
  EXPECT_TRUE(c.has_qkv_bias);
  EXPECT_EQ(c.ffn_width(), 128);
  const model::LayerWeights& l = q2->weights().layers[2];
  EXPECT_EQ(l.ffn_gate_shexp.rows, 128);
  EXPECT_EQ(l.ffn_down_shexp.cols, 128);
  EXPECT_EQ(l.ffn_gate_inp_shexp.cols, 128);
  EXPECT_TRUE(l.bq.present());
}

// A copy of src with one metadata key set to `value` (u32) or one tensor left out.
fs::path altered(const fs::path& src, const std::string& tag, const std::string& key, uint32_t value,
                 const std::string& drop_tensor) {
  const fs::path out = test::temp_dir("moe") / ("bad-" + tag + ".gguf");
  auto f = gguf::GgufFile::open(src);
  EXPECT_TRUE(f.ok());
  gguf::GgufWriter w;
  for (const auto& [k, v] : f->metadata())
    if (k != "general.alignment" && k != key) w.set(k, v);
  if (!key.empty()) w.set_u32(key, value);
  for (const gguf::TensorInfo& t : f->tensors()) {
    if (t.name == drop_tensor) continue;
    const uint8_t* data = f->tensor_data(t);
    EXPECT_TRUE(w.add_tensor(t.name, t.type, t.dims, std::vector<uint8_t>(data, data + t.n_bytes)).ok());
  }
  EXPECT_TRUE(w.write(out).ok());
  return out;
}

TEST(MoeModel, BadMetadataAndMissingExpertTensorsAreNamed) {
  const fs::path good = make(kQwen3Moe);
  struct Case {
    std::string tag, key;
    uint32_t value;
    std::string drop, expect;
  };
  for (const Case& k : {Case{"used", "qwen3moe.expert_used_count", 9, "", "qwen3moe.expert_used_count"},
                        Case{"count", "qwen3moe.expert_count", 0, "", "qwen3moe.expert_count"},
                        Case{"ff", "qwen3moe.expert_feed_forward_length", 64, "", "blk.0.ffn_gate_exps.weight"},
                        Case{"drop", "", 0, "blk.2.ffn_down_exps.weight", "blk.2.ffn_down_exps.weight"},
                        Case{"router", "", 0, "blk.1.ffn_gate_inp.weight", "blk.1.ffn_gate_inp.weight"}}) {
    SCOPED_TRACE(k.tag);
    auto m = model::Model::load(altered(good, k.tag, k.key, k.value, k.drop));
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.error().message.find(k.expect), std::string::npos) << m.error().to_string();
  }
  // The shape error gives the numbers: expert_feed_forward_length 64 against tensors of 96.
  auto m = model::Model::load(altered(good, "ff", "qwen3moe.expert_feed_forward_length", 64, ""));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("[128, 96, 8], expected [128, 64, 8]"), std::string::npos)
      << m.error().to_string();
}

TEST(MoeModel, MakeModelRefusesBadExpertOptions) {
  struct Case {
    model::Arch arch;
    int64_t experts, used, shared_ff;
    std::string expect;
  };
  for (const Case& k : {Case{model::Arch::Qwen3Moe, 0, 0, 0, "needs --experts"},
                        Case{model::Arch::Gemma3, 8, 2, 0, "no mixture-of-experts form"},
                        Case{model::Arch::Qwen3Moe, 8, 9, 0, "--experts-used 9"},
                        Case{model::Arch::Qwen3Moe, 8, 2, 64, "only qwen2moe has a shared expert"}}) {
    model::RandomModelSpec spec;
    spec.arch = k.arch;
    spec.n_expert = k.experts;
    spec.n_expert_used = k.used;
    spec.n_ff_shexp = k.shared_ff;
    const Status st = model::validate(spec);
    ASSERT_FALSE(st.ok()) << k.expect;
    EXPECT_EQ(st.error().code, Code::InvalidArgument);
    EXPECT_NE(st.error().message.find(k.expect), std::string::npos) << st.error().to_string();
  }
}

// ---- the forward pass ---------------------------------------------------------------------------

constexpr int kSteps = 6;

struct Trajectory {
  std::vector<float> prompt_logits;  // after the last prompt token
  std::vector<int32_t> tokens;       // greedy continuation
  std::vector<std::vector<float>> logits;
};

// prompt in one eval (batched) or one token per eval (decode), then kSteps greedy decode steps.
Trajectory run(const model::Model& m, const std::string& devices, const std::string& device, const std::string& prompt,
        bool batched) {
  test::DeviceSet set = test::make_device_set(devices);
  auto p = exec::Pipeline::create(m, set.list(), exec::single_device_placement(m.config(), device, 128, 1, 64));
  EXPECT_TRUE(p.ok()) << p.error().to_string();
  Trajectory r;
  if (!p.ok()) return r;
  std::vector<float> logits(static_cast<size_t>(m.config().n_vocab));
  const std::vector<int32_t> ids = m.tokenizer().encode(prompt, true, true);
  auto eval = [&](std::span<const int32_t> t) {
    exec::Pipeline::Request q{0, t, logits.data()};
    const Status s = (*p)->eval(std::span<const exec::Pipeline::Request>(&q, 1));
    EXPECT_TRUE(s.ok()) << s.error().to_string();
  };
  if (batched) {
    eval(ids);
  } else {
    for (size_t i = 0; i < ids.size(); ++i) eval(std::span<const int32_t>(&ids[i], 1));
  }
  r.prompt_logits = logits;
  for (int step = 0; step < kSteps; ++step) {
    const int32_t next = argmax(logits);
    r.tokens.push_back(next);
    eval(std::span<const int32_t>(&next, 1));
    r.logits.push_back(logits);
  }
  return r;
}

const char* kPrompt = "Once upon a time there was a little dog who liked to run in the park with his friends";

class MoeForward : public ::testing::TestWithParam<MoeShape> {};

TEST_P(MoeForward, BatchedPromptEqualsTokenByTokenDecode) {
  ASSERT_TRUE(test::have(test::shared_model("stories260K.gguf")));
  auto m = load(make(GetParam()));
  ASSERT_TRUE(m);
  const Trajectory batched = run(*m, "cpu", "cpu", kPrompt, true);
  const Trajectory decode = run(*m, "cpu", "cpu", kPrompt, false);
  ASSERT_FALSE(batched.prompt_logits.empty());
  EXPECT_LE(max_relative(batched.prompt_logits, decode.prompt_logits), 1e-4);
  EXPECT_EQ(batched.tokens, decode.tokens);
  for (size_t k = 0; k < decode.logits.size(); ++k)
    EXPECT_LE(max_relative(batched.logits[k], decode.logits[k]), 1e-4) << "step " << k;
}

TEST_P(MoeForward, SimulatedGpuEqualsCpu) {
  ASSERT_TRUE(test::have(test::shared_model("stories260K.gguf")));
  auto m = load(make(GetParam()));
  ASSERT_TRUE(m);
  const Trajectory cpu = run(*m, "cpu", "cpu", kPrompt, true);
  const Trajectory sim = run(*m, "cpu,sim:gpu0:1GiB", "gpu0", kPrompt, true);
  EXPECT_EQ(sim.tokens, cpu.tokens);
  // The simulated device runs the CPU kernels on the same threads' worth of work: same values.
  EXPECT_LE(max_relative(sim.prompt_logits, cpu.prompt_logits), 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Archs, MoeForward, ::testing::Values(kQwen3Moe, kMixtral, kQwen2Moe),
                         [](const auto& info) { return info.param.tag; });

// Several sequences decoded in one eval (their tokens stacked: one router pass, experts grouped
// over all of them) against each alone.
TEST(MoeBatchedEval, SequencesTogetherEqualEachAlone) {
  ASSERT_TRUE(test::have(test::shared_model("stories260K.gguf")));
  auto m = load(make(kQwen3Moe));
  ASSERT_TRUE(m);
  const char* prompts[] = {"Once upon a time", "The cat sat on the mat and looked", "Lily", "A big red ball rolled"};
  constexpr int kSeqs = 4;
  const int64_t nv = m->config().n_vocab;
  test::DeviceSet set = test::make_device_set("cpu");
  auto p = exec::Pipeline::create(*m, set.list(), exec::single_device_placement(m->config(), "cpu", 128, kSeqs, 64));
  ASSERT_TRUE(p.ok()) << p.error().to_string();
  std::vector<std::vector<int32_t>> ids(kSeqs), together(kSeqs);
  std::vector<std::vector<float>> logits(kSeqs, std::vector<float>(static_cast<size_t>(nv)));
  std::vector<exec::Pipeline::Request> reqs(kSeqs);
  for (int i = 0; i < kSeqs; ++i) {
    ids[i] = m->tokenizer().encode(prompts[i], true, true);
    reqs[i] = {i, ids[i], logits[i].data()};
  }
  ASSERT_TRUE((*p)->eval(reqs).ok());
  std::vector<int32_t> next(kSeqs);
  for (int step = 0; step < kSteps; ++step) {
    for (int i = 0; i < kSeqs; ++i) {
      next[i] = argmax(logits[i]);
      together[i].push_back(next[i]);
      reqs[i] = {i, std::span<const int32_t>(&next[i], 1), logits[i].data()};
    }
    ASSERT_TRUE((*p)->eval(reqs).ok());
  }
  for (int i = 0; i < kSeqs; ++i) {
    const Trajectory alone = run(*m, "cpu", "cpu", prompts[i], true);
    EXPECT_EQ(together[i], alone.tokens) << prompts[i];
  }
}

// ---- placement -----------------------------------------------------------------------------------

TEST(MoePlacement, EstimateEqualsAllocatedBytesWithExperts) {
  ASSERT_TRUE(test::have(test::shared_model("stories260K.gguf")));
  for (const MoeShape& shape : {kQwen3Moe, kQwen2Moe}) {
    SCOPED_TRACE(shape.tag);
    auto m = load(make(shape, "q8_0"));
    ASSERT_TRUE(m);
    const model::ModelConfig& c = m->config();
    auto d = backend::make_devices("cpu,sim:gpu0:256MiB:overhead=1MiB,sim:gpu1:256MiB", 1, 20.0);
    ASSERT_TRUE(d.ok());
    std::vector<backend::Device*> list;
    std::vector<DeviceInfo> infos;
    for (auto& dev : *d) {
      list.push_back(dev.get());
      infos.push_back(dev->info());
    }
    plan::Placement p = exec::single_device_placement(c, "gpu0", 128, 2, 32);
    p.layers[2].target.devices = {"gpu1"};
    p.head.devices = {"gpu1"};
    auto est = plan::estimate_memory(p, c, m->weights(), infos);
    ASSERT_TRUE(est.ok()) << est.error().to_string();
    // Layers 0-1 on gpu0: their expert tensors are counted.
    uint64_t experts = 0;
    for (int l = 0; l < 2; ++l) experts += m->weights().layers[static_cast<size_t>(l)].expert_bytes();
    ASSERT_GT(experts, 0u);
    EXPECT_GE(est->find("gpu0")->weight_bytes, experts);
    auto pipeline = exec::Pipeline::create(*m, list, p);
    ASSERT_TRUE(pipeline.ok()) << pipeline.error().to_string();
    const auto actual = (*pipeline)->memory_by_device();
    for (const plan::DeviceMemory& want : est->devices) {
      SCOPED_TRACE(want.device);
      const backend::MemoryUse& got = actual.at(want.device);
      EXPECT_EQ(got.weights, want.weight_bytes);
      EXPECT_EQ(got.kv, want.kv_bytes);
      EXPECT_EQ(got.scratch, want.scratch_bytes);
    }
    // And it runs: same greedy tokens as on the CPU.
    std::vector<float> logits(static_cast<size_t>(c.n_vocab));
    const std::vector<int32_t> ids = m->tokenizer().encode(kPrompt, true, true);
    exec::Pipeline::Request q{0, ids, logits.data()};
    ASSERT_TRUE((*pipeline)->eval(std::span<const exec::Pipeline::Request>(&q, 1)).ok());
    const Trajectory cpu = run(*m, "cpu", "cpu", kPrompt, true);
    EXPECT_EQ(argmax(logits), argmax(cpu.prompt_logits));
  }
}

TEST(MoePlacement, TensorGroupOnAnMoeLayerIsRefusedNamingTheLayer) {
  ASSERT_TRUE(test::have(test::shared_model("stories260K.gguf")));
  auto m = load(make(kQwen3Moe));
  ASSERT_TRUE(m);
  const model::ModelConfig& c = m->config();
  auto d = backend::make_devices("cpu,sim:gpu0:256MiB,sim:gpu1:256MiB", 1, 20.0);
  ASSERT_TRUE(d.ok());
  std::vector<DeviceInfo> infos;
  for (auto& dev : *d) infos.push_back(dev->info());
  plan::Placement p = exec::single_device_placement(c, "gpu0", 128, 1, 32);
  p.layers[1].target = plan::Target{{"gpu0", "gpu1"}, {1, 1}};
  auto est = plan::estimate_memory(p, c, m->weights(), infos);
  ASSERT_FALSE(est.ok());
  EXPECT_EQ(est.error().code, Code::InvalidArgument);
  EXPECT_NE(est.error().message.find("layer 1"), std::string::npos) << est.error().to_string();
  EXPECT_NE(est.error().message.find("mixture-of-experts"), std::string::npos) << est.error().to_string();
}

// One device's BlockForward with its own ops and host scratch (cpu and sim memory is host memory).
struct DeviceBlock {
  std::unique_ptr<backend::Ops> ops;
  std::vector<float> scratch;
  std::unique_ptr<arch::BlockForward> block;
};

DeviceBlock block_on(backend::Device& d, const model::ModelConfig& c, int64_t max_batch) {
  DeviceBlock b;
  const plan::ScratchLayout layout = plan::scratch_layout(c, plan::whole_layer(c), true, false, max_batch, 16, 1, 1);
  b.scratch.assign(static_cast<size_t>(layout.floats()), 0.0f);
  backend::OpsWorkspace ws;
  ws.matmul_bytes = static_cast<size_t>(layout.matmul_bytes);
  ws.max_ctx = 16;
  ws.max_tokens = max_batch;
  auto ops = d.create_ops(ws);
  EXPECT_TRUE(ops.ok()) << ops.error().to_string();
  if (!ops.ok()) return b;
  b.ops = std::move(*ops);
  b.block = std::make_unique<arch::BlockForward>(c, *b.ops, exec::carve_scratch(b.scratch.data(), layout, 1), nullptr);
  return b;
}

TEST(MoeSplit, RouteOnOneDeviceAndExpertRangesOnTwoOthersAddUpToTheWholeFfn) {
  ASSERT_TRUE(test::have(test::shared_model("stories260K.gguf")));
  auto m = load(make(kQwen2Moe));  // 8 experts top-4 and a gated shared expert
  ASSERT_TRUE(m);
  const model::ModelConfig& c = m->config();
  const model::LayerWeights& layer = m->weights().layers[1];
  auto d = backend::make_devices("cpu,sim:gpu0:1GiB,sim:gpu1:1GiB", 1, 20.0);
  ASSERT_TRUE(d.ok());
  backend::Device& cpu = *(*d)[0];
  backend::Device& gpu0 = *(*d)[1];
  backend::Device& gpu1 = *(*d)[2];
  exec::BufferList keep;
  const int64_t n = 7, dim = c.n_embd;
  std::vector<float> hidden(static_cast<size_t>(n * dim));
  for (size_t i = 0; i < hidden.size(); ++i) hidden[i] = std::sin(0.37f * static_cast<float>(i)) * 2.0f;

  // The whole FFN on the CPU.
  auto whole = exec::place_shard(cpu, c, layer, plan::whole_layer(c), keep);
  ASSERT_TRUE(whole.ok()) << whole.error().to_string();
  DeviceBlock on_cpu = block_on(cpu, c, n);
  std::vector<float> want(static_cast<size_t>(n * dim));
  ASSERT_TRUE(on_cpu.block->ffn_partial(*whole, hidden.data(), n, want.data()).ok());

  // Route (and the shared expert) on the CPU; experts [0, 3) on gpu0 and [3, 8) on gpu1, each from
  // the routing's host copy of the normalised rows.
  exec::MoeRouting routing;
  routing.want_x_norm = true;
  std::vector<float> got(static_cast<size_t>(n * dim));
  ASSERT_TRUE(on_cpu.block->moe_route(*whole, hidden.data(), n, routing, got.data()).ok());
  ASSERT_EQ(routing.x_norm.size(), static_cast<size_t>(n * dim));
  ASSERT_EQ(routing.expert.size(), static_cast<size_t>(n * c.n_expert_used));
  for (int64_t t = 0; t < n; ++t) {  // qwen2moe: softmax weights, not renormalised, best first
    float sum = 0;
    for (int64_t j = 0; j < c.n_expert_used; ++j) {
      const float w = routing.weight[static_cast<size_t>(t * c.n_expert_used + j)];
      if (j > 0) {
        EXPECT_LE(w, routing.weight[static_cast<size_t>(t * c.n_expert_used + j - 1)]);
      }
      sum += w;
    }
    EXPECT_LT(sum, 1.0f) << "token " << t;
  }
  for (auto [dev, e0, e1] : {std::tuple<backend::Device*, int64_t, int64_t>{&gpu0, 0, 3}, {&gpu1, 3, 8}}) {
    SCOPED_TRACE(dev->id());
    plan::LayerShard shard = plan::whole_layer(c);
    shard.kv_head_end = 0;  // no attention here
    shard.expert_begin = e0;
    shard.expert_end = e1;
    const uint64_t before = dev->memory_use().weights;
    auto w = exec::place_shard(*dev, c, layer, shard, keep);
    ASSERT_TRUE(w.ok()) << w.error().to_string();
    EXPECT_EQ(dev->memory_use().weights - before, plan::shard_weight_bytes(c, layer, shard));
    EXPECT_EQ(w->ffn_gate_exps.n_mats, e1 - e0);
    DeviceBlock blk = block_on(*dev, c, n);
    std::vector<float> part(static_cast<size_t>(n * dim), 0.0f);
    ASSERT_TRUE(blk.block->moe_experts(*w, routing.x_norm.data(), routing, n, part.data()).ok());
    for (size_t i = 0; i < got.size(); ++i) got[i] += part[i];
  }
  // Tolerance: 1e-5 relative (max|a-b| / max|b|): the same products, the experts' rows summed
  // in another order.
  EXPECT_LE(max_relative(got, want), 1e-5);

  // A routing of another batch size is refused.
  std::vector<float> out(static_cast<size_t>(n * dim));
  const Status bad = on_cpu.block->moe_experts(*whole, routing.x_norm.data(), routing, n - 1, out.data());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, Code::InvalidArgument);
}

}  // namespace
}  // namespace strata
