// engine/plan/placement.h — where each part of a model runs: the embedding, every block and
// the output head each get a target (one device, or a tensor-parallel group with split ratios),
// and every block's KV cache gets a device. Plain data plus JSON (docs/placement.md).
// Depends on the model's shape only; no devices are touched here.
//
// KV cache element types a placement may name, and their JSON / CLI names (f32, f16, q8_0).
// Error (InvalidArgument) names the value and the choices.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/status.h"
#include "engine/model/arch_table.h"
#include "kernels/cpu/dtype.h"

namespace strata::plan {

// One device ("gpu0"), or a tensor-parallel group of several with positive ratios.
struct Target {
  std::vector<std::string> devices;  // >= 1 distinct device ids
  std::vector<double> ratio;         // empty for one device; else one weight > 0 per device

  bool is_group() const { return devices.size() > 1; }
  bool operator==(const Target&) const = default;
};

// Routed experts [begin, end) of a mixture-of-experts block on one device. end == kAllExperts:
// through the block's last expert (what "experts": "cpu" says, before the model is known).
inline constexpr int64_t kAllExperts = -1;
struct ExpertRange {
  int64_t begin = 0;
  int64_t end = kAllExperts;  // exclusive
  std::string device;
  bool operator==(const ExpertRange&) const = default;
};

// The parts of a block, in the order they run (docs/placement.md, "Parts of a block"): the arch
// table's part column (model::Part: Attention with its KV cache, the block's target; Ffn, the
// dense FFN or an MoE block's router and shared expert; Experts, the routed experts, all or an
// index range). part_name is model::part_name.
using PartKind = model::Part;
using model::part_name;

struct LayerPlacement {
  // The block's attention (with its KV cache), and every part not placed below.
  Target target;
  // Device holding this block's KV cache. Empty: with the layer (for a group, each member
  // keeps the KV of its own heads). Otherwise one device id (e.g. "cpu" for --kv-on-cpu).
  std::string kv_device;
  // Placement below the block. ffn_device: where the dense FFN (or the MoE router and shared
  // expert) runs; empty: with the target. experts: the routed experts by index ranges that
  // together cover every expert once, in order; empty: with the FFN part.
  std::string ffn_device;
  std::vector<ExpertRange> experts;

  bool has_parts() const { return !ffn_device.empty() || !experts.empty(); }
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
  // Sliding-window blocks keep a ring of their window plus one batch of rows (plan::kv_cells);
  // true: n_ctx rows like the others (llama.cpp's --swa-full), so that a sequence can be cut back
  // to any earlier position without evaluating it again.
  bool swa_full = false;

  bool operator==(const Placement&) const = default;

  // Every distinct device id in order of first appearance (embedding, layers and their parts, head).
  std::vector<std::string> devices() const;
};

// A stage: a maximal run of consecutive blocks placed alike (same target, KV device and parts).
struct Stage {
  Target target;
  std::string kv_device;
  int64_t first_layer = 0;
  int64_t end_layer = 0;  // exclusive
  std::string ffn_device;            // the blocks' parts (see LayerPlacement)
  std::vector<ExpertRange> experts;
};

// One part of one block on its target, in execution order: a block without parts is one unit
// (kind Attention standing for the whole block, whole_block true); otherwise its attention,
// its FFN part, then one unit per expert range. n_expert resolves kAllExperts.
struct BlockUnit {
  int64_t layer = 0;
  PartKind kind = PartKind::Attention;
  bool whole_block = false;   // attention and FFN (and experts) together
  Target target;
  int64_t expert_begin = 0, expert_end = 0;  // kind Experts
  bool last_of_block = false; // the unit that finishes the block's residual update
};
std::vector<BlockUnit> units_of(const LayerPlacement& layer, int64_t index, int64_t n_expert);
std::vector<Stage> stages_of(const Placement& placement);
// How many of a pipeline's stages can work at the same moment: stages that share a device take
// turns on it (a device does one thing at a time), so only stages with disjoint device sets
// overlap. Counted greedily in pipeline order over `stage_devices` (each stage's device ids):
// a layer split over two devices gives 2; a tensor-parallel group with the embedding and head
// on one of its members gives 1. This is how many micro-batches a decode step is cut into —
// each extra micro-batch re-reads every stage's weights, so no more than can overlap (issue 51).
int64_t concurrent_stage_count(const std::vector<std::vector<std::string>>& stage_devices);

// The output head's vocabulary rows [row_begin, row_end) that one device computes.
struct HeadShare {
  std::string device;
  int64_t row_begin = 0, row_end = 0;
};
// Who computes the head: the head device alone (one share of all n_vocab rows), or, when the head
// device is a member of the tensor-parallel group that runs the last block whole (no parts placed
// apart) and every member is on the head device's rank, every member of that group, its rows in
// proportion to the group's ratio (largest remainder), in member order. A row's logits are one
// batch-invariant product of that row, so where it is computed changes no bit; splitting the
// vocabulary spares the other members the wait while one reads the whole output matrix (issue 51).
// device_rank: the rank of a device id (0 in one process).
std::vector<HeadShare> head_shares(const Placement& placement, int64_t n_vocab,
                                   const std::function<int(const std::string&)>& device_rank);

Expected<kernels::DType> kv_type_from_name(const std::string& name);

nlohmann::json to_json(const Placement& placement);
// Structural parsing: field types, layer ranges ("0-17", "18", 5), ratios. Checks against a
// model and devices are in validate_placement (placement_validate.h).
Expected<Placement> placement_from_json(const nlohmann::json& json, int64_t n_layers);
Expected<Placement> load_placement_file(const std::string& path, int64_t n_layers);
Status save_placement_file(const Placement& placement, const std::string& path);

}  // namespace strata::plan
