// engine/core/device_info_json.cpp — DeviceInfo to and from JSON (see device_info_json.h).
#include "engine/core/device_info_json.h"

#include <algorithm>

#include <optional>
#include <string>
#include <vector>

namespace strata {

namespace {

nlohmann::json type_names(const std::vector<kernels::DType>& types) {
  nlohmann::json out = nlohmann::json::array();
  for (kernels::DType t : types) out.push_back(kernels::dtype_name(t));
  return out;
}

Expected<std::vector<kernels::DType>> types_from_names(const nlohmann::json& names, const char* what) {
  std::vector<kernels::DType> out;
  for (const nlohmann::json& n : names) {
    const std::string name = n.get<std::string>();
    const std::optional<kernels::DType> t = kernels::dtype_from_name(name);
    if (!t) return Error{Code::Corrupt, std::string("device description: unknown type '") + name + "' in caps." + what};
    out.push_back(*t);
  }
  return out;
}

}  // namespace

nlohmann::json device_caps_json(const DeviceCaps& c) {
  return {{"host_memory", c.host_memory},
          {"host_cpu", c.host_cpu},
          {"reads_weights_in_place", c.reads_weights_in_place},
          {"kv_types", type_names(c.kv_types)},
          {"weight_types", type_names(c.weight_types)},
          {"peer_access", c.peer_access},
          {"collective", c.collective},
          {"max_head_dim", c.max_head_dim}};
}

nlohmann::json matvec_json(const std::vector<MatvecRate>& rates) {
  nlohmann::json j = nlohmann::json::object();
  for (const MatvecRate& r : rates) j[kernels::dtype_name(r.type)] = r.gbps;
  return j;
}

Expected<std::vector<MatvecRate>> matvec_from_json(const nlohmann::json& j) {
  std::vector<MatvecRate> out;
  if (j.is_null()) return out;
  if (!j.is_object()) return Error{Code::Corrupt, "matvec_gbps: not an object of type names and GB/s"};
  for (auto it = j.begin(); it != j.end(); ++it) {
    const auto t = kernels::dtype_from_name(it.key());
    if (!t) return Error{Code::Corrupt, "matvec_gbps: unknown weight type '" + it.key() + "'"};
    if (!it.value().is_number() || it.value().get<double>() < 0)
      return Error{Code::Corrupt, "matvec_gbps: '" + it.key() + "' is not a rate in GB/s"};
    out.push_back(MatvecRate{*t, it.value().get<double>()});
  }
  return out;
}

nlohmann::json matvec_row_ns_json(const std::vector<MatvecRate>& rates) {
  nlohmann::json j = nlohmann::json::object();
  for (const MatvecRate& r : rates)
    if (r.row_ns > 0) j[kernels::dtype_name(r.type)] = r.row_ns;
  return j;
}

Status matvec_row_ns_from_json(const nlohmann::json& j, std::vector<MatvecRate>& rates) {
  if (j.is_null()) return Status();
  if (!j.is_object()) return Error{Code::Corrupt, "matvec_row_ns: not an object of type names and nanoseconds"};
  for (auto it = j.begin(); it != j.end(); ++it) {
    const auto t = kernels::dtype_from_name(it.key());
    auto r = std::find_if(rates.begin(), rates.end(), [&](const MatvecRate& m) { return t && m.type == *t; });
    if (r == rates.end()) return Error{Code::Corrupt, "matvec_row_ns: '" + it.key() + "' has no rate in matvec_gbps"};
    if (!it.value().is_number() || it.value().get<double>() < 0)
      return Error{Code::Corrupt, "matvec_row_ns: '" + it.key() + "' is not a time in nanoseconds"};
    r->row_ns = it.value().get<double>();
  }
  return Status();
}

nlohmann::json device_info_json(const DeviceInfo& i) {
  return {{"id", i.id},
          {"kind", i.backend},
          {"caps", device_caps_json(i.caps)},
          {"name", i.name},
          {"simulated", i.simulated},
          {"bytes_total", i.bytes_total},
          {"bytes_free", i.bytes_free},
          {"bandwidth_gbps", i.bandwidth_gbps},
          {"tflops", i.tflops},
          {"matvec_gbps", matvec_json(i.matvec_gbps)},
          {"matvec_row_ns", matvec_row_ns_json(i.matvec_gbps)},
          {"matvec_call_us", i.matvec_call_us},
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
    i.backend = j.at("kind").get<std::string>();
    if (i.backend.empty()) return Error{Code::Corrupt, "device description: empty kind"};
    const nlohmann::json& caps = j.at("caps");
    i.caps.host_memory = caps.at("host_memory").get<bool>();
    i.caps.host_cpu = caps.at("host_cpu").get<bool>();
    i.caps.reads_weights_in_place = caps.at("reads_weights_in_place").get<bool>();
    STRATA_ASSIGN_OR_RETURN(i.caps.kv_types, types_from_names(caps.at("kv_types"), "kv_types"));
    STRATA_ASSIGN_OR_RETURN(i.caps.weight_types, types_from_names(caps.at("weight_types"), "weight_types"));
    i.caps.peer_access = caps.at("peer_access").get<bool>();
    i.caps.collective = caps.at("collective").get<std::string>();
    if (caps.contains("max_head_dim")) i.caps.max_head_dim = caps.at("max_head_dim").get<int64_t>();  // absent before it existed
    i.name = j.at("name").get<std::string>();
    i.simulated = j.at("simulated").get<bool>();
    i.bytes_total = j.at("bytes_total").get<uint64_t>();
    i.bytes_free = j.at("bytes_free").get<uint64_t>();
    i.bandwidth_gbps = j.at("bandwidth_gbps").get<double>();
    i.tflops = j.at("tflops").get<double>();
    if (j.contains("matvec_gbps")) {  // absent in descriptions from before it existed
      STRATA_ASSIGN_OR_RETURN(i.matvec_gbps, matvec_from_json(j.at("matvec_gbps")));
    }
    if (j.contains("matvec_row_ns")) STRATA_RETURN_IF_ERROR(matvec_row_ns_from_json(j.at("matvec_row_ns"), i.matvec_gbps));
    if (j.contains("matvec_call_us")) i.matvec_call_us = j.at("matvec_call_us").get<double>();
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
