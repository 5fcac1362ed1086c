// engine/plan/placement_options.h — placements asked for the way llama.cpp users ask:
// --split-mode none|layer|tensor, --split-ratio 3,1, --gpu-layers N, --kv-on-cpu, --main-device,
// --placement auto|FILE.json. Semantics in docs/placement.md ("Options"). No devices are touched.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/core/device_info.h"
#include "engine/model/model_config.h"
#include "engine/model/model_weights.h"
#include "engine/plan/auto_planner.h"
#include "engine/plan/placement.h"

namespace strata::plan {

enum class SplitMode {
  None,    // everything offloaded on the main device
  Layer,   // contiguous layer ranges over the accelerators, in proportion to split_ratio
  Tensor,  // every offloaded block split across the accelerators (a tensor-parallel group)
};
const char* split_mode_name(SplitMode mode);  // "none", "layer", "tensor"
Expected<SplitMode> parse_split_mode(const std::string& text);
// "3,1" or "3/1" -> {3, 1}; each value a finite number >= 0.
Expected<std::vector<double>> parse_split_ratio(const std::string& text);

struct PlacementRequest {
  std::string placement;            // "": from the options below; "auto": auto_plan; else a JSON file path
  SplitMode split_mode = SplitMode::Layer;
  std::vector<double> split_ratio;  // one value >= 0 per accelerator; empty: in proportion to bytes_total
  int64_t gpu_layers = -1;          // -1: all blocks and the head offloaded; N >= 0: llama.cpp's -ngl N
  bool kv_on_cpu = false;           // every offloaded block keeps its KV cache on the CPU device
  std::string main_device;          // none/tensor: device of the non-split parts; "": first accelerator
  int64_t n_ctx = 0;                // 0: default_n_ctx(config) (a file's own value for FILE.json)
  int64_t n_seq = 0;                // 0: 1 (or the file's)
  int64_t max_batch = 0;            // 0: 256 (or the file's)
  std::optional<kernels::DType> kv_type;  // KV cache elements; unset: f16 (or the file's)
  bool swa_full = false;            // sliding-window blocks keep n_ctx rows, not a ring (Placement::swa_full)
  // Placement below the block (applied after the options above; docs/placement.md):
  // experts_on_cpu: the routed experts of the first N blocks on the CPU device (-1: every
  // block's), llama.cpp's --n-cpu-moe; overrides: "REGEX=DEVICE" pairs with llama.cpp's -ot
  // meaning: the first pattern found (std::regex_search) in a tensor's name places that tensor's
  // part (a block's attention, FFN part or routed experts; the embedding; the head) on DEVICE.
  int64_t experts_on_cpu = 0;
  std::vector<std::string> overrides;
  PlanGoal goal = PlanGoal::BalanceSpeed;  // for "auto"
  double margin_fraction = 0.05;           // for "auto": share of each device kept free
};

// The placement asked for, validated against the model and the devices (validate_placement).
// Whether it fits is not checked here: see estimate_memory / check_fits.
Expected<Placement> placement_from_options(const model::ModelConfig& config, const model::ModelWeights& weights,
                                           const std::vector<DeviceInfo>& devices,
                                           const PlacementRequest& request);

// The same, with its memory estimate, cost and one explanation line per device (auto_plan's own
// explanation for "auto").
Expected<PlanResult> plan_from_options(const model::ModelConfig& config, const model::ModelWeights& weights,
                                       const std::vector<DeviceInfo>& devices, const PlacementRequest& request);

// "exps=CPU,attn=cuda0" or several such arguments -> {"exps=CPU", "attn=cuda0"} (llama.cpp's
// -ot lists); InvalidArgument when an item has no '=' or an empty side.
Expected<std::vector<std::string>> parse_overrides(const std::vector<std::string>& arguments);
// "all" -> -1, "N" -> N (>= 0).
Expected<int64_t> parse_experts_on_cpu(const std::string& text);

// Applies request.experts_on_cpu and request.overrides to a placement (validated after).
Status apply_part_options(Placement& placement, const model::ModelConfig& config, const model::ModelWeights& weights,
                          const std::vector<DeviceInfo>& devices, const PlacementRequest& request);

// Whether the request asks for nothing in particular: no placement, split mode layer, no split
// ratio, every block offloaded, KV with its layer, no main device.
bool is_default_request(const PlacementRequest& request);

// The plan asked for, checked to fit (check_fits). When it does not fit and the request is the
// default one, the auto plan (request.goal) that fits instead: its explanation begins with a line
// saying why ("the default layer split does not fit (...): using the auto plan"). OutOfMemory when
// nothing fits, with the auto planner's reasons (shortfall per device, largest context that fits).
Expected<PlanResult> plan_that_fits(const model::ModelConfig& config, const model::ModelWeights& weights,
                                    const std::vector<DeviceInfo>& devices, const PlacementRequest& request);

}  // namespace strata::plan
