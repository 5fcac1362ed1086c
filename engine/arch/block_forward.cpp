// engine/arch/block_forward.cpp — the steps of a pre-norm decoder block over the Ops table, and
// the mixture-of-experts FFN (routing on the host, experts batched by expert).
#include "engine/arch/block_forward.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace strata::arch {

backend::MatrixView matrix(const model::TensorView& t) { return {t.data, t.type, t.rows, t.cols}; }

backend::MatrixView matrix(const model::TensorView& t, int64_t i) {
  return {t.data + static_cast<uint64_t>(i) * t.mat_stride, t.type, t.rows, t.cols};
}

BlockForward::BlockForward(const model::ModelConfig& config, backend::Ops& ops, ScratchViews scratch,
                           const float* rope_freqs)
    : config_(config), forward_(forward_for(config.arch)), ops_(ops), scratch_(scratch), rope_freqs_(rope_freqs) {}

Status BlockForward::embed(const model::TensorView& e, const int32_t* tokens, int64_t n, float* hidden) {
  STRATA_RETURN_IF_ERROR(ops_.embed(matrix(e), tokens, n, hidden));
  if (config_.embd_scale != 1.0f) return ops_.scale(hidden, config_.embd_scale, n * config_.n_embd);
  return {};
}

Status BlockForward::attention_partial(const ShardWeights& w, int64_t layer, const float* hidden, int64_t n,
                                       int64_t pos0, const KvView& kv, float* out) {
  const SeqRows one{0, n, pos0, kv};
  return attention_partial(w, layer, hidden, n, std::span<const SeqRows>(&one, 1), out);
}

Status BlockForward::attention_partial(const ShardWeights& w, int64_t layer, const float* hidden, int64_t n,
                                       std::span<const SeqRows> seqs, float* out) {
  // A shard with no heads adds nothing, unless its block is parallel (cohere2): then the attention
  // step also runs the shard's FFN units.
  if (w.n_kv_heads == 0 && !(config_.parallel_block && w.n_ff > 0)) return ops_.zero(out, n * config_.n_embd);
  return forward_.attention(*this, w, layer, hidden, n, seqs, out);
}

Status BlockForward::norm_rows(const model::TensorView& weight, const model::TensorView& bias, const float* x,
                               float* out, int64_t n) {
  if (config_.layer_norm)
    return ops_.layer_norm(x, f32(weight), bias.present() ? f32(bias) : nullptr, out, n, config_.n_embd, config_.rms_eps);
  return ops_.rms_norm(x, f32(weight), out, n, config_.n_embd, config_.rms_eps);
}

Status BlockForward::input_norm(const model::TensorView& weight, const float* hidden, int64_t n,
                                const model::TensorView& bias) {
  return norm_rows(weight, bias, hidden, scratch_.norm, n);
}

Status BlockForward::qkv(const ShardWeights& w, int64_t n, const float* x) {
  const ScratchViews& s = scratch_;
  const int64_t q_dim = w.n_heads * config_.head_dim, kv_dim = w.n_kv_heads * config_.head_dim;
  const backend::Ops::MatmulOut qkv[3] = {{matrix(w.wq), s.q}, {matrix(w.wk), s.k}, {matrix(w.wv), s.v}};
  STRATA_RETURN_IF_ERROR(ops_.matmul_many(qkv, x ? x : s.norm, n));
  if (w.bq.present()) STRATA_RETURN_IF_ERROR(ops_.add_rows(s.q, f32(w.bq), n, q_dim));
  if (w.bk.present()) STRATA_RETURN_IF_ERROR(ops_.add_rows(s.k, f32(w.bk), n, kv_dim));
  if (w.bv.present()) STRATA_RETURN_IF_ERROR(ops_.add_rows(s.v, f32(w.bv), n, kv_dim));
  return {};
}

