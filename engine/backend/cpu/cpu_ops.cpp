// engine/backend/cpu/cpu_ops.cpp — the CPU op table over kernels/cpu, and the CPU device's factory.
#include "engine/backend/cpu/cpu_ops.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "engine/backend/row_index.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/fp16.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/ops_f32.h"
#include "kernels/cpu/quant.h"

namespace strata::backend {

namespace {

class HostEvent final : public Event {
 public:
  HostEvent() : time_(std::chrono::steady_clock::now()) {}
  Status synchronize() override { return {}; }
  Expected<int64_t> elapsed_ns_since(const Event& earlier) override {
    const auto* e = dynamic_cast<const HostEvent*>(&earlier);
    if (!e) return Error{Code::InvalidArgument, "events from different backends"};
    return std::chrono::duration_cast<std::chrono::nanoseconds>(time_ - e->time_).count();
  }

 private:
  std::chrono::steady_clock::time_point time_;
};

// Row-wise and elementwise ops of a batch (a decode step of 8 sequences: 8 x 2816 gate values, 8
// norm rows) are split across the pool from this many elements on; one sequence's (2816) stay on
// the calling thread, where waking the pool costs about what it saves. Every element (row) is
// computed as it would be alone: the same bits either way.
constexpr int64_t kParallelElements = 8192;

// f(begin, end) over [0, n) in one contiguous range per thread (multiples of `quantum`), or all
// on the calling thread when n * unit_elements is below kParallelElements.
template <class F>
void split_across(kernels::ThreadPool& pool, int64_t n, int64_t unit_elements, int64_t quantum, const F& f) {
  const int nth = pool.n_threads();
  if (nth == 1 || n * unit_elements < kParallelElements) {
    f(int64_t{0}, n);
    return;
  }
  struct Job {
    const F* f;
    int64_t n, quantum;
  } job{&f, n, quantum};
  pool.run([j = &job](int ith, int nt) {  // one pointer: no allocation
    const int64_t per = ((j->n + nt - 1) / nt + j->quantum - 1) / j->quantum * j->quantum;
    const int64_t b = std::min(j->n, ith * per), e = std::min(j->n, b + per);
    if (b < e) (*j->f)(b, e);
  });
}

}  // namespace

Expected<std::unique_ptr<Event>> host_event() { return std::unique_ptr<Event>(std::make_unique<HostEvent>()); }

CpuOps::CpuOps(kernels::ThreadPool& pool, const backend::OpsWorkspace& workspace) : pool_(pool) {
  matmul_scratch_.reserve(workspace.matmul_bytes);
}

Status CpuOps::embed(const MatrixView& e, const int32_t* tokens, int64_t n, float* out) {
  for (int64_t t = 0; t < n; ++t) {
    if (tokens[t] < 0 || tokens[t] >= e.rows)
      return Error{Code::InvalidArgument, "token id " + std::to_string(tokens[t]) + " outside the embedding's [0, " +
                                              std::to_string(e.rows) + ")"};
  }
  const int64_t row = kernels::row_bytes(e.type, e.cols);
  const uint8_t* base = static_cast<const uint8_t*>(e.data);
  for (int64_t t = 0; t < n; ++t) kernels::dequantize_row(e.type, base + tokens[t] * row, out + t * e.cols, e.cols);
  return {};
}

Status CpuOps::rms_norm(const float* x, const float* weight, float* out, int64_t n_rows, int64_t n, float eps) {
  split_across(pool_, n_rows, n, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) kernels::rms_norm_f32(x + r * n, weight, out + r * n, n, eps);
  });
  return {};
}

Status CpuOps::layer_norm(const float* x, const float* weight, const float* bias, float* out, int64_t n_rows, int64_t n,
                          float eps) {
  split_across(pool_, n_rows, n, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) kernels::layer_norm_f32(x + r * n, weight, bias, out + r * n, n, eps);
  });
  return {};
}

Status CpuOps::matmul(const MatrixView& w, const float* x, int64_t n_tokens, float* y) {
  kernels::matmul(pool_, w.type, w.data, w.rows, w.cols, x, n_tokens, y, matmul_scratch_);
  return {};
}

