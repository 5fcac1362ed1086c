// engine/core/device_info_json.h — DeviceInfo as JSON, one form for everyone who sends it: the HTTP
// API's device lists (GET /strata/v1/devices, `strata-engine devices --json`) and the ranks'
// start-up handshake under mpirun (dist/cluster).
#pragma once

#include <nlohmann/json.hpp>

#include "engine/core/device_info.h"
#include "engine/core/status.h"

namespace strata {

// {"caps": {"host_memory","host_cpu","reads_weights_in_place","kv_types":[names],"weight_types":[names]
//  ([]: every type),"peer_access","collective":"nccl"|""}}: DeviceCaps.
nlohmann::json device_caps_json(const DeviceCaps& caps);
// {"q4_k": GB/s, ...}: measured one-token product rates by weight type name, and the inverse.
nlohmann::json matvec_json(const std::vector<MatvecRate>& rates);
Expected<std::vector<MatvecRate>> matvec_from_json(const nlohmann::json& j);
// {"q4_k": nanoseconds per row, ...} of the rates that have one; and back into `rates` (a type
// not in `rates`, or a value that is not a non-negative number, is Corrupt).
nlohmann::json matvec_row_ns_json(const std::vector<MatvecRate>& rates);
Status matvec_row_ns_from_json(const nlohmann::json& j, std::vector<MatvecRate>& rates);
// {"id","kind":"cpu|sim|cuda" (the backend),"caps":device_caps_json,"name","simulated","bytes_total","bytes_free","bandwidth_gbps","tflops","matvec_gbps",
//  "link_gbps","link_latency_us","runtime_overhead_bytes","threads","compute_capability","ordinal",
//  "peers":[ids],"failed","failure","rank","host"}. failure is "" unless failed.
nlohmann::json device_info_json(const DeviceInfo& info);
// The inverse; Corrupt names the field that is missing or of the wrong type (or an unknown type name in caps).
Expected<DeviceInfo> device_info_from_json(const nlohmann::json& j);

}  // namespace strata
