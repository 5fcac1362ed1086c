// tests/engine/model/test_deepseek2.cpp — deepseek2 (DeepSeek V2/V3, Kimi K2): what its file
// says and what Strata makes of it. The config and tensors of MLA, the dense leading blocks and
// DeepSeek's routing keys; YaRN's two factors as llama.cpp derives them; the KV cache of one latent
// plane (the memory estimate counts kv_lora_rank + rope dims per position, not keys and values of
// every head); the refusals (a tensor split of MLA, a file of the pre-split attn_kv_b layout); and
// the same bits whatever the batch and across a layer split. The logits themselves are checked
// against the NumPy forward by tests/reference/reference_forward.py (deepseek2 cases) and against
// llama.cpp by tests/reference/deepseek2_llamacpp_check.py (docs/models.md).
#include <gtest/gtest.h>

#include <cmath>

#include "device_set.h"
#include "engine/exec/pipeline.h"
#include "engine/exec/session.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/model/model.h"
#include "engine/model/random_model.h"
#include "engine/plan/memory_estimate.h"
#include "engine/plan/placement.h"
#include "engine/plan/placement_options.h"
#include "engine/plan/placement_validate.h"
#include "engine/plan/tensor_split.h"
#include "test_support.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

// DeepSeek V3's shape at toy size: queries through a rank-32 pair, a latent of 64 and 16 RoPE
// dims (cache rows of 80), query heads of 48, outputs of 32, a dense first block, 8 experts top-2
// in 4 groups of which 2 are used, sigmoid gating with the selection bias, weights times 2.5.
model::RandomModelSpec v3_spec() {
  model::RandomModelSpec s;
  s.arch = model::Arch::Deepseek2;
  s.n_embd = 64, s.n_layers = 3, s.n_heads = 4, s.n_kv_heads = 4, s.n_ff = 96, s.n_ctx = 256;
  s.q_lora_rank = 32, s.kv_lora_rank = 64, s.rope_dims = 16, s.head_dim = 48, s.v_head_dim = 32;
  s.n_expert = 8, s.n_expert_used = 2, s.n_ff_exp = 48, s.n_dense_lead = 1;
  s.expert_groups = 4, s.expert_groups_used = 2, s.expert_weights_scale = 2.5f;
  s.stddev = 0.1f;
  return s;
}

fs::path write(const model::RandomModelSpec& spec, const std::string& name) {
  const fs::path out = test::temp_dir("deepseek2") / (name + ".gguf");
  if (fs::exists(out)) return out;
  auto vocab = gguf::GgufFile::open(test::shared_model("stories260K.gguf"));
  EXPECT_TRUE(vocab.ok());
  const Status s = model::write_random_model(spec, *vocab, out);
  EXPECT_TRUE(s.ok()) << s.error().to_string();
  return out;
}

std::unique_ptr<model::Model> load(const fs::path& p) {
  auto m = model::Model::load(p);
  EXPECT_TRUE(m.ok()) << m.error().to_string();
  return m.ok() ? std::move(*m) : nullptr;
}

