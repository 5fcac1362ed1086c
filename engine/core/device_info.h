// engine/core/device_info.h — what the planner, the executor and the UI know about a device:
// identity, memory, capabilities and the declared or measured speeds the cost model uses. Plain
// data; no behaviour. It lives in core/ so that plan/ (which reads it) and backend/ (which fills it)
// both stand on it without plan/ including backend/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cpu/dtype.h"

namespace strata {

// What a device can do, as data. Every backend states its own (engine/backend/<name>/); the
// planner, comm/, serve/, the CLI and the UI read these and never ask which backend a device
// belongs to, so a new backend is its folder and a registration line, not edits across the engine.
struct DeviceCaps {
  // The host may read and write the device's buffers directly (cpu, sim). Otherwise buffers are
  // device memory, reached through the device's copy calls (cuda).
  bool host_memory = true;
  // The machine's CPU itself: the planner's fallback, placed last; it runs the engine, so it
  // cannot be given up as lost.
  bool host_cpu = false;
  // Reads weights where they lie in the mapped model file instead of a copy in its own memory.
  bool reads_weights_in_place = false;
  // KV cache element types this device keeps (kernels/cpu/attention.h: f32, f16, q8_0 on host devices).
  std::vector<kernels::DType> kv_types;
  // Weight types its matrix products take; empty: every type the engine reads.
  std::vector<kernels::DType> weight_types;
  // Copies straight to other devices of its backend (peer access; DeviceInfo::peers lists which).
  bool peer_access = false;
  // An all-reduce the backend runs between its own devices ("nccl"), or "" (the host reduces).
  std::string collective;
  // The longest KV row of one head its attention kernel takes (cuda: 256), 0: any. DeepSeek's
  // latent rows (576) are longer than CUDA's: the planner keeps such attention on the CPU.
  int64_t max_head_dim = 0;

  bool runs_attention(int64_t head_dim) const { return max_head_dim == 0 || head_dim <= max_head_dim; }

  bool keeps_kv(kernels::DType t) const;
  bool takes_weights(kernels::DType t) const;
};

// The measured rate of one-token matrix products (decode) of one weight type on a device, in GB/s
// of weight bytes: below the memory's read bandwidth where dequantizing and the dot products, not
// the memory, are the limit (the CPU's kernels; kernels/cpu/matmul_probe.h). A matrix of R rows and
// B bytes takes R * row_ns + B / gbps: each row has a fixed cost, which short rows feel.
struct MatvecRate {
  kernels::DType type = kernels::DType::F32;
  double gbps = 0;
  double row_ns = 0;  // fixed nanoseconds per weight row (0: none measured)
};

// What the CPU was measured to do (engine/backend/cpu/cpu_speed.h), handed to the "cpu" backend
// when it opens the device. A bare bandwidth converts (tests, callers that measure only that).
struct CpuSpeed {
  CpuSpeed(double read_gbps = 0) : bandwidth_gbps(read_gbps) {}  // NOLINT: implicit on purpose
  double bandwidth_gbps = 0;              // streaming read, GB/s; 0: the cost model's default
  double tflops = 0;                      // prompt-shaped products, 1e12 FLOP/s; 0: a rough guess by threads
  std::vector<MatvecRate> matvec_gbps;    // one-token products per weight type
  double matvec_call_us = 0;              // fixed time of one product call (the threads' hand-out and join)
};

struct DeviceInfo {
  std::string id;            // unique, as used in placements: "cpu", "gpu0", "cuda0"
  std::string backend;       // the backend that opened it, as in --devices: "cpu", "sim", "cuda"
  std::string name;          // human: "sim-gpu0 24 GiB (simulated)", "NVIDIA H200"
  bool simulated = false;
  DeviceCaps caps;
  uint64_t bytes_total = 0;  // capacity the engine may use
  uint64_t bytes_free = 0;   // at the time of the query
  double bandwidth_gbps = 0; // memory read bandwidth, GB/s (1e9 bytes)
  double tflops = 0;         // dense compute rate for matrix products, 1e12 FLOP/s
  // Measured one-token product rates per weight type (the CPU); a type not listed reads weights at
  // bandwidth_gbps. The cost model's decode time of a weight is bytes / min(bandwidth, this rate).
  std::vector<MatvecRate> matvec_gbps;
  // Measured fixed time of one matrix-product call on the device (the CPU: handing the rows to its
  // threads and joining them), microseconds; the cost model adds it per matrix in decode. 0: none.
  double matvec_call_us = 0;
  double link_gbps = 0;      // host link bandwidth (to other devices), GB/s
  double link_latency_us = 0;// per-transfer latency, microseconds
  uint64_t runtime_overhead_bytes = 0;  // reserved by the runtime itself (context, workspaces)
  int threads = 1;           // host threads doing this device's work (CPU, simulated)
  // Real GPUs only (empty elsewhere):
  std::string compute_capability;     // "9.0"
  int ordinal = -1;                   // the device's number in its backend (CUDA ordinal)
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
