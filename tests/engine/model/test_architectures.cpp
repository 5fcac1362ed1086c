// tests/engine/model/test_architectures.cpp — what sets the architectures apart, read from GGUF
// metadata (gemma3's local/global layers, scales; phi3's fused tensors; qwen3's Q/K norms), the
// errors for what Strata does not know, and the KV cache types (f32 / f16 / q8_0): logits within
// stated tolerances of an f32 cache, and the memory each takes. The logits of every architecture
// against an independent NumPy forward pass are checked by tests/reference/reference_forward.py.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "engine/exec/session.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/model/arch_doc.h"
#include "engine/model/arch_table.h"
#include "engine/model/model.h"
#include "engine/model/random_model.h"
#include "engine/plan/memory_estimate.h"
#include "engine/plan/placement.h"
#include "engine/plan/placement_validate.h"
#include "engine/plan/tensor_split.h"
#include "test_support.h"
#include "engine/backend/registry/registry.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

fs::path make(model::Arch arch, const std::string& tag, int64_t layers = 2, int64_t window = 0, int64_t head_dim = 0) {
  const fs::path out = test::temp_dir("arch") / ("m-" + tag + ".gguf");
  if (fs::exists(out)) return out;
  auto vocab = gguf::GgufFile::open(test::shared_model("stories260K.gguf"));
  EXPECT_TRUE(vocab.ok());
  model::RandomModelSpec spec;
  spec.arch = arch;
  spec.n_embd = 128;
  spec.n_layers = layers;
  spec.n_heads = 4;
  spec.n_kv_heads = 2;
  spec.head_dim = head_dim;
  spec.n_ff = 256;
  spec.n_ctx = 256;
  spec.sliding_window = window;
  spec.stddev = 0.05f;
  const Status s = model::write_random_model(spec, *vocab, out);
  EXPECT_TRUE(s.ok()) << s.error().to_string();
  return out;
}

std::unique_ptr<model::Model> load(const fs::path& p) {
  auto m = model::Model::load(p);
  EXPECT_TRUE(m.ok()) << m.error().to_string();
  return m.ok() ? std::move(*m) : nullptr;
}

TEST(Architectures, Gemma3LayersScalesAndTemplate) {
  auto m = load(make(model::Arch::Gemma3, "gemma3-12", 12, 64, 64));
  ASSERT_TRUE(m);
  const model::ModelConfig& c = m->config();
  EXPECT_EQ(c.arch, model::Arch::Gemma3);
  EXPECT_EQ(c.head_dim, 64);  // attention.key_length, not n_embd / n_heads = 32
  EXPECT_EQ(c.q_dim(), 256);
  EXPECT_FLOAT_EQ(c.embd_scale, std::sqrt(128.0f));
  EXPECT_FLOAT_EQ(c.query_scale(), 1.0f / 8.0f);
  EXPECT_EQ(c.ffn_activation, model::FfnActivation::GeluTanh);
  EXPECT_TRUE(c.tied_output);
  // Five local layers, then one global: layers 5 and 11 see the whole context with the model's
  // RoPE base; the others a 64-position window with the local base (10000).
  for (int64_t l = 0; l < 12; ++l) {
    const bool global = l == 5 || l == 11;
    EXPECT_EQ(c.layer_is_local(l), !global) << "layer " << l;
    const model::LayerAttention a = c.layer_attention(l);
    EXPECT_EQ(a.window, global ? 0 : 64) << "layer " << l;
    EXPECT_FLOAT_EQ(a.rope_freq_base, global ? 1e6f : 1e4f) << "layer " << l;
  }
  const model::LayerWeights& l0 = m->weights().layers[0];
  EXPECT_TRUE(l0.q_norm.present() && l0.k_norm.present() && l0.post_attn_norm.present() && l0.post_ffn_norm.present());
  EXPECT_EQ(l0.q_norm.cols, 64);
  // No template in the file: the gemma turn format is used.
  EXPECT_TRUE(m->chat_template_builtin());
  EXPECT_NE(m->chat_template().find("<start_of_turn>"), std::string::npos);
}

// llama files may carry attention.sliding_window (Mistral 7B v0.1 conversions); llama.cpp's llama graph
// ignores it, and so does Strata (the reference test checks the logits equal the window-free file's).
TEST(Architectures, LlamaIgnoresItsSlidingWindowKey) {
  auto m = load(make(model::Arch::Llama, "llama-window", 3, 16));
  ASSERT_TRUE(m);
  for (int64_t l = 0; l < 3; ++l) EXPECT_EQ(m->config().layer_attention(l).window, 0) << "layer " << l;
  auto plain = load(make(model::Arch::Llama, "llama-plain", 3));
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->config().layer_attention(0).window, 0);
}

