// engine/backend/sim/sim_ops.h — the op table of a simulated accelerator: the CPU ops on a
// declared timeline. Each op takes what the device's spec allows: max(bytes moved / bandwidth,
// FLOPs / rate), and latency + bytes / link speed for copies across the host boundary; ops run
// back to back on that timeline, as on a GPU's queue, and the host computing them may run a
// little ahead of it (2 ms) before it waits. Synchronize, events and the blocking to_host wait
// for the timeline. So a simulated device never finishes faster than the hardware it stands for,
// its timeline and the planner's prediction describe that hardware, and a pipeline speed-up
// measured on simulated devices measures pipelining, not a spare core. (It can finish slower,
// when the host computes an op later than the declared timeline would end it: the timeline then
// follows the host.)
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "engine/backend/cpu/cpu_ops.h"
#include "engine/backend/device.h"
#include "engine/backend/sim/sim_device.h"

namespace strata::backend {

// Declared seconds of work on a simulated device.
struct SimCost {
  double bytes = 0;  // memory traffic (weights, activations, KV)
  double flops = 0;
  double seconds(const backend::SimulatedSpec& spec) const;
  static double link_seconds(const backend::SimulatedSpec& spec, double bytes);
};

// The declared work of one attention call: K and V bytes of the positions each tile of 16 query
// tokens sees (decode: the visible context), q in and out; 4 FLOPs per visible position, query
// head and head dimension. Grows with the context: a long chat is slower on a simulated device.
SimCost attention_cost(const AttentionArgs& a);

// Sleeps until start + seconds (no-op when that has passed). Calling thread: the device's worker.
void wait_out(std::chrono::steady_clock::time_point start, double seconds);

class SimOps final : public Ops {
 public:
  // device: the simulated device these ops run on (its faults; must outlive the ops).
  SimOps(backend::SimulatedDevice& device, kernels::ThreadPool& pool, const backend::OpsWorkspace& workspace);

  Status embed(const MatrixView& table, const int32_t* tokens, int64_t n, float* out) override;
  Status rms_norm(const float* x, const float* weight, float* out, int64_t n_rows, int64_t n, float eps) override;
  Status layer_norm(const float* x, const float* weight, const float* bias, float* out, int64_t n_rows, int64_t n,
                    float eps) override;
  Status matmul(const MatrixView& w, const float* x, int64_t n_tokens, float* y) override;
  Status add(float* y, const float* x, int64_t n) override;
  Status add_rows(float* y, const float* bias, int64_t n_rows, int64_t n) override;
  Status mul(float* y, const float* x, int64_t n) override;
  Status rope(float* x, int64_t n_tokens, int64_t n_heads, int64_t head_dim, int64_t pos0,
              const RopeParams& params) override;
  Status attention(const AttentionArgs& args) override;
  Status swiglu(float* gate, const float* up, int64_t n) override;
  Status geglu(float* gate, const float* up, int64_t n) override;
  Status swiglu_oai(float* gate, const float* up, int64_t n) override;
  Status gelu(float* x, int64_t n) override;
  Status scale(float* x, float s, int64_t n) override;
  Status softcap(float* x, float cap, int64_t n) override;
  Status zero(float* x, int64_t n) override;
  Status softmax(float* x, int64_t n_rows, int64_t n) override;
  Status gather_rows(const float* src, int64_t src_rows, int64_t n, const int32_t* rows, int64_t n_rows,
                     float* dst) override;
  Status scale_add_rows(float* dst, int64_t dst_rows, int64_t n, const float* src, const int32_t* rows,
                        const float* scales, int64_t n_rows) override;
  Status to_host(const void* src, void* host_dst, size_t bytes) override;
  Status from_host(const void* host_src, void* dst, size_t bytes) override;
  Status copy(const void* src, void* dst, size_t bytes) override;
  // Wait until the device's declared timeline has caught up with everything issued.
  Status synchronize() override;
  Expected<std::unique_ptr<Event>> record_event() override;
  bool issues_ahead() const override { return true; }  // up to kMaxAhead (sim_ops.cpp) ahead of the timeline

 private:
  // Runs op, then moves the device's timeline by the declared cost (times the slow-fault factor).
  // A lost device (an armed fault that fired) runs nothing and returns a Device error.
  template <typename Op>
  Status paced(const SimCost& cost, Op&& op);
  Status paced_link(double bytes, Status s, std::chrono::steady_clock::time_point start);
  // Moves the device's timeline past an op issued at `issued` that declares `seconds`; sleeps
  // while the host is more than a little ahead of it.
  void advance(std::chrono::steady_clock::time_point issued, double seconds);
  void wait_ready() const;

  backend::SimulatedDevice& device_;
  backend::SimulatedSpec spec_;
  CpuOps cpu_;
  // When the device finishes the work issued so far, on its declared timeline (>= the host's
  // own finish of each op). Read and written on the thread using these ops (the device's worker,
  // or the stage thread while the worker is idle).
  std::chrono::steady_clock::time_point ready_;
};

}  // namespace strata::backend
