// engine/backend/cpu/cpu_device.cpp — the CPU device and the "cpu" backend (cpu_device.h).
#include "engine/backend/cpu/cpu_device.h"

#include <fstream>
#include <string>

#include "engine/backend/cpu/cpu_ops.h"
#include "engine/backend/backend.h"
#include "engine/core/units.h"

namespace strata::backend {

DeviceCaps CpuDevice::cpu_caps() {
  DeviceCaps c = host_caps();
  c.host_cpu = true;
  c.reads_weights_in_place = true;
  return c;
}

CpuDevice::CpuDevice(int threads, uint64_t capacity_bytes, const CpuSpeed& speed)
    : HostDevice("cpu", capacity_bytes, cpu_caps(), threads), threads_(threads), capacity_(capacity_bytes),
      speed_(speed) {}

CpuDevice::CpuDevice(kernels::ThreadPool& pool, uint64_t capacity_bytes, const CpuSpeed& speed)
    : HostDevice("cpu", capacity_bytes, cpu_caps(), pool), threads_(pool.n_threads()), capacity_(capacity_bytes),
      speed_(speed) {}

DeviceInfo CpuDevice::info() const {
  DeviceInfo i;
  i.id = id();
  i.backend = "cpu";
  i.caps = caps();
  i.name = "CPU (" + std::to_string(threads_) + " threads)";
  i.bytes_total = capacity_;
  i.bytes_free = bytes_free();
  i.bandwidth_gbps = speed_.bandwidth_gbps;
  // Measured (cpu_speed.h), else a rough dense rate: ~32 FLOP/cycle/core (AVX-512 FMA) at ~2.5 GHz.
  i.tflops = speed_.tflops > 0 ? speed_.tflops : 0.08 * threads_;
  i.matvec_gbps = speed_.matvec_gbps;
  i.matvec_call_us = speed_.matvec_call_us;
  i.link_gbps = speed_.bandwidth_gbps;  // "transfers" from the CPU are host copies
  i.link_latency_us = 2;
  i.threads = threads_;
  i.rank = rank();
  i.host = host();
  i.failed = failed();
  if (i.failed) i.failure = failure();
  return i;
}

Expected<std::unique_ptr<Ops>> CpuDevice::create_ops(const OpsWorkspace& workspace) {
  return std::unique_ptr<Ops>(std::make_unique<CpuOps>(pool(), workspace));
}

uint64_t host_memory_available() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit) {
    if (key == "MemAvailable:") return kb * 1024;
  }
  return 8ull << 30;
}

namespace {

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  std::string describe() const override { return "this machine's CPU"; }
  int device_count() const override { return 1; }
  Expected<std::vector<std::unique_ptr<Device>>> open(std::span<const std::string> fields,
                                                      const OpenOptions& options) override {
    if (fields.size() > 2)
      return Error{Code::InvalidArgument, "device 'cpu' takes at most a capacity: " + join_fields(fields)};
    uint64_t capacity = host_memory_available();
    if (fields.size() == 2) {
      STRATA_ASSIGN_OR_RETURN(capacity, parse_bytes(fields[1]));
    }
    std::vector<std::unique_ptr<Device>> out;
    out.push_back(std::make_unique<CpuDevice>(options.cpu_threads, capacity, options.cpu_speed));
    return out;
  }
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace strata::backend
