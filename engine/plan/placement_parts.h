// engine/plan/placement_parts.h — a placement shown part by part: for every run of blocks placed
// alike, where its attention, its FFN part (the dense FFN, or an MoE block's router and shared
// expert) and its routed experts run, and the weight bytes each part puts there. What `plan`
// prints and `plan --json` names ("attention", "ffn", "experts"); sizes from the GGUF header.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "engine/model/model_config.h"
#include "engine/model/model_weights.h"
#include "engine/plan/placement.h"

namespace strata::plan {

// [{"layers": "0-3", "attention": {"devices": ["gpu0"], "bytes": N},
//   "ffn": {"devices": ["gpu0"], "bytes": N},
//   "experts": [{"experts": "0-7", "device": "cpu", "bytes": N}]}, ...]; "experts" only for MoE
// models. Bytes are summed over the run's blocks (a group's shards together).
nlohmann::json parts_json(const Placement& placement, const model::ModelConfig& config,
                          const model::ModelWeights& weights);

// The same as a table: one row per run of blocks, one column per part ("device (bytes)").
std::string format_parts_table(const Placement& placement, const model::ModelConfig& config,
                               const model::ModelWeights& weights);

}  // namespace strata::plan
