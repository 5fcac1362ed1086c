// engine/plan/tensor_split.h — how a block is cut across a tensor-parallel group: each member
// gets a run of KV heads (with their query heads) and a run of FFN hidden columns, so that
// attention and the FFN need one all-reduce (sum) each. Shared by the memory estimate and
// the executor, so the bytes the planner predicts are the bytes the devices allocate.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/core/status.h"
#include "engine/model/model_config.h"
#include "engine/model/model_weights.h"

namespace strata::plan {

struct LayerShard {
  int64_t kv_head_begin = 0, kv_head_end = 0;  // KV heads [begin, end); query heads follow (x group)
  int64_t ff_begin = 0, ff_end = 0;            // FFN hidden units [begin, end)

  int64_t n_kv_heads() const { return kv_head_end - kv_head_begin; }
  int64_t n_ff() const { return ff_end - ff_begin; }
};

// The whole block as one shard (no split).
LayerShard whole_layer(const model::ModelConfig& config);

// Cuts heads and FFN units in proportion to ratio (largest remainder), respecting the block
// size of attn_output and ffn_down columns (a quantized row cannot be cut inside a block).
// Unsupported when the layer cannot be cut that finely for the group; InvalidArgument for bad
// ratios.
Expected<std::vector<LayerShard>> split_layer(const model::ModelConfig& config, const model::LayerWeights& layer,
                                              const std::vector<double>& ratio, int64_t layer_index);

// Bytes of the weights one shard holds (norms are replicated on every member).
uint64_t shard_weight_bytes(const model::ModelConfig& config, const model::LayerWeights& layer,
                            const LayerShard& shard);

// KV-cache bytes of one shard for n_seq sequences of n_ctx positions (float32 K and V).
uint64_t shard_kv_bytes(const model::ModelConfig& config, const LayerShard& shard, int64_t n_ctx, int64_t n_seq,
                        kernels::DType kv_type);

}  // namespace strata::plan
