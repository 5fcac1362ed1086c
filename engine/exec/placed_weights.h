// engine/exec/placed_weights.h — puts tensors, whole or sliced for a tensor-parallel shard, into a
// device's memory. On the CPU a whole tensor is read in place from the mapped file (accounted,
// not copied); anywhere else, and for every slice, the bytes are copied into a device buffer
// (through the device's copy_from_host: pinned staging on CUDA).
#pragma once

#include <memory>
#include <vector>

#include "engine/core/status.h"
#include "engine/arch/block_forward.h"
#include "engine/backend/device.h"
#include "engine/model/model_weights.h"
#include "engine/plan/tensor_split.h"

namespace strata::exec {

// The block arithmetic's types, as the pipeline uses them (engine/arch owns them).
using arch::BlockForward;
using arch::KvView;
using arch::MoeRouting;
using arch::ScratchViews;
using arch::SeqRows;
using arch::ShardWeights;

using BufferList = std::vector<std::unique_ptr<backend::Buffer>>;

// A whole tensor on a device; its buffer is appended to keep.
Expected<model::TensorView> place_tensor(backend::Device& device, const model::TensorView& tensor, BufferList& keep);

// The parts of a block's shard a device holds (docs/placement.md, "Parts of a block"): a block
// placed in parts has its attention on one device, its FFN part (dense FFN, or MoE router and
// shared expert) on another, its routed experts on a third or by ranges. A bit mask.
inline constexpr unsigned kAttentionPart = 1, kFfnPart = 2, kExpertsPart = 4;
inline constexpr unsigned kAllParts = kAttentionPart | kFfnPart | kExpertsPart;

// Weight bytes charged to a device, by part.
struct PartBytes {
  uint64_t attention = 0, ffn = 0, experts = 0;
};

// One block's shard on a device, the parts in `parts` (the experts: the shard's expert range),
// each in a buffer of its own: exactly plan::shard_attention_bytes, shard_ffn_bytes and
// expert_range_bytes are charged (all parts: plan::shard_weight_bytes), as `charged` reports
// from the buffers. Views of the parts not held are absent.
Expected<ShardWeights> place_shard(backend::Device& device, const model::ModelConfig& config, const model::LayerWeights& layer,
                                   const plan::LayerShard& shard, BufferList& keep, unsigned parts = kAllParts,
                                   PartBytes* charged = nullptr);

}  // namespace strata::exec
