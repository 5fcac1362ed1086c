// engine/plan/straggler.h — which devices run slower than the plan says: the measured compute time
// of each device's blocks (trace events) against the cost model's time for the same passes.
// A device over kStragglerFactor times its planned time, over at least kStragglerMinPasses
// passes, is a straggler: /strata/v1/status names it, and an "auto" placement re-balances
// around its measured speed.
#pragma once

#include <string>
#include <vector>

#include "engine/core/device_info.h"
#include "engine/model/model_config.h"
#include "engine/model/model_weights.h"
#include "engine/plan/placement.h"
#include "engine/trace/trace_event.h"

namespace strata::plan {

inline constexpr double kStragglerFactor = 2.0;
inline constexpr int64_t kStragglerMinPasses = 8;

struct DeviceSpeed {
  std::string device;
  int64_t passes = 0;       // block passes measured (compute events of blocks the device runs alone)
  double measured_ms = 0;   // their summed duration
  double planned_ms = 0;    // what the cost model predicts for the same passes (same token counts)
  double ratio() const { return planned_ms > 0 ? measured_ms / planned_ms : 0.0; }
  bool straggler = false;   // ratio > kStragglerFactor over >= kStragglerMinPasses passes
};

// events: recent trace events (their lanes named by device id, as the pipeline registers them);
// only compute events of blocks placed on one device count (tensor-parallel groups are skipped).
// One entry per device of `devices` that has measured passes, in device order.
std::vector<DeviceSpeed> compare_with_plan(const std::vector<trace::Event>& events,
                                           const std::vector<trace::LaneInfo>& lanes, const Placement& placement,
                                           const model::ModelConfig& config, const model::ModelWeights& weights,
                                           const std::vector<DeviceInfo>& devices);

}  // namespace strata::plan
