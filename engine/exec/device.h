// engine/exec/device.h — a place where tensors live and work runs. Host devices (the CPU and
// simulated accelerators) run on this machine's cores with their own memory accounting; the
// CUDA backend implements the same interface. Queries are thread-safe; compute happens on the
// device's worker thread (see DeviceWorker), which is the only user of its thread pool.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/exec/device_info.h"
#include "kernels/cpu/dtype.h"
#include "kernels/cpu/thread_pool.h"

namespace strata::exec {

enum class BufferUse { Weights, KvCache, Scratch, Overhead };
const char* buffer_use_name(BufferUse use);

// Bytes a device holds, by use.
struct MemoryUse {
  uint64_t weights = 0, kv = 0, scratch = 0, overhead = 0;
  uint64_t total() const { return weights + kv + scratch + overhead; }
};

class Device;

// Memory owned by a device; returns its bytes to the device's accounting when destroyed.
class Buffer {
 public:
  Buffer(Device* device, BufferUse use, size_t bytes, std::unique_ptr<uint8_t[]> host, const void* external);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  uint8_t* data() { return host_.get(); }            // null for an external (mapped) region
  const uint8_t* cdata() const { return host_ ? host_.get() : static_cast<const uint8_t*>(external_); }
  size_t size() const { return bytes_; }
  BufferUse use() const { return use_; }
  float* floats() { return reinterpret_cast<float*>(host_.get()); }

 private:
  Device* device_;
  BufferUse use_;
  size_t bytes_;
  std::unique_ptr<uint8_t[]> host_;
  const void* external_;
};

class Device {
 public:
  virtual ~Device() = default;

  virtual DeviceInfo info() const = 0;
  // Whether matrices of this weight type can run here (the planner asks).
  virtual bool supports(kernels::DType weights) const = 0;

  // Host memory charged to this device. OutOfMemory names the device, the bytes asked and the
  // bytes free. Thread-safe.
  Expected<std::unique_ptr<Buffer>> allocate(size_t bytes, BufferUse use);
  // Accounts bytes that already live elsewhere (weights the CPU reads from the mapped file).
  Expected<std::unique_ptr<Buffer>> adopt(const void* data, size_t bytes, BufferUse use);

  MemoryUse memory_use() const;
  uint64_t bytes_free() const;
  const std::string& id() const { return id_; }

  // Compute threads of this device; used only from its worker thread.
  kernels::ThreadPool& pool() { return *pool_; }

 protected:
  Device(std::string id, uint64_t capacity_bytes, int threads);
  // Uses a pool owned by the caller (which must outlive the device).
  Device(std::string id, uint64_t capacity_bytes, kernels::ThreadPool& external_pool);

 private:
  friend class Buffer;
  void release(BufferUse use, size_t bytes);

  std::string id_;
  uint64_t capacity_;
  mutable std::mutex mutex_;
  MemoryUse use_;
  std::unique_ptr<kernels::ThreadPool> owned_pool_;
  kernels::ThreadPool* pool_;
};

// The CPU: capacity is the machine's RAM (MemAvailable at start), bandwidth measured.
class CpuDevice final : public Device {
 public:
  CpuDevice(int threads, uint64_t capacity_bytes, double bandwidth_gbps);
  CpuDevice(kernels::ThreadPool& pool, uint64_t capacity_bytes, double bandwidth_gbps);
  DeviceInfo info() const override;
  bool supports(kernels::DType) const override { return true; }

 private:
  int threads_;
  uint64_t capacity_;
  double bandwidth_gbps_;
};

// A simulated accelerator: runs on host cores with a declared capacity and speed, and says
// everywhere that it is simulated.
struct SimulatedSpec {
  std::string id;                 // "gpu0"
  uint64_t capacity_bytes = 0;
  double bandwidth_gbps = 900;
  double tflops = 80;
  double link_gbps = 25;
  double link_latency_us = 10;
  uint64_t runtime_overhead_bytes = 0;
  int threads = 1;
};

class SimulatedDevice final : public Device {
 public:
  explicit SimulatedDevice(SimulatedSpec spec);
  DeviceInfo info() const override;
  bool supports(kernels::DType) const override { return true; }

 private:
  SimulatedSpec spec_;
};

// Parses "cpu,sim:gpu0:24GiB,sim:gpu1:12GiB:bw=900GB/s:tflops=80:link=25GB/s:threads=1" into
// devices. cpu_threads / cpu_bandwidth_gbps describe the CPU entry. Errors name the entry.
Expected<std::vector<std::unique_ptr<Device>>> make_devices(const std::string& spec, int cpu_threads,
                                                            double cpu_bandwidth_gbps);
// "24GiB", "512MiB", "1.5GB", "1000000" -> bytes.
Expected<uint64_t> parse_bytes(const std::string& text);
// Bytes of RAM available to the process (MemAvailable), or 8 GiB when unknown.
uint64_t host_memory_available();

}  // namespace strata::exec