// smollm3: llama's block without RoPE in every 4th layer (3, 7); mistral3: llama's block under its own
// keys, refused when it asks for llama4-style query temperature scaling. Logits: reference_forward.py.
TEST(Architectures, Smollm3NoRopeLayersAndMistral3) {
  auto m = load(make(model::Arch::Smollm3, "smollm3-8", 8));
  ASSERT_TRUE(m);
  for (int64_t l = 0; l < 8; ++l) EXPECT_EQ(m->config().layer_attention(l).rope, (l + 1) % 4 != 0) << "layer " << l;
  auto mi = load(make(model::Arch::Mistral3, "mistral3", 2, 16));
  ASSERT_TRUE(mi);
  EXPECT_EQ(mi->config().arch, model::Arch::Mistral3);
  EXPECT_TRUE(mi->config().layer_attention(1).rope);
  EXPECT_EQ(mi->config().layer_attention(1).window, 0);  // as llama: the window key is ignored

  gguf::GgufWriter w;
  auto src = gguf::GgufFile::open(make(model::Arch::Mistral3, "mistral3", 2, 16));
  ASSERT_TRUE(src.ok());
  for (const auto& [k, v] : src->metadata()) w.set(k, v);
  w.set_f32("mistral3.attention.temperature_scale", 0.1f);
  for (const gguf::TensorInfo& t : src->tensors())
    (void)w.add_tensor(t.name, t.type, t.dims,
                       std::vector<uint8_t>(src->tensor_data(t), src->tensor_data(t) + t.n_bytes));
  const fs::path bad = test::temp_dir("arch") / "m-mistral3-temp.gguf";
  ASSERT_TRUE(w.write(bad).ok());
  auto r = model::Model::load(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("attention.temperature_scale"), std::string::npos) << r.error().message;
}

// gemma2: soft-caps from its keys (make-model writes the published 50 / 30), every other layer local
// (llama.cpp's pattern 2) at the model's one RoPE base, the embedding scaled, no Q/K norms.
TEST(Architectures, Gemma2SoftcapsAndAlternatingWindows) {
  auto m = load(make(model::Arch::Gemma2, "gemma2-4", 4, 8, 32));
  ASSERT_TRUE(m);
  const model::ModelConfig& c = m->config();
  EXPECT_EQ(c.attn_softcap, 50.0f);
  EXPECT_EQ(c.final_softcap, 30.0f);
  EXPECT_FALSE(c.has_qk_norm);
  EXPECT_TRUE(c.has_post_norms);
  EXPECT_FLOAT_EQ(c.embd_scale, std::sqrt(128.0f));
  for (int64_t l = 0; l < 4; ++l) {
    EXPECT_EQ(c.layer_attention(l).window, l % 2 == 0 ? 8 : 0) << "layer " << l;
    EXPECT_EQ(c.layer_attention(l).rope_freq_base, c.rope_freq_base) << "layer " << l;
  }
}

TEST(Architectures, Phi3FusedTensorsAreRowRangesOfOneTensor) {
  auto m = load(make(model::Arch::Phi3, "phi3"));
  ASSERT_TRUE(m);
  const model::ModelConfig& c = m->config();
  EXPECT_TRUE(c.fused_qkv && c.fused_gate_up);
  const model::LayerWeights& l = m->weights().layers[1];
  const int64_t rb = kernels::row_bytes(l.wq.type, c.n_embd);
  EXPECT_EQ(l.wq.rows, c.q_dim());
  EXPECT_EQ(l.wk.rows, c.kv_dim());
  EXPECT_EQ(l.wv.rows, c.kv_dim());
  EXPECT_EQ(l.wk.data, l.wq.data + c.q_dim() * rb);
  EXPECT_EQ(l.wv.data, l.wk.data + c.kv_dim() * rb);
  EXPECT_EQ(l.w_gate.rows, c.n_ff);
  EXPECT_EQ(l.w_up.data, l.w_gate.data + c.n_ff * kernels::row_bytes(l.w_gate.type, c.n_embd));
  // Long-context RoPE: short factors within the original context (256 / 4 = 64), long beyond.
  EXPECT_EQ(c.n_ctx_orig, 64);
  EXPECT_GT(c.rope_attn_factor, 1.0f);
  EXPECT_EQ(m->weights().rope_freqs_for(c, 64).data, m->weights().rope_freqs.data);
  EXPECT_EQ(m->weights().rope_freqs_for(c, 65).data, m->weights().rope_freqs_long.data);
  EXPECT_NE(m->weights().rope_freqs.data, m->weights().rope_freqs_long.data);
}

