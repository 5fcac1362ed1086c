// engine/backend/cuda/cuda_backend.h — the CUDA backend as the rest of the engine sees it: no CUDA
// headers here. Built from cuda_*.cpp when STRATA_WITH_CUDA is on; otherwise stub_backend.cpp
// provides the same functions, reporting zero devices and NotCompiled (like candle's dummy
// backend), so callers never need #ifdefs.
#pragma once

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

}  // namespace strata::backend::cuda
