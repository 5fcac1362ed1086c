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
  if (c.mla)
    return Error{Code::Unsupported, where + ": " + std::string(model::arch_name(c.arch)) +
                                        "'s latent attention (MLA) keeps one latent KV head for every query head, so "
                                        "its layers are not cut between devices (place each layer on one device)"};
  if (c.is_moe())
    return Error{Code::InvalidArgument, where + ": tensor-parallel groups of mixture-of-experts layers are not "
                                                "supported (place the layer on one device)"};
  if (c.qk_norm_full)
    return Error{Code::Unsupported, where + ": " + std::string(model::arch_name(c.arch)) +
                                        " normalises the whole Q and K rows (all heads at once), so its layers "
                                        "cannot be cut between devices (place each layer on one device)"};
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

bool holds_first_shard_tensor(const model::LayerTensor& t, const LayerShard& s) {
  if (t.part == model::Part::Attention) return s.kv_head_begin == 0 && s.n_kv_heads() > 0;
  return s.ff_begin == 0 && s.n_ff() > 0;
}

uint64_t shard_tensor_bytes(const model::ModelConfig& c, const model::LayerTensor& t, const model::TensorView& v,
                            const LayerShard& s) {
  // A tensor counts when the file has it; a view with bytes but no data (the planner's synthetic
  // models, sizes only) counts as well.
  if (!v.present() && v.n_bytes == 0) return 0;
  // MLA's attention is never cut (split_layer refuses it) and its tensors' shapes are not the
  // heads' rows the cuts count: the one shard with the KV head holds them whole.
  if (c.mla && t.part == model::Part::Attention) return s.n_kv_heads() > 0 ? v.n_bytes : 0;
  const int64_t group = c.n_heads / c.n_kv_heads;
  const int64_t q_rows = s.n_kv_heads() * group * c.head_dim;
  const int64_t kv_rows = s.n_kv_heads() * c.head_dim;
  const auto rows_of = [&v](int64_t n) {
    return static_cast<uint64_t>(n) * static_cast<uint64_t>(kernels::row_bytes(v.type, v.cols));
  };
  const auto cols_of = [&v](int64_t n) {
    return static_cast<uint64_t>(v.rows) * static_cast<uint64_t>(kernels::row_bytes(v.type, n));
  };
  switch (t.cut) {
    case model::Cut::Whole: return v.n_bytes;  // norms go whole to every shard
    case model::Cut::QRows: return rows_of(q_rows);
    case model::Cut::KvRows: return rows_of(kv_rows);
    case model::Cut::QElems: return static_cast<uint64_t>(q_rows) * sizeof(float);
    case model::Cut::KvElems: return static_cast<uint64_t>(kv_rows) * sizeof(float);
    case model::Cut::QCols: return cols_of(q_rows);
    case model::Cut::FfRows: return rows_of(s.n_ff());
    case model::Cut::FfCols: return cols_of(s.n_ff());
    case model::Cut::ExpertRange:
      return s.n_experts() > 0 ? static_cast<uint64_t>(s.n_experts()) * v.mat_stride : 0;
    case model::Cut::QHeads: return static_cast<uint64_t>(s.n_kv_heads() * group) * sizeof(float);
    case model::Cut::FfElems: return static_cast<uint64_t>(s.n_ff()) * sizeof(float);
    case model::Cut::FirstShard: return holds_first_shard_tensor(t, s) ? v.n_bytes : 0;
  }
  return 0;
}

uint64_t shard_part_bytes(const model::ModelConfig& c, const model::LayerWeights& l, const LayerShard& s,
                          model::Part part) {
  uint64_t b = 0;
  for (const model::LayerTensor& t : model::layer_tensors())
    if (t.part == part) b += shard_tensor_bytes(c, t, l.*t.view, s);
  return b;
}

uint64_t shard_attention_bytes(const model::ModelConfig& c, const model::LayerWeights& l, const LayerShard& s) {
  return shard_part_bytes(c, l, s, model::Part::Attention);
}

// An MoE block's FFN part (router, shared expert) is never cut (split_layer refuses MoE groups):
// its tensors are Cut::Whole, and its dense FFN tensors are absent.
uint64_t shard_ffn_bytes(const model::ModelConfig& c, const model::LayerWeights& l, const LayerShard& s) {
  return shard_part_bytes(c, l, s, model::Part::Ffn);
}

uint64_t expert_range_bytes(const model::ModelConfig& c, const model::LayerWeights& l, int64_t begin, int64_t end) {
  LayerShard s;
  s.expert_begin = begin, s.expert_end = end;
  return shard_part_bytes(c, l, s, model::Part::Experts);
}

uint64_t shard_weight_bytes(const model::ModelConfig& c, const model::LayerWeights& l, const LayerShard& s) {
  return shard_attention_bytes(c, l, s) + shard_ffn_bytes(c, l, s) +
         expert_range_bytes(c, l, s.expert_begin, s.expert_end);
}

int64_t kv_cells(const model::ModelConfig& c, int64_t layer, int64_t n_ctx, int64_t max_batch, bool swa_full) {
  const int64_t window = c.layer_attention(layer).window;
  if (window <= 0 || swa_full) return n_ctx;
  const int64_t want = window + std::max<int64_t>(max_batch, kKvRingAlign);
  const int64_t ring = (want + kKvRingAlign - 1) / kKvRingAlign * kKvRingAlign;
  return std::min(ring, n_ctx);
}

uint64_t shard_kv_bytes(const model::ModelConfig& c, const LayerShard& s, int64_t rows, int64_t n_seq,
                        kernels::DType kv_type) {
  return static_cast<uint64_t>(c.kv_planes()) * static_cast<uint64_t>(n_seq) * static_cast<uint64_t>(rows) *
         static_cast<uint64_t>(kernels::row_bytes(kv_type, s.n_kv_heads() * c.head_dim));
}

}  // namespace strata::plan