// glm4 (GLM-4-0414): half-head interleaved RoPE from rope.dimension_count, Q/K/V biases, both
// post-norms, and gate / up as the two row halves of one ffn_up tensor. (Its logits against the
// NumPy forward: tests/reference/reference_forward.py; against llama.cpp: docs/models.md.)
TEST(Architectures, Glm4HalfRopeBiasesPostNormsAndFusedGateUp) {
  const fs::path out = test::temp_dir("arch") / "m-glm4.gguf";
  auto vocab = gguf::GgufFile::open(test::shared_model("stories260K.gguf"));
  ASSERT_TRUE(vocab.ok());
  model::RandomModelSpec spec;
  spec.arch = model::Arch::Glm4;
  spec.n_embd = 128;
  spec.n_layers = 2;
  spec.n_heads = 4;
  spec.n_kv_heads = 2;
  spec.head_dim = 32;
  spec.rope_dims = 16;
  spec.n_ff = 256;
  spec.n_ctx = 256;
  ASSERT_TRUE(model::write_random_model(spec, *vocab, out).ok());
  auto m = load(out);
  ASSERT_TRUE(m);
  const model::ModelConfig& c = m->config();
  EXPECT_EQ(c.arch, model::Arch::Glm4);
  EXPECT_EQ(c.rope_style, model::RopeStyle::Interleaved);
  EXPECT_EQ(c.rope_dims, 16);
  EXPECT_EQ(c.head_dim, 32);
  EXPECT_TRUE(c.has_post_norms && c.has_qkv_bias && c.fused_gate_up);
  EXPECT_FALSE(c.fused_qkv || c.has_qk_norm);
  const model::LayerWeights& l = m->weights().layers[1];
  EXPECT_TRUE(l.bq.present() && l.bk.present() && l.bv.present());
  EXPECT_TRUE(l.post_attn_norm.present() && l.post_ffn_norm.present());
  EXPECT_EQ(l.w_gate.rows, c.n_ff);
  EXPECT_EQ(l.w_up.rows, c.n_ff);
  EXPECT_EQ(l.w_up.data, l.w_gate.data + c.n_ff * kernels::row_bytes(l.w_gate.type, c.n_embd));
  // rope.dimension_count past the head, or odd, is refused by name.
  spec.rope_dims = 40;
  const Status too_many = model::write_random_model(spec, *vocab, test::temp_dir("arch") / "m-glm4-bad.gguf");
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.error().message.find("rotated dimensions 40"), std::string::npos) << too_many.error().message;
}

// olmo2 (OLMo 2; Olmo 3 with a window): no input norms, Q/K norms over whole rows, post-norms; the
// window's layers take llama.cpp's period of 4 and a plain RoPE of the model's base; its layers
// cannot be tensor-split (one norm spans every head). Logits against the NumPy forward:
// tests/reference/reference_forward.py.
TEST(Architectures, Olmo2WholeRowQkNormsNoInputNormsAndLocalRope) {
  auto m = load(make(model::Arch::Olmo2, "olmo2-8", 8, 16, 32));
  ASSERT_TRUE(m);
  const model::ModelConfig& c = m->config();
  EXPECT_EQ(c.rope_style, model::RopeStyle::Neox);
  EXPECT_TRUE(c.has_qk_norm && c.qk_norm_full && c.no_pre_norms && c.has_post_norms);
  for (const model::LayerWeights& l : m->weights().layers) {
    EXPECT_FALSE(l.attn_norm.present());
    EXPECT_FALSE(l.ffn_norm.present());
    EXPECT_EQ(l.q_norm.cols, c.q_dim());   // 4 heads x 32
    EXPECT_EQ(l.k_norm.cols, c.kv_dim());  // 2 heads x 32
    EXPECT_TRUE(l.post_attn_norm.present() && l.post_ffn_norm.present());
  }
  for (int64_t l = 0; l < 8; ++l) {
    const model::LayerAttention a = c.layer_attention(l);
    const bool local = (l + 1) % 4 != 0;
    EXPECT_EQ(a.window, local ? 16 : 0) << "layer " << l;
    EXPECT_EQ(a.rope_freq_base, c.rope_freq_base) << "layer " << l;  // freq_base_swa defaults to the model's
    EXPECT_EQ(a.unit_attn_factor, local) << "layer " << l;
  }
  auto split = plan::split_layer(c, m->weights().layers[0], {1.0, 1.0}, 0);
  ASSERT_FALSE(split.ok());
  EXPECT_EQ(split.error().code, Code::Unsupported);
  EXPECT_NE(split.error().message.find("olmo2 normalises the whole Q and K rows"), std::string::npos)
      << split.error().message;
}

