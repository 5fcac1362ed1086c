// engine/backend/cpu/cpu_ops.h — the Ops table on this machine's cores: today's CPU kernels
// (kernels/cpu: SIMD matmul, norms, rope, attention) behind the seam, with no copies added. Used
// by the CPU device and, wrapped in pacing, by simulated devices. Every call runs to completion
// before it returns (the host "stream" is the calling thread), fanning out to the device's pool.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/backend/ops.h"
#include "engine/backend/device.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/thread_pool.h"

namespace strata::backend {

class CpuOps final : public Ops {
 public:
  // pool: the device's threads (outlives this). Attention keeps its own scratch (attention_ws_),
  // sized by the first calls; workspace.scores is not used.
  CpuOps(kernels::ThreadPool& pool, const backend::OpsWorkspace& workspace);

  Status embed(const MatrixView& table, const int32_t* tokens, int64_t n, float* out) override;
  Status rms_norm(const float* x, const float* weight, float* out, int64_t n_rows, int64_t n, float eps) override;
  Status layer_norm(const float* x, const float* weight, const float* bias, float* out, int64_t n_rows, int64_t n,
                    float eps) override;
  Status matmul(const MatrixView& w, const float* x, int64_t n_tokens, float* y) override;
  Status matmul_many(std::span<const MatmulOut> outs, const float* x, int64_t n_tokens) override;
  Status add(float* y, const float* x, int64_t n) override;
  Status add_rows(float* y, const float* bias, int64_t n_rows, int64_t n) override;
  Status mul(float* y, const float* x, int64_t n) override;
  Status rope(float* x, int64_t n_tokens, int64_t n_heads, int64_t head_dim, int64_t pos0,
              const RopeParams& params) override;
  Status attention(const AttentionArgs& args) override;
  Status attention_batch(std::span<const AttentionArgs> batch) override;
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
  Status synchronize() override { return {}; }
  Expected<std::unique_ptr<Event>> record_event() override;

 private:
  kernels::ThreadPool& pool_;
  std::vector<uint8_t> matmul_scratch_;  // quantized activations (kernels::matmul grows it)
  kernels::AttentionWorkspace attention_ws_;  // per-thread key blocks and decode partials
  std::vector<kernels::AttentionJob> attention_jobs_;  // attention_batch's, reused (no allocation per call)
};

// Host events: a steady-clock timestamp taken when recorded (host work is synchronous).
Expected<std::unique_ptr<Event>> host_event();

}  // namespace strata::backend