Status BlockForward::qk_norm(const ShardWeights& w, int64_t n) {
  // Every head row normalised with the same [head_dim] weights, before RoPE; or (qk_norm_full,
  // olmo2) each token's whole Q row and whole K row with [q_dim] / [kv_dim] weights. A whole-row
  // norm needs every head on the shard, which plan::split_layer guarantees by refusing to cut
  // such a layer.
  const ScratchViews& s = scratch_;
  const int64_t hd = config_.head_dim;
  const bool full = config_.qk_norm_full;
  if (full && (w.n_heads != config_.n_heads || w.n_kv_heads != config_.n_kv_heads))
    return Error{Code::InvalidArgument, "qk_norm: full-row Q/K norms over " + std::to_string(w.n_heads) + " of " +
                                            std::to_string(config_.n_heads) + " heads (a tensor-split shard)"};
  // [rows][width] views of q ([n][n_heads * hd]) and k ([n][n_kv_heads * hd]).
  const int64_t q_rows = full ? n : n * w.n_heads, q_width = full ? w.n_heads * hd : hd;
  const int64_t k_rows = full ? n : n * w.n_kv_heads, k_width = full ? w.n_kv_heads * hd : hd;
  if (w.q_norm.present()) STRATA_RETURN_IF_ERROR(ops_.rms_norm(s.q, f32(w.q_norm), s.q, q_rows, q_width, config_.rms_eps));
  if (w.k_norm.present()) STRATA_RETURN_IF_ERROR(ops_.rms_norm(s.k, f32(w.k_norm), s.k, k_rows, k_width, config_.rms_eps));
  return {};
}

backend::RopeParams BlockForward::rope_params(int64_t layer) const {
  const model::ModelConfig& c = config_;
  const model::LayerAttention la = c.layer_attention(layer);
  backend::RopeParams rope;
  rope.rope_dims = c.rope_dims;
  rope.freq_base = la.rope_freq_base;
  rope.freq_scale = la.rope_freq_scale;
  rope.freq_divisors = rope_freqs_;
  rope.attn_factor = la.unit_attn_factor ? 1.0f : c.rope_attn_factor;
  if (la.rope_yarn) {
    const int64_t n_ctx_orig = c.n_ctx_orig > 0 ? c.n_ctx_orig : c.n_ctx_train;
    rope.yarn = kernels::make_rope_yarn(c.rope_dims, n_ctx_orig, la.rope_freq_base, la.rope_freq_scale,
                                        c.yarn_ext_factor, c.yarn_beta_fast, c.yarn_beta_slow);
    // Where YaRN applies, the layer has the model's scale (LayerAttention): the model's factor,
    // which DeepSeek's log multiplier keeps free of YaRN's magnitude (ModelConfig::mla_mscale).
    rope.attn_factor = c.rope_cos_sin_factor();
  }
  rope.interleaved = c.rope_style == model::RopeStyle::Interleaved;
  return rope;
}

backend::AttentionArgs BlockForward::sequence_attention(const SeqRows& sr, int64_t layer) const {
  backend::AttentionArgs a;
  a.k_cache = sr.kv.k;
  a.v_cache = sr.kv.v;
  a.kv_type = sr.kv.kv_type;
  a.kv_stride = sr.kv.stride;
  a.n_ctx = sr.kv.n_ctx;
  a.kv_cells = sr.kv.cells;
  a.n_tokens = sr.n;
  a.pos0 = sr.pos0;
  a.softcap = config_.attn_softcap;
  a.scale = config_.query_scale();
  a.window = config_.layer_attention(layer).window;
  return a;
}

Status BlockForward::attend(std::span<const backend::AttentionArgs> args) {
  if (args.size() == 1) return ops_.attention(args.front());
  return ops_.attention_batch(args);
}