// gpt-oss: the FFN norm under the converter's name post_attention_norm (and no post-attention norm),
// Q/K/V and output biases, a sink per query head, router and per-expert biases, the gating and
// activation traits, every other layer local with the model's own RoPE (YaRN on all layers); and
// the cuts a tensor-parallel shard would take of the sinks (its query heads) and the output bias
// (one member only, so the all-reduce adds it once).
TEST(Architectures, GptOssSinksBiasesGatingAndAlternatingWindows) {
  auto vocab = gguf::GgufFile::open(test::shared_model("stories260K.gguf"));
  ASSERT_TRUE(vocab.ok());
  model::RandomModelSpec spec;
  spec.arch = model::Arch::GptOss;
  spec.n_embd = 128, spec.n_layers = 4, spec.n_heads = 8, spec.n_kv_heads = 2, spec.head_dim = 32;
  spec.n_ff = 64, spec.n_ctx = 256, spec.sliding_window = 16, spec.yarn_factor = 4.0f;
  spec.n_expert = 4, spec.n_expert_used = 2, spec.n_ff_exp = 96;
  const fs::path path = test::temp_dir("arch") / "m-gpt-oss.gguf";
  const Status written = model::write_random_model(spec, *vocab, path);
  ASSERT_TRUE(written.ok()) << written.error().to_string();
  {
    auto f = gguf::GgufFile::open(path);
    ASSERT_TRUE(f.ok());
    EXPECT_NE(f->find_tensor("blk.0.post_attention_norm.weight"), nullptr);
    EXPECT_EQ(f->find_tensor("blk.0.ffn_norm.weight"), nullptr);
    const gguf::TensorInfo* b = f->find_tensor("blk.0.ffn_down_exps.bias");
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->dims, (std::vector<uint64_t>{128, 4}));  // [n_embd, n_expert], 2-D as llama.cpp writes it
  }
  auto m = load(path);
  ASSERT_TRUE(m);
  const model::ModelConfig& c = m->config();
  EXPECT_EQ(c.rope_style, model::RopeStyle::Neox);
  EXPECT_EQ(c.ffn_activation, model::FfnActivation::SwigluOai);
  EXPECT_EQ(c.expert_gating, model::ExpertGating::SoftmaxTopK);
  EXPECT_FALSE(c.expert_weights_norm);
  EXPECT_TRUE(c.has_qkv_bias && c.has_out_bias && c.has_attn_sinks && c.has_moe_biases && c.ffn_norm_post_attention);
  EXPECT_EQ(c.n_ff_exp, 96);
  for (const model::LayerWeights& l : m->weights().layers) {
    EXPECT_TRUE(l.ffn_norm.present());
    EXPECT_EQ(l.ffn_norm.name.substr(l.ffn_norm.name.find('.', 4) + 1), "post_attention_norm.weight");
    EXPECT_FALSE(l.post_attn_norm.present());
    EXPECT_EQ(l.attn_sinks.cols, 8);
    EXPECT_EQ(l.bo.cols, 128);
    EXPECT_EQ(l.ffn_gate_inp_b.cols, 4);
    EXPECT_EQ(l.ffn_gate_exps_b.n_mats, 4);
    EXPECT_EQ(l.ffn_gate_exps_b.cols, 96);
    EXPECT_EQ(l.ffn_gate_exps_b.mat_stride, 96 * sizeof(float));
    EXPECT_EQ(l.ffn_down_exps_b.cols, 128);
    EXPECT_EQ(l.ffn_down_exps_b.mat_stride, 128 * sizeof(float));
  }
  for (int64_t l = 0; l < 4; ++l) {
    const model::LayerAttention a = c.layer_attention(l);
    EXPECT_EQ(a.window, l % 2 == 0 ? 16 : 0) << "layer " << l;  // local, global, local, global
    EXPECT_EQ(a.rope_freq_base, c.rope_freq_base) << "layer " << l;
    EXPECT_TRUE(a.rope_yarn) << "layer " << l;  // the local layers keep the model's YaRN
  }
  // A two-member shard of one KV head each: four query heads' sinks; the bias on member 0 only.
  const model::LayerWeights& l0 = m->weights().layers[0];
  const auto row = [](const model::TensorView model::LayerWeights::*view) -> const model::LayerTensor& {
    for (const model::LayerTensor& t : model::layer_tensors())
      if (t.view == view) return t;
    return model::layer_tensors()[0];
  };
  plan::LayerShard first, second;
  first.kv_head_begin = 0, first.kv_head_end = 1;
  second.kv_head_begin = 1, second.kv_head_end = 2;
  const model::LayerTensor& sinks = row(&model::LayerWeights::attn_sinks);
  const model::LayerTensor& bias = row(&model::LayerWeights::bo);
  EXPECT_EQ(sinks.cut, model::Cut::QHeads);
  EXPECT_EQ(plan::shard_tensor_bytes(c, sinks, l0.attn_sinks, first), 4 * sizeof(float));
  EXPECT_EQ(plan::shard_tensor_bytes(c, sinks, l0.attn_sinks, second), 4 * sizeof(float));
  EXPECT_EQ(bias.cut, model::Cut::FirstShard);
  EXPECT_EQ(plan::shard_tensor_bytes(c, bias, l0.bo, first), 128 * sizeof(float));
  EXPECT_EQ(plan::shard_tensor_bytes(c, bias, l0.bo, second), 0u);
}

