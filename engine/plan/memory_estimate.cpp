// engine/plan/memory_estimate.cpp — the per-device byte rules of docs/placement.md ("Memory").
// Reads sizes from the model description only; never touches weight bytes or devices.
#include "engine/plan/memory_estimate.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "engine/plan/placement_validate.h"
#include "engine/plan/scratch_layout.h"
#include "engine/plan/text_table.h"

namespace strata::plan {

bool MemoryEstimate::fits() const {
  return std::all_of(devices.begin(), devices.end(), [](const DeviceMemory& d) { return d.fits; });
}

uint64_t MemoryEstimate::total_bytes() const {
  uint64_t t = 0;
  for (const auto& d : devices) t += d.total_bytes;
  return t;
}

const DeviceMemory* MemoryEstimate::find(const std::string& id) const {
  for (const auto& d : devices)
    if (d.device == id) return &d;
  return nullptr;
}

std::string format_bytes(uint64_t bytes) {
  char buf[64];
  const double b = static_cast<double>(bytes);
  if (bytes >= (uint64_t{1} << 30)) {
    std::snprintf(buf, sizeof buf, "%.1f GiB", b / (1024.0 * 1024.0 * 1024.0));
  } else if (bytes >= (uint64_t{1} << 20)) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1024.0 * 1024.0));
  } else if (bytes >= 1024) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  } else {
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  }
  return buf;
}

uint64_t head_share_bytes(const model::ModelConfig& config, const model::ModelWeights& w, const HeadShare& share,
                          bool embedding_on_same_device) {
  uint64_t b = w.output_norm.n_bytes + w.output_norm_b.n_bytes;
  // The rows the pipeline places (exec/pipeline_build.cpp takes the same row_slice).
  if (!(config.tied_output && embedding_on_same_device))
    b += w.output.row_slice(share.row_begin, share.row_end - share.row_begin).n_bytes;
  return b;
}

uint64_t head_weight_bytes(const model::ModelConfig& config, const model::ModelWeights& w,
                           bool embedding_on_same_device) {
  return head_share_bytes(config, w, HeadShare{{}, 0, config.n_vocab}, embedding_on_same_device);
}

uint64_t device_scratch_bytes(const model::ModelConfig& config, const LayerShard& widest, bool has_layers,
                              bool has_head, int64_t max_batch, int64_t n_ctx, int64_t n_seq, int threads) {
  return scratch_layout(config, has_layers ? widest : LayerShard{}, has_layers, has_head, max_batch, n_ctx, n_seq,
                        threads)
      .bytes();
}

