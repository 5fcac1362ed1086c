// engine/plan/memory_estimate.h — bytes each device allocates for a placement (weights, KV cache,
// scratch, runtime overhead), computed from the GGUF header alone. The executor allocates by the
// same rules (docs/placement.md, "Memory"). Depends on plan/ and model/ descriptions, no devices.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/status.h"
#include "engine/core/device_info.h"
#include "engine/model/model_config.h"
#include "engine/model/model_weights.h"
#include "engine/plan/placement.h"
#include "engine/plan/tensor_split.h"

namespace strata::plan {

struct DeviceMemory {
  std::string device;            // device id
  uint64_t weight_bytes = 0;     // tensors held (exact GGUF bytes; shards for groups)
  // weight_bytes by part of the blocks (docs/placement.md, "Parts of a block"); what is left of
  // weight_bytes is the embedding, the head and the RoPE factors.
  uint64_t attention_bytes = 0, ffn_bytes = 0, experts_bytes = 0;
  uint64_t kv_bytes = 0;         // K and V of n_seq sequences, plan::kv_cells rows per block (n_ctx, or a window's ring)
  uint64_t scratch_bytes = 0;    // activation buffers (scratch_layout)
  uint64_t overhead_bytes = 0;   // DeviceInfo::runtime_overhead_bytes
  uint64_t total_bytes = 0;      // the four above
  uint64_t capacity_bytes = 0;   // DeviceInfo::bytes_total
  bool fits = true;              // total_bytes <= capacity_bytes
  uint64_t shortfall_bytes = 0;  // total_bytes - capacity_bytes when it does not fit, else 0
  // What the device holds, for tables and explanations.
  bool has_embedding = false;
  bool has_head = false;
  int64_t n_blocks = 0;          // blocks it runs (whole, a shard, or some of their parts)
  int64_t n_kv_blocks = 0;       // blocks whose KV (or a share of it) it holds
};

struct MemoryEstimate {
  std::vector<DeviceMemory> devices;  // the devices the placement uses, in device-list order
  int64_t n_ctx = 0, n_seq = 1, max_batch = 0;

  bool fits() const;
  uint64_t total_bytes() const;
  const DeviceMemory* find(const std::string& id) const;
};

// Validates the placement (validate_placement), then applies the rules. Not fitting is not an
// error here: see DeviceMemory::fits and check_fits.
Expected<MemoryEstimate> estimate_memory(const Placement& placement, const model::ModelConfig& config,
                                         const model::ModelWeights& weights,
                                         const std::vector<DeviceInfo>& devices);

// Ok when every device fits in (1 - margin_fraction) of its capacity; else OutOfMemory naming each
// device that does not: "device 'gpu1': needs 13.9 GiB (weights 11.2 GiB, KV 2.1 GiB, scratch
// 0.5 GiB, overhead 0.1 GiB), has 12.0 GiB: short 1.9 GiB".
Status check_fits(const MemoryEstimate& estimate, double margin_fraction = 0.0);

// One row per device: weights, KV, scratch, overhead, total, capacity, then "✓" or "✗ short X".
std::string format_memory_table(const MemoryEstimate& estimate);

// "22.6 GiB", "180.5 MiB", "4.0 KiB", "12 B" (binary units, one decimal).
std::string format_bytes(uint64_t bytes);

nlohmann::json to_json(const MemoryEstimate& estimate);

// Shared pieces of the rules (the auto-planner sizes candidate plans with them).
// Head weights: output_norm + output; a tied output adds nothing when the embedding is on the
// same device (the embedding's bytes serve both), else token_embd's bytes again.
uint64_t head_weight_bytes(const model::ModelConfig& config, const model::ModelWeights& weights,
                           bool embedding_on_same_device);
// The bytes of one device's share of the head (plan::head_shares): the output norm, and its rows
// of the output matrix unless the matrix is the embedding held on the same device.
uint64_t head_share_bytes(const model::ModelConfig& config, const model::ModelWeights& weights, const HeadShare& share,
                          bool embedding_on_same_device);
// scratch_layout(...).bytes() for a device (widest: ignored when has_layers is false).
uint64_t device_scratch_bytes(const model::ModelConfig& config, const LayerShard& widest, bool has_layers,
                              bool has_head, int64_t max_batch, int64_t n_ctx, int64_t n_seq, int threads);

}  // namespace strata::plan
