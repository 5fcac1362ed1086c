// tests/engine/plan/plan_test_models.h — models and devices for the planner tests: a synthetic
// llama-shaped ModelConfig/ModelWeights (sizes only, no data pointers) and DeviceInfo builders.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/device_info.h"
#include "engine/model/model.h"
#include "engine/model/model_config.h"
#include "engine/model/model_weights.h"
#include "test_support.h"

namespace strata::test {

inline model::TensorView f32_view(const std::string& name, int64_t cols, int64_t rows) {
  model::TensorView t;
  t.name = name;
  t.type = kernels::DType::F32;
  t.cols = cols;
  t.rows = rows;
  t.n_bytes = static_cast<uint64_t>(cols * rows) * 4;
  return t;
}

struct SyntheticModel {
  model::ModelConfig config;
  model::ModelWeights weights;
};

// F32 llama-shaped model. One block = 4 n_embd^2 (n_heads == n_kv_heads) + 3 n_embd n_ff
// + 2 n_embd floats.
inline SyntheticModel synthetic_model(int64_t n_layers, int64_t n_embd = 256, int64_t n_ff = 512,
                                      int64_t n_heads = 8, int64_t n_kv_heads = 8, int64_t n_vocab = 1000) {
  SyntheticModel m;
  auto& c = m.config;
  c.name = "synthetic";
  c.n_vocab = n_vocab;
  c.n_ctx_train = 4096;
  c.n_embd = n_embd;
  c.n_layers = n_layers;
  c.n_heads = n_heads;
  c.n_kv_heads = n_kv_heads;
  c.head_dim = n_embd / n_heads;
  c.n_ff = n_ff;
  c.rope_dims = c.head_dim;
  auto& w = m.weights;
  w.token_embd = f32_view("token_embd.weight", n_embd, n_vocab);
  w.output_norm = f32_view("output_norm.weight", n_embd, 1);
  w.output = f32_view("output.weight", n_embd, n_vocab);
  for (int64_t i = 0; i < n_layers; ++i) {
    model::LayerWeights l;
    const std::string b = "blk." + std::to_string(i) + ".";
    l.attn_norm = f32_view(b + "attn_norm.weight", n_embd, 1);
    l.wq = f32_view(b + "attn_q.weight", n_embd, c.q_dim());
    l.wk = f32_view(b + "attn_k.weight", n_embd, c.kv_dim());
    l.wv = f32_view(b + "attn_v.weight", n_embd, c.kv_dim());
    l.wo = f32_view(b + "attn_output.weight", c.q_dim(), n_embd);
    l.ffn_norm = f32_view(b + "ffn_norm.weight", n_embd, 1);
    l.w_gate = f32_view(b + "ffn_gate.weight", n_embd, n_ff);
    l.w_up = f32_view(b + "ffn_up.weight", n_embd, n_ff);
    l.w_down = f32_view(b + "ffn_down.weight", n_ff, n_embd);
    w.layers.push_back(l);
  }
  return m;
}

inline DeviceInfo device(const std::string& id, uint64_t bytes, double bandwidth_gbps = 100,
                               double tflops = 10, double link_gbps = 10, double latency_us = 10,
                               uint64_t overhead = 0, int threads = 1) {
  DeviceInfo d;
  d.id = id;
  const bool cpu = id.rfind("cpu", 0) == 0;
  d.backend = cpu ? "cpu" : "sim";
  d.caps.host_cpu = cpu;
  d.caps.reads_weights_in_place = cpu;
  d.caps.kv_types = {kernels::DType::F32, kernels::DType::F16, kernels::DType::Q8_0};
  d.name = id;
  d.simulated = !cpu;
  d.bytes_total = bytes;
  d.bytes_free = bytes;
  d.bandwidth_gbps = bandwidth_gbps;
  d.tflops = tflops;
  d.link_gbps = link_gbps;
  d.link_latency_us = latency_us;
  d.runtime_overhead_bytes = overhead;
  d.threads = threads;
  return d;
}

// stories260K: 5 F32 blocks, n_embd 64, 8 heads / 4 KV heads of 8, n_ff 172, 512 tokens.
inline std::unique_ptr<model::Model> load_stories(const std::string& file = "stories260K.gguf") {
  auto m = model::Model::load(shared_model(file));
  if (!m.ok()) return nullptr;
  return std::move(m).value();
}

}  // namespace strata::test