Expected<MemoryEstimate> estimate_memory(const Placement& p, const model::ModelConfig& config,
                                         const model::ModelWeights& weights,
                                         const std::vector<DeviceInfo>& devices) {
  STRATA_RETURN_IF_ERROR(validate_placement(p, config, weights, devices));

  struct Acc {
    DeviceMemory mem;
    LayerShard widest;  // max kv heads and max ff units, separately
  };
  std::map<std::string, Acc> acc;
  auto at = [&](const std::string& id) -> Acc& {
    Acc& a = acc[id];
    a.mem.device = id;
    return a;
  };
  auto widen = [](Acc& a, const LayerShard& s) {
    a.widest.kv_head_end = std::max(a.widest.kv_head_end, s.n_kv_heads());
    a.widest.ff_end = std::max(a.widest.ff_end, s.n_ff());
  };

  const std::string& emb = p.embedding.devices[0];
  at(emb).mem.has_embedding = true;
  at(emb).mem.weight_bytes += weights.token_embd.n_bytes;

  const LayerShard whole = whole_layer(config);
  for (size_t i = 0; i < p.layers.size(); ++i) {
    const LayerPlacement& l = p.layers[i];
    const model::LayerWeights& lw = weights.layers[i];
    // The block's cache rows per sequence: n_ctx, or a sliding-window block's ring.
    const int64_t kv_rows = kv_cells(config, static_cast<int64_t>(i), p.n_ctx, p.max_batch, p.swa_full);
    std::vector<LayerShard> shards;
    if (l.target.is_group()) {
      STRATA_ASSIGN_OR_RETURN(shards, split_layer(config, lw, l.target.ratio, static_cast<int64_t>(i)));
    } else {
      shards = {whole};
    }
    // Every device running a part of the block counts it once in n_blocks.
    std::vector<std::string> runs_block;
    auto count_block = [&](const std::string& id) {
      if (std::find(runs_block.begin(), runs_block.end(), id) != runs_block.end()) return;
      runs_block.push_back(id);
      at(id).mem.n_blocks += 1;
    };
    for (const BlockUnit& u : units_of(l, static_cast<int64_t>(i), config.n_expert)) {
      for (size_t m = 0; m < u.target.devices.size(); ++m) {
        Acc& a = at(u.target.devices[m]);
        count_block(u.target.devices[m]);
        // A group's units use its shards; a single-device part of a grouped block is whole.
        const LayerShard& shard = u.target.is_group() ? shards[m] : whole;
        if (u.kind == PartKind::Attention) {
          const uint64_t attention = shard_attention_bytes(config, lw, shard);
          a.mem.attention_bytes += attention;
          a.mem.weight_bytes += attention;
          widen(a, LayerShard{0, shard.n_kv_heads(), 0, 0});
          if (l.kv_device.empty()) {
            a.mem.kv_bytes += shard_kv_bytes(config, shard, kv_rows, p.n_seq, p.kv_type);
            a.mem.n_kv_blocks += 1;
          }
        }
        if (u.kind == PartKind::Ffn || u.whole_block) {
          const uint64_t ffn = shard_ffn_bytes(config, lw, shard);
          a.mem.ffn_bytes += ffn;
          a.mem.weight_bytes += ffn;
          widen(a, LayerShard{0, 0, 0, shard.n_ff()});
        }
        // Routed experts: their own units, or with the FFN part (a whole block's shard range).
        const bool experts_with_ffn = u.whole_block || (u.kind == PartKind::Ffn && l.experts.empty());
        if (config.is_moe() && (u.kind == PartKind::Experts || experts_with_ffn)) {
          const uint64_t experts = experts_with_ffn
                                       ? expert_range_bytes(config, lw, shard.expert_begin, shard.expert_end)
                                       : expert_range_bytes(config, lw, u.expert_begin, u.expert_end);
          a.mem.experts_bytes += experts;
          a.mem.weight_bytes += experts;
          widen(a, LayerShard{0, 0, 0, whole.n_ff()});
        }
      }
    }
    if (!l.kv_device.empty()) {
      Acc& k = at(l.kv_device);
      k.mem.kv_bytes += shard_kv_bytes(config, whole, kv_rows, p.n_seq, p.kv_type);
      k.mem.n_kv_blocks += 1;
    }
  }
  // The head on its device, or its vocabulary rows shared by the last block's tensor group.
  const std::vector<HeadShare> shares = head_shares(p, config.n_vocab, devices);
  for (const HeadShare& share : shares) {
    Acc& h = at(share.device);
    h.mem.has_head = true;
    h.mem.weight_bytes += head_share_bytes(config, weights, share, share.device == emb);
  }

  MemoryEstimate est;
  est.n_ctx = p.n_ctx;
  est.n_seq = p.n_seq;
  est.max_batch = p.max_batch;
  for (const DeviceInfo& d : devices) {
    auto it = acc.find(d.id);
    if (it == acc.end()) continue;
    Acc& a = it->second;
    DeviceMemory& m = a.mem;
    const bool has_layers = m.n_blocks > 0;
    if (has_layers) m.weight_bytes += weights.rope_freqs.n_bytes;
    // A device that only holds KV caches (kv_device) computes nothing: no activation buffers.
    const bool computes = has_layers || m.has_head || m.has_embedding;
    m.scratch_bytes = computes ? device_scratch_bytes(config, a.widest, has_layers, m.has_head, p.max_batch, p.n_ctx,
                                                      p.n_seq, d.threads)
                               : 0;
    m.overhead_bytes = d.runtime_overhead_bytes;
    m.total_bytes = m.weight_bytes + m.kv_bytes + m.scratch_bytes + m.overhead_bytes;
    m.capacity_bytes = d.bytes_total;
    m.fits = m.total_bytes <= m.capacity_bytes;
    m.shortfall_bytes = m.fits ? 0 : m.total_bytes - m.capacity_bytes;
    est.devices.push_back(m);
  }
  return est;
}