TEST(Deepseek2, ConfigTensorsAndRoutingKeys) {
  auto m = load(write(v3_spec(), "v3"));
  ASSERT_TRUE(m);
  const model::ModelConfig& c = m->config();
  EXPECT_TRUE(c.mla);
  EXPECT_EQ(c.head_dim, 80);  // the latent cache row: kv_lora_rank + rope dims
  EXPECT_EQ(c.n_kv_heads, 1);
  EXPECT_EQ(c.kv_planes(), 1);
  EXPECT_EQ(c.q_lora_rank, 32);
  EXPECT_EQ(c.kv_lora_rank, 64);
  EXPECT_EQ(c.head_dim_k_mla, 48);
  EXPECT_EQ(c.head_dim_v_mla, 32);
  EXPECT_EQ(c.rope_dims, 16);
  EXPECT_EQ(c.rope_style, model::RopeStyle::Interleaved);
  EXPECT_EQ(c.n_dense_lead, 1);
  EXPECT_EQ(c.n_ff_shexp, 48);  // one shared expert of expert_feed_forward_length units
  EXPECT_EQ(c.expert_gating, model::ExpertGating::Sigmoid);
  EXPECT_TRUE(c.expert_weights_norm);
  EXPECT_FLOAT_EQ(c.expert_weights_scale, 2.5f);
  EXPECT_EQ(c.n_expert_groups, 4);
  EXPECT_EQ(c.n_group_used, 2);
  EXPECT_FALSE(c.layer_is_moe(0));
  EXPECT_TRUE(c.layer_is_moe(1) && c.layer_is_moe(2));
  const auto& layers = m->weights().layers;
  // The dense first block: a SwiGLU FFN of n_ff units, no router.
  EXPECT_TRUE(layers[0].w_gate.present() && layers[0].w_down.present());
  EXPECT_EQ(layers[0].w_gate.rows, 96);
  EXPECT_FALSE(layers[0].ffn_gate_inp.present() || layers[0].exp_probs_b.present());
  for (size_t i = 0; i < layers.size(); ++i) {
    SCOPED_TRACE("block " + std::to_string(i));
    const model::LayerWeights& l = layers[i];
    EXPECT_FALSE(l.wq.present() || l.wk.present() || l.wv.present());
    EXPECT_EQ(l.wq_a.rows, 32);
    EXPECT_EQ(l.wq_b.rows, 4 * 48);
    EXPECT_EQ(l.wkv_a.rows, 64 + 16);
    EXPECT_EQ(l.kv_a_norm.cols, 64);
    EXPECT_EQ(l.wk_b.n_mats, 4);  // per head: [kv_lora][qk_nope]
    EXPECT_EQ(l.wk_b.rows, 64);
    EXPECT_EQ(l.wk_b.cols, 32);
    EXPECT_EQ(l.wv_b.n_mats, 4);  // per head: [v_head][kv_lora]
    EXPECT_EQ(l.wv_b.rows, 32);
    EXPECT_EQ(l.wv_b.cols, 64);
    EXPECT_EQ(l.wo.cols, 4 * 32);
    if (i > 0) {
      EXPECT_EQ(l.exp_probs_b.cols, 8);
      EXPECT_EQ(l.ffn_gate_exps.n_mats, 8);
      EXPECT_EQ(l.ffn_gate_shexp.rows, 48);
      EXPECT_FALSE(l.w_gate.present());
    }
  }
}

// llama.cpp's rule: with DeepSeek's log multiplier L, cos/sin keep rope.scaling.attn_factor and the
// scores take mscale^2 / sqrt(key_length_mla), mscale = 1 + 0.1 L ln(factor) (the file stores
// 0.1 L); without it, cos/sin get YaRN's 1 + 0.1 ln(factor) and so does mscale.
TEST(Deepseek2, YarnFactorsAsLlamaCppDerivesThem) {
  model::RandomModelSpec spec = v3_spec();
  spec.yarn_factor = 4.0f, spec.yarn_orig_ctx = 32, spec.yarn_log_mul = 0.0707f;
  auto with = load(write(spec, "yarn-logmul"));
  spec.yarn_log_mul = 0.0f;
  auto without = load(write(spec, "yarn-plain"));
  spec.yarn_factor = 0.0f;
  auto none = load(write(spec, "no-yarn"));
  ASSERT_TRUE(with && without && none);
  const double ln4 = std::log(4.0), sqrt48 = std::sqrt(48.0);
  EXPECT_FLOAT_EQ(with->config().rope_cos_sin_factor(), 1.0f);
  const double m_with = 1.0 + 0.0707 * ln4;
  EXPECT_NEAR(with->config().query_scale(), m_with * m_with / sqrt48, 1e-6);
  EXPECT_NEAR(without->config().rope_cos_sin_factor(), 1.0 + 0.1 * ln4, 1e-6);
  EXPECT_NEAR(without->config().query_scale(), (1.0 + 0.1 * ln4) * (1.0 + 0.1 * ln4) / sqrt48, 1e-6);
  EXPECT_FLOAT_EQ(none->config().rope_cos_sin_factor(), 1.0f);
  EXPECT_NEAR(none->config().query_scale(), 1.0 / sqrt48, 1e-7);
}