Status CpuOps::matmul_many(std::span<const MatmulOut> outs, const float* x, int64_t n_tokens) {
  // Runs of consecutive outputs with the same columns (at most kMatmulManyMax) go to the kernels
  // together; the kernels split a run further where the weights' activations differ.
  kernels::MatmulJob jobs[kernels::kMatmulManyMax];
  size_t i = 0;
  while (i < outs.size()) {
    const int64_t cols = outs[i].w.cols;
    size_t n = 0;
    for (; i + n < outs.size() && n < kernels::kMatmulManyMax && outs[i + n].w.cols == cols; ++n) {
      const MatmulOut& o = outs[i + n];
      jobs[n] = kernels::MatmulJob{o.w.type, o.w.data, o.w.rows, o.y};
    }
    kernels::matmul_many(pool_, std::span<const kernels::MatmulJob>(jobs, n), cols, x, n_tokens, matmul_scratch_);
    i += n;
  }
  return {};
}

Status CpuOps::add(float* y, const float* x, int64_t n) {
  kernels::add_f32(y, x, n);
  return {};
}

Status CpuOps::add_rows(float* y, const float* bias, int64_t n_rows, int64_t n) {
  for (int64_t r = 0; r < n_rows; ++r) kernels::add_f32(y + r * n, bias, n);
  return {};
}

Status CpuOps::mul(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] *= x[i];
  return {};
}

Status CpuOps::rope(float* x, int64_t n_tokens, int64_t n_heads, int64_t head_dim, int64_t pos0, const RopeParams& p) {
  for (int64_t t = 0; t < n_tokens; ++t)
    kernels::rope_f32(x + t * n_heads * head_dim, n_heads, head_dim, p.rope_dims, pos0 + t, p.freq_base, p.freq_scale,
                      p.freq_divisors, p.interleaved, p.attn_factor, p.yarn);
  return {};
}

namespace {

// What attention() and attention_batch() refuse, with the number that is wrong.
Status check_attention(const AttentionArgs& a) {
  if (!kernels::kv_type_supported(a.kv_type, a.head_dim) || a.kv_stride % kernels::traits(a.kv_type).block_elems != 0)
    return Error{Code::Unsupported, std::string("a ") + kernels::dtype_name(a.kv_type) + " KV cache with head size " +
                                        std::to_string(a.head_dim) + " and row stride " + std::to_string(a.kv_stride) +
                                        " (the CPU backend keeps f32, f16, and q8_0 where head sizes are multiples of 32)"};
  if (a.n_kv_heads <= 0 || a.n_heads % a.n_kv_heads != 0)
    return Error{Code::InvalidArgument, "attention with " + std::to_string(a.n_heads) + " heads over " +
                                            std::to_string(a.n_kv_heads) + " KV heads"};
  if (a.pos0 < 0 || a.pos0 + a.n_tokens > a.n_ctx)
    return Error{Code::OutOfRange, "attention over positions [" + std::to_string(a.pos0) + ", " +
                                       std::to_string(a.pos0 + a.n_tokens) + ") of a " + std::to_string(a.n_ctx) +
                                       "-position cache"};
  if (a.window < 0)
    return Error{Code::InvalidArgument, "attention window " + std::to_string(a.window)};
  return check_kv_ring(a);
}

// Stores the call's new keys and values in its cache and returns its kernel job over that cache.
kernels::AttentionJob store_and_job(const AttentionArgs& a, kernels::Isa isa) {
  const int64_t hd = a.head_dim;
  const int64_t kv_dim = a.n_kv_heads * hd;
  // Byte offsets in the cache: elements are counted in blocks (Q8_0: 32 elements in 34 bytes).
  const kernels::DTypeTraits& tr = kernels::traits(a.kv_type);
  auto byte_offset = [&](int64_t elems) { return elems / tr.block_elems * static_cast<int64_t>(tr.block_bytes); };
  auto* kc = static_cast<uint8_t*>(a.k_cache);
  auto* vc = static_cast<uint8_t*>(a.v_cache);
  for (int64_t t = 0; t < a.n_tokens; ++t) {
    const int64_t row = kv_row(a, a.pos0 + t);
    kernels::store_kv_row(a.k + t * kv_dim, a.kv_type, kv_dim, isa, kc + byte_offset(row * a.kv_stride));
    kernels::store_kv_row(a.v + t * kv_dim, a.kv_type, kv_dim, isa, vc + byte_offset(row * a.kv_stride));
  }
  kernels::AttentionJob job;
  job.q = a.q;
  job.out = a.out;
  job.kv.k = kc;
  job.kv.v = vc;
  job.kv.type = a.kv_type;
  job.kv.row_stride_bytes = byte_offset(a.kv_stride);
  job.kv.head_stride_bytes = byte_offset(hd);
  job.kv.cells = a.kv_cells;
  job.shape.n_tokens = a.n_tokens;
  job.shape.pos0 = a.pos0;
  job.shape.n_heads = a.n_heads;
  job.shape.n_kv_heads = a.n_kv_heads;
  job.shape.head_dim = hd;
  job.shape.scale = a.scale;
  job.shape.causal = a.causal;
  job.shape.window = a.window;
  job.shape.softcap = a.softcap;
  job.shape.sinks = a.sinks;
  return job;
}

}  // namespace