// starcoder2: LayerNorm (its own epsilon key) with biases in every block and at the head, Q/K/V and
// output biases, no FFN gate but up and down biases; under a tensor split the up bias is cut with
// the FFN units and the down and output biases are held by one member only.
TEST(Architectures, Starcoder2LayerNormsBiasesAndNoGate) {
  auto m = load(make(model::Arch::Starcoder2, "starcoder2", 2, 0, 32));
  ASSERT_TRUE(m);
  const model::ModelConfig& c = m->config();
  EXPECT_TRUE(c.layer_norm && c.has_norm_bias && c.ungated_ffn && c.has_ffn_bias && c.has_qkv_bias && c.has_out_bias);
  EXPECT_EQ(c.ffn_activation, model::FfnActivation::GeluTanh);
  EXPECT_EQ(c.rope_style, model::RopeStyle::Neox);
  {
    auto f = gguf::GgufFile::open(test::temp_dir("arch") / "m-starcoder2.gguf");
    ASSERT_TRUE(f.ok());
    EXPECT_NE(f->find("starcoder2.attention.layer_norm_epsilon"), nullptr);
    EXPECT_EQ(f->find("starcoder2.attention.layer_norm_rms_epsilon"), nullptr);
  }
  EXPECT_TRUE(m->weights().output_norm_b.present());
  const model::LayerWeights& l = m->weights().layers[0];
  EXPECT_TRUE(l.attn_norm_b.present() && l.ffn_norm_b.present() && l.bo.present());
  EXPECT_FALSE(l.w_gate.present());
  EXPECT_EQ(l.b_up.cols, 256);
  EXPECT_EQ(l.b_down.cols, 128);
  auto split = plan::split_layer(c, l, {1.0, 1.0}, 0);
  ASSERT_TRUE(split.ok()) << split.error().to_string();
  ASSERT_EQ(split->size(), 2u);
  uint64_t up = 0, down = 0, out = 0;
  for (const plan::LayerShard& s : *split) {
    for (const model::LayerTensor& t : model::layer_tensors()) {
      if (t.view == &model::LayerWeights::b_up) up += plan::shard_tensor_bytes(c, t, l.b_up, s);
      if (t.view == &model::LayerWeights::b_down) {
        const uint64_t b = plan::shard_tensor_bytes(c, t, l.b_down, s);
        EXPECT_EQ(b, s.ff_begin == 0 ? 128 * sizeof(float) : 0u);
        down += b;
      }
      if (t.view == &model::LayerWeights::bo) out += plan::shard_tensor_bytes(c, t, l.bo, s);
    }
  }
  EXPECT_EQ(up, 256 * sizeof(float));  // the units' elements, each on one member
  EXPECT_EQ(down, 128 * sizeof(float));  // once in the group
  EXPECT_EQ(out, 128 * sizeof(float));
}

// cohere2: one LayerNorm without bias (no FFN norm in the file), the parallel block, RoPE only on
// the local layers (3 of 4), logits times logit_scale, the embedding as the head; a file without
// the window is refused, and so is a placement that puts the FFN apart from its attention.
TEST(Architectures, Cohere2ParallelBlockNopeGlobalsAndLogitScale) {
  auto m = load(make(model::Arch::Cohere2, "cohere2", 8, 16, 32));
  ASSERT_TRUE(m);
  const model::ModelConfig& c = m->config();
  EXPECT_TRUE(c.layer_norm && c.parallel_block && c.tied_output);
  EXPECT_FALSE(c.has_norm_bias);
  EXPECT_EQ(c.rope_style, model::RopeStyle::Interleaved);
  EXPECT_EQ(c.logit_mul, 0.25f);  // make-model writes Command R7B's logit_scale
  EXPECT_EQ(c.logit_scale, 1.0f);
  EXPECT_EQ(m->weights().output.data, m->weights().token_embd.data);
  for (const model::LayerWeights& l : m->weights().layers) {
    EXPECT_TRUE(l.attn_norm.present());
    EXPECT_FALSE(l.attn_norm_b.present());
    EXPECT_FALSE(l.ffn_norm.present());
    EXPECT_TRUE(l.w_gate.present() && l.w_up.present() && l.w_down.present());
  }
  for (int64_t l = 0; l < 8; ++l) {
    const model::LayerAttention a = c.layer_attention(l);
    const bool local = (l + 1) % 4 != 0;
    EXPECT_EQ(a.window, local ? 16 : 0) << "layer " << l;
    EXPECT_EQ(a.rope, local) << "layer " << l;  // the global layers have no RoPE
    EXPECT_EQ(a.rope_freq_base, c.rope_freq_base) << "layer " << l;
  }
  // No window key: the local layers cannot be told apart, so the file is refused by key name.
  auto f = gguf::GgufFile::open(test::temp_dir("arch") / "m-cohere2.gguf");
  ASSERT_TRUE(f.ok());
  gguf::GgufWriter w;
  for (const auto& [key, value] : f->metadata())
    if (key != "general.alignment" && key != "cohere2.attention.sliding_window") w.set(key, value);
  for (const auto& t : f->tensors()) {
    const uint8_t* data = f->tensor_data(t);
    ASSERT_TRUE(w.add_tensor(t.name, t.type, t.dims, std::vector<uint8_t>(data, data + t.n_bytes)).ok());
  }
  const fs::path no_window = test::temp_dir("arch") / "bad-cohere2-no-window.gguf";
  ASSERT_TRUE(w.write(no_window).ok());
  auto refused = model::Model::load(no_window);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("cohere2.attention.sliding_window"), std::string::npos)
      << refused.error().message;
  // The FFN on another device than its attention.
  plan::Placement p = exec::single_device_placement(c, "cpu", 128, 1, 16);
  p.layers[2].ffn_device = "cpu2";
  DeviceInfo cpu;
  cpu.id = "cpu";
  cpu.backend = "cpu";
  cpu.caps.host_cpu = true;
  DeviceInfo cpu2 = cpu;
  cpu2.id = "cpu2";
  const Status apart = plan::validate_placement(p, c, m->weights(), {cpu, cpu2});
  ASSERT_FALSE(apart.ok());
  EXPECT_EQ(apart.error().code, Code::Unsupported);
  EXPECT_NE(apart.error().message.find("its FFN stays with its attention"), std::string::npos) << apart.error().message;
}