// One plane of latent rows per layer: 3 layers x 2 sequences x 1000 positions x 80 elements, not
// 2 x 4 heads x (48 + 32) as the same attention without MLA would keep.
TEST(Deepseek2, KvCacheIsOneLatentPlane) {
  auto m = load(write(v3_spec(), "v3"));
  ASSERT_TRUE(m);
  const model::ModelConfig& c = m->config();
  auto infos = backend::make_devices("cpu", 1, 20.0);
  ASSERT_TRUE(infos.ok());
  std::vector<DeviceInfo> devices{(*infos)[0]->info()};
  plan::Placement p = exec::single_device_placement(c, "cpu", 1000, 2, 64);
  p.kv_type = kernels::DType::F16;
  auto est = plan::estimate_memory(p, c, m->weights(), devices);
  ASSERT_TRUE(est.ok()) << est.error().to_string();
  EXPECT_EQ(est->devices[0].kv_bytes, 3ull * 2 * 1000 * 80 * 2);
  // The attention's weights count as the file holds them (MLA's shapes are not heads x head_dim).
  for (const model::LayerWeights& l : m->weights().layers) {
    EXPECT_EQ(plan::shard_attention_bytes(c, l, plan::whole_layer(c)), l.part_bytes(model::Part::Attention));
    EXPECT_EQ(plan::shard_weight_bytes(c, l, plan::whole_layer(c)), l.n_bytes());
  }
}

TEST(Deepseek2, TensorSplitAndPreSplitFilesAreRefusedByName) {
  auto m = load(write(v3_spec(), "v3"));
  ASSERT_TRUE(m);
  auto split = plan::split_layer(m->config(), m->weights().layers[0], {1.0, 1.0}, 0);
  ASSERT_FALSE(split.ok());
  EXPECT_EQ(split.error().code, Code::Unsupported);
  EXPECT_NE(split.error().message.find("MLA"), std::string::npos) << split.error().message;
  // A file with the older attn_kv_b (llama.cpp's converter before the k_b / v_b split).
  auto f = gguf::GgufFile::open(write(v3_spec(), "v3"));
  ASSERT_TRUE(f.ok());
  gguf::GgufWriter w;
  for (const auto& [key, value] : f->metadata())
    if (key != "general.alignment") w.set(key, value);
  for (const auto& t : f->tensors()) {
    const uint8_t* data = f->tensor_data(t);
    ASSERT_TRUE(w.add_tensor(t.name, t.type, t.dims, std::vector<uint8_t>(data, data + t.n_bytes)).ok());
  }
  ASSERT_TRUE(w.add_tensor("blk.0.attn_kv_b.weight", kernels::DType::F32, {64, 4 * (32 + 32)},
                           std::vector<uint8_t>(64 * 4 * 64 * sizeof(float), 0))
                  .ok());
  const fs::path old = test::temp_dir("deepseek2") / "kv_b.gguf";
  ASSERT_TRUE(w.write(old).ok());
  auto refused = model::Model::load(old);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, Code::Unsupported);
  EXPECT_NE(refused.error().message.find("attn_kv_b"), std::string::npos) << refused.error().message;
}

