// engine/serve/device_json.h — one JSON shape for a device and for the backends, shared by
// GET /strata/v1/devices and `strata-engine devices --json` (docs/api.md). Header-only so that the
// command line has it in builds without the HTTP server; depends on nlohmann-json, core/device_info_json.h
// and the backend registry (no CUDA headers, no HTTP).
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "engine/backend/registry/registry.h"
#include "engine/core/device_info_json.h"

namespace strata::serve {

// One device of GET /strata/v1/devices: engine/core/device_info_json.h's form (the same one the
// ranks exchange under mpirun). rank is 0 and host "" in one process; under mpirun the owning rank
// and its host. compute_capability is "" and ordinal -1 for devices that are not CUDA devices.
inline nlohmann::json device_json(const DeviceInfo& i) { return device_info_json(i); }

// One backend: {"name", "present": whether it is in this process (a module that is not installed or
// does not load is not), "finds_hardware", "description": what it found or why nothing,
// "device_count"}.
inline nlohmann::json backend_json(const backend::Backend& b) {
  return {{"name", b.name()},
          {"present", b.present()},
          {"finds_hardware", b.finds_hardware()},
          {"description", b.describe()},
          {"device_count", b.device_count()}};
}

// {"compiled": whether the CUDA backend is in this process (its module loaded), "description": the
// runtime and driver or why there is none, "device_count": CUDA devices visible to this process}.
// Kept for clients of the first API version; "backends" says the same for every backend.
inline nlohmann::json cuda_json() {
  const backend::Backend* cuda = backend::find_backend("cuda");
  if (!cuda) return {{"compiled", false}, {"description", "no CUDA backend"}, {"device_count", 0}};
  return {{"compiled", cuda->present()}, {"description", cuda->describe()}, {"device_count", cuda->device_count()}};
}

// {"devices":[device_json...], "backends":[backend_json...], "cuda": cuda_json()}.
inline nlohmann::json devices_json(const std::vector<DeviceInfo>& infos) {
  nlohmann::json list = nlohmann::json::array();
  for (const DeviceInfo& i : infos) list.push_back(device_json(i));
  nlohmann::json backends = nlohmann::json::array();
  for (const backend::Backend* b : backend::backends()) backends.push_back(backend_json(*b));
  return {{"devices", std::move(list)}, {"backends", std::move(backends)}, {"cuda", cuda_json()}};
}

}  // namespace strata::serve
