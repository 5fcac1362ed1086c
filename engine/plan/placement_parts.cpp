// engine/plan/placement_parts.cpp — the per-part view of a placement (placement_parts.h).
#include "engine/plan/placement_parts.h"

#include <algorithm>

#include "engine/plan/memory_estimate.h"
#include "engine/plan/tensor_split.h"
#include "engine/plan/text_table.h"

namespace strata::plan {

namespace {

struct PartRow {
  std::string layers;
  std::vector<std::string> attention_devices, ffn_devices;
  uint64_t attention_bytes = 0, ffn_bytes = 0;
  struct Experts {
    int64_t begin = 0, end = 0;
    std::string device;
    uint64_t bytes = 0;
  };
  std::vector<Experts> experts;
};

std::string range_text(int64_t first, int64_t end) {
  return end - first == 1 ? std::to_string(first) : std::to_string(first) + "-" + std::to_string(end - 1);
}

std::vector<PartRow> part_rows(const Placement& p, const model::ModelConfig& c, const model::ModelWeights& w) {
  std::vector<PartRow> rows;
  for (const Stage& st : stages_of(p)) {
    PartRow row;
    row.layers = range_text(st.first_layer, st.end_layer);
    const LayerPlacement& lp = p.layers[static_cast<size_t>(st.first_layer)];
    row.attention_devices = lp.target.devices;
    row.ffn_devices = lp.ffn_device.empty() ? lp.target.devices : std::vector<std::string>{lp.ffn_device};
    for (int64_t i = st.first_layer; i < st.end_layer; ++i) {
      const model::LayerWeights& lw = w.layers[static_cast<size_t>(i)];
      std::vector<LayerShard> shards = {whole_layer(c)};
      if (lp.target.is_group()) {
        auto split = split_layer(c, lw, lp.target.ratio, i);
        if (split.ok()) shards = *split;
      }
      for (const LayerShard& s : shards) row.attention_bytes += shard_attention_bytes(c, lw, s);
      if (lp.ffn_device.empty()) {
        for (const LayerShard& s : shards) row.ffn_bytes += shard_ffn_bytes(c, lw, s);
      } else {
        row.ffn_bytes += shard_ffn_bytes(c, lw, whole_layer(c));
      }
    }
    if (c.is_moe()) {
      std::vector<ExpertRange> ranges = lp.experts;
      if (ranges.empty()) ranges = {ExpertRange{0, kAllExperts, row.ffn_devices.size() == 1 ? row.ffn_devices[0] : ""}};
      for (const ExpertRange& r : ranges) {
        PartRow::Experts e;
        e.begin = r.begin;
        e.end = r.end == kAllExperts ? c.n_expert : r.end;
        e.device = r.device;
        for (int64_t i = st.first_layer; i < st.end_layer; ++i)
          e.bytes += expert_range_bytes(c, w.layers[static_cast<size_t>(i)], e.begin, e.end);
        row.experts.push_back(e);
      }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string devices_text(const std::vector<std::string>& ids) {
  std::string out;
  for (const auto& id : ids) out += (out.empty() ? "" : "+") + id;
  return out.empty() ? "(with the FFN)" : out;
}

}  // namespace

nlohmann::json parts_json(const Placement& p, const model::ModelConfig& c, const model::ModelWeights& w) {
  nlohmann::json out = nlohmann::json::array();
  for (const PartRow& r : part_rows(p, c, w)) {
    nlohmann::json j;
    j["layers"] = r.layers;
    j["attention"] = {{"devices", r.attention_devices}, {"bytes", r.attention_bytes}};
    j["ffn"] = {{"devices", r.ffn_devices}, {"bytes", r.ffn_bytes}};
    if (c.is_moe()) {
      j["experts"] = nlohmann::json::array();
      for (const PartRow::Experts& e : r.experts)
        j["experts"].push_back({{"experts", range_text(e.begin, e.end)},
                                {"device", e.device.empty() ? r.ffn_devices : std::vector<std::string>{e.device}},
                                {"bytes", e.bytes}});
    }
    out.push_back(j);
  }
  return out;
}

std::string format_parts_table(const Placement& p, const model::ModelConfig& c, const model::ModelWeights& w) {
  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> header = {"layers", "attention", "ffn"};
  if (c.is_moe()) header.push_back("experts");
  for (const PartRow& r : part_rows(p, c, w)) {
    std::vector<std::string> row = {r.layers, devices_text(r.attention_devices) + " (" + format_bytes(r.attention_bytes) + ")",
                                    devices_text(r.ffn_devices) + " (" + format_bytes(r.ffn_bytes) + ")"};
    if (c.is_moe()) {
      std::string experts;
      for (const PartRow::Experts& e : r.experts) {
        experts += experts.empty() ? "" : ", ";
        if (r.experts.size() > 1) experts += range_text(e.begin, e.end) + " ";
        experts += (e.device.empty() ? devices_text(r.ffn_devices) : e.device) + " (" + format_bytes(e.bytes) + ")";
      }
      row.push_back(experts);
    }
    cells.push_back(std::move(row));
  }
  return format_table(header, cells, Align::Left);
}

}  // namespace strata::plan
