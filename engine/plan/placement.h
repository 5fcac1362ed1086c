// engine/plan/placement.h — where each part of a model runs: the embedding, every block and
// the output head each get a target (one device, or a tensor-parallel group with split ratios),
// and every block's KV cache gets a device. Plain data plus JSON (docs/placement.md).
// Depends on the model's shape only; no devices are touched here.
//
// KV cache element types a placement may name, and their JSON / CLI names (f32, f16, q8_0).
// Error (InvalidArgument) names the value and the choices.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/status.h"
#include "kernels/cpu/dtype.h"

namespace strata::plan {

// One device ("gpu0"), or a tensor-parallel group of several with positive ratios.
struct Target {
  std::vector<std::string> devices;  // >= 1 distinct device ids
  std::vector<double> ratio;         // empty for one device; else one weight > 0 per device

  bool is_group() const { return devices.size() > 1; }
  bool operator==(const Target&) const = default;
};

struct LayerPlacement {
  Target target;
  // Device holding this block's KV cache. Empty: with the layer (for a group, each member
  // keeps the KV of its own heads). Otherwise one device id (e.g. "cpu" for --kv-on-cpu).
  std::string kv_device;
  bool operator==(const LayerPlacement&) const = default;
};

struct Placement {
  Target embedding;                   // single device
  std::vector<LayerPlacement> layers; // one per block, in order
  Target head;                        // output norm + output matrix; single device
  int64_t n_ctx = 0;                  // KV positions per sequence
  int64_t n_seq = 1;                  // sequences decoded at once (KV caches per layer)
  int64_t max_batch = 256;            // tokens per forward pass in prompt processing
  // Element type of every KV cache: F16 (default; half of F32's memory), F32, or Q8_0 (about a
  // quarter; host devices only, head sizes multiples of 32).
  kernels::DType kv_type = kernels::DType::F16;

  bool operator==(const Placement&) const = default;

  // Every distinct device id in order of first appearance (embedding, layers, head).
  std::vector<std::string> devices() const;
};

// A stage: a maximal run of consecutive blocks with the same target and KV device.
struct Stage {
  Target target;
  std::string kv_device;
  int64_t first_layer = 0;
  int64_t end_layer = 0;  // exclusive
};
std::vector<Stage> stages_of(const Placement& placement);

Expected<kernels::DType> kv_type_from_name(const std::string& name);

nlohmann::json to_json(const Placement& placement);
// Structural parsing: field types, layer ranges ("0-17", "18", 5), ratios. Checks against a
// model and devices are in validate_placement (placement_validate.h).
Expected<Placement> placement_from_json(const nlohmann::json& json, int64_t n_layers);
Expected<Placement> load_placement_file(const std::string& path, int64_t n_layers);
Status save_placement_file(const Placement& placement, const std::string& path);

}  // namespace strata::plan
