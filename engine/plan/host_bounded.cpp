// engine/plan/host_bounded.cpp — the devices as this machine can run them (cost_model.h): a
// simulated device is bounded by the host CPU's measured speed, scaled by its threads' share.
#include <algorithm>

#include "engine/plan/cost_model.h"

namespace strata::plan {

std::vector<DeviceInfo> host_bounded(const std::vector<DeviceInfo>& devices) {
  const DeviceInfo* host = nullptr;
  for (const DeviceInfo& d : devices)
    if (d.caps.host_cpu) host = &d;
  std::vector<DeviceInfo> out = devices;
  if (!host) return out;
  const double host_bw = host->bandwidth_gbps > 0 ? host->bandwidth_gbps : kDefaultBandwidthGbps;
  const double host_tflops = host->tflops > 0 ? host->tflops : kDefaultTflops;
  for (DeviceInfo& d : out) {
    if (!d.simulated) continue;
    const double share = std::min(1.0, static_cast<double>(std::max(d.threads, 1)) /
                                           static_cast<double>(std::max(host->threads, 1)));
    const double bw = d.bandwidth_gbps > 0 ? d.bandwidth_gbps : kDefaultBandwidthGbps;
    const double tf = d.tflops > 0 ? d.tflops : kDefaultTflops;
    d.bandwidth_gbps = std::min(bw, host_bw * share);
    d.tflops = std::min(tf, host_tflops * share);
    d.matvec_gbps.clear();
    for (const MatvecRate& r : host->matvec_gbps)
      d.matvec_gbps.push_back(MatvecRate{r.type, r.gbps * share, share > 0 ? r.row_ns / share : r.row_ns});
    d.matvec_call_us = std::max(d.matvec_call_us, host->matvec_call_us);
  }
  return out;
}

bool uses_simulated(const Placement& p, const std::vector<DeviceInfo>& devices) {
  for (const std::string& id : p.devices())
    for (const DeviceInfo& d : devices)
      if (d.id == id && d.simulated) return true;
  for (const LayerPlacement& l : p.layers)
    for (const DeviceInfo& d : devices)
      if (d.id == l.kv_device && d.simulated) return true;
  return false;
}

}  // namespace strata::plan