Status check_fits(const MemoryEstimate& est, double margin_fraction) {
  std::string problems;
  for (const DeviceMemory& d : est.devices) {
    const auto usable = static_cast<uint64_t>(static_cast<double>(d.capacity_bytes) * (1.0 - margin_fraction));
    if (d.total_bytes <= usable) continue;
    std::string line = "device '" + d.device + "': needs " + format_bytes(d.total_bytes) + " (weights " +
                       format_bytes(d.weight_bytes) + ", KV " + format_bytes(d.kv_bytes) + ", scratch " +
                       format_bytes(d.scratch_bytes) + ", overhead " + format_bytes(d.overhead_bytes) + "), has " +
                       format_bytes(usable);
    if (margin_fraction > 0.0) {
      char buf[64];
      std::snprintf(buf, sizeof buf, " (%s less a %.0f%% margin)", format_bytes(d.capacity_bytes).c_str(),
                    margin_fraction * 100.0);
      line += buf;
    }
    line += ": short " + format_bytes(d.total_bytes - usable);
    problems += (problems.empty() ? "" : "; ") + line;
  }
  if (problems.empty()) return {};
  return Error{Code::OutOfMemory, problems};
}

std::string format_memory_table(const MemoryEstimate& est) {
  const std::vector<std::string> header = {"device", "weights", "KV",       "scratch",
                                           "overhead", "total", "capacity", "fits"};
  std::vector<std::vector<std::string>> rows;
  for (const DeviceMemory& d : est.devices) {
    rows.push_back({d.device, format_bytes(d.weight_bytes), format_bytes(d.kv_bytes), format_bytes(d.scratch_bytes),
                    format_bytes(d.overhead_bytes), format_bytes(d.total_bytes), format_bytes(d.capacity_bytes),
                    d.fits ? std::string("✓") : "✗ short " + format_bytes(d.shortfall_bytes)});
  }
  return "memory at ctx " + std::to_string(est.n_ctx) + " x " + std::to_string(est.n_seq) + " seq, batch " +
         std::to_string(est.max_batch) + "\n" + format_table(header, rows, Align::Right);  // names left, numbers right
}

nlohmann::json to_json(const MemoryEstimate& est) {
  nlohmann::json j;
  j["n_ctx"] = est.n_ctx;
  j["n_seq"] = est.n_seq;
  j["max_batch"] = est.max_batch;
  j["fits"] = est.fits();
  j["devices"] = nlohmann::json::array();
  for (const DeviceMemory& d : est.devices) {
    j["devices"].push_back({{"device", d.device},
                            {"weight_bytes", d.weight_bytes},
                            {"kv_bytes", d.kv_bytes},
                            {"scratch_bytes", d.scratch_bytes},
                            {"overhead_bytes", d.overhead_bytes},
                            {"total_bytes", d.total_bytes},
                            {"capacity_bytes", d.capacity_bytes},
                            {"fits", d.fits},
                            {"shortfall_bytes", d.shortfall_bytes},
                            {"has_embedding", d.has_embedding},
                            {"has_head", d.has_head},
                            {"n_blocks", d.n_blocks},
                            {"parts", {{"attention_bytes", d.attention_bytes},
                                       {"ffn_bytes", d.ffn_bytes},
                                       {"experts_bytes", d.experts_bytes}}},
                            {"n_kv_blocks", d.n_kv_blocks}});
  }
  return j;
}

}  // namespace strata::plan
