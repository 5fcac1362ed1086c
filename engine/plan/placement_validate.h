// engine/plan/placement_validate.h — checks a placement against a model and a device list:
// devices exist, embedding/head are single devices, groups can be cut, sizes within limits.
// Depends on plan/ data and the model description only; does not estimate memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/core/device_info.h"
#include "engine/model/model_config.h"
#include "engine/model/model_weights.h"
#include "engine/plan/placement.h"

namespace strata::plan {

// Limits a placement's sizes must respect.
inline constexpr int64_t kMaxCtx = int64_t{1} << 24;  // KV positions per sequence
inline constexpr int64_t kMaxSeq = 256;               // sequences at once
inline constexpr int64_t kMaxBatch = 65536;           // tokens per forward pass

// Ok, or the first problem found (InvalidArgument / NotFound / Unsupported), naming the layer,
// the device and the numbers.
Status validate_placement(const Placement& placement, const model::ModelConfig& config,
                          const model::ModelWeights& weights, const std::vector<DeviceInfo>& devices);

// The KV cache type against the model and the devices holding KV caches: f32 and f16 anywhere;
// q8_0 on host devices (cpu, sim) when head sizes are multiples of 32. Part of validate_placement.
Status check_kv_type(const Placement& placement, const model::ModelConfig& config,
                     const std::vector<DeviceInfo>& devices);

// Blocks on a device whose attention kernel cannot take the model's KV rows (DeviceCaps::
// max_head_dim: CUDA's 256 against DeepSeek's latent rows of 576) keep their attention and KV
// cache on the CPU, their FFN and experts where the placement put them (the split options and
// the auto-planner call it; a placement file is validated as written). What moved, in words, or ""
// when nothing did (or there is no CPU device).
std::string attention_on_capable_devices(Placement& placement, const model::ModelConfig& config,
                                         const std::vector<DeviceInfo>& devices);

// plan::head_shares with each device's rank from its DeviceInfo (0 for an id not listed).
std::vector<HeadShare> head_shares(const Placement& placement, int64_t n_vocab, const std::vector<DeviceInfo>& devices);

// "cpu, gpu0, gpu1": the ids of a device list, for messages.
std::string device_id_list(const std::vector<DeviceInfo>& devices);

// The device with this id, or nullptr.
const DeviceInfo* find_device(const std::vector<DeviceInfo>& devices, const std::string& id);

}  // namespace strata::plan