Status BlockForward::rope_attend(const ShardWeights& w, int64_t layer, int64_t n, std::span<const SeqRows> seqs,
                                 float* out) {
  const model::ModelConfig& c = config_;
  const int64_t hd = c.head_dim;
  const int64_t q_dim = w.n_heads * hd;
  const int64_t kv_dim = w.n_kv_heads * hd;
  const ScratchViews& s = scratch_;
  const model::LayerAttention la = c.layer_attention(layer);
  const backend::RopeParams rope = rope_params(layer);
  // Per sequence: its rows of q, k, v (and attn_out) at row0, rotated from its own position;
  // then every sequence's attention in one call (a batched decode step runs them together).
  attention_args_.clear();
  for (const SeqRows& sr : seqs) {
    float* q = s.q + sr.row0 * q_dim;
    float* k = s.k + sr.row0 * kv_dim;
    if (la.rope) {
      STRATA_RETURN_IF_ERROR(ops_.rope(q, sr.n, w.n_heads, hd, sr.pos0, rope));
      STRATA_RETURN_IF_ERROR(ops_.rope(k, sr.n, w.n_kv_heads, hd, sr.pos0, rope));
    }
    backend::AttentionArgs a = sequence_attention(sr, layer);
    a.q = q;
    a.k = k;
    a.v = s.v + sr.row0 * kv_dim;
    a.n_heads = w.n_heads;
    a.n_kv_heads = w.n_kv_heads;
    a.head_dim = hd;
    a.sinks = w.attn_sinks.present() ? f32(w.attn_sinks) : nullptr;  // the shard's heads' (Cut::QHeads)
    a.out = s.attn_out + sr.row0 * q_dim;
    attention_args_.push_back(a);
  }
  STRATA_RETURN_IF_ERROR(attend(attention_args_));
  STRATA_RETURN_IF_ERROR(ops_.matmul(matrix(w.wo), s.attn_out, n, out));
  // The output bias (gpt-oss) is held by one shard of a tensor-split group (Cut::FirstShard), so
  // the all-reduced sum has it once.
  if (w.bo.present()) return ops_.add_rows(out, f32(w.bo), n, config_.n_embd);
  return {};
}

Status BlockForward::ffn_partial(const ShardWeights& w, const float* hidden, int64_t n, float* out) {
  // A dense shard with no FFN units adds nothing (an MoE layer's FFN is never cut by units); nor
  // does the FFN step of a parallel block, whose attention step ran the FFN (the executor skips it).
  if (config_.parallel_block || (!w.is_moe() && w.n_ff == 0)) return ops_.zero(out, n * config_.n_embd);
  return forward_.ffn(*this, w, hidden, n, out);
}

Status BlockForward::gated_ffn(const ShardWeights& w, int64_t n, float* out, const float* x) {
  const ScratchViews& s = scratch_;
  const backend::Ops::MatmulOut gate_up[2] = {{matrix(w.w_gate), s.gate}, {matrix(w.w_up), s.up}};
  STRATA_RETURN_IF_ERROR(ops_.matmul_many(gate_up, x ? x : s.norm, n));
  // The shard's own units: its gate rows (a dense layer of deepseek2 is wider or narrower than
  // the experts that set the shard's n_ff).
  STRATA_RETURN_IF_ERROR(activate(s.gate, s.up, n * w.w_gate.rows));
  return ops_.matmul(matrix(w.w_down), s.gate, n, out);
}

Status BlockForward::plain_ffn(const ShardWeights& w, int64_t n, float* out, const float* x) {
  const ScratchViews& s = scratch_;
  STRATA_RETURN_IF_ERROR(ops_.matmul(matrix(w.w_up), x ? x : s.norm, n, s.up));
  if (w.b_up.present()) STRATA_RETURN_IF_ERROR(ops_.add_rows(s.up, f32(w.b_up), n, w.n_ff));
  STRATA_RETURN_IF_ERROR(ops_.gelu(s.up, n * w.n_ff));
  STRATA_RETURN_IF_ERROR(ops_.matmul(matrix(w.w_down), s.up, n, out));
  // ffn_down.bias: one shard of a tensor-split group holds it (Cut::FirstShard), so the sum has it once.
  if (w.b_down.present()) return ops_.add_rows(out, f32(w.b_down), n, config_.n_embd);
  return {};
}

Status BlockForward::activate(float* gate, const float* up, int64_t count) {
  switch (config_.ffn_activation) {
    case model::FfnActivation::Silu: return ops_.swiglu(gate, up, count);
    case model::FfnActivation::GeluTanh: return ops_.geglu(gate, up, count);
    case model::FfnActivation::SwigluOai: return ops_.swiglu_oai(gate, up, count);
  }
  return ops_.swiglu(gate, up, count);
}

Status BlockForward::moe_ffn(const ShardWeights& w, const float* hidden, int64_t n, float* out) {
  routing_.want_x_norm = false;
  STRATA_RETURN_IF_ERROR(moe_route(w, hidden, n, routing_, out));
  return moe_experts(w, scratch_.norm, routing_, n, out);
}

