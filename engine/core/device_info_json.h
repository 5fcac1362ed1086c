// engine/core/device_info_json.h — DeviceInfo as JSON, one form for everyone who sends it: the HTTP
// API's device lists (GET /strata/v1/devices, `strata-engine devices --json`) and the ranks'
// start-up handshake under mpirun (exec/cluster).
#pragma once

#include <nlohmann/json.hpp>

#include "engine/core/device_info.h"
#include "engine/core/status.h"

namespace strata {

// {"id","kind":"cpu|sim|cuda","name","simulated","bytes_total","bytes_free","bandwidth_gbps","tflops",
//  "link_gbps","link_latency_us","runtime_overhead_bytes","threads","compute_capability","ordinal",
//  "peers":[ids],"failed","failure","rank","host"}. failure is "" unless failed.
nlohmann::json device_info_json(const DeviceInfo& info);
// The inverse; Corrupt names the field that is missing or of the wrong type (or an unknown kind).
Expected<DeviceInfo> device_info_from_json(const nlohmann::json& j);

}  // namespace strata
