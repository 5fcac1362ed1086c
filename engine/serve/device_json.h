// engine/serve/device_json.h — one JSON shape for a device and for the CUDA runtime, shared by
// GET /strata/v1/devices and `strata-engine devices --json` (docs/api.md). Header-only so that the
// command line has it in builds without the HTTP server; depends on nlohmann-json, core/device_info.h
// and the CUDA backend's query functions (no CUDA headers, no HTTP).
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "engine/backend/cuda/cuda_backend.h"
#include "engine/core/device_info.h"

namespace strata::serve {

// {"id","kind":"cpu|sim|cuda","name","simulated","bytes_total","bytes_free","bandwidth_gbps","tflops",
//  "link_gbps","link_latency_us","threads","compute_capability","ordinal","peers":[ids],"failed","failure",
//  "rank","host"}. rank is 0 and host "" in one process; under mpirun the owning rank and its host.
// compute_capability is "" and ordinal -1 for devices that are not CUDA devices; failure is "" unless
// failed.
inline nlohmann::json device_json(const DeviceInfo& i) {
  return {{"id", i.id},
          {"kind", device_kind_name(i.kind)},
          {"name", i.name},
          {"simulated", i.simulated},
          {"bytes_total", i.bytes_total},
          {"bytes_free", i.bytes_free},
          {"bandwidth_gbps", i.bandwidth_gbps},
          {"tflops", i.tflops},
          {"link_gbps", i.link_gbps},
          {"link_latency_us", i.link_latency_us},
          {"threads", i.threads},
          {"compute_capability", i.compute_capability},
          {"ordinal", i.ordinal},
          {"peers", i.peers},
          {"failed", i.failed},
          {"failure", i.failed ? i.failure : std::string()},
          {"rank", i.rank},
          {"host", i.host}};
}

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
