// engine/backend/device.h — a place where tensors live and work runs: the device of the backend seam
// (registry -> device -> ops/stream -> buffer; registry.h). Host devices (the CPU, backend/cpu, and
// simulated accelerators, backend/sim) run the CPU kernels on this machine's cores with their own
// memory accounting; the CUDA backend (backend/cuda, a loadable module) implements the same
// interface over cudaMalloc'd memory. What a device can do is data (DeviceCaps, on info().caps and
// caps()): nothing outside a backend's folder asks which backend a device belongs to. No CUDA here.
// Threads: queries, allocate and the copy calls are thread-safe; an Ops object made by
// create_ops() is used by one thread at a time (the device's worker, see DeviceWorker).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/backend/ops.h"
#include "engine/core/status.h"
#include "engine/core/device_info.h"
#include "kernels/cpu/dtype.h"
#include "kernels/cpu/thread_pool.h"

namespace strata::backend {

enum class BufferUse { Weights, KvCache, Scratch, Overhead };
const char* buffer_use_name(BufferUse use);

// Bytes a device holds, by use.
struct MemoryUse {
  uint64_t weights = 0, kv = 0, scratch = 0, overhead = 0;
  uint64_t total() const { return weights + kv + scratch + overhead; }
};

class Device;

// Memory owned by a device; frees it and returns its bytes to the device's accounting when
// destroyed. data() is a pointer in the device's memory: dereference it on the host only where
// host() is non-null (host devices), otherwise pass it to the device's Ops and copy calls.
class Buffer {
 public:
  // memory: from Device::allocate_memory (freed through the device), or an external region that
  // is only accounted (owned == false).
  Buffer(Device* device, BufferUse use, size_t bytes, void* memory, bool owned);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  uint8_t* data() { return static_cast<uint8_t*>(memory_); }
  const uint8_t* cdata() const { return static_cast<const uint8_t*>(memory_); }
  float* floats() { return static_cast<float*>(memory_); }
  uint8_t* host();  // data() where the host may read and write it, else null
  size_t size() const { return bytes_; }
  BufferUse use() const { return use_; }
  Device& device() const { return *device_; }

 private:
  Device* device_;
  BufferUse use_;
  size_t bytes_;
  void* memory_;
  bool owned_;
};

// A strided copy: `height` rows of `width` bytes, rows `src_pitch` / `dst_pitch` bytes apart.
struct Copy2D {
  const void* src = nullptr;
  size_t src_pitch = 0;
  void* dst = nullptr;
  size_t dst_pitch = 0;
  size_t width = 0;
  size_t height = 1;
};

// Scratch the runtime carves for a device's Ops (sized by plan::ScratchLayout, so the planner's
// estimate is what is allocated). Host backends use scores for attention; others may ignore it.
struct OpsWorkspace {
  float* scores = nullptr;         // [threads][scores_per_thread] floats, device memory
  int64_t scores_per_thread = 0;   // n_ctx
  size_t matmul_bytes = 0;         // quantized-activation scratch to reserve (host backends)
  int64_t max_ctx = 0;             // the longest context attention will see (sizes workspaces)
  int64_t max_tokens = 0;          // the most tokens one op will see (max_batch)
};

class Device {
 public:
  virtual ~Device() = default;

  // Identity, memory, speeds and capabilities now; info().caps == caps().
  virtual DeviceInfo info() const = 0;
  // What this device can do (fixed when it opens). Thread-safe.
  const DeviceCaps& caps() const { return caps_; }
  // Whether matrices of this weight type can run here (the planner asks).
  bool supports(kernels::DType weights) const { return caps_.takes_weights(weights); }
  // Whether the KV cache may be stored in this type here.
  bool supports_kv(kernels::DType kv) const { return caps_.keeps_kv(kv); }
  // Whether the host may dereference this device's buffers (cpu, sim: yes; cuda: no).
  bool host_visible() const { return caps_.host_memory; }

  // Memory charged to this device and allocated in it. OutOfMemory names the device, the use,
  // the bytes asked and the bytes free. Thread-safe.
  Expected<std::unique_ptr<Buffer>> allocate(size_t bytes, BufferUse use);
  // Accounts bytes that already live elsewhere (weights the CPU reads from the mapped file, or
  // the runtime's own overhead: data may be null then).
  Expected<std::unique_ptr<Buffer>> adopt(const void* data, size_t bytes, BufferUse use);

