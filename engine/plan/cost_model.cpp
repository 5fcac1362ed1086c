// engine/plan/cost_model.cpp — predicted milliseconds per token for a placement (see cost_model.h
// and docs/placement.md). Pure arithmetic on declared sizes and speeds.
#include "engine/plan/cost_model.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>

#include "engine/plan/activation_traffic.h"
#include "engine/plan/placement_validate.h"

namespace strata::plan {

namespace {

double bandwidth_bytes_per_ms(const DeviceInfo& d) {
  return (d.bandwidth_gbps > 0 ? d.bandwidth_gbps : kDefaultBandwidthGbps) * 1e6;  // GB/s -> bytes/ms
}
double flops_per_ms(const DeviceInfo& d) { return (d.tflops > 0 ? d.tflops : kDefaultTflops) * 1e9; }

// The time of one token's read of a layer's (or the head's) matrices per weight byte: decode reads
// each matrix at min(bandwidth, the device's measured one-token rate of its type), plus the rate's
// fixed time per weight row (short rows are slower per byte: MatvecRate) and the device's fixed
// time per product call (matvec_call_us, once per matrix); the rate of the whole is
// its bytes over the sum of each matrix's time, so a Q4_K_M block's Q6_K tensors weigh in by their
// share. A shard of the layer (a tensor split's rows) is charged its bytes at this rate, which
// keeps the per-row part proportional. Prompt batches read at the bandwidth (their limit is the
// FLOP rate).
double read_bytes_per_ms(const DeviceInfo& d, std::initializer_list<const model::TensorView*> tensors, int64_t batch) {
  const double bw = bandwidth_bytes_per_ms(d);
  if (batch > 1 || d.matvec_gbps.empty()) return bw;
  double bytes = 0, ms = 0;
  for (const model::TensorView* t : tensors) {
    if (t->n_bytes == 0) continue;  // absent (sizes-only views, as the planner's tests make, have no data)
    double rate = bw, row_ms = 0;
    for (const MatvecRate& r : d.matvec_gbps)
      if (r.type == t->type && r.gbps > 0) {
        rate = std::min(rate, r.gbps * 1e6);
        row_ms = r.row_ns * 1e-6;
      }
    bytes += static_cast<double>(t->n_bytes);
    ms += static_cast<double>(t->n_bytes) / rate + static_cast<double>(t->rows * t->n_mats) * row_ms +
          static_cast<double>(t->n_mats) * d.matvec_call_us * 1e-3;
  }
  return ms > 0 ? bytes / ms : bw;
}

double layer_read_bytes_per_ms(const model::LayerWeights& l, const DeviceInfo& d, int64_t batch) {
  return read_bytes_per_ms(d,
                           {&l.wq, &l.wk, &l.wv, &l.wo, &l.wq_a, &l.wq_b, &l.wkv_a, &l.wk_b, &l.wv_b, &l.w_gate,
                            &l.w_up, &l.w_down, &l.ffn_gate_inp, &l.ffn_gate_shexp, &l.ffn_up_shexp,
                            &l.ffn_down_shexp},
                           batch);
}

double read_ms(double bytes, double bytes_per_ms, int64_t batch) {
  return bytes / bytes_per_ms / static_cast<double>(std::max<int64_t>(batch, 1));
}

// The time of one token's work on d: its share of the weight reads (`read`, ms, already divided
// by the batch) plus its own activations (activation_traffic.h) at the device's bandwidth, which
// every row of a batch pays, or its FLOPs at the compute rate, whichever is longer.
double bound_ms(double read, double activation_bytes, double flops, const DeviceInfo& d) {
  return std::max(read + activation_bytes / bandwidth_bytes_per_ms(d), flops / flops_per_ms(d));
}

// bytes over the slowest declared link among these devices, plus the largest latency once per
// `batch` tokens. Links of 0 GB/s do not limit (in-process copies).
double link_ms(uint64_t bytes, const std::vector<const DeviceInfo*>& ds, int64_t batch) {
  double gbps = std::numeric_limits<double>::infinity();
  double latency_us = 0;
  for (const DeviceInfo* d : ds) {
    if (d->link_gbps > 0) gbps = std::min(gbps, d->link_gbps);
    latency_us = std::max(latency_us, d->link_latency_us);
  }
  double ms = latency_us * 1e-3 / static_cast<double>(std::max<int64_t>(batch, 1));
  if (gbps != std::numeric_limits<double>::infinity()) ms += static_cast<double>(bytes) / (gbps * 1e6);
  return ms;
}

std::vector<const DeviceInfo*> infos(const std::vector<std::string>& ids,
                                           const std::vector<DeviceInfo>& devices) {
  std::vector<const DeviceInfo*> out;
  for (const auto& id : ids) out.push_back(find_device(devices, id));
  return out;
}

// The hidden state leaving target a is already on every device of target b: nothing moves.
bool held_by(const Target& a, const Target& b) {
  return std::all_of(b.devices.begin(), b.devices.end(), [&](const std::string& id) {
    return std::find(a.devices.begin(), a.devices.end(), id) != a.devices.end();
  });
}

// Moving the hidden state from target a to target b: free when b's devices already hold it.
double boundary_ms(const Target& a, const Target& b, uint64_t bytes, const std::vector<DeviceInfo>& devices,
                   int64_t batch) {
  if (held_by(a, b)) return 0.0;
  std::vector<std::string> ids = a.devices;
  for (const auto& id : b.devices)
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  return link_ms(bytes, infos(ids, devices), batch);
}

}  // namespace

uint64_t hidden_state_bytes(const model::ModelConfig& c) { return static_cast<uint64_t>(c.n_embd) * sizeof(float); }

uint64_t attention_parameters(const model::ModelConfig& c, const model::LayerWeights& l, const LayerShard& s) {
  if (c.mla) {
    // MLA is never cut: every attention matrix once per token (each head's k_b and v_b once).
    uint64_t n = static_cast<uint64_t>(c.n_embd);
    for (const model::TensorView* m : {&l.wq, &l.wq_a, &l.wq_b, &l.wkv_a, &l.wk_b, &l.wv_b, &l.wo})
      n += static_cast<uint64_t>(m->rows) * static_cast<uint64_t>(m->cols) * static_cast<uint64_t>(m->n_mats);
    return n;
  }
  const int64_t group = c.n_heads / std::max<int64_t>(c.n_kv_heads, 1);
  const auto q_rows = static_cast<uint64_t>(s.n_kv_heads() * group * c.head_dim);
  const auto kv_rows = static_cast<uint64_t>(s.n_kv_heads() * c.head_dim);
  const auto e = static_cast<uint64_t>(c.n_embd);
  uint64_t n = e * (q_rows + 2 * kv_rows) + e * q_rows + e;
  if (l.bq.present() || l.bq.n_bytes > 0) n += q_rows + 2 * kv_rows;
  return n;
}

uint64_t ffn_parameters(const model::ModelConfig& c, const model::LayerWeights& l, const LayerShard& s) {
  const auto e = static_cast<uint64_t>(c.n_embd);
  if (!l.is_moe()) return 3 * e * static_cast<uint64_t>(s.n_ff()) + e;
  // The router and the shared expert (if any).
  return e * static_cast<uint64_t>(c.n_expert) + 3 * e * static_cast<uint64_t>(c.n_ff_shexp) + e;
}

uint64_t shard_parameters(const model::ModelConfig& c, const model::LayerWeights& l, const LayerShard& s) {
  uint64_t n = attention_parameters(c, l, s) + ffn_parameters(c, l, s);
  // Per token: the routed experts it runs through (n_expert_used of them, each 3 matrices).
  if (l.is_moe())
    n += static_cast<uint64_t>(std::min(c.n_expert_used, s.n_experts())) * 3 * static_cast<uint64_t>(c.n_embd) *
         static_cast<uint64_t>(c.n_ff_exp);
  return n;
}

namespace {
// Experts of [begin, end) a batch of `batch` tokens reads: each token picks n_expert_used of the
// n_expert, taken as spread evenly, so an expert is missed by the whole batch with probability
// (1 - k / n)^batch.
double experts_read(const model::ModelConfig& c, int64_t begin, int64_t end, int64_t batch) {
  if (c.n_expert <= 0 || end <= begin) return 0.0;
  const double k = static_cast<double>(std::min(c.n_expert_used, c.n_expert)) / static_cast<double>(c.n_expert);
  const double touched = 1.0 - std::pow(1.0 - k, static_cast<double>(std::max<int64_t>(batch, 1)));
  return static_cast<double>(end - begin) * touched;
}
}  // namespace

double experts_ms(const model::ModelConfig& c, const model::LayerWeights& l, int64_t begin, int64_t end,
                  const DeviceInfo& d, int64_t batch) {
  if (!l.is_moe() || end <= begin) return 0.0;
  const double per_expert = static_cast<double>(expert_range_bytes(c, l, 0, 1));
  const double bytes_per_batch = experts_read(c, begin, end, batch) * per_expert;
  // FLOPs per token: its experts that fall in [begin, end).
  const double share = static_cast<double>(end - begin) / static_cast<double>(c.n_expert);
  const double flops = 2.0 * share * static_cast<double>(c.n_expert_used) * 3.0 * static_cast<double>(c.n_embd) *
                       static_cast<double>(c.n_ff_exp);
  const double read = read_ms(bytes_per_batch, read_bytes_per_ms(d, {&l.ffn_gate_exps, &l.ffn_up_exps, &l.ffn_down_exps}, batch), batch);
  // Each token's own passes through the experts it is routed to in the range.
  const double act = share * static_cast<double>(c.n_expert_used) * static_cast<double>(expert_activation_bytes(c, l));
  return bound_ms(read, act, flops, d);
}

uint64_t expert_partial_bytes(const model::ModelConfig& c, const BlockUnit& from) {
  if (c.n_expert <= 0 || from.last_of_block || from.kind == PartKind::Attention) return 0;
  // The partial update and the normalised FFN input (n_embd floats each), and the routing (k
  // expert ids and weights) per token.
  return 2 * hidden_state_bytes(c) + static_cast<uint64_t>(c.n_expert_used) * (sizeof(int32_t) + sizeof(float));
}

double compute_ms(uint64_t weight_bytes, double flops, const DeviceInfo& d, int64_t batch, uint64_t activation_bytes) {
  const double read = static_cast<double>(weight_bytes) / bandwidth_bytes_per_ms(d) /
                      static_cast<double>(std::max<int64_t>(batch, 1));
  return bound_ms(read, static_cast<double>(activation_bytes), flops, d);
}

double block_ms(const model::ModelConfig& c, const model::LayerWeights& l, const LayerShard& s, bool whole,
                const DeviceInfo& d, int64_t batch) {
  if (l.is_moe()) {
    // Attention, router and shared expert as any block; the routed experts as far as the batch's
    // tokens reach them.
    const LayerShard shard = whole ? whole_layer(c) : s;
    const double bytes = static_cast<double>(shard_attention_bytes(c, l, shard) + shard_ffn_bytes(c, l, shard));
    const double flops = 2.0 * static_cast<double>(attention_parameters(c, l, shard) + ffn_parameters(c, l, shard));
    const double act = static_cast<double>(attention_activation_bytes(c, l, shard) + ffn_activation_bytes(c, l, shard));
    const double dense = bound_ms(read_ms(bytes, layer_read_bytes_per_ms(l, d, batch), batch), act, flops, d);
    return dense + experts_ms(c, l, shard.expert_begin, shard.expert_end, d, batch);
  }
  const uint64_t bytes = whole ? l.n_bytes() : shard_weight_bytes(c, l, s);
  const double flops = 2.0 * static_cast<double>(shard_parameters(c, l, s));
  const double act = static_cast<double>(attention_activation_bytes(c, l, s) + ffn_activation_bytes(c, l, s));
  const double read = read_ms(static_cast<double>(bytes), layer_read_bytes_per_ms(l, d, batch), batch);
  return bound_ms(read, act, flops, d);
}

double embedding_ms(const model::ModelConfig& c, const model::ModelWeights& w, const DeviceInfo& d) {
  const uint64_t row = c.n_vocab > 0 ? w.token_embd.n_bytes / static_cast<uint64_t>(c.n_vocab) : 0;
  return compute_ms(row, 0.0, d, 1, embedding_activation_bytes(c));
}

double head_ms(const model::ModelConfig& c, const model::ModelWeights& w, const DeviceInfo& d, int64_t batch) {
  return head_rows_ms(c, w, d, batch, c.n_vocab);
}

double head_rows_ms(const model::ModelConfig& c, const model::ModelWeights& w, const DeviceInfo& d, int64_t batch,
                    int64_t vocab_rows) {
  const double share = static_cast<double>(vocab_rows) / static_cast<double>(std::max<int64_t>(c.n_vocab, 1));
  const double bytes = static_cast<double>(w.output_norm.n_bytes + w.output_norm_b.n_bytes + w.output.n_bytes) * share;
  const double flops = 2.0 * static_cast<double>(vocab_rows) * static_cast<double>(c.n_embd);
  const double t = bound_ms(read_ms(bytes, read_bytes_per_ms(d, {&w.output}, batch), batch),
                            static_cast<double>(head_activation_bytes(c, vocab_rows)), flops, d);
  // Each row's logits then go to the host over the device's link (one copy per row).
  const uint64_t logits = static_cast<uint64_t>(std::max<int64_t>(vocab_rows, 0)) * sizeof(float);
  return t + link_ms(logits, {&d}, 1);
}

double attention_ms(const model::ModelConfig& c, int64_t n_kv_heads, kernels::DType kv_type, double positions,
                    const DeviceInfo& d, double reads_shared_by) {
  if (n_kv_heads <= 0) return 0.0;
  positions = std::max(positions, 0.0);
  const kernels::DTypeTraits& tr = kernels::traits(kv_type);
  const double elem_bytes = static_cast<double>(tr.block_bytes) / static_cast<double>(tr.block_elems);
  const double kv_elems = static_cast<double>(n_kv_heads * c.head_dim);
  const double group = static_cast<double>(c.n_heads / std::max<int64_t>(c.n_kv_heads, 1));
  const double planes = static_cast<double>(c.kv_planes());
  const double bytes = positions * planes * kv_elems * elem_bytes / std::max(reads_shared_by, 1.0);
  // The token's own K and V rows written into the cache: every token, an empty cache too.
  const double append = planes * kv_elems * elem_bytes;
  const double flops = 4.0 * positions * kv_elems * group;
  return std::max((bytes + append) / bandwidth_bytes_per_ms(d), flops / flops_per_ms(d));
}

double transfer_ms(uint64_t bytes, const DeviceInfo& a, const DeviceInfo& b) {
  if (a.id == b.id) return 0.0;
  return link_ms(bytes, {&a, &b}, 1);
}

namespace {

// One block placed in parts (units_of): each part on its own target, the hidden state crossing
// between consecutive parts on different devices (and from the last part back to the next
// block's attention), the MoE expert partial sums riding along with it.
template <typename BusyOf>
Status cost_parts(const model::ModelConfig& c, const model::LayerWeights& lw, const LayerPlacement& lp, int64_t layer,
                  const std::vector<DeviceInfo>& devices, double decode_positions, double prompt_positions,
                  int64_t batch, int64_t rows, double prompt_tile, kernels::DType kv_type, StageCost& s,
                  BusyOf&& busy_of) {
  const uint64_t hidden = hidden_state_bytes(c);
  const std::vector<BlockUnit> units = units_of(lp, layer, c.n_expert);
  std::vector<LayerShard> shards = {whole_layer(c)};
  if (lp.target.is_group()) {
    STRATA_ASSIGN_OR_RETURN(shards, split_layer(c, lw, lp.target.ratio, layer));
  }
  const bool kv_away = !lp.kv_device.empty() && std::find(lp.target.devices.begin(), lp.target.devices.end(),
                                                          lp.kv_device) == lp.target.devices.end();
  auto charge = [&](const std::string& id, double t, double tp) {
    busy_of(id).decode_ms += t;
    busy_of(id).prefill_ms += tp;
  };
  auto crossing = [&](const Target& a, const Target& b, uint64_t bytes) {
    if (held_by(a, b)) return;
    s.crossing_ms += boundary_ms(a, b, bytes, devices, rows);
    s.prefill_ms += boundary_ms(a, b, bytes, devices, batch);
    s.transfer_bytes += bytes;
  };
  for (size_t k = 0; k < units.size(); ++k) {
    const BlockUnit& u = units[k];
    if (k > 0) crossing(units[k - 1].target, u.target, hidden + expert_partial_bytes(c, units[k - 1]));
    const auto members = infos(u.target.devices, devices);
    double slowest = 0, slowest_p = 0, slowest_a = 0;
    for (size_t m = 0; m < members.size(); ++m) {
      const LayerShard shard = u.target.is_group() ? shards[m] : whole_layer(c);
      double t = 0, tp = 0, ta = 0;
      if (u.kind == PartKind::Attention) {
        const int64_t kvh = shard.n_kv_heads();
        if (kv_away) {
          const DeviceInfo& kd = *find_device(devices, lp.kv_device);
          const double tk = attention_ms(c, kvh, kv_type, decode_positions, kd, 1.0);
          charge(kd.id, tk, attention_ms(c, kvh, kv_type, prompt_positions, kd, prompt_tile));
          ta = tk;
        } else {
          ta = attention_ms(c, kvh, kv_type, decode_positions, *members[m], 1.0);
          tp += attention_ms(c, kvh, kv_type, prompt_positions, *members[m], prompt_tile);
        }
        const double flops = 2.0 * static_cast<double>(attention_parameters(c, lw, shard));
        const double bytes = static_cast<double>(shard_attention_bytes(c, lw, shard));
        const double rate = read_bytes_per_ms(*members[m], {&lw.wq, &lw.wk, &lw.wv, &lw.wo}, rows);
        const uint64_t act = attention_activation_bytes(c, lw, shard);
        t += bound_ms(read_ms(bytes, rate, rows), static_cast<double>(act), flops, *members[m]) + (kv_away ? 0.0 : ta);
        tp += compute_ms(shard_attention_bytes(c, lw, shard), flops, *members[m], batch, act);
      } else if (u.kind == PartKind::Ffn) {
        const double flops = 2.0 * static_cast<double>(ffn_parameters(c, lw, shard));
        const double bytes = static_cast<double>(shard_ffn_bytes(c, lw, shard));
        const double rate = read_bytes_per_ms(*members[m], {&lw.w_gate, &lw.w_up, &lw.w_down, &lw.ffn_gate_inp,
                                                            &lw.ffn_gate_shexp, &lw.ffn_up_shexp, &lw.ffn_down_shexp}, rows);
        const uint64_t act = ffn_activation_bytes(c, lw, shard);
        t += bound_ms(read_ms(bytes, rate, rows), static_cast<double>(act), flops, *members[m]);
        tp += compute_ms(shard_ffn_bytes(c, lw, shard), flops, *members[m], batch, act);
        if (lp.experts.empty()) {  // the routed experts run with their FFN part
          t += experts_ms(c, lw, 0, c.n_expert, *members[m], rows);
          tp += experts_ms(c, lw, 0, c.n_expert, *members[m], batch);
        }
      } else {
        t += experts_ms(c, lw, u.expert_begin, u.expert_end, *members[m], rows);
        tp += experts_ms(c, lw, u.expert_begin, u.expert_end, *members[m], batch);
      }
      charge(members[m]->id, t, tp);
      slowest = std::max(slowest, t);
      slowest_p = std::max(slowest_p, tp);
      slowest_a = std::max(slowest_a, ta);
    }
    s.compute_ms += slowest;
    s.prefill_ms += slowest_p;
    s.attention_ms += slowest_a;
    if (u.target.is_group()) {
      // One all-reduce per part a group runs (attention, or a grouped FFN).
      s.allreduce_ms += link_ms(hidden, members, rows);
      s.transfer_bytes += hidden;
      s.prefill_ms += link_ms(hidden, members, batch);
    }
  }
  // Back to where the next block starts (its attention, on this stage's target).
  if (layer + 1 < s.end_layer) crossing(units.back().target, lp.target, hidden);
  return {};
}

}  // namespace

namespace {
// The estimate with decode figures per token for micro-batches of `rows` tokens (each stage's
// weights read once per micro-batch); rows 1: one sequence alone.
Expected<CostEstimate> estimate_cost_rows(const Placement& p, const model::ModelConfig& c, const model::ModelWeights& w,
                                          const std::vector<DeviceInfo>& devices, int64_t context, int64_t rows) {
  STRATA_RETURN_IF_ERROR(validate_placement(p, c, w, devices));
  if (context < 0)
    return Error{Code::InvalidArgument, "a cost estimate at context " + std::to_string(context)};
  // Prompt tokens share each key block read in tiles of this many (kernels/cpu/attention.cpp and
  // the CUDA kernel both tile queries; 16 is the CPU's tile at GQA 4).
  constexpr double kPromptTileTokens = 16.0;
  const int64_t batch = p.max_batch;
  const uint64_t hidden = hidden_state_bytes(c);
  // Per token with KV elsewhere: q, k, v out (q_dim + 2 kv_dim floats), attention output back (q_dim).
  const uint64_t kv_move = static_cast<uint64_t>(2 * c.q_dim() + 2 * c.kv_dim()) * sizeof(float);
  std::vector<DeviceCost> busy;
  auto busy_of = [&](const std::string& id) -> DeviceCost& {
    for (auto& b : busy)
      if (b.device == id) return b;
    busy.push_back(DeviceCost{id, 0, 0});
    return busy.back();
  };

  std::vector<StageCost> out;
  const std::vector<Stage> stages = stages_of(p);
  const std::string& emb = p.embedding.devices[0];
  if (stages.empty() || stages.front().target != p.embedding) {
    StageCost s;
    s.target = p.embedding;
    s.has_embedding = true;
    out.push_back(s);
  }
  for (const Stage& st : stages) {
    StageCost s;
    s.target = st.target;
    s.kv_device = st.kv_device;
    s.first_layer = st.first_layer;
    s.end_layer = st.end_layer;
    out.push_back(s);
  }
  // A head shared by the last block's tensor group runs in that group's stage (plan::head_shares).
  const std::vector<HeadShare> shares = head_shares(p, c.n_vocab, devices);
  if (shares.size() > 1) {
    out.back().has_head = true;
  } else if (out.size() == 1 && out[0].has_embedding && out[0].target == p.head) {
    out[0].has_head = true;
  } else if (stages.empty() || stages.back().target != p.head) {
    StageCost s;
    s.target = p.head;
    s.has_head = true;
    s.first_layer = s.end_layer = c.n_layers;
    out.push_back(s);
  } else {
    out.back().has_head = true;
  }
  if (!out.front().has_embedding) out.front().has_embedding = true;  // merged: the first stage is on emb

  for (size_t si = 0; si < out.size(); ++si) {
    StageCost& s = out[si];
    const auto members = infos(s.target.devices, devices);
    if (s.has_embedding) {
      const double t = embedding_ms(c, w, *find_device(devices, emb));
      s.compute_ms += t;
      s.prefill_ms += t;
      busy_of(emb).decode_ms += t;
      busy_of(emb).prefill_ms += t;
    }
    for (int64_t i = s.first_layer; i < s.end_layer; ++i) {
      const model::LayerWeights& lw = w.layers[static_cast<size_t>(i)];
      // Positions this layer attends to: per decoded token, and on average per prompt token.
      const int64_t window = c.layer_is_local(i) ? c.sliding_window : 0;
      const auto cap = [&](double n) { return window > 0 ? std::min(n, static_cast<double>(window)) : n; };
      const double decode_positions = context > 0 ? cap(static_cast<double>(context) + 1.0) : 0.0;
      const double prompt_positions = context > 0 ? cap(static_cast<double>(context) + static_cast<double>(batch) / 2.0) : 0.0;
      const bool kv_away = !s.kv_device.empty() && std::find(s.target.devices.begin(), s.target.devices.end(),
                                                             s.kv_device) == s.target.devices.end();
      const LayerPlacement& lp = p.layers[static_cast<size_t>(i)];
      if (lp.has_parts()) {
        STRATA_RETURN_IF_ERROR(cost_parts(c, lw, lp, i, devices, decode_positions, prompt_positions, batch, rows,
                                          kPromptTileTokens, p.kv_type, s, busy_of));
        continue;
      }
      if (kv_away) {
        // Attention runs where the cache is.
        const DeviceInfo& kd = *find_device(devices, s.kv_device);
        const double ta = attention_ms(c, c.n_kv_heads, p.kv_type, decode_positions, kd, 1.0);
        const double tpa = attention_ms(c, c.n_kv_heads, p.kv_type, prompt_positions, kd, kPromptTileTokens);
        s.compute_ms += ta;
        s.attention_ms += ta;
        s.prefill_ms += tpa;
        busy_of(kd.id).decode_ms += ta;
        busy_of(kd.id).prefill_ms += tpa;
      }
      if (!s.target.is_group()) {
        const double ta = kv_away ? 0.0 : attention_ms(c, c.n_kv_heads, p.kv_type, decode_positions, *members[0], 1.0);
        const double tpa =
            kv_away ? 0.0 : attention_ms(c, c.n_kv_heads, p.kv_type, prompt_positions, *members[0], kPromptTileTokens);
        s.attention_ms += ta;
        const double t = block_ms(c, lw, whole_layer(c), true, *members[0], rows) + ta;
        const double tp = block_ms(c, lw, whole_layer(c), true, *members[0], batch) + tpa;
        s.compute_ms += t;
        s.prefill_ms += tp;
        busy_of(members[0]->id).decode_ms += t;
        busy_of(members[0]->id).prefill_ms += tp;
      } else {
        STRATA_ASSIGN_OR_RETURN(auto shards, split_layer(c, lw, s.target.ratio, i));
        double slowest = 0, slowest_p = 0;
        double slowest_a = 0;
        for (size_t m = 0; m < members.size(); ++m) {
          const int64_t kvh = shards[m].n_kv_heads();
          const double ta = kv_away ? 0.0 : attention_ms(c, kvh, p.kv_type, decode_positions, *members[m], 1.0);
          const double tpa =
              kv_away ? 0.0 : attention_ms(c, kvh, p.kv_type, prompt_positions, *members[m], kPromptTileTokens);
          slowest_a = std::max(slowest_a, ta);
          const double t = block_ms(c, lw, shards[m], false, *members[m], rows) + ta;
          const double tp = block_ms(c, lw, shards[m], false, *members[m], batch) + tpa;
          slowest = std::max(slowest, t);
          slowest_p = std::max(slowest_p, tp);
          busy_of(members[m]->id).decode_ms += t;
          busy_of(members[m]->id).prefill_ms += tp;
        }
        s.compute_ms += slowest;
        s.attention_ms += slowest_a;
        s.prefill_ms += slowest_p;
        const double ar = 2.0 * link_ms(hidden, members, rows);
        s.allreduce_ms += ar;
        s.transfer_bytes += 2 * hidden;
        s.prefill_ms += 2.0 * link_ms(hidden, members, batch);
      }
      const bool kv_elsewhere = !s.kv_device.empty() && std::find(s.target.devices.begin(), s.target.devices.end(),
                                                                  s.kv_device) == s.target.devices.end();
      if (kv_elsewhere) {
        auto ds = members;
        ds.push_back(find_device(devices, s.kv_device));
        s.kv_transfer_ms += 2.0 * link_ms(kv_move / 2, ds, rows);
        s.transfer_bytes += kv_move;
        s.prefill_ms += 2.0 * link_ms(kv_move / 2, ds, batch);
      }
    }
    if (s.has_head) {
      // Each share reads its rows of the output matrix at once; the stage waits for the slowest.
      double slowest = 0;
      for (const HeadShare& share : shares) {
        const DeviceInfo& hd = *find_device(devices, share.device);
        const double t = head_rows_ms(c, w, hd, rows, share.row_end - share.row_begin);
        slowest = std::max(slowest, t);
        busy_of(share.device).decode_ms += t;
        busy_of(share.device).prefill_ms += t / static_cast<double>(batch);  // logits for the last prompt token only
      }
      s.compute_ms += slowest;
      s.prefill_ms += slowest / static_cast<double>(batch);
    }
    if (si > 0) {
      // The hidden state leaves the previous stage from where its last block ended (the last
      // part's device when that block is placed in parts).
      const StageCost& prev = out[si - 1];
      Target from = prev.target;
      if (prev.end_layer > prev.first_layer) {
        const auto units = units_of(p.layers[static_cast<size_t>(prev.end_layer - 1)], prev.end_layer - 1, c.n_expert);
        from = units.back().target;
      }
      s.receives = !held_by(from, s.target);
      if (s.receives) s.transfer_bytes += hidden;
      s.recv_ms = boundary_ms(from, s.target, hidden, devices, rows);
      s.prefill_ms += boundary_ms(from, s.target, hidden, devices, batch);
    }
    s.decode_ms = s.recv_ms + s.compute_ms + s.allreduce_ms + s.kv_transfer_ms + s.crossing_ms;
  }

  CostEstimate est;
  est.n_seq = p.n_seq;
  est.context = context;
  est.stages = std::move(out);
  for (const auto& s : est.stages) {
    est.decode_ms_per_token += s.decode_ms;
    est.bottleneck_ms = std::max(est.bottleneck_ms, s.decode_ms);
    est.prefill_ms_per_token += s.prefill_ms;
    est.boundaries += s.receives ? 1 : 0;
    est.transfer_bytes_per_token += s.transfer_bytes;
  }
  // One sequence: a token goes through every stage in turn.
  est.decode_round_ms = est.decode_ms_per_token;
  est.decode_tokens_per_s = est.decode_round_ms > 0 ? 1000.0 / est.decode_round_ms : 0.0;
  est.prefill_tokens_per_s = est.prefill_ms_per_token > 0 ? 1000.0 / est.prefill_ms_per_token : 0.0;
  for (const auto& d : devices)
    for (const auto& b : busy)
      if (b.device == d.id) est.devices.push_back(b);
  return est;
}

}  // namespace

Expected<CostEstimate> estimate_cost(const Placement& p, const model::ModelConfig& c, const model::ModelWeights& w,
                                     const std::vector<DeviceInfo>& devices, int64_t context) {
  STRATA_ASSIGN_OR_RETURN(CostEstimate est, estimate_cost_rows(p, c, w, devices, context, 1));
  if (p.n_seq <= 1) return est;
  // n_seq sequences decoding together, as the executor runs them (Pipeline::submit, bench): one
  // group of sequences per stage that can overlap the others (concurrent_stage_count: stages
  // sharing a device take turns on it), each group one micro-batch in flight, so every stage
  // reads its weights once per group and step and a group enters the first stage as soon as it
  // left the last one. A round (every sequence one token) takes the longer of one group's trip
  // through all stages and the busiest stage's or device's work on every group.
  std::vector<std::vector<std::string>> stage_devices;
  for (const StageCost& s : est.stages) {
    std::vector<std::string> d = s.target.devices;
    if (!s.kv_device.empty()) d.push_back(s.kv_device);
    if (s.has_embedding) d.insert(d.end(), p.embedding.devices.begin(), p.embedding.devices.end());
    if (s.has_head) d.insert(d.end(), p.head.devices.begin(), p.head.devices.end());
    stage_devices.push_back(std::move(d));
  }
  const int64_t groups = std::clamp<int64_t>(concurrent_stage_count(stage_devices), 1, p.n_seq);
  const int64_t rows = (p.n_seq + groups - 1) / groups;
  STRATA_ASSIGN_OR_RETURN(CostEstimate batched, estimate_cost_rows(p, c, w, devices, context, rows));
  double trip = 0, slowest = 0;
  for (const StageCost& s : batched.stages) {
    trip += static_cast<double>(rows) * s.decode_ms;
    slowest = std::max(slowest, static_cast<double>(rows) * s.decode_ms);
  }
  for (const DeviceCost& d : batched.devices) slowest = std::max(slowest, static_cast<double>(rows) * d.decode_ms);
  est.decode_micro_batches = groups;
  est.decode_rows_per_micro_batch = rows;
  est.decode_round_ms = std::max(trip, static_cast<double>(groups) * slowest);
  est.decode_tokens_per_s = est.decode_round_ms > 0 ? 1000.0 * static_cast<double>(p.n_seq) / est.decode_round_ms : 0.0;
  return est;
}

nlohmann::json to_json(const CostEstimate& cost) {
  nlohmann::json j;
  j["n_seq"] = cost.n_seq;
  j["context"] = cost.context;
  j["decode_ms_per_token"] = cost.decode_ms_per_token;
  j["bottleneck_ms"] = cost.bottleneck_ms;
  j["decode_tokens_per_s"] = cost.decode_tokens_per_s;
  j["decode_micro_batches"] = cost.decode_micro_batches;
  j["decode_rows_per_micro_batch"] = cost.decode_rows_per_micro_batch;
  j["decode_round_ms"] = cost.decode_round_ms;
  j["prefill_ms_per_token"] = cost.prefill_ms_per_token;
  j["prefill_tokens_per_s"] = cost.prefill_tokens_per_s;
  j["boundaries"] = cost.boundaries;
  j["transfer_bytes_per_token"] = cost.transfer_bytes_per_token;
  j["stages"] = nlohmann::json::array();
  for (const auto& s : cost.stages) {
    j["stages"].push_back({{"devices", s.target.devices},
                           {"first_layer", s.first_layer},
                           {"end_layer", s.end_layer},
                           {"has_embedding", s.has_embedding},
                           {"has_head", s.has_head},
                           {"recv_ms", s.recv_ms},
                           {"compute_ms", s.compute_ms},
                           {"attention_ms", s.attention_ms},
                           {"allreduce_ms", s.allreduce_ms},
                           {"kv_transfer_ms", s.kv_transfer_ms},
                           {"crossing_ms", s.crossing_ms},
                           {"decode_ms", s.decode_ms},
                           {"prefill_ms", s.prefill_ms},
                           {"transfer_bytes", s.transfer_bytes},
                           {"receives", s.receives}});
  }
  j["devices"] = nlohmann::json::array();
  for (const auto& d : cost.devices)
    j["devices"].push_back({{"device", d.device}, {"decode_ms", d.decode_ms}, {"prefill_ms", d.prefill_ms}});
  return j;
}

}  // namespace strata::plan