namespace {

// Row i of a per-expert f32 bias ([n_mats][cols], model::TensorKind::ExpertBias).
const float* expert_row(const model::TensorView& t, int64_t i) {
  return reinterpret_cast<const float*>(t.data + static_cast<uint64_t>(i) * t.mat_stride);
}

// How route_tokens chooses and weighs (ModelConfig's routing fields).
struct RouteRule {
  bool normalise = false;
  model::ExpertGating gating = model::ExpertGating::Softmax;
  const float* selection_bias = nullptr;  // [n_expert] host, or null (DeepSeek V3's exp_probs_b)
  int64_t groups = 0, groups_used = 0;    // expert groups (DeepSeek V3), groups <= 1: none
  double scale = 1.0;                     // the weights' factor
};

// Per token, with Softmax gating: softmax over the n_expert logits, the k most probable experts
// (ties: the lower index first), their probabilities renormalised to sum 1 when `normalise` (the
// sum clamped below at 6.1e-5, as llama.cpp does, so a row of tiny weights cannot divide by
// zero). With SoftmaxTopK (gpt-oss): the k largest logits (the same order, ties alike), weighted by
// a softmax over those k alone. With Sigmoid: each logit's sigmoid. A selection bias is added to
// the probabilities to rank them only (the weights stay the unbiased probabilities); with expert
// groups only the groups_used groups whose two best biased probabilities sum highest are ranked.
// Then the weights times `scale`, and the same choices grouped by expert. Host arithmetic in
// double, per token: a token's experts and weights never depend on the other rows.
void route_tokens(MoeRouting& r, const RouteRule& rule) {
  const int64_t n = r.n_tokens, e_count = r.n_expert, k = r.k;
  const model::ExpertGating gating = rule.gating;
  r.expert.resize(static_cast<size_t>(n * k));
  r.weight.resize(static_cast<size_t>(n * k));
  std::vector<double> p(static_cast<size_t>(e_count)), rank(static_cast<size_t>(e_count));
  std::vector<int32_t> order(static_cast<size_t>(e_count));
  const bool grouped = rule.groups > 1;
  const int64_t per_group = grouped ? e_count / rule.groups : 0;
  std::vector<double> group_score(static_cast<size_t>(grouped ? rule.groups : 0));
  std::vector<int32_t> group_order(group_score.size());
  for (int64_t t = 0; t < n; ++t) {
    const float* z = r.logits.data() + t * e_count;
    const double zmax = *std::max_element(z, z + e_count);
    if (gating == model::ExpertGating::SoftmaxTopK) {
      // Ranked by the logits themselves (exp is monotonic: the same order as their softmax).
      for (int64_t e = 0; e < e_count; ++e) p[static_cast<size_t>(e)] = static_cast<double>(z[e]);
    } else if (gating == model::ExpertGating::Sigmoid) {
      for (int64_t e = 0; e < e_count; ++e) p[static_cast<size_t>(e)] = 1.0 / (1.0 + std::exp(-static_cast<double>(z[e])));
    } else {
      double sum = 0;
      for (int64_t e = 0; e < e_count; ++e) sum += p[static_cast<size_t>(e)] = std::exp(static_cast<double>(z[e]) - zmax);
      for (double& v : p) v /= sum;
    }
    for (int64_t e = 0; e < e_count; ++e)
      rank[static_cast<size_t>(e)] = p[static_cast<size_t>(e)] + (rule.selection_bias ? rule.selection_bias[e] : 0.0);
    if (grouped) {
      // A group's score: its two best ranks summed; the experts of all but the best groups_used
      // groups leave the ranking.
      for (int64_t g = 0; g < rule.groups; ++g) {
        const double* first = rank.data() + g * per_group;
        double best = -INFINITY, second = -INFINITY;
        for (int64_t i = 0; i < per_group; ++i) {
          if (first[i] > best) second = best, best = first[i];
          else if (first[i] > second) second = first[i];
        }
        group_score[static_cast<size_t>(g)] = per_group > 1 ? best + second : best;
      }
      std::iota(group_order.begin(), group_order.end(), 0);
      std::partial_sort(group_order.begin(), group_order.begin() + rule.groups_used, group_order.end(),
                        [&](int32_t a, int32_t b) {
                          const double sa = group_score[static_cast<size_t>(a)], sb = group_score[static_cast<size_t>(b)];
                          return sa > sb || (sa == sb && a < b);
                        });
      for (int64_t j = rule.groups_used; j < rule.groups; ++j) {
        double* first = rank.data() + group_order[static_cast<size_t>(j)] * per_group;
        std::fill(first, first + per_group, -INFINITY);
      }
    }
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t b) {
      const double pa = rank[static_cast<size_t>(a)], pb = rank[static_cast<size_t>(b)];
      return pa > pb || (pa == pb && a < b);
    });
    if (gating == model::ExpertGating::SoftmaxTopK) {
      // Softmax over the chosen logits: the first (largest) is their max.
      const double top = p[static_cast<size_t>(order[0])];
      double sum = 0;
      for (int64_t j = 0; j < k; ++j) {
        double& v = p[static_cast<size_t>(order[static_cast<size_t>(j)])];
        v = std::exp(v - top);
        sum += v;
      }
      for (int64_t j = 0; j < k; ++j) p[static_cast<size_t>(order[static_cast<size_t>(j)])] /= sum;
    }
    double chosen = 0;
    for (int64_t j = 0; j < k; ++j) chosen += p[static_cast<size_t>(order[static_cast<size_t>(j)])];
    const double scale = (rule.normalise ? 1.0 / std::max(chosen, 6.103515625e-5) : 1.0) * rule.scale;
    for (int64_t j = 0; j < k; ++j) {
      const int32_t e = order[static_cast<size_t>(j)];
      r.expert[static_cast<size_t>(t * k + j)] = e;
      r.weight[static_cast<size_t>(t * k + j)] = static_cast<float>(p[static_cast<size_t>(e)] * scale);
    }
  }
  // Counting sort by expert; tokens stay ascending within an expert.
  r.offset.assign(static_cast<size_t>(e_count + 1), 0);
  for (int32_t e : r.expert) ++r.offset[static_cast<size_t>(e + 1)];
  for (int64_t e = 0; e < e_count; ++e) r.offset[static_cast<size_t>(e + 1)] += r.offset[static_cast<size_t>(e)];
  r.token_of.resize(static_cast<size_t>(n * k));
  r.weight_of.resize(static_cast<size_t>(n * k));
  std::vector<int32_t> fill(r.offset.begin(), r.offset.end() - 1);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t j = 0; j < k; ++j) {
      const size_t i = static_cast<size_t>(t * k + j);
      const int32_t at = fill[static_cast<size_t>(r.expert[i])]++;
      r.token_of[static_cast<size_t>(at)] = static_cast<int32_t>(t);
      r.weight_of[static_cast<size_t>(at)] = r.weight[i];
    }
}

}  // namespace