TEST(Architectures, Qwen3HasQkNormsAndNoBias) {
  auto m = load(make(model::Arch::Qwen3, "qwen3", 2, 0, 64));
  ASSERT_TRUE(m);
  const model::LayerWeights& l = m->weights().layers[0];
  EXPECT_TRUE(m->config().has_qk_norm);
  EXPECT_TRUE(l.q_norm.present());
  EXPECT_FALSE(l.bq.present());
  EXPECT_EQ(m->config().rope_style, model::RopeStyle::Neox);
}

// A copy of `src` with one metadata key replaced or one tensor left out.
fs::path altered(const fs::path& src, const std::string& tag, const std::string& arch, const std::string& drop_tensor) {
  const fs::path out = test::temp_dir("arch") / ("bad-" + tag + ".gguf");
  auto f = gguf::GgufFile::open(src);
  EXPECT_TRUE(f.ok());
  gguf::GgufWriter w;
  for (const auto& [key, value] : f->metadata()) {
    if (key == "general.alignment") continue;
    if (key == "general.architecture" && !arch.empty()) {
      w.set_string(key, arch);
    } else if (!arch.empty() && key.rfind(f->architecture() + ".", 0) == 0) {
      w.set(arch + key.substr(f->architecture().size()), value);
    } else {
      w.set(key, value);
    }
  }
  for (const auto& t : f->tensors()) {
    if (t.name == drop_tensor) continue;
    const uint8_t* data = f->tensor_data(t);
    const Status added = w.add_tensor(t.name, t.type, t.dims, std::vector<uint8_t>(data, data + t.n_bytes));
    EXPECT_TRUE(added.ok()) << t.name;
  }
  const Status s = w.write(out);
  EXPECT_TRUE(s.ok()) << s.error().to_string();
  return out;
}

TEST(Architectures, UnknownArchitectureAndMissingTensorsAreNamed) {
  const fs::path gemma = make(model::Arch::Gemma3, "gemma3-2", 2, 8, 64);
  auto mamba = model::Model::load(altered(gemma, "mamba", "mamba", ""));
  ASSERT_FALSE(mamba.ok());
  EXPECT_EQ(mamba.error().code, Code::Unsupported);
  EXPECT_NE(mamba.error().message.find("'mamba'"), std::string::npos) << mamba.error().message;

  auto no_post = model::Model::load(altered(gemma, "no-post", "", "blk.1.post_ffw_norm.weight"));
  ASSERT_FALSE(no_post.ok());
  EXPECT_NE(no_post.error().message.find("blk.1.post_ffw_norm.weight"), std::string::npos) << no_post.error().message;
}

// Logits after a 40-token prompt with each KV type, on an architecture with windows and Q/K norms.
std::vector<float> logits_with(const model::Model& m, kernels::DType kv, const std::vector<int32_t>& prompt) {
  kernels::ThreadPool pool(1);
  auto s = exec::Session::create(m, pool, 128, 16, kv);
  EXPECT_TRUE(s.ok()) << s.error().to_string();
  if (!s.ok()) return {};
  auto l = (*s)->eval(prompt);
  EXPECT_TRUE(l.ok()) << l.error().to_string();
  if (!l.ok()) return {};
  return std::vector<float>(*l, *l + m.config().n_vocab);
}

