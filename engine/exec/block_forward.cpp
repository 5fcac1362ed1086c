// engine/exec/block_forward.cpp — pre-norm decoder block arithmetic over the Ops table.
#include "engine/exec/block_forward.h"

#include <cmath>

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

backend::MatrixView matrix(const model::TensorView& t) { return {t.data, t.type, t.rows, t.cols}; }

BlockForward::BlockForward(const model::ModelConfig& config, backend::Ops& ops, ScratchViews scratch,
                           const float* rope_freqs)
    : config_(config), ops_(ops), scratch_(scratch), rope_freqs_(rope_freqs) {}

Status BlockForward::embed(const model::TensorView& e, const int32_t* tokens, int64_t n, float* hidden) {
  STRATA_RETURN_IF_ERROR(ops_.embed(matrix(e), tokens, n, hidden));
  if (config_.embd_scale != 1.0f) return ops_.scale(hidden, config_.embd_scale, n * config_.n_embd);
  return {};
}

namespace {
const float* f32(const model::TensorView& t) { return reinterpret_cast<const float*>(t.data); }
}  // namespace

Status BlockForward::attention_partial(const ShardWeights& w, int64_t layer, const float* hidden, int64_t n,
                                       int64_t pos0, const KvView& kv, float* out) {
  const SeqRows one{0, n, pos0, kv};
  return attention_partial(w, layer, hidden, n, std::span<const SeqRows>(&one, 1), out);
}

Status BlockForward::attention_partial(const ShardWeights& w, int64_t layer, const float* hidden, int64_t n,
                                       std::span<const SeqRows> seqs, float* out) {
  const model::ModelConfig& c = config_;
  const int64_t hd = c.head_dim;
  const int64_t q_dim = w.n_heads * hd;
  const int64_t kv_dim = w.n_kv_heads * hd;
  const ScratchViews& s = scratch_;
  if (w.n_kv_heads == 0) return ops_.zero(out, n * c.n_embd);  // a shard with no heads adds nothing
  STRATA_RETURN_IF_ERROR(ops_.rms_norm(hidden, f32(w.attn_norm), s.norm, n, c.n_embd, c.rms_eps));
  STRATA_RETURN_IF_ERROR(ops_.matmul(matrix(w.wq), s.norm, n, s.q));
  STRATA_RETURN_IF_ERROR(ops_.matmul(matrix(w.wk), s.norm, n, s.k));
  STRATA_RETURN_IF_ERROR(ops_.matmul(matrix(w.wv), s.norm, n, s.v));
  if (w.bq.present()) STRATA_RETURN_IF_ERROR(ops_.add_rows(s.q, f32(w.bq), n, q_dim));
  if (w.bk.present()) STRATA_RETURN_IF_ERROR(ops_.add_rows(s.k, f32(w.bk), n, kv_dim));
  if (w.bv.present()) STRATA_RETURN_IF_ERROR(ops_.add_rows(s.v, f32(w.bv), n, kv_dim));
  // Q/K norms: every head row normalised with the same [head_dim] weights, before RoPE.
  if (w.q_norm.present()) STRATA_RETURN_IF_ERROR(ops_.rms_norm(s.q, f32(w.q_norm), s.q, n * w.n_heads, hd, c.rms_eps));
  if (w.k_norm.present())
    STRATA_RETURN_IF_ERROR(ops_.rms_norm(s.k, f32(w.k_norm), s.k, n * w.n_kv_heads, hd, c.rms_eps));
  const model::LayerAttention la = c.layer_attention(layer);
  backend::RopeParams rope;
  rope.rope_dims = c.rope_dims;
  rope.freq_base = la.rope_freq_base;
  rope.freq_scale = la.rope_freq_scale;
  rope.freq_divisors = rope_freqs_;
  rope.attn_factor = c.rope_attn_factor;
  rope.interleaved = c.rope_style == model::RopeStyle::Interleaved;
  // Per sequence: its rows of q, k, v (and attn_out) at row0, rotated from its own position.
  for (const SeqRows& sr : seqs) {
    float* q = s.q + sr.row0 * q_dim;
    float* k = s.k + sr.row0 * kv_dim;
    STRATA_RETURN_IF_ERROR(ops_.rope(q, sr.n, w.n_heads, hd, sr.pos0, rope));
    STRATA_RETURN_IF_ERROR(ops_.rope(k, sr.n, w.n_kv_heads, hd, sr.pos0, rope));
    backend::AttentionArgs a;
    a.q = q;
    a.k = k;
    a.v = s.v + sr.row0 * kv_dim;
    a.k_cache = sr.kv.k;
    a.v_cache = sr.kv.v;
    a.kv_type = sr.kv.kv_type;
    a.kv_stride = sr.kv.stride;
    a.n_ctx = sr.kv.n_ctx;
    a.n_tokens = sr.n;
    a.pos0 = sr.pos0;
    a.n_heads = w.n_heads;
    a.n_kv_heads = w.n_kv_heads;
    a.head_dim = hd;
    a.scale = c.query_scale();
    a.window = la.window;
    a.out = s.attn_out + sr.row0 * q_dim;
    STRATA_RETURN_IF_ERROR(ops_.attention(a));
  }
  return ops_.matmul(matrix(w.wo), s.attn_out, n, out);
}

