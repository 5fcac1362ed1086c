// engine/plan/straggler.cpp — measured against planned compute time per device (see straggler.h).
#include "engine/plan/straggler.h"

#include <map>

#include "engine/plan/cost_model.h"
#include "engine/plan/tensor_split.h"

namespace strata::plan {

std::vector<DeviceSpeed> compare_with_plan(const std::vector<trace::Event>& events,
                                           const std::vector<trace::LaneInfo>& lanes, const Placement& placement,
                                           const model::ModelConfig& config, const model::ModelWeights& weights,
                                           const std::vector<DeviceInfo>& devices) {
  std::map<int32_t, std::string> lane_device;
  for (const trace::LaneInfo& l : lanes) lane_device[l.id] = l.name;
  std::map<std::string, DeviceSpeed> by_device;
  const LayerShard whole = whole_layer(config);
  for (const trace::Event& e : events) {
    if (e.kind != trace::EventKind::Compute || e.layer < 0 || e.layer >= static_cast<int32_t>(placement.layers.size()) ||
        e.layer >= static_cast<int32_t>(weights.layers.size()) || e.n_tokens <= 0)
      continue;
    auto lane = lane_device.find(e.lane);
    if (lane == lane_device.end()) continue;
    const Target& target = placement.layers[static_cast<size_t>(e.layer)].target;
    if (target.devices.size() != 1 || target.devices[0] != lane->second) continue;
    const DeviceInfo* info = nullptr;
    for (const DeviceInfo& d : devices) {
      if (d.id == lane->second) info = &d;
    }
    if (!info) continue;
    DeviceSpeed& s = by_device[info->id];
    s.device = info->id;
    ++s.passes;
    s.measured_ms += static_cast<double>(e.duration_ns) * 1e-6;
    // block_ms is per token with the weights read once per batch of that many tokens.
    s.planned_ms += block_ms(config, weights.layers[static_cast<size_t>(e.layer)], whole, true, *info, e.n_tokens) *
                    e.n_tokens;
  }
  std::vector<DeviceSpeed> out;
  for (const DeviceInfo& d : devices) {
    auto it = by_device.find(d.id);
    if (it == by_device.end()) continue;
    DeviceSpeed s = it->second;
    s.straggler = s.passes >= kStragglerMinPasses && s.ratio() > kStragglerFactor;
    out.push_back(s);
  }
  return out;
}

}  // namespace strata::plan
