// engine/backend/cuda/cuda_backend.h — the CUDA backend's functions, inside the module
// (libstrata-backend-cuda.so): what the runtime reports, opening a device, peer access, NCCL. No
// CUDA headers here. The engine never includes this file: it reaches the backend through the
// registry (engine/backend/registry/registry.h), which loads the module (cuda_module.cpp) when present.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/backend/communicator.h"
#include "engine/backend/device.h"
#include "engine/backend/backend.h"
#include "engine/core/status.h"

namespace strata::backend::cuda {

// What the runtime reports, for `devices` and the API: "CUDA runtime 13.0, driver 13.0, NCCL
// 2.28.3", or why there is no device ("no CUDA driver (...)").
std::string runtime_description();

// CUDA devices visible to this process. 0 (not an error) when there is no driver or no device.
int device_count();

// Opens device `ordinal` as engine device `id` ("cuda0"): creates its context, measures what the
// context itself takes, and reports the rest of cudaMemGetInfo's free bytes as its capacity.
// NotFound for an ordinal past device_count().
Expected<std::unique_ptr<Device>> open_device(int ordinal, const std::string& id);

// Whether device a can read and write device b's memory directly (cudaDeviceCanAccessPeer).
bool can_access_peer(int ordinal_a, int ordinal_b);

// The CUDA ordinal of an engine device opened by open_device, or -1 for any other device.
int ordinal_of(const Device& device);

// An all-reduce over NCCL for a group whose members are all CUDA devices (ncclCommInitAll in this
// process). InvalidArgument when a member is not a CUDA device.
Expected<std::unique_ptr<Communicator>> make_nccl_communicator(const std::vector<Device*>& members);

// A new NCCL unique id (ncclGetUniqueId: NCCL_UNIQUE_ID_BYTES bytes), made by one process of a
// communicator that spans processes and handed to every other one (over MPI, by the caller). Needs
// no GPU.
Expected<std::vector<uint8_t>> nccl_unique_id();

// The all-reduce of a group over the GPUs of several processes, this process's members being
// `local` (CUDA devices, in member order): ncclCommInitRankConfig for each local GPU inside one
// ncclGroupStart/End (non-blocking communicators, polled, so that a lost peer is an error and not a
// hang). Every process of the group calls it with the same unique id and member count. kind() is
// "nccl".
Expected<std::unique_ptr<Communicator>> make_nccl_rank_communicator(const std::vector<Device*>& local,
                                                                    RankCollectivePart part);

}  // namespace strata::backend::cuda