Status BlockForward::moe_route(const ShardWeights& w, const float* hidden, int64_t n, MoeRouting& routing,
                               float* out) {
  const model::ModelConfig& c = config_;
  const ScratchViews& s = scratch_;
  if (!w.ffn_gate_inp.present() || !w.ffn_norm.present())
    return Error{Code::InvalidArgument, "moe_route: this device holds no router (ffn_gate_inp) for the layer"};
  if (w.ffn_gate_inp.rows != c.n_expert || c.n_expert_used <= 0 || c.n_expert_used > c.n_expert)
    return Error{Code::InvalidArgument, "moe_route: a router of " + std::to_string(w.ffn_gate_inp.rows) +
                                            " experts, top-" + std::to_string(c.n_expert_used) + " of " +
                                            std::to_string(c.n_expert)};
  if (!s.router) return Error{Code::InvalidArgument, "moe_route: the device's scratch has no router buffer"};
  routing.n_tokens = n;
  routing.n_expert = c.n_expert;
  routing.k = c.n_expert_used;
  if (n == 0) {
    routing.expert.clear(), routing.weight.clear(), routing.token_of.clear(), routing.weight_of.clear();
    routing.offset.assign(static_cast<size_t>(c.n_expert + 1), 0);
    return {};
  }
  const int64_t d = c.n_embd;
  STRATA_RETURN_IF_ERROR(ops_.rms_norm(hidden, f32(w.ffn_norm), s.norm, n, d, c.rms_eps));
  STRATA_RETURN_IF_ERROR(ops_.matmul(matrix(w.ffn_gate_inp), s.norm, n, s.router));
  if (w.ffn_gate_inp_b.present()) STRATA_RETURN_IF_ERROR(ops_.add_rows(s.router, f32(w.ffn_gate_inp_b), n, c.n_expert));
  routing.logits.resize(static_cast<size_t>(n * c.n_expert));
  STRATA_RETURN_IF_ERROR(ops_.to_host(s.router, routing.logits.data(), routing.logits.size() * sizeof(float)));
  RouteRule rule;
  rule.normalise = c.expert_weights_norm;
  rule.gating = c.expert_gating;
  rule.groups = c.n_expert_groups;
  rule.groups_used = c.n_group_used;
  rule.scale = c.expert_weights_scale;
  if (w.exp_probs_b.present()) {
    selection_bias_.resize(static_cast<size_t>(c.n_expert));
    STRATA_RETURN_IF_ERROR(ops_.to_host(w.exp_probs_b.data, selection_bias_.data(), selection_bias_.size() * sizeof(float)));
    rule.selection_bias = selection_bias_.data();
  }
  route_tokens(routing, rule);
  if (routing.want_x_norm) {
    routing.x_norm.resize(static_cast<size_t>(n * d));
    STRATA_RETURN_IF_ERROR(ops_.to_host(s.norm, routing.x_norm.data(), routing.x_norm.size() * sizeof(float)));
  }
  STRATA_RETURN_IF_ERROR(ops_.zero(out, n * d));
  if (!w.ffn_gate_shexp.present()) return {};
  // The shared expert: every token, one batch; weighted by sigmoid(gate_inp_shexp · x) (qwen2moe).
  const int64_t f = w.ffn_gate_shexp.rows;
  STRATA_RETURN_IF_ERROR(ops_.matmul(matrix(w.ffn_gate_shexp), s.norm, n, s.gate));
  STRATA_RETURN_IF_ERROR(ops_.matmul(matrix(w.ffn_up_shexp), s.norm, n, s.up));
  STRATA_RETURN_IF_ERROR(activate(s.gate, s.up, n * f));
  STRATA_RETURN_IF_ERROR(ops_.matmul(matrix(w.ffn_down_shexp), s.gate, n, s.moe_y));
  shexp_gate_.assign(static_cast<size_t>(n), 1.0f);
  if (w.ffn_gate_inp_shexp.present()) {
    // A [1][n_embd] matrix: one logit per token, into the router buffer (its logits are on the host).
    const backend::MatrixView g{w.ffn_gate_inp_shexp.data, kernels::DType::F32, 1, d};
    STRATA_RETURN_IF_ERROR(ops_.matmul(g, s.norm, n, s.router));
    STRATA_RETURN_IF_ERROR(ops_.to_host(s.router, shexp_gate_.data(), static_cast<size_t>(n) * sizeof(float)));
    for (float& v : shexp_gate_) v = static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(v))));
  }
  identity_.resize(static_cast<size_t>(n));
  std::iota(identity_.begin(), identity_.end(), 0);
  return ops_.scale_add_rows(out, n, d, s.moe_y, identity_.data(), shexp_gate_.data(), n);
}