Status CpuOps::attention(const AttentionArgs& a) {
  STRATA_RETURN_IF_ERROR(check_attention(a));
  const kernels::Isa isa = kernels::active_isa();
  const kernels::AttentionJob job = store_and_job(a, isa);
  kernels::attention(pool_, job.q, job.kv, job.shape, isa, attention_ws_, job.out);
  return {};
}

Status CpuOps::attention_batch(std::span<const AttentionArgs> batch) {
  // Every call is checked before any cache is written: an error leaves every cache as it was.
  for (const AttentionArgs& a : batch) STRATA_RETURN_IF_ERROR(check_attention(a));
  const kernels::Isa isa = kernels::active_isa();
  attention_jobs_.clear();
  for (const AttentionArgs& a : batch) attention_jobs_.push_back(store_and_job(a, isa));
  kernels::attention_many(pool_, attention_jobs_, isa, attention_ws_);
  return {};
}

Status CpuOps::swiglu(float* gate, const float* up, int64_t n) {
  split_across(pool_, n, 1, 16, [&](int64_t b, int64_t e) { kernels::swiglu_f32(gate + b, up + b, e - b); });
  return {};
}

Status CpuOps::geglu(float* gate, const float* up, int64_t n) {
  split_across(pool_, n, 1, 16, [&](int64_t b, int64_t e) { kernels::geglu_f32(gate + b, up + b, e - b); });
  return {};
}

Status CpuOps::swiglu_oai(float* gate, const float* up, int64_t n) {
  split_across(pool_, n, 1, 16, [&](int64_t b, int64_t e) { kernels::swiglu_oai_f32(gate + b, up + b, e - b); });
  return {};
}

Status CpuOps::gelu(float* x, int64_t n) {
  split_across(pool_, n, 1, 16, [&](int64_t b, int64_t e) { kernels::gelu_f32(x + b, e - b); });
  return {};
}

Status CpuOps::scale(float* x, float s, int64_t n) {
  kernels::scale_f32(x, s, n);
  return {};
}

Status CpuOps::softcap(float* x, float cap, int64_t n) {
  if (!(cap > 0.0f)) return Error{Code::InvalidArgument, "softcap " + std::to_string(cap) + " (want > 0)"};
  kernels::softcap_f32(x, cap, n);
  return {};
}

Status CpuOps::zero(float* x, int64_t n) {
  std::fill(x, x + n, 0.0f);
  return {};
}

Status CpuOps::softmax(float* x, int64_t n_rows, int64_t n) {
  for (int64_t r = 0; r < n_rows; ++r) kernels::softmax_f32(x + r * n, n);
  return {};
}

Status CpuOps::gather_rows(const float* src, int64_t src_rows, int64_t n, const int32_t* rows, int64_t n_rows,
                           float* dst) {
  STRATA_RETURN_IF_ERROR(check_row_indices("gather_rows", rows, n_rows, src_rows, false));
  for (int64_t i = 0; i < n_rows; ++i) std::memcpy(dst + i * n, src + rows[i] * n, static_cast<size_t>(n) * sizeof(float));
  return {};
}

Status CpuOps::scale_add_rows(float* dst, int64_t dst_rows, int64_t n, const float* src, const int32_t* rows,
                              const float* scales, int64_t n_rows) {
  STRATA_RETURN_IF_ERROR(check_row_indices("scale_add_rows", rows, n_rows, dst_rows, true));
  for (int64_t i = 0; i < n_rows; ++i) {
    float* y = dst + rows[i] * n;
    const float* x = src + i * n;
    const float s = scales[i];
    for (int64_t j = 0; j < n; ++j) y[j] += s * x[j];
  }
  return {};
}

Status CpuOps::to_host(const void* src, void* host_dst, size_t bytes) {
  if (bytes && src != host_dst) std::memcpy(host_dst, src, bytes);
  return {};
}

Status CpuOps::from_host(const void* host_src, void* dst, size_t bytes) {
  if (bytes && host_src != dst) std::memcpy(dst, host_src, bytes);
  return {};
}

Status CpuOps::copy(const void* src, void* dst, size_t bytes) {
  if (bytes && src != dst) std::memmove(dst, src, bytes);
  return {};
}

Expected<std::unique_ptr<Event>> CpuOps::record_event() { return host_event(); }

}  // namespace strata::backend
