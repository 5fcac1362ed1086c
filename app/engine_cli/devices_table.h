// app/engine_cli/devices_table.h — the text of `strata-engine devices`: a markdown table of the
// devices, a line per failed device, the peer-access matrix and a line per hardware backend (CUDA).
// Header-only and pure (no device is opened) so that tests/app checks it with made-up GPUs.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <string>
#include <vector>

#include "engine/core/device_info.h"
#include "engine/plan/memory_estimate.h"

namespace strata::cli {

namespace devices_table_detail {

inline std::string cell(const std::string& s) { return s.empty() ? "-" : s; }

inline std::string format_rate(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

}  // namespace devices_table_detail

// | id | kind | name | cc | memory | free | bandwidth | compute | link | — one row per device ("-" for
// a compute capability that does not apply; "(failed)" after a failed device's name), then
// "<id> failed: <reason>" for each failed device.
inline std::string format_devices_table(const std::vector<DeviceInfo>& infos) {
  using devices_table_detail::cell;
  using devices_table_detail::format_rate;
  std::string out =
      "| id | kind | name | cc | memory | free | bandwidth | compute | link |\n"
      "|---|---|---|---|---:|---:|---:|---:|---:|\n";
  for (const DeviceInfo& i : infos) {
    out += "| " + i.id + " | " + i.backend + " | " + i.name + (i.failed ? " (failed)" : "") +
           " | " + cell(i.compute_capability) + " | " + plan::format_bytes(i.bytes_total) + " | " +
           plan::format_bytes(i.bytes_free) + " | " + format_rate("%.1f GB/s", i.bandwidth_gbps) + " | " +
           format_rate("%.2f TFLOPS", i.tflops) + " | " + format_rate("%.1f GB/s", i.link_gbps) + " |\n";
  }
  for (const DeviceInfo& i : infos)
    if (i.failed) out += i.id + " failed: " + cell(i.failure) + "\n";
  return out;
}

// Which devices with peer access (GPUs) read and write each other's memory directly: a matrix,
// row -> column, "yes" (peer access), "no" (copies go through the host) or "-" (itself). Empty with
// fewer than two such devices.
inline std::string format_peer_matrix(const std::vector<DeviceInfo>& infos) {
  std::vector<const DeviceInfo*> cuda;
  for (const DeviceInfo& i : infos)
    if (i.caps.peer_access) cuda.push_back(&i);
  if (cuda.size() < 2) return {};
  std::string out = "peer access (row reads and writes column's memory directly):\n|  |";
  for (const DeviceInfo* c : cuda) out += " " + c->id + " |";
  out += "\n|---|";
  for (size_t k = 0; k < cuda.size(); ++k) out += "---|";
  out += "\n";
  for (const DeviceInfo* r : cuda) {
    out += "| " + r->id + " |";
    for (const DeviceInfo* c : cuda) {
      const bool peer = std::find(r->peers.begin(), r->peers.end(), c->id) != r->peers.end();
      out += r == c ? " - |" : peer ? " yes |" : " no |";
    }
    out += "\n";
  }
  return out;
}

// A backend that finds hardware of its own (backend::Backend::finds_hardware), as `devices` reports
// it: its name ("cuda"), what it found or why nothing ("CUDA runtime 13.0, ...", "CUDA module not
// installed (...)") and how many devices.
struct HardwareBackendLine {
  std::string name;
  std::string description;
  int device_count = 0;
};

// All of `devices`' text: the table, the peer matrix (after a blank line) and per hardware backend
// "<NAME>: <description>; <n> device(s)" ("CUDA: CUDA runtime 13.0, driver 13.0; 2 devices").
inline std::string format_devices_text(const std::vector<DeviceInfo>& infos,
                                       const std::vector<HardwareBackendLine>& backends) {
  std::string out = format_devices_table(infos);
  const std::string peers = format_peer_matrix(infos);
  if (!peers.empty()) out += "\n" + peers;
  for (const HardwareBackendLine& b : backends) {
    std::string name = b.name;
    for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    out += name + ": " + b.description + "; " + std::to_string(b.device_count) + " device" +
           (b.device_count == 1 ? "" : "s") + "\n";
  }
  return out;
}

}  // namespace strata::cli