// A device whose attention kernel takes shorter KV rows than the model's (CUDA: 256; DeepSeek V3's
// latent rows: 576) gets the blocks' FFN and experts, the CPU their attention and latent cache,
// whether the plan comes from the split options or the auto-planner; a placement file that puts
// the attention there is refused by name.
TEST(Deepseek2, AttentionStaysOffDevicesThatCannotAttendOverItsRows) {
  auto m = load(write(v3_spec(), "v3"));
  ASSERT_TRUE(m);
  const model::ModelConfig& c = m->config();  // KV rows of 80
  auto made = backend::make_devices("cpu,sim:gpu0:8GiB", 1, 20.0);
  ASSERT_TRUE(made.ok());
  std::vector<DeviceInfo> devices;
  for (const auto& d : *made) devices.push_back(d->info());
  devices[1].caps.max_head_dim = 64;
  for (const char* how : {"", "auto"}) {
    SCOPED_TRACE(std::string("placement '") + how + "'");
    plan::PlacementRequest r;
    r.placement = how;
    r.n_ctx = 256;
    auto planned = plan::plan_from_options(c, m->weights(), devices, r);
    ASSERT_TRUE(planned.ok()) << planned.error().to_string();
    int64_t ffn_on_gpu = 0;
    for (const plan::LayerPlacement& l : planned->placement.layers) {
      EXPECT_EQ(l.target.devices, std::vector<std::string>{"cpu"});
      ffn_on_gpu += l.ffn_device == "gpu0";
    }
    EXPECT_EQ(ffn_on_gpu, c.n_layers);  // the rest of every block stays on the accelerator
    for (const plan::DeviceMemory& d : planned->memory.devices) {
      if (d.device == "gpu0") {
        EXPECT_EQ(d.kv_bytes, 0u);
        EXPECT_EQ(d.attention_bytes, 0u);
        EXPECT_GT(d.ffn_bytes + d.experts_bytes, 0u);
      }
    }
    bool said = false;
    for (const std::string& line : planned->explanation) said |= line.find("KV cache of blocks 0-2 on cpu") != std::string::npos;
    EXPECT_TRUE(said) << "the plan's explanation names the moved blocks";
  }
  plan::Placement p = exec::single_device_placement(c, "gpu0", 256, 1, 16);
  const Status refused = plan::validate_placement(p, c, m->weights(), devices);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, Code::Unsupported);
  EXPECT_NE(refused.error().message.find("heads of up to 64"), std::string::npos) << refused.error().message;
}

// Logits after the prompt and after each of 4 greedy steps.
std::vector<std::vector<float>> run(const model::Model& m, const test::DeviceSet& devices, const plan::Placement& p,
                                    const std::vector<int32_t>& prompt, int64_t piece) {
  std::vector<std::vector<float>> out;
  auto pipeline = exec::Pipeline::create(m, devices.list(), p);
  EXPECT_TRUE(pipeline.ok()) << pipeline.error().to_string();
  if (!pipeline.ok()) return out;
  exec::Session s(**pipeline, 0);
  const size_t nv = static_cast<size_t>(m.config().n_vocab);
  const float* l = nullptr;
  for (size_t at = 0; at < prompt.size();) {
    const size_t n = std::min<size_t>(static_cast<size_t>(piece), prompt.size() - at);
    auto e = s.eval(std::span<const int32_t>(prompt.data() + at, n));
    EXPECT_TRUE(e.ok()) << e.error().to_string();
    if (!e.ok()) return out;
    l = *e;
    at += n;
  }
  out.emplace_back(l, l + nv);
  for (int step = 0; step < 4; ++step) {
    const std::vector<float>& last = out.back();
    const int32_t next = static_cast<int32_t>(std::max_element(last.begin(), last.end()) - last.begin());
    auto e = s.eval(std::span<const int32_t>(&next, 1));
    EXPECT_TRUE(e.ok()) << e.error().to_string();
    if (!e.ok()) return out;
    out.emplace_back(*e, *e + nv);
  }
  return out;
}

// The same bits whether the prompt goes in one pass, 5 tokens a pass or one at a time, and when
// the blocks are split over two devices (the KV latent of each block on its own device).
TEST(Deepseek2, SameBitsForEveryBatchAndAcrossALayerSplit) {
  auto m = load(write(v3_spec(), "v3"));
  ASSERT_TRUE(m);
  const model::ModelConfig& c = m->config();
  const std::vector<int32_t> prompt = m->tokenizer().encode("Once upon a time, in a land far away, a fox", true, true);
  ASSERT_GE(prompt.size(), 10u);
  const test::DeviceSet cpu = test::make_device_set("cpu");
  const plan::Placement one = exec::single_device_placement(c, "cpu", 128, 1, 16);
  const auto want = run(*m, cpu, one, prompt, 16);
  ASSERT_EQ(want.size(), 5u);
  EXPECT_EQ(run(*m, cpu, one, prompt, 5), want);
  EXPECT_EQ(run(*m, cpu, one, prompt, 1), want);
  const test::DeviceSet two = test::make_device_set("cpu,sim:gpu0:1GiB,sim:gpu1:1GiB");
  plan::Placement split = one;
  split.embedding.devices = {"gpu0"};
  for (int64_t l = 0; l < c.n_layers; ++l)
    split.layers[static_cast<size_t>(l)].target.devices = {l < 2 ? "gpu0" : "gpu1"};
  split.head.devices = {"gpu1"};
  EXPECT_EQ(run(*m, two, split, prompt, 16), want);
}

