// engine/plan/tensor_split.cpp — proportional, block-aligned cuts of heads and FFN units.
#include "engine/plan/tensor_split.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace strata::plan {

LayerShard whole_layer(const model::ModelConfig& c) {
  return LayerShard{0, c.n_kv_heads, 0, c.ffn_width(), 0, c.n_expert};
}

namespace {

// Splits `units` whole units by ratio with the largest-remainder method.
std::vector<int64_t> apportion(int64_t units, const std::vector<double>& ratio) {
  const double total = std::accumulate(ratio.begin(), ratio.end(), 0.0);
  std::vector<int64_t> count(ratio.size());
  std::vector<std::pair<double, size_t>> remainder;
  int64_t given = 0;
  for (size_t i = 0; i < ratio.size(); ++i) {
    const double exact = static_cast<double>(units) * ratio[i] / total;
    count[i] = static_cast<int64_t>(std::floor(exact));
    given += count[i];
    remainder.emplace_back(exact - std::floor(exact), i);
  }
  std::stable_sort(remainder.begin(), remainder.end(), [](auto& a, auto& b) { return a.first > b.first; });
  for (size_t k = 0; given < units; ++k, ++given) ++count[remainder[k % remainder.size()].second];
  return count;
}

}  // namespace

Expected<std::vector<LayerShard>> split_layer(const model::ModelConfig& c, const model::LayerWeights& l,
                                              const std::vector<double>& ratio, int64_t layer_index) {
  const std::string where = "layer " + std::to_string(layer_index);
  if (ratio.size() < 2) return Error{Code::InvalidArgument, where + ": a tensor split needs at least 2 devices"};
  for (double r : ratio) {
    if (!(r > 0.0) || !std::isfinite(r))
      return Error{Code::InvalidArgument, where + ": split ratio " + std::to_string(r) + " must be positive"};
  }
  if (c.is_moe())
    return Error{Code::InvalidArgument, where + ": tensor-parallel groups of mixture-of-experts layers are not "
                                                "supported (place the layer on one device)"};
  const int64_t group = c.n_heads / c.n_kv_heads;
  // Attention unit: the fewest KV heads whose query columns fill whole attn_output blocks.
  const int64_t wo_block = kernels::traits(l.wo.type).block_elems;
  int64_t heads_per_unit = 1;
  while ((heads_per_unit * group * c.head_dim) % wo_block != 0 && heads_per_unit < c.n_kv_heads) ++heads_per_unit;
  if ((heads_per_unit * group * c.head_dim) % wo_block != 0 || c.n_kv_heads % heads_per_unit != 0)
    return Error{Code::Unsupported, where + ": attn_output (" + kernels::dtype_name(l.wo.type) + ", block " +
                                        std::to_string(wo_block) + ") cannot be cut between KV heads of " +
                                        std::to_string(group * c.head_dim) + " columns"};
  const int64_t ff_unit = kernels::traits(l.w_down.type).block_elems;
  if (c.n_ff % ff_unit != 0)
    return Error{Code::Unsupported, where + ": ffn_down rows of " + std::to_string(c.n_ff) +
                                        " are not a multiple of its block " + std::to_string(ff_unit)};
  const int64_t head_units = c.n_kv_heads / heads_per_unit;
  const int64_t ff_units = c.n_ff / ff_unit;
  if (head_units < static_cast<int64_t>(ratio.size()) || ff_units < static_cast<int64_t>(ratio.size()))
    return Error{Code::Unsupported, where + ": " + std::to_string(head_units) + " head units and " +
                                        std::to_string(ff_units) + " FFN units cannot be shared by " +
                                        std::to_string(ratio.size()) + " devices"};
  const std::vector<int64_t> heads = apportion(head_units, ratio);
  const std::vector<int64_t> ffs = apportion(ff_units, ratio);
  std::vector<LayerShard> shards(ratio.size());
  int64_t h = 0, f = 0;
  for (size_t i = 0; i < ratio.size(); ++i) {
    shards[i].kv_head_begin = h;
    h += heads[i] * heads_per_unit;
    shards[i].kv_head_end = h;
    shards[i].ff_begin = f;
    f += ffs[i] * ff_unit;
    shards[i].ff_end = f;
  }
  return shards;
}

namespace {
uint64_t row_run_bytes(const model::TensorView& t, int64_t n) {
  return static_cast<uint64_t>(n) * static_cast<uint64_t>(kernels::row_bytes(t.type, t.cols));
}
}  // namespace

uint64_t shard_attention_bytes(const model::ModelConfig& c, const model::LayerWeights& l, const LayerShard& s) {
  const int64_t group = c.n_heads / c.n_kv_heads;
  const int64_t q_rows = s.n_kv_heads() * group * c.head_dim;
  const int64_t kv_rows = s.n_kv_heads() * c.head_dim;
  // Norm vectors go whole to every shard.
  uint64_t b = l.attn_norm.n_bytes + l.q_norm.n_bytes + l.k_norm.n_bytes + l.post_attn_norm.n_bytes;
  b += row_run_bytes(l.wq, q_rows) + row_run_bytes(l.wk, kv_rows) + row_run_bytes(l.wv, kv_rows);
  if (l.bq.present()) b += static_cast<uint64_t>(q_rows + 2 * kv_rows) * sizeof(float);
  b += static_cast<uint64_t>(c.n_embd) * static_cast<uint64_t>(kernels::row_bytes(l.wo.type, q_rows));
  return b;
}

uint64_t shard_ffn_bytes(const model::ModelConfig& c, const model::LayerWeights& l, const LayerShard& s) {
  uint64_t b = l.ffn_norm.n_bytes + l.post_ffn_norm.n_bytes;
  if (l.is_moe()) {
    // Never cut (split_layer refuses MoE groups): the router and the shared expert whole.
    return b + l.ffn_gate_inp.n_bytes + l.ffn_gate_inp_shexp.n_bytes + l.ffn_gate_shexp.n_bytes +
           l.ffn_up_shexp.n_bytes + l.ffn_down_shexp.n_bytes;
  }
  b += row_run_bytes(l.w_gate, s.n_ff()) + row_run_bytes(l.w_up, s.n_ff());
  b += static_cast<uint64_t>(c.n_embd) * static_cast<uint64_t>(kernels::row_bytes(l.w_down.type, s.n_ff()));
  return b;
}

uint64_t expert_range_bytes(const model::ModelConfig&, const model::LayerWeights& l, int64_t begin, int64_t end) {
  if (!l.is_moe() || end <= begin) return 0;
  return static_cast<uint64_t>(end - begin) *
         (l.ffn_gate_exps.mat_stride + l.ffn_up_exps.mat_stride + l.ffn_down_exps.mat_stride);
}

uint64_t shard_weight_bytes(const model::ModelConfig& c, const model::LayerWeights& l, const LayerShard& s) {
  return shard_attention_bytes(c, l, s) + shard_ffn_bytes(c, l, s) +
         expert_range_bytes(c, l, s.expert_begin, s.expert_end);
}

uint64_t shard_kv_bytes(const model::ModelConfig& c, const LayerShard& s, int64_t n_ctx, int64_t n_seq,
                        kernels::DType kv_type) {
  return 2ull * static_cast<uint64_t>(n_seq) * static_cast<uint64_t>(n_ctx) *
         static_cast<uint64_t>(kernels::row_bytes(kv_type, s.n_kv_heads() * c.head_dim));
}

}  // namespace strata::plan