TEST(KvTypes, F16AndQ8_0FollowF32WithinTolerance) {
  auto m = load(make(model::Arch::Gemma3, "gemma3-kv", 3, 12, 64));
  ASSERT_TRUE(m);
  std::vector<int32_t> prompt;
  for (int i = 0; i < 40; ++i) prompt.push_back(1 + (i * 37) % 500);
  const std::vector<float> f32 = logits_with(*m, kernels::DType::F32, prompt);
  const std::vector<float> f16 = logits_with(*m, kernels::DType::F16, prompt);
  const std::vector<float> q8 = logits_with(*m, kernels::DType::Q8_0, prompt);
  ASSERT_EQ(f32.size(), f16.size());
  ASSERT_EQ(f32.size(), q8.size());
  // Tolerances (max |a-b| / max |b|): f16 keys and values carry 2^-11 relative rounding: 2e-3;
  // q8_0 blocks ~1/254 of their largest element, and quantized queries in the dot: 4e-2.
  const double e16 = test::relative_error(f16, f32), e8 = test::relative_error(q8, f32);
  EXPECT_LT(e16, 2e-3);
  EXPECT_LT(e8, 4e-2);
  EXPECT_GT(e16, 0.0) << "an f16 cache that matches f32 bit for bit was not used";
  EXPECT_GT(e8, e16) << "q8_0 should round more than f16";
}

TEST(KvTypes, MemoryFollowsTheType) {
  auto m = load(make(model::Arch::Llama, "llama-plain", 3));
  ASSERT_TRUE(m);
  const model::ModelConfig& c = m->config();  // kv_dim 64 (2 KV heads of 32)
  auto infos = backend::make_devices("cpu", 1, 20.0);
  ASSERT_TRUE(infos.ok());
  std::vector<DeviceInfo> devices{(*infos)[0]->info()};
  uint64_t kv[3] = {};
  const kernels::DType types[3] = {kernels::DType::F32, kernels::DType::F16, kernels::DType::Q8_0};
  for (int i = 0; i < 3; ++i) {
    plan::Placement p = exec::single_device_placement(c, "cpu", 1000, 2, 64);
    p.kv_type = types[i];
    auto est = plan::estimate_memory(p, c, m->weights(), devices);
    ASSERT_TRUE(est.ok()) << est.error().to_string();
    kv[i] = est->devices[0].kv_bytes;
  }
  // 3 layers x K and V x 2 sequences x 1000 positions x 64 elements: 4, 2 and 34/32 bytes each.
  EXPECT_EQ(kv[0], 3ull * 2 * 2 * 1000 * 64 * 4);
  EXPECT_EQ(kv[1], 3ull * 2 * 2 * 1000 * 64 * 2);
  EXPECT_EQ(kv[2], 3ull * 2 * 2 * 1000 * 2 * 34);
}

TEST(KvTypes, PlacementJsonAndValidation) {
  plan::Placement p;
  p.embedding.devices = {"cpu"};
  p.head.devices = {"cpu"};
  p.layers.resize(2);
  for (auto& l : p.layers) l.target.devices = {"cpu"};
  p.n_ctx = 64;
  p.kv_type = kernels::DType::Q8_0;
  const nlohmann::json j = plan::to_json(p);
  EXPECT_EQ(j["kv_type"], "q8_0");
  auto back = plan::placement_from_json(j, 2);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->kv_type, kernels::DType::Q8_0);
  nlohmann::json bad = j;
  bad["kv_type"] = "q4_0";
  auto refused = plan::placement_from_json(bad, 2);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("'q4_0'"), std::string::npos) << refused.error().message;
  nlohmann::json absent = j;
  absent.erase("kv_type");
  EXPECT_EQ(plan::placement_from_json(absent, 2)->kv_type, kernels::DType::F16);
  p.kv_type = kernels::DType::F16;
  EXPECT_FALSE(plan::to_json(p).contains("kv_type")) << "the default is left out, as the other defaults are";
  p.kv_type = kernels::DType::Q8_0;

  // q8_0 needs head sizes that are multiples of 32, and host devices.
  model::ModelConfig c;
  c.n_layers = 2;
  c.head_dim = 48;
  DeviceInfo cpu;
  cpu.id = "cpu";
  cpu.backend = "cpu";
  cpu.caps.host_cpu = true;
  cpu.caps.kv_types = {kernels::DType::F32, kernels::DType::F16, kernels::DType::Q8_0};
  auto odd = plan::check_kv_type(p, c, {cpu});
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.error().message.find("48"), std::string::npos) << odd.error().message;
  c.head_dim = 64;
  EXPECT_TRUE(plan::check_kv_type(p, c, {cpu}).ok());
  DeviceInfo gpu = cpu;
  gpu.id = "cuda0";
  gpu.backend = "cuda";
  gpu.caps.host_cpu = false;
  gpu.caps.host_memory = false;
  gpu.caps.kv_types = {kernels::DType::F32, kernels::DType::F16};
  p.layers[1].target.devices = {"cuda0"};
  auto on_gpu = plan::check_kv_type(p, c, {cpu, gpu});
  ASSERT_FALSE(on_gpu.ok());
  EXPECT_NE(on_gpu.error().message.find("cuda0"), std::string::npos) << on_gpu.error().message;
  EXPECT_NE(on_gpu.error().message.find("keeps f32 or f16 KV caches, not q8_0"), std::string::npos)
      << on_gpu.error().message;
  p.layers[1].kv_device = "cpu";  // the KV cache on the CPU is fine
  EXPECT_TRUE(plan::check_kv_type(p, c, {cpu, gpu}).ok());
}