Status BlockForward::moe_experts(const ShardWeights& w, const float* x_norm, const MoeRouting& routing, int64_t n,
                                 float* out) {
  const model::ModelConfig& c = config_;
  const ScratchViews& s = scratch_;
  if (routing.n_tokens != n || routing.n_expert != c.n_expert ||
      static_cast<int64_t>(routing.offset.size()) != c.n_expert + 1)
    return Error{Code::InvalidArgument, "moe_experts: a routing of " + std::to_string(routing.n_tokens) +
                                            " tokens over " + std::to_string(routing.n_expert) + " experts for " +
                                            std::to_string(n) + " tokens over " + std::to_string(c.n_expert)};
  if (w.expert_begin < 0 || w.expert_end > c.n_expert || w.expert_begin > w.expert_end)
    return Error{Code::InvalidArgument, "moe_experts: experts [" + std::to_string(w.expert_begin) + ", " +
                                            std::to_string(w.expert_end) + ") of " + std::to_string(c.n_expert)};
  if (w.expert_end > w.expert_begin &&
      (!w.ffn_gate_exps.present() || w.ffn_gate_exps.n_mats != w.expert_end - w.expert_begin))
    return Error{Code::InvalidArgument, "moe_experts: the device holds " + std::to_string(w.ffn_gate_exps.n_mats) +
                                            " expert matrices for experts [" + std::to_string(w.expert_begin) +
                                            ", " + std::to_string(w.expert_end) + ")"};
  const int64_t d = c.n_embd;
  const int64_t f = w.ffn_gate_exps.rows;
  for (int64_t e = w.expert_begin; e < w.expert_end; ++e) {
    const int32_t first = routing.offset[static_cast<size_t>(e)];
    const int64_t m = routing.offset[static_cast<size_t>(e + 1)] - first;
    if (m == 0) continue;
    const int32_t* rows = routing.token_of.data() + first;
    // Every token (decode: always) in order needs no gather: the rows are x_norm itself.
    const float* x = x_norm;
    if (m != n) {
      STRATA_RETURN_IF_ERROR(ops_.gather_rows(x_norm, n, d, rows, m, s.moe_x));
      x = s.moe_x;
    }
    const int64_t i = e - w.expert_begin;
    STRATA_RETURN_IF_ERROR(ops_.matmul(matrix(w.ffn_gate_exps, i), x, m, s.gate));
    STRATA_RETURN_IF_ERROR(ops_.matmul(matrix(w.ffn_up_exps, i), x, m, s.up));
    // Expert biases (gpt-oss): row i of each [n_expert][width] f32 bias.
    if (w.ffn_gate_exps_b.present()) STRATA_RETURN_IF_ERROR(ops_.add_rows(s.gate, expert_row(w.ffn_gate_exps_b, i), m, f));
    if (w.ffn_up_exps_b.present()) STRATA_RETURN_IF_ERROR(ops_.add_rows(s.up, expert_row(w.ffn_up_exps_b, i), m, f));
    STRATA_RETURN_IF_ERROR(activate(s.gate, s.up, m * f));
    STRATA_RETURN_IF_ERROR(ops_.matmul(matrix(w.ffn_down_exps, i), s.gate, m, s.moe_y));
    if (w.ffn_down_exps_b.present()) STRATA_RETURN_IF_ERROR(ops_.add_rows(s.moe_y, expert_row(w.ffn_down_exps_b, i), m, d));
    STRATA_RETURN_IF_ERROR(
        ops_.scale_add_rows(out, n, d, s.moe_y, rows, routing.weight_of.data() + first, m));
  }
  return {};
}

