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
  // FFN hidden units [begin, end). A mixture-of-experts layer is never cut by units (see
  // split_layer): its whole shard has [0, config.ffn_width()), the widest expert's units, which
  // sizes the gate/up activations.
  int64_t ff_begin = 0, ff_end = 0;
  int64_t expert_begin = 0, expert_end = 0;    // routed experts [begin, end) held (MoE layers)

  int64_t n_kv_heads() const { return kv_head_end - kv_head_begin; }
  int64_t n_ff() const { return ff_end - ff_begin; }
  int64_t n_experts() const { return expert_end - expert_begin; }
};

// The whole block as one shard (no split): every head, FFN unit and expert.
LayerShard whole_layer(const model::ModelConfig& config);

// Cuts heads and FFN units in proportion to ratio (largest remainder), respecting the block
// size of attn_output and ffn_down columns (a quantized row cannot be cut inside a block).
// Unsupported when the layer cannot be cut that finely for the group; InvalidArgument for bad
// ratios, and for a mixture-of-experts layer (tensor groups of MoE layers are not supported: its
// experts are placed whole, or by expert ranges, on single devices).
Expected<std::vector<LayerShard>> split_layer(const model::ModelConfig& config, const model::LayerWeights& layer,
                                              const std::vector<double>& ratio, int64_t layer_index);

// Whether the shard holds a Cut::FirstShard tensor: it is the member whose run of the part's units
// (KV heads for attention, FFN units for the FFN) starts at 0 and is not empty.
bool holds_first_shard_tensor(const model::LayerTensor& tensor, const LayerShard& shard);

// The bytes of one block tensor (a row of model::layer_tensors()) a shard holds, by the row's cut
// rule: its heads' rows or columns, its FFN units' rows or columns, its experts, or whole.
uint64_t shard_tensor_bytes(const model::ModelConfig& config, const model::LayerTensor& tensor,
                            const model::TensorView& view, const LayerShard& shard);
// The bytes of one part's tensors a shard holds (the table's part column).
uint64_t shard_part_bytes(const model::ModelConfig& config, const model::LayerWeights& layer, const LayerShard& shard,
                          model::Part part);

// Bytes of the weights one shard holds (norms are replicated on every member), by the parts of a
// block that can be placed apart (docs/placement.md, "Parts of a block"):
// - attention: the norm, Q/K/V with biases and Q/K norms, O, the post-attention norm;
// - ffn: the FFN norm and post-FFN norm, and the dense gate/up/down (the shard's units), or an MoE
//   block's router and shared expert (whole);
// - experts: an MoE block's routed experts [begin, end) (0 for a dense block);
// shard_weight_bytes is the three together, with the shard's own expert range.
uint64_t shard_attention_bytes(const model::ModelConfig& config, const model::LayerWeights& layer,
                               const LayerShard& shard);
uint64_t shard_ffn_bytes(const model::ModelConfig& config, const model::LayerWeights& layer, const LayerShard& shard);
uint64_t expert_range_bytes(const model::ModelConfig& config, const model::LayerWeights& layer, int64_t begin,
                            int64_t end);
uint64_t shard_weight_bytes(const model::ModelConfig& config, const model::LayerWeights& layer,
                            const LayerShard& shard);

// Rows of one sequence's KV cache of block `layer`. A block that attends over every position
// keeps n_ctx rows, one per position. A sliding-window block keeps a ring of
// window + max(max_batch, 64) rows rounded up to kKvRingAlign (position p in row p mod rows),
// when that is fewer than n_ctx and swa_full is off (llama.cpp's --swa-full keeps n_ctx):
//   - a forward pass cuts a sequence's tokens into chunks of at most max_batch, and a chunk's
//     tokens see window + chunk - 1 positions together, all of which the ring holds;
//   - a sequence can be cut back (Pipeline::truncate) by rows - window positions from the
//     furthest it has been, at least 64: a speculative step's rejected guesses (at most 32).
// Further back, the window's older keys are overwritten and the sequence is evaluated again.
inline constexpr int64_t kKvRingAlign = 64;
int64_t kv_cells(const model::ModelConfig& config, int64_t layer, int64_t n_ctx, int64_t max_batch, bool swa_full);

// KV-cache bytes of one shard for n_seq sequences of `rows` cache rows each (kv_cells), K and V
// in kv_type.
uint64_t shard_kv_bytes(const model::ModelConfig& config, const LayerShard& shard, int64_t rows, int64_t n_seq,
                        kernels::DType kv_type);

}  // namespace strata::plan
