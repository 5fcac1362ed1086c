// engine/backend/cuda/cuda_backend.h — the CUDA backend as the rest of the engine sees it: no CUDA
// headers here. Built from cuda_*.cpp when STRATA_WITH_CUDA is on; otherwise stub_backend.cpp
// provides the same functions, reporting zero devices and NotCompiled (like candle's dummy
// backend), so callers never need #ifdefs.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/comm/communicator.h"
#include "engine/core/status.h"
#include "engine/exec/device.h"

namespace strata::backend::cuda {

// Whether this build contains the CUDA backend.
bool compiled();
// What the runtime reports, for `devices` and the API: "CUDA runtime 13.0, driver 13.0, NCCL
// 2.28.3", or why there is none ("built without CUDA", "no CUDA driver").
std::string runtime_description();

// CUDA devices visible to this process. 0 (not an error) when there is no driver or no device,
// and in a build without CUDA.
int device_count();

// Opens device `ordinal` as engine device `id` ("cuda0"): creates its context, measures what the
// context itself takes, and reports the rest of cudaMemGetInfo's free bytes as its capacity.
// NotCompiled without CUDA; NotFound for an ordinal past device_count().
Expected<std::unique_ptr<exec::Device>> open_device(int ordinal, const std::string& id);

// Whether device a can read and write device b's memory directly (cudaDeviceCanAccessPeer).
bool can_access_peer(int ordinal_a, int ordinal_b);

// The CUDA ordinal of an engine device opened by open_device, or -1 for any other device.
int ordinal_of(const exec::Device& device);

// An all-reduce over NCCL for a group whose members are all CUDA devices (ncclCommInitAll in this
// process). NotCompiled without CUDA; InvalidArgument when a member is not a CUDA device.
Expected<std::unique_ptr<comm::Communicator>> make_nccl_communicator(const std::vector<exec::Device*>& members);

// A new NCCL unique id (ncclGetUniqueId: NCCL_UNIQUE_ID_BYTES bytes), made by one process of a
// communicator that spans processes and handed to every other one (over MPI, by the caller). Needs
// no GPU. NotCompiled without CUDA.
Expected<std::vector<uint8_t>> nccl_unique_id();

// This process's part of one NCCL communicator over the GPUs of several processes (the ranks of an
// mpirun job holding a tensor group whose members are all CUDA GPUs).
struct NcclRankPart {
  std::vector<uint8_t> unique_id;  // from nccl_unique_id() on the group's lowest rank
  int n_members = 0;               // GPUs in the whole group: NCCL's rank count
  std::vector<int> member_index;   // per local device: its NCCL rank (its index among the group's members)
  // Asked while waiting (initialization, an all-reduce, the end): a non-empty reason when a process
  // of the group is lost. The communicator is then aborted and the call fails with that reason
  // instead of waiting for a peer that will never come. Called on the waiting thread.
  std::function<std::string()> lost_peer;
};

// The all-reduce of such a group, this process's members being `local` (CUDA devices, in member
// order): ncclCommInitRankConfig for each local GPU inside one ncclGroupStart/End (non-blocking
// communicators, polled, so that a lost peer is an error and not a hang). Every process of the group
// calls it with the same unique id and member count. kind() is "nccl". NotCompiled without CUDA.
Expected<std::unique_ptr<comm::Communicator>> make_nccl_rank_communicator(const std::vector<exec::Device*>& local,
                                                                          NcclRankPart part);

}  // namespace strata::backend::cuda