Status BlockForward::ffn_partial(const ShardWeights& w, const float* hidden, int64_t n, float* out) {
  const model::ModelConfig& c = config_;
  const ScratchViews& s = scratch_;
  if (w.n_ff == 0) return ops_.zero(out, n * c.n_embd);
  STRATA_RETURN_IF_ERROR(ops_.rms_norm(hidden, f32(w.ffn_norm), s.norm, n, c.n_embd, c.rms_eps));
  STRATA_RETURN_IF_ERROR(ops_.matmul(matrix(w.w_gate), s.norm, n, s.gate));
  STRATA_RETURN_IF_ERROR(ops_.matmul(matrix(w.w_up), s.norm, n, s.up));
  if (c.ffn_activation == model::FfnActivation::GeluTanh) {
    STRATA_RETURN_IF_ERROR(ops_.geglu(s.gate, s.up, n * w.n_ff));
  } else {
    STRATA_RETURN_IF_ERROR(ops_.swiglu(s.gate, s.up, n * w.n_ff));
  }
  return ops_.matmul(matrix(w.w_down), s.gate, n, out);
}

Status BlockForward::residual_add(const model::TensorView& post_norm, float* hidden, float* update, int64_t n) {
  const int64_t count = n * config_.n_embd;
  if (post_norm.present())
    STRATA_RETURN_IF_ERROR(ops_.rms_norm(update, f32(post_norm), update, n, config_.n_embd, config_.rms_eps));
  return ops_.add(hidden, update, count);
}

Status BlockForward::head(const model::TensorView& output_norm, const model::TensorView& output, const float* row,
                          float* logits) {
  STRATA_RETURN_IF_ERROR(ops_.rms_norm(row, f32(output_norm), scratch_.norm, 1, config_.n_embd, config_.rms_eps));
  return ops_.matmul(matrix(output), scratch_.norm, 1, logits);
}

Status BlockForward::head_rows(const model::TensorView& output_norm, const model::TensorView& output,
                               const float* hidden, std::span<const int64_t> rows, float* logits) {
  const int64_t m = static_cast<int64_t>(rows.size());
  if (m == 0) return {};
  // Gather the normalised rows into norm ([m][n_embd]), then one product for all of them.
  for (int64_t i = 0; i < m; ++i)
    STRATA_RETURN_IF_ERROR(ops_.rms_norm(hidden + rows[static_cast<size_t>(i)] * config_.n_embd, f32(output_norm),
                                         scratch_.norm + i * config_.n_embd, 1, config_.n_embd, config_.rms_eps));
  return ops_.matmul(matrix(output), scratch_.norm, m, logits);
}

}  // namespace strata::exec
