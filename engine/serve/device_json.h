// engine/serve/device_json.h — one JSON shape for a device and for the CUDA runtime, shared by
// GET /strata/v1/devices and `strata-engine devices --json` (docs/api.md). Header-only so that the
// command line has it in builds without the HTTP server; depends on nlohmann-json, core/device_info_json.h
// and the CUDA backend's query functions (no CUDA headers, no HTTP).
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "engine/backend/cuda/cuda_backend.h"
#include "engine/core/device_info_json.h"

namespace strata::serve {

// One device of GET /strata/v1/devices: engine/core/device_info_json.h's form (the same one the
// ranks exchange under mpirun). rank is 0 and host "" in one process; under mpirun the owning rank
// and its host. compute_capability is "" and ordinal -1 for devices that are not CUDA devices.
inline nlohmann::json device_json(const DeviceInfo& i) { return device_info_json(i); }

// {"compiled": whether this build has the CUDA backend, "description": the runtime and driver or why
// there is none, "device_count": CUDA devices visible to this process}.
inline nlohmann::json cuda_json() {
  return {{"compiled", backend::cuda::compiled()},
          {"description", backend::cuda::runtime_description()},
          {"device_count", backend::cuda::device_count()}};
}

// {"devices":[device_json...], "cuda": cuda_json()}.
inline nlohmann::json devices_json(const std::vector<DeviceInfo>& infos) {
  nlohmann::json list = nlohmann::json::array();
  for (const DeviceInfo& i : infos) list.push_back(device_json(i));
  return {{"devices", std::move(list)}, {"cuda", cuda_json()}};
}

}  // namespace strata::serve
