// engine/plan/auto_planner.h — chooses a placement for a model on a set of devices: fit memory
// (leaving a margin), balance predicted time per stage, prefer fewer stage boundaries, and say
// why per device. Pure planning from the GGUF header and DeviceInfo; loads and runs nothing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/core/device_info.h"
#include "engine/model/model_config.h"
#include "engine/model/model_weights.h"
#include "engine/plan/cost_model.h"
#include "engine/plan/memory_estimate.h"
#include "engine/plan/placement.h"

namespace strata::plan {

enum class PlanGoal {
  FitMemory,        // fill devices in preference order, each as full as it goes
  BalanceSpeed,     // least predicted time per token; fewer stages among plans within 3% of it
  FewestTransfers,  // fewest stages that fit; the fastest of those
};
const char* plan_goal_name(PlanGoal goal);  // "fit", "balance", "fewest-transfers"
Expected<PlanGoal> parse_plan_goal(const std::string& text);

struct AutoPlanOptions {
  int64_t n_ctx = 0;               // KV positions per sequence; 0: default_n_ctx(config)
  int64_t n_seq = 1;               // sequences decoded at once
  int64_t max_batch = 256;         // tokens per forward pass in prompt processing
  kernels::DType kv_type = kernels::DType::F16;  // KV cache elements (sizes the KV bytes)
  bool swa_full = false;           // Placement::swa_full
  double margin_fraction = 0.05;   // of each device's bytes_total kept free (5%)
  PlanGoal goal = PlanGoal::BalanceSpeed;
};

// Plans within this fraction of the best predicted time count as equally fast (3%).
inline constexpr double kTimeTolerance = 0.03;

struct PlanResult {
  Placement placement;
  MemoryEstimate memory;
  CostEstimate cost;               // with an empty KV cache (context 0)
  CostEstimate cost_full_context;  // the same placement with n_ctx positions in the cache: a long chat
  // One line per device (in device-list order), then a summary line, e.g.
  // "gpu0: layers 0-17 + embedding, 22.6 GiB of 24.0 GiB, 3.21 ms per token: full at 22.6 of 24.0 GiB"
  std::vector<std::string> explanation;
};

// min(n_ctx_train, 4096); 4096 when the file does not say.
int64_t default_n_ctx(const model::ModelConfig& config);

// Accelerators (every non-CPU device) in the order given, then the CPU device(s).
std::vector<DeviceInfo> preference_order(const std::vector<DeviceInfo>& devices);

// Blocks go in contiguous ranges over the devices in preference order (no tensor groups; KV stays
// with its layer); the embedding goes with the first block's device, or on the CPU when that
// device has no room for it; the head goes with the last block's device. OutOfMemory when no
// plan fits: the message gives the shortfall per device and the largest context that fits.
Expected<PlanResult> auto_plan(const model::ModelConfig& config, const model::ModelWeights& weights,
                               const std::vector<DeviceInfo>& devices, const AutoPlanOptions& options);

}  // namespace strata::plan
