// engine/core/device_info.h — what the planner, the executor and the UI know about a device:
// identity, memory, and the declared or measured speeds the cost model uses. Plain data; no
// behaviour. It lives in core/ so that plan/ (which reads it) and exec/ (which fills it) both stand
// on it without plan/ including exec/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata {

enum class DeviceKind { Cpu, Simulated, Cuda };
const char* device_kind_name(DeviceKind kind);  // "cpu", "sim", "cuda"

struct DeviceInfo {
  std::string id;            // unique, as used in placements: "cpu", "gpu0", "cuda0"
  DeviceKind kind = DeviceKind::Cpu;
  std::string name;          // human: "sim-gpu0 24 GiB (simulated)", "NVIDIA H200"
  bool simulated = false;
  uint64_t bytes_total = 0;  // capacity the engine may use
  uint64_t bytes_free = 0;   // at the time of the query
  double bandwidth_gbps = 0; // memory read bandwidth, GB/s (1e9 bytes)
  double tflops = 0;         // dense compute rate for matrix products, 1e12 FLOP/s
  double link_gbps = 0;      // host link bandwidth (to other devices), GB/s
  double link_latency_us = 0;// per-transfer latency, microseconds
  uint64_t runtime_overhead_bytes = 0;  // reserved by the runtime itself (context, workspaces)
  int threads = 1;           // host threads doing this device's work (CPU, simulated)
  // Real GPUs only (empty elsewhere):
  std::string compute_capability;     // "9.0"
  int ordinal = -1;                   // CUDA device ordinal
  std::vector<std::string> peers;     // ids of devices this one reads and writes directly (peer access)
  bool failed = false;                // met a sticky error; see Device::failure()
  std::string failure;
  // Several processes (mpirun): the rank owning the device and its host name. One process: rank 0,
  // host empty. A device of another rank has link_gbps / link_latency_us of the measured inter-rank
  // link when that is slower than its own.
  int rank = 0;
  std::string host;
};

}  // namespace strata