  // The op table (a stream of ordered work) of this device, using `workspace` for its scratch.
  virtual Expected<std::unique_ptr<Ops>> create_ops(const OpsWorkspace& workspace) = 0;

  // Copies, blocking until done. Host devices: memcpy. Others: their runtime's copies (CUDA:
  // through pinned staging, overlapping the host read with the device write).
  virtual Status copy_from_host(const Copy2D& copy);
  virtual Status copy_to_host(const Copy2D& copy);
  virtual Status copy_within(const Copy2D& copy);
  // Device-to-device within one backend (CUDA peer copies). Unsupported by default: comm/ then
  // stages through host memory.
  virtual Status copy_to_peer(const Copy2D& copy, Device& peer);
  // Zeroes [dst, dst + bytes) of this device's memory.
  virtual Status fill_zero(void* dst, size_t bytes);

  // A device that met a sticky error (a lost context, an illegal address) is failed: every
  // later allocation and op fails cleanly with the reason, and the planner should stop using it.
  bool failed() const;
  std::string failure() const;
  void mark_failed(const std::string& reason);
  // Whether the engine may give this device up (mark it failed) when its work does not finish
  // within the device timeout. False for the host CPU: it runs the engine itself, there is nothing
  // to re-plan onto without it, and a long prompt chunk on a slow CPU is slow, not hung.
  bool can_be_lost() const { return !caps_.host_cpu; }
  // Out-of-memory fault: allocations fail (OutOfMemory, naming the fault) once `bytes` more than
  // are in use now would be held. Any thread. Used by simulated devices' oom_after option and
  // by fault injection.
  void limit_allocations(uint64_t bytes);

  // Bytes held through this device's buffers, by use, and its capacity less those. Virtual for
  // the stand-in of another rank's device (RemoteDevice), whose figures come from that rank.
  virtual MemoryUse memory_use() const;
  virtual uint64_t bytes_free() const;
  const std::string& id() const { return id_; }
  // Several processes: the rank that owns a device standing in for another process's device
  // (RemoteDevice), -1 for a device of this process.
  virtual int remote_rank() const { return -1; }
  // Under mpirun: names a device of this process after its rank ("r1:" + id) and records the rank
  // and host its info() reports. Call before any use.
  void set_rank(int rank, const std::string& host) {
    id_ = "r" + std::to_string(rank) + ":" + id_;
    rank_ = rank;
    host_ = host;
  }
  int rank() const { return rank_; }
  const std::string& host() const { return host_; }

 protected:
  Device(std::string id, uint64_t capacity_bytes, DeviceCaps caps);
  // Raw memory of the device; null on failure (the caller reports OutOfMemory). Host: new[].
  virtual void* allocate_memory(size_t bytes);
  virtual void free_memory(void* memory, size_t bytes);
  void set_capacity(uint64_t capacity_bytes);
  // Called once, by the thread that marks the device failed, after failed() became true: a
  // device whose work may be blocked waiting on itself (a simulated hang) wakes it here.
  virtual void on_failed() {}

 private:
  friend class Buffer;
  void release(BufferUse use, size_t bytes);

  std::string id_;
  const DeviceCaps caps_;
  int rank_ = 0;      // under mpirun: this process's rank (set_rank)
  std::string host_;  // and its host name
  uint64_t capacity_;
  mutable std::mutex mutex_;
  MemoryUse use_;
  std::string failure_;
  std::atomic<bool> failed_{false};
  uint64_t allocation_limit_ = UINT64_MAX;  // guarded by mutex_: bytes in use allowed (oom fault)
};

// A device whose work runs on this machine's cores (the CPU and simulated accelerators). It owns
// (or borrows) the thread pool its Ops fan out to.
class HostDevice : public Device {
 public:
  kernels::ThreadPool& pool() { return *pool_; }

 protected:
  HostDevice(std::string id, uint64_t capacity_bytes, DeviceCaps caps, int threads);
  // Uses a pool owned by the caller (which must outlive the device).
  HostDevice(std::string id, uint64_t capacity_bytes, DeviceCaps caps, kernels::ThreadPool& external_pool);
  // What every host device keeps and takes: f32, f16 and q8_0 KV caches (kernels/cpu/attention.h),
  // every weight type, memory the host reads.
  static DeviceCaps host_caps();

 private:
  std::unique_ptr<kernels::ThreadPool> owned_pool_;
  kernels::ThreadPool* pool_;
};

}  // namespace strata::backend