Status BlockForward::residual_add(const model::TensorView& post_norm, float* hidden, float* update, int64_t n) {
  const int64_t count = n * config_.n_embd;
  if (post_norm.present())
    STRATA_RETURN_IF_ERROR(ops_.rms_norm(update, f32(post_norm), update, n, config_.n_embd, config_.rms_eps));
  if (config_.residual_scale != 1.0f) STRATA_RETURN_IF_ERROR(ops_.scale(update, config_.residual_scale, count));
  return ops_.add(hidden, update, count);
}

// granite divides the logits by logit_scale, cohere2 multiplies them by its own: one factor.
float BlockForward::logit_factor() const {
  return config_.logit_scale != 1.0f ? config_.logit_mul / config_.logit_scale : config_.logit_mul;
}

Status BlockForward::head_rows(const model::TensorView& output_norm, const model::TensorView& output_norm_b,
                               const model::TensorView& output, const float* hidden, std::span<const int64_t> rows,
                               float* logits) {
  const int64_t m = static_cast<int64_t>(rows.size());
  if (m == 0) return {};
  // Gather the normalised rows into norm ([m][n_embd]), then one product for all of them.
  for (int64_t i = 0; i < m; ++i)
    STRATA_RETURN_IF_ERROR(norm_rows(output_norm, output_norm_b, hidden + rows[static_cast<size_t>(i)] * config_.n_embd,
                                     scratch_.norm + i * config_.n_embd, 1));
  STRATA_RETURN_IF_ERROR(ops_.matmul(matrix(output), scratch_.norm, m, logits));
  if (config_.logit_scale != 1.0f || config_.logit_mul != 1.0f)
    STRATA_RETURN_IF_ERROR(ops_.scale(logits, logit_factor(), m * output.rows));
  if (config_.final_softcap > 0.0f) return ops_.softcap(logits, config_.final_softcap, m * output.rows);
  return {};
}

}  // namespace strata::arch
