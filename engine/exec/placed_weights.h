// engine/exec/placed_weights.h — puts tensors, whole or sliced for a tensor-parallel shard, into a
// device's memory. On the CPU a whole tensor is read in place from the mapped file (accounted,
// not copied); anywhere else, and for every slice, the bytes are copied into a device buffer
// (through the device's copy_from_host: pinned staging on CUDA).
#pragma once

#include <memory>
#include <vector>

#include "engine/core/status.h"
#include "engine/exec/device.h"
#include "engine/exec/block_forward.h"
#include "engine/model/model_weights.h"
#include "engine/plan/tensor_split.h"

namespace strata::exec {

using BufferList = std::vector<std::unique_ptr<Buffer>>;

// A whole tensor on a device; its buffer is appended to keep.
Expected<model::TensorView> place_tensor(Device& device, const model::TensorView& tensor, BufferList& keep);

// One block's shard on a device: exactly plan::shard_weight_bytes bytes are charged.
Expected<ShardWeights> place_shard(Device& device, const model::ModelConfig& config, const model::LayerWeights& layer,
                                   const plan::LayerShard& shard, BufferList& keep);

}  // namespace strata::exec
