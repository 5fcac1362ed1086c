// engine/core/device_info_json.cpp — DeviceInfo to and from JSON (see device_info_json.h).
#include "engine/core/device_info_json.h"

#include <string>
#include <vector>

namespace strata {

nlohmann::json device_info_json(const DeviceInfo& i) {
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
          {"runtime_overhead_bytes", i.runtime_overhead_bytes},
          {"threads", i.threads},
          {"compute_capability", i.compute_capability},
          {"ordinal", i.ordinal},
          {"peers", i.peers},
          {"failed", i.failed},
          {"failure", i.failed ? i.failure : std::string()},
          {"rank", i.rank},
          {"host", i.host}};
}

Expected<DeviceInfo> device_info_from_json(const nlohmann::json& j) {
  try {
    DeviceInfo i;
    i.id = j.at("id").get<std::string>();
    const std::string kind = j.at("kind").get<std::string>();
    bool known = false;
    for (DeviceKind k : {DeviceKind::Cpu, DeviceKind::Simulated, DeviceKind::Cuda}) {
      if (kind == device_kind_name(k)) i.kind = k, known = true;
    }
    if (!known) return Error{Code::Corrupt, "device description: unknown kind '" + kind + "'"};
    i.name = j.at("name").get<std::string>();
    i.simulated = j.at("simulated").get<bool>();
    i.bytes_total = j.at("bytes_total").get<uint64_t>();
    i.bytes_free = j.at("bytes_free").get<uint64_t>();
    i.bandwidth_gbps = j.at("bandwidth_gbps").get<double>();
    i.tflops = j.at("tflops").get<double>();
    i.link_gbps = j.at("link_gbps").get<double>();
    i.link_latency_us = j.at("link_latency_us").get<double>();
    i.runtime_overhead_bytes = j.at("runtime_overhead_bytes").get<uint64_t>();
    i.threads = j.at("threads").get<int>();
    i.compute_capability = j.at("compute_capability").get<std::string>();
    i.ordinal = j.at("ordinal").get<int>();
    i.peers = j.at("peers").get<std::vector<std::string>>();
    i.failed = j.at("failed").get<bool>();
    i.failure = j.at("failure").get<std::string>();
    i.rank = j.at("rank").get<int>();
    i.host = j.at("host").get<std::string>();
    return i;
  } catch (const std::exception& e) {
    return Error{Code::Corrupt, std::string("device description: ") + e.what()};
  }
}

}  // namespace strata