// Three sequences evaluated together (their prompts in one eval, then every decode step of all
// three in one eval: their rows stacked in each block's products, the latent attention per
// sequence) give each sequence the bits it gets alone.
TEST(Deepseek2, SequencesTogetherGetTheBitsTheyGetAlone) {
  auto m = load(write(v3_spec(), "v3"));
  ASSERT_TRUE(m);
  const model::ModelConfig& c = m->config();
  const char* texts[] = {"Once upon a time", "The little dog ran to the park and", "A fox"};
  constexpr int kSeqs = 3, kSteps = 4;
  const size_t nv = static_cast<size_t>(c.n_vocab);
  auto argmax = [](const std::vector<float>& l) {
    return static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
  };
  // Alone: one sequence on its own pipeline; its logits after the prompt and each greedy step.
  std::vector<std::vector<std::vector<float>>> alone(kSeqs);
  for (int i = 0; i < kSeqs; ++i) {
    const test::DeviceSet cpu = test::make_device_set("cpu");
    auto p = exec::Pipeline::create(*m, cpu.list(), exec::single_device_placement(c, "cpu", 128, 1, 64));
    ASSERT_TRUE(p.ok()) << p.error().to_string();
    std::vector<int32_t> prompt = m->tokenizer().encode(texts[i], true, true);
    std::vector<float> logits(nv);
    exec::Pipeline::Request r{0, prompt, logits.data()};
    ASSERT_TRUE((*p)->eval(std::span<const exec::Pipeline::Request>(&r, 1)).ok());
    for (int step = 0; step < kSteps; ++step) {
      alone[i].push_back(logits);
      int32_t next = argmax(logits);
      r = {0, std::span<const int32_t>(&next, 1), logits.data()};
      ASSERT_TRUE((*p)->eval(std::span<const exec::Pipeline::Request>(&r, 1)).ok());
    }
  }
  // Together, each fed its own greedy tokens.
  const test::DeviceSet cpu = test::make_device_set("cpu");
  auto p = exec::Pipeline::create(*m, cpu.list(), exec::single_device_placement(c, "cpu", 128, kSeqs, 64));
  ASSERT_TRUE(p.ok()) << p.error().to_string();
  std::vector<std::vector<int32_t>> prompts(kSeqs);
  std::vector<std::vector<float>> logits(kSeqs, std::vector<float>(nv));
  std::vector<exec::Pipeline::Request> reqs(kSeqs);
  for (int i = 0; i < kSeqs; ++i) {
    prompts[i] = m->tokenizer().encode(texts[i], true, true);
    reqs[i] = {i, prompts[i], logits[i].data()};
  }
  ASSERT_TRUE((*p)->eval(reqs).ok());
  std::vector<int32_t> next(kSeqs);
  for (int step = 0; step < kSteps; ++step) {
    for (int i = 0; i < kSeqs; ++i) {
      EXPECT_EQ(logits[i], alone[i][static_cast<size_t>(step)]) << texts[i] << ", step " << step;
      next[i] = argmax(alone[i][static_cast<size_t>(step)]);
      reqs[i] = {i, std::span<const int32_t>(&next[i], 1), logits[i].data()};
    }
    ASSERT_TRUE((*p)->eval(reqs).ok());
  }
}

}  // namespace
}  // namespace strata
