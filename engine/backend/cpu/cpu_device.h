// engine/backend/cpu/cpu_device.h — the machine's CPU as a device: capacity is the machine's RAM
// (MemAvailable at start), speeds measured by the caller (cpu_speed.h); its ops are CpuOps on its thread pool.
// It reads weights in place from the mapped model file, is the planner's fallback, and cannot be lost.
#pragma once

#include <cstdint>
#include <memory>

#include "engine/backend/device.h"

namespace strata::backend {

class Backend;

class CpuDevice final : public HostDevice {
 public:
  CpuDevice(int threads, uint64_t capacity_bytes, const CpuSpeed& speed);
  CpuDevice(kernels::ThreadPool& pool, uint64_t capacity_bytes, const CpuSpeed& speed);
  DeviceInfo info() const override;
  Expected<std::unique_ptr<Ops>> create_ops(const OpsWorkspace& workspace) override;

 private:
  static DeviceCaps cpu_caps();

  int threads_;
  uint64_t capacity_;
  CpuSpeed speed_;  // measured by the caller (cpu_speed.h); zeros: the cost model's defaults
};

// Bytes of RAM available to the process (MemAvailable), or 8 GiB when unknown.
uint64_t host_memory_available();

// The "cpu" backend: the entry "cpu" or "cpu:CAPACITY".
std::unique_ptr<Backend> make_cpu_backend();

}  // namespace strata::backend
