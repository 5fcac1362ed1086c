// engine/exec/cpu_transformer.cpp — pre-norm decoder block: x += Wo·attn(rope(Wq·n(x)), ...);
// x += Wdown·(silu(Wgate·n(x)) * Wup·n(x)).
#include "engine/exec/cpu_transformer.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/ops_f32.h"
#include "kernels/cpu/quant.h"

namespace strata::exec {

using kernels::ThreadPool;

CpuTransformer::CpuTransformer(const model::ModelConfig& config, const model::ModelWeights& weights,
                               ThreadPool& pool)
    : config_(config), weights_(weights), pool_(pool) {
  scores_.resize(static_cast<size_t>(pool.n_threads()));
}

void CpuTransformer::ensure_scratch(int64_t n) {
  if (n <= scratch_tokens_) return;
  const auto sz = [n](int64_t width) { return static_cast<size_t>(n * width); };
  norm_.resize(sz(config_.n_embd));
  q_.resize(sz(config_.q_dim()));
  k_.resize(sz(config_.kv_dim()));
  v_.resize(sz(config_.kv_dim()));
  attn_out_.resize(sz(config_.q_dim()));
  proj_.resize(sz(config_.n_embd));
  gate_.resize(sz(config_.n_ff));
  up_.resize(sz(config_.n_ff));
  scratch_tokens_ = n;
}

void CpuTransformer::embed(const int32_t* tokens, int64_t n_tokens, float* hidden) {
  const model::TensorView& e = weights_.token_embd;
  const int64_t row = kernels::row_bytes(e.type, e.cols);
  for (int64_t t = 0; t < n_tokens; ++t) {
    kernels::dequantize_row(e.type, e.data + tokens[t] * row, hidden + t * config_.n_embd, e.cols);
  }
}

namespace {

void matmul(ThreadPool& pool, const model::TensorView& w, const float* x, int64_t n_tokens, float* y,
            std::vector<uint8_t>& scratch) {
  kernels::matmul(pool, w.type, w.data, w.rows, w.cols, x, n_tokens, y, scratch);
}

void add_bias(const model::TensorView& b, float* y, int64_t n_tokens) {
  if (!b.present()) return;
  const float* bias = reinterpret_cast<const float*>(b.data);
  for (int64_t t = 0; t < n_tokens; ++t) kernels::add_f32(y + t * b.cols, bias, b.cols);
}

}  // namespace

void CpuTransformer::layer(int64_t il, float* hidden, int64_t n, int64_t pos0, KvCache& kv) {
  ensure_scratch(n);
  const model::ModelConfig& c = config_;
  const model::LayerWeights& w = weights_.layers[static_cast<size_t>(il)];
  const float* attn_norm = reinterpret_cast<const float*>(w.attn_norm.data);
  const float* ffn_norm = reinterpret_cast<const float*>(w.ffn_norm.data);
  const float* freq_div = weights_.rope_freqs.present() ? reinterpret_cast<const float*>(weights_.rope_freqs.data)
                                                        : nullptr;
  const bool interleaved = c.rope_style == model::RopeStyle::Interleaved;

  // Attention sub-block.
  for (int64_t t = 0; t < n; ++t)
    kernels::rms_norm_f32(hidden + t * c.n_embd, attn_norm, norm_.data() + t * c.n_embd, c.n_embd, c.rms_eps);
  matmul(pool_, w.wq, norm_.data(), n, q_.data(), matmul_scratch_);
  matmul(pool_, w.wk, norm_.data(), n, k_.data(), matmul_scratch_);
  matmul(pool_, w.wv, norm_.data(), n, v_.data(), matmul_scratch_);
  add_bias(w.bq, q_.data(), n);
  add_bias(w.bk, k_.data(), n);
  add_bias(w.bv, v_.data(), n);
  for (int64_t t = 0; t < n; ++t) {
    const int64_t pos = pos0 + t;
    float* q = q_.data() + t * c.q_dim();
    float* k = k_.data() + t * c.kv_dim();
    kernels::rope_f32(q, c.n_heads, c.head_dim, c.rope_dims, pos, c.rope_freq_base, c.rope_freq_scale, freq_div,
                      interleaved);
    kernels::rope_f32(k, c.n_kv_heads, c.head_dim, c.rope_dims, pos, c.rope_freq_base, c.rope_freq_scale, freq_div,
                      interleaved);
    std::copy(k, k + c.kv_dim(), kv.k(il, pos));
    std::copy(v_.data() + t * c.kv_dim(), v_.data() + (t + 1) * c.kv_dim(), kv.v(il, pos));
  }
  attention(il, n, pos0, kv);
  matmul(pool_, w.wo, attn_out_.data(), n, proj_.data(), matmul_scratch_);
  kernels::add_f32(hidden, proj_.data(), n * c.n_embd);

  // Feed-forward sub-block (SwiGLU).
  for (int64_t t = 0; t < n; ++t)
    kernels::rms_norm_f32(hidden + t * c.n_embd, ffn_norm, norm_.data() + t * c.n_embd, c.n_embd, c.rms_eps);
  matmul(pool_, w.w_gate, norm_.data(), n, gate_.data(), matmul_scratch_);
  matmul(pool_, w.w_up, norm_.data(), n, up_.data(), matmul_scratch_);
  kernels::swiglu_f32(gate_.data(), up_.data(), n * c.n_ff);
  matmul(pool_, w.w_down, gate_.data(), n, proj_.data(), matmul_scratch_);
  kernels::add_f32(hidden, proj_.data(), n * c.n_embd);
}

void CpuTransformer::attention(int64_t il, int64_t n, int64_t pos0, KvCache& kv) {
  const model::ModelConfig& c = config_;
  const int64_t group = c.n_heads / c.n_kv_heads;  // query heads per KV head
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  const int64_t n_items = n * c.n_heads;  // one (token, head) pair each
  const int64_t n_pos_max = pos0 + n;
  for (auto& s : scores_) {
    if (static_cast<int64_t>(s.size()) < n_pos_max) s.resize(static_cast<size_t>(n_pos_max));
  }
  const float* k_base = kv.k(il, 0);
  const float* v_base = kv.v(il, 0);
  pool_.run([&](int thread, int n_threads) {
    float* scores = scores_[static_cast<size_t>(thread)].data();
    for (int64_t item = thread; item < n_items; item += n_threads) {
      const int64_t t = item / c.n_heads;
      const int64_t h = item % c.n_heads;
      const int64_t kv_off = (h / group) * c.head_dim;
      kernels::attention_head_f32(q_.data() + t * c.q_dim() + h * c.head_dim, k_base + kv_off, v_base + kv_off,
                                  c.kv_dim(), pos0 + t + 1, c.head_dim, scale, scores,
                                  attn_out_.data() + t * c.q_dim() + h * c.head_dim);
    }
  });
}

void CpuTransformer::head(const float* hidden, int64_t n_rows, float* logits) {
  ensure_scratch(n_rows);
  const float* out_norm = reinterpret_cast<const float*>(weights_.output_norm.data);
  for (int64_t t = 0; t < n_rows; ++t)
    kernels::rms_norm_f32(hidden + t * config_.n_embd, out_norm, norm_.data() + t * config_.n_embd, config_.n_embd,
                          config_.rms_eps);
  matmul(pool_, weights_.output, norm_.data(), n_rows, logits, matmul_scratch_);
}

}  // namespace strata::exec
