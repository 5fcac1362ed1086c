// engine/backend/cuda/cuda_device.h — one CUDA GPU as a backend::Device: its context, its memory
// (plain cudaMalloc, never managed memory, charged to the device's accounting), the blocking copies
// in and out through reusable pinned staging, peer copies, and the factory of its Ops (cuda_ops.h).
// Included only by engine/backend/cuda/cuda_*.cpp (it includes CUDA headers); the engine sees
// only the module's Backend (cuda_module.cpp).
// Threads: every entry point may be called from any thread, and each begins with cudaSetDevice, so
// the calling thread's current device is this one afterwards. Queries and copies are thread-safe
// (copies through staging are serialised by a mutex).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "engine/core/status.h"
#include "engine/backend/device.h"

namespace strata::backend::cuda {

// Memory kept out of the capacity reported to the planner, on top of what the context measurably
// took at open: kSafetyMarginFixedBytes + kSafetyMarginFraction * the GPU's total memory. The fixed
// part covers what CUDA allocates after open and cannot be charged to a Buffer: lazily loaded kernel
// modules (CUDA_MODULE_LOADING=LAZY), cuBLAS' per-handle state and NCCL's channel buffers
// (a few MiB per peer and channel). The proportional part covers cudaMalloc's 2 MiB granularity
// and fragmentation over many buffers. 24 GiB GPU: 502 MiB kept; 80 GiB: 1.05 GiB; 141 GiB: 1.67 GiB.
inline constexpr uint64_t kSafetyMarginFixedBytes = 256ull << 20;
inline constexpr double kSafetyMarginFraction = 0.01;

// Each of the two pinned staging buffers of a device's blocking host copies: bytes. A copy is cut
// into chunks of at most this size; while the DMA engine moves chunk i out of one buffer, the host
// fills (or drains) chunk i+1 in the other. 16 MiB is past the size where PCIe DMA reaches its
// peak, and small enough that the un-overlapped first and last chunks cost ~0.5 ms each.
inline constexpr size_t kStagingBytes = 16ull << 20;

class CudaDevice final : public backend::Device {
 public:
  // Creates the context of device `ordinal` (cudaFree(0)), the device's streams, its cuBLAS handle
  // and pinned staging, measures what those took (cudaMemGetInfo before and after) and reports the
  // rest of the free memory, less the safety margin, as capacity. The ordinal must be valid.
  static Expected<std::unique_ptr<CudaDevice>> open(int ordinal, std::string id);
  ~CudaDevice() override;  // waits for its copies; Ops and Buffers of the device must be gone

  DeviceInfo info() const override;

  Expected<std::unique_ptr<backend::Ops>> create_ops(const backend::OpsWorkspace& workspace) override;

  // Blocking copies, see backend::Device. They are not ordered against the work of this device's Ops
  // streams: synchronize the Ops that write (or read) the same memory first.
  Status copy_from_host(const backend::Copy2D& copy) override;
  Status copy_to_host(const backend::Copy2D& copy) override;
  Status copy_within(const backend::Copy2D& copy) override;
  // copy.src in this device, copy.dst in `peer`. A CUDA peer that this device can access directly:
  // cudaMemcpyPeerAsync (cudaMemcpy3DPeerAsync when strided), with peer access enabled once. Another
  // CUDA device: staged through this device's pinned buffers. Any other device: Unsupported (the
  // caller stages through host memory).
  Status copy_to_peer(const backend::Copy2D& copy, backend::Device& peer) override;
  Status fill_zero(void* dst, size_t bytes) override;

  int ordinal() const { return ordinal_; }
  int compute_capability_major() const { return cc_major_; }
  // The device is usable (not failed) and current on the calling thread.
  Status make_current();

 protected:
  // cudaMalloc; null when CUDA refuses (the base class reports OutOfMemory with device and bytes).
  // A sticky error on the way marks the device failed.
  void* allocate_memory(size_t bytes) override;
  void free_memory(void* memory, size_t bytes) override;

 private:
  CudaDevice(int ordinal, std::string id, uint64_t capacity_bytes);
  Status init_resources();
  Status enable_peer_access(int peer_ordinal);
  // copy.src here -> copy.dst in `peer`, which this device cannot access directly: chunks go device
  // -> this device's pinned staging (copy stream) -> peer (the peer's peer stream), the download of
  // chunk i+1 overlapping the upload of chunk i. Takes this device's staging_mutex_, then the peer's
  // peer_mutex_ (a leaf lock: nothing is taken while holding it), so two devices copying to each
  // other at once cannot deadlock.
  Status staged_copy_to_peer(const backend::Copy2D& copy, CudaDevice& peer);

  int ordinal_;
  // Fixed at open:
  std::string name_;                  // "NVIDIA H200"
  std::string compute_capability_;    // "9.0"
  int cc_major_ = 0, cc_minor_ = 0;
  int sm_count_ = 0;
  uint64_t memory_total_bytes_ = 0;   // cudaMemGetInfo total
  uint64_t capacity_bytes_ = 0;       // what the engine may allocate (see kSafetyMargin*)
  uint64_t margin_bytes_ = 0;         // kept out of the capacity (see kSafetyMargin*)
  uint64_t runtime_overhead_bytes_ = 0;  // context + streams + cuBLAS + staging, measured at open
  double bandwidth_gbps_ = 0;         // peak memory bandwidth, 1e9 bytes/s
  double tflops_ = 0;                 // dense f16 tensor-core rate with f32 accumulation, 1e12 FLOP/s
  double link_gbps_ = 0;              // host link (PCIe) bandwidth, 1e9 bytes/s
  std::vector<int> peer_ordinals_;    // devices this one can access directly (cudaDeviceCanAccessPeer)

  cublasHandle_t cublas_ = nullptr;   // keeps cuBLAS' per-context state loaded while Ops come and go

  // Blocking copies through pinned staging (copy_from_host / copy_to_host / staged peer copies):
  std::mutex staging_mutex_;
  cudaStream_t copy_stream_ = nullptr;    // non-blocking; also used (unlocked) by copy_within, fill_zero
  void* staging_[2] = {nullptr, nullptr};  // pinned (cudaHostAllocPortable), kStagingBytes each
  cudaEvent_t staging_done_[2] = {nullptr, nullptr};  // the last DMA that used staging_[i] finished

  // Uploads into this device from another device's pinned staging (its staged_copy_to_peer):
  std::mutex peer_mutex_;
  cudaStream_t peer_stream_ = nullptr;

  std::mutex peer_access_mutex_;
  std::vector<bool> peer_access_enabled_;  // [device_count], by peer ordinal
};

}  // namespace strata::backend::cuda