// docs/models.md shows the arch table as generated: a row added without the page (or the page
// edited by hand) fails here, with the text to paste.
TEST(ArchTable, DocsMatchTheTable) {
  std::ifstream in(fs::path(STRATA_SOURCE_DIR) / "docs" / "models.md");
  ASSERT_TRUE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  const std::string page = text.str();
  const size_t begin = page.find(model::kArchDocBegin), end = page.find(model::kArchDocEnd);
  ASSERT_NE(begin, std::string::npos);
  ASSERT_NE(end, std::string::npos);
  const size_t from = begin + std::string(model::kArchDocBegin).size() + 1;  // after the marker's newline
  ASSERT_LE(from, end);
  EXPECT_EQ(page.substr(from, end - from), model::architectures_markdown())
      << "docs/models.md is out of date: replace its generated section with `strata-engine architectures --markdown`";
}

// Every row of the table: make-model writes it, the reader gives back the row's traits, and the
// binder finds every tensor the row needs (whole-layer bytes = the parts' bytes).
TEST(ArchTable, EveryRowWritesAndLoads) {
  ASSERT_TRUE(test::have(test::shared_model("stories260K.gguf")));
  auto vocab = gguf::GgufFile::open(test::shared_model("stories260K.gguf"));
  ASSERT_TRUE(vocab.ok());
  for (const model::ArchInfo& a : model::arch_table()) {
    SCOPED_TRACE(a.name);
    EXPECT_EQ(&model::arch_info(a.arch), &a);  // rows in Arch order: arch_info indexes the table
    EXPECT_EQ(model::find_arch(a.name), &a);
    model::RandomModelSpec spec;
    spec.arch = a.arch;
    spec.n_embd = 64, spec.n_layers = 2, spec.n_heads = 4, spec.n_kv_heads = 2, spec.n_ff = 128, spec.n_ctx = 128;
    if (a.experts == model::Experts::Required) spec.n_expert = 4, spec.n_expert_used = 2;
    if (a.global_layers_nope) spec.sliding_window = 16;  // cohere2's local layers need their window
    if (a.traits.mla) {  // deepseek2: a latent of 32 and 16 RoPE dims, queries of 48, a dense first block
      spec.rope_dims = 16, spec.kv_lora_rank = 32, spec.q_lora_rank = 16, spec.head_dim = 48, spec.n_dense_lead = 1;
    }
    const fs::path out = test::temp_dir("arch-rows") / (std::string(a.name) + ".gguf");
    const Status s = model::write_random_model(spec, *vocab, out);
    ASSERT_TRUE(s.ok()) << s.error().to_string();
    auto m = load(out);
    ASSERT_TRUE(m);
    const model::ModelConfig& c = m->config();
    EXPECT_EQ(c.arch, a.arch);
    EXPECT_EQ(c.rope_style, a.traits.rope_style);
    EXPECT_EQ(c.ffn_activation, a.traits.ffn_activation);
    EXPECT_EQ(c.has_qkv_bias, a.traits.has_qkv_bias);
    EXPECT_EQ(c.has_qk_norm, a.traits.has_qk_norm);
    EXPECT_EQ(c.has_post_norms, a.traits.has_post_norms);
    EXPECT_EQ(c.fused_qkv, a.traits.fused_qkv);
    EXPECT_EQ(c.tied_output, a.ties_output);
    for (size_t i = 0; i < m->weights().layers.size(); ++i) {
      const model::LayerWeights& l = m->weights().layers[i];
      for (const model::LayerTensor& t : model::layer_tensors()) {
        // make-model writes the optional selection bias of deepseek2 (spec.selection_bias).
        const bool written = model::tensor_required(t, c) ||
                             (a.deepseek_moe && spec.selection_bias && t.view == &model::LayerWeights::exp_probs_b);
        const bool want = model::tensor_needed(t, c, static_cast<int64_t>(i)) && written;
        EXPECT_EQ((l.*t.view).present(), want) << t.name << " of block " << i;
      }
      EXPECT_EQ(l.n_bytes(), l.part_bytes(model::Part::Attention) + l.part_bytes(model::Part::Ffn) +
                                 l.part_bytes(model::Part::Experts));
    }
  }
}

}  // namespace
}  // namespace strata
