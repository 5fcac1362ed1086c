// engine/exec/layer_compute.cpp — pre-norm llama / qwen2 block arithmetic over host buffers.
#include "engine/exec/layer_compute.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/ops_f32.h"
#include "kernels/cpu/quant.h"

namespace strata::exec {

ScratchViews carve_scratch(float* base, const plan::ScratchLayout& l, int threads) {
  ScratchViews s;
  float* p = base;
  auto take = [&p](int64_t n) {
    float* out = n > 0 ? p : nullptr;
    p += n;
    return out;
  };
  s.hidden = take(l.hidden);
  s.norm = take(l.norm);
  s.q = take(l.q);
  s.k = take(l.k);
  s.v = take(l.v);
  s.attn_out = take(l.attn_out);
  s.proj = take(l.proj);
  s.gate = take(l.gate);
  s.up = take(l.up);
  s.scores = take(l.scores);
  s.logits = take(l.logits);
  s.scores_per_thread = threads > 0 ? l.scores / threads : 0;
  return s;
}

LayerCompute::LayerCompute(const model::ModelConfig& config, kernels::ThreadPool& pool, ScratchViews scratch,
                           const float* rope_freqs, size_t matmul_scratch_bytes)
    : config_(config), pool_(pool), scratch_(scratch), rope_freqs_(rope_freqs) {
  matmul_scratch_.reserve(matmul_scratch_bytes);
}

void LayerCompute::matmul(const model::TensorView& w, const float* x, int64_t n, float* y) {
  kernels::matmul(pool_, w.type, w.data, w.rows, w.cols, x, n, y, matmul_scratch_);
}

void LayerCompute::embed(const model::TensorView& e, const int32_t* tokens, int64_t n, float* hidden) {
  const int64_t row = kernels::row_bytes(e.type, e.cols);
  for (int64_t t = 0; t < n; ++t)
    kernels::dequantize_row(e.type, e.data + tokens[t] * row, hidden + t * config_.n_embd, e.cols);
}

namespace {
void add_bias(const model::TensorView& b, float* y, int64_t n) {
  if (!b.present()) return;
  const float* bias = reinterpret_cast<const float*>(b.data);
  for (int64_t t = 0; t < n; ++t) kernels::add_f32(y + t * b.cols, bias, b.cols);
}
}  // namespace

void LayerCompute::attention_partial(const ShardWeights& w, const float* hidden, int64_t n, int64_t pos0,
                                     const KvView& kv, float* out) {
  const model::ModelConfig& c = config_;
  const int64_t hd = c.head_dim;
  const int64_t q_dim = w.n_heads * hd;
  const int64_t kv_dim = w.n_kv_heads * hd;
  ScratchViews& s = scratch_;
  if (w.n_kv_heads == 0) {  // a shard with no heads contributes nothing
    std::fill(out, out + n * c.n_embd, 0.0f);
    return;
  }
  const float* norm_w = reinterpret_cast<const float*>(w.attn_norm.data);
  for (int64_t t = 0; t < n; ++t)
    kernels::rms_norm_f32(hidden + t * c.n_embd, norm_w, s.norm + t * c.n_embd, c.n_embd, c.rms_eps);
  matmul(w.wq, s.norm, n, s.q);
  matmul(w.wk, s.norm, n, s.k);
  matmul(w.wv, s.norm, n, s.v);
  add_bias(w.bq, s.q, n);
  add_bias(w.bk, s.k, n);
  add_bias(w.bv, s.v, n);
  const bool interleaved = c.rope_style == model::RopeStyle::Interleaved;
  for (int64_t t = 0; t < n; ++t) {
    const int64_t pos = pos0 + t;
    float* q = s.q + t * q_dim;
    float* k = s.k + t * kv_dim;
    kernels::rope_f32(q, w.n_heads, hd, c.rope_dims, pos, c.rope_freq_base, c.rope_freq_scale, rope_freqs_, interleaved);
    kernels::rope_f32(k, w.n_kv_heads, hd, c.rope_dims, pos, c.rope_freq_base, c.rope_freq_scale, rope_freqs_,
                      interleaved);
    std::copy(k, k + kv_dim, kv.k + pos * kv.stride);
    std::copy(s.v + t * kv_dim, s.v + (t + 1) * kv_dim, kv.v + pos * kv.stride);
  }
  const int64_t group = w.n_heads / w.n_kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const int64_t items = n * w.n_heads;
  pool_.run([&](int thread, int n_threads) {
    float* scores = s.scores + thread * s.scores_per_thread;
    for (int64_t item = thread; item < items; item += n_threads) {
      const int64_t t = item / w.n_heads;
      const int64_t h = item % w.n_heads;
      const int64_t kv_off = (h / group) * hd;
      kernels::attention_head_f32(s.q + t * q_dim + h * hd, kv.k + kv_off, kv.v + kv_off, kv.stride, pos0 + t + 1, hd,
                                  scale, scores, s.attn_out + t * q_dim + h * hd);
    }
  });
  matmul(w.wo, s.attn_out, n, out);
}

void LayerCompute::ffn_partial(const ShardWeights& w, const float* hidden, int64_t n, float* out) {
  const model::ModelConfig& c = config_;
  ScratchViews& s = scratch_;
  if (w.n_ff == 0) {
    std::fill(out, out + n * c.n_embd, 0.0f);
    return;
  }
  const float* norm_w = reinterpret_cast<const float*>(w.ffn_norm.data);
  for (int64_t t = 0; t < n; ++t)
    kernels::rms_norm_f32(hidden + t * c.n_embd, norm_w, s.norm + t * c.n_embd, c.n_embd, c.rms_eps);
  matmul(w.w_gate, s.norm, n, s.gate);
  matmul(w.w_up, s.norm, n, s.up);
  kernels::swiglu_f32(s.gate, s.up, n * w.n_ff);
  matmul(w.w_down, s.gate, n, out);
}

void LayerCompute::head(const model::TensorView& output_norm, const model::TensorView& output, const float* row,
                        float* logits) {
  kernels::rms_norm_f32(row, reinterpret_cast<const float*>(output_norm.data), scratch_.norm, config_.n_embd,
                        config_.rms_eps);
  matmul(output, scratch_.norm, 1, logits);
}

}  // namespace strata::exec
