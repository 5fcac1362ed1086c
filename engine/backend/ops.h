// engine/backend/ops.h — the operations a decoder block needs, as one table per device (a
// backend's "stream": work submitted through one Ops object runs in submission order on its
// device). The architecture code (engine/arch/: the block steps and one forward file per
// architecture) is written once against this table, so every architecture runs on every
// backend. Knows device pointers, shapes and types; no model types, no Qt, no CUDA headers.
//
// Pointers: every float* / void* below is a pointer into the device's own memory (a Buffer's
// data()), except where a parameter says "host". On host devices (cpu, sim) the two coincide.
// Calling thread: one thread at a time per Ops object (the device's worker). An op returns
// when its work is queued; results are visible to the host after synchronize() or to_host().
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "engine/core/status.h"
#include "kernels/common/scalar_math.h"
#include "kernels/cpu/dtype.h"

namespace strata::backend {

// A matrix in device memory: [rows][cols] elements of `type`, row-major, row r at byte
// r * kernels::row_bytes(type, cols). Vectors are rows == 1.
struct MatrixView {
  const void* data = nullptr;
  kernels::DType type = kernels::DType::F32;
  int64_t rows = 0;
  int64_t cols = 0;
};

// Rotary position embedding of the first rope_dims dimensions of every head.
// theta_i = position * freq_scale * freq_base^(-2i/rope_dims) / freq_divisors[i]; the rotation
// uses attn_factor * cos(theta) and attn_factor * sin(theta) (phi3's long-context magnitude fix).
struct RopeParams {
  int64_t rope_dims = 0;
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;
  const float* freq_divisors = nullptr;  // device memory, [rope_dims/2] floats, or null
  bool interleaved = true;               // pairs (2i, 2i+1); false: NeoX pairs (i, i + rope_dims/2)
  float attn_factor = 1.0f;
  kernels::RopeYarn yarn;  // YaRN (on): the angle of kernels::rope_theta_yarn, freq_scale then unused
};

// One attention call: writes the keys and values of n_tokens new positions [pos0, pos0+n_tokens)
// into the cache, then each new token t attends causally over cache positions [0, pos0+t], or,
// with a sliding window W > 0, over (pos0+t-W, pos0+t]. GQA: query head h reads KV head
// h / (n_heads / n_kv_heads). Cache elements: F32, F16, or Q8_0 (blocks of 32 along a position's
// row, so kv_stride and head_dim are multiples of 32), where the device's supports_kv says so.
struct AttentionArgs {
  const float* q = nullptr;  // [n_tokens][n_heads * head_dim], already roped
  const float* k = nullptr;  // [n_tokens][n_kv_heads * head_dim], already roped
  const float* v = nullptr;  // [n_tokens][n_kv_heads * head_dim]
  // Cache of one sequence: position p of KV head j starts at element row(p) * kv_stride + j * head_dim,
  // row(p) = p, or p mod kv_cells for a ring (kv_cells > 0: a sliding-window layer's cache keeps
  // its window and one batch; a multiple of 64, at least window + n_tokens - 1, so that the
  // new rows never overwrite a position the call's tokens still see).
  void* k_cache = nullptr;
  void* v_cache = nullptr;
  kernels::DType kv_type = kernels::DType::F32;
  int64_t kv_stride = 0;  // elements between consecutive rows (>= n_kv_heads * head_dim)
  int64_t n_ctx = 0;      // positions of the sequence; pos0 + n_tokens <= n_ctx
  int64_t kv_cells = 0;   // 0: one row per position (n_ctx rows); else rows of the ring
  int64_t n_tokens = 0;
  int64_t pos0 = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  float scale = 1.0f;  // usually 1/sqrt(head_dim)
  float softcap = 0.0f;  // > 0: each scaled score becomes softcap * tanh(score / softcap) before the softmax (gemma2)
  int64_t window = 0;  // 0: full causal attention; else the last `window` positions (the token's own included)
  // Attention sinks (gpt-oss): [n_heads] f32 in device memory, one logit per query head of the
  // call, that joins every row's softmax denominator with no value; null: none.
  const float* sinks = nullptr;
  // false: every token sees all positions up to pos0 + n_tokens - 1 (encoders, tests); the window
  // then counts back from there.
  bool causal = true;
  float* out = nullptr;  // [n_tokens][n_heads * head_dim]
};

// Row of position `pos` in the call's cache: pos, or pos mod kv_cells in a ring.
inline int64_t kv_row(const AttentionArgs& a, int64_t pos) { return a.kv_cells > 0 ? pos % a.kv_cells : pos; }

// What every backend refuses of a ring: a row count that is not a multiple of 64 (a key block of
// 64 positions must be consecutive rows), or one smaller than the span of positions the call's
// tokens see together (the new rows would overwrite keys that are still read).
inline Status check_kv_ring(const AttentionArgs& a) {
  if (a.kv_cells == 0) return {};
  if (a.kv_cells < 0 || a.kv_cells % 64 != 0)
    return Error{Code::InvalidArgument, "a KV ring of " + std::to_string(a.kv_cells) + " rows (need a positive multiple of 64)"};
  const int64_t end = a.pos0 + a.n_tokens;
  const int64_t first_end = a.causal ? a.pos0 + 1 : end;  // the first token's visible end
  const int64_t begin = a.window > 0 ? std::max<int64_t>(0, first_end - a.window) : 0;
  if (end - begin > a.kv_cells)
    return Error{Code::OutOfRange, "attention of " + std::to_string(a.n_tokens) + " tokens at position " +
                                       std::to_string(a.pos0) + " sees " + std::to_string(end - begin) +
                                       " positions, more than the KV ring's " + std::to_string(a.kv_cells) + " rows"};
  return {};
}

// A point in a device's queue of work: for ordering and for trace timestamps.
class Event {
 public:
  virtual ~Event() = default;
  // Blocks the calling thread until the work before the event has run.
  virtual Status synchronize() = 0;
  // Nanoseconds between `earlier` and this event, once both have completed. Both events must come
  // from the same Ops object.
  virtual Expected<int64_t> elapsed_ns_since(const Event& earlier) = 0;
  // Nanoseconds from now until the work before this event is done (0 once it is), where the
  // backend knows it without waiting: a paced simulated device's timeline. nullopt where it does
  // not (a GPU tells only elapsed times between completed events). The trace anchors a device's
  // events to the host's clock with it.
  virtual std::optional<int64_t> ns_from_now() const { return std::nullopt; }
};

class Ops {
 public:
  virtual ~Ops() = default;

  // out: [n][table.cols] f32 <- rows tokens[0..n) of table (any weight type, dequantized).
  // tokens: host memory. InvalidArgument names the first token outside [0, table.rows).
  virtual Status embed(const MatrixView& table, const int32_t* tokens, int64_t n, float* out) = 0;
  // out[r] = x[r] / sqrt(mean(x[r]^2) + eps) * weight; x, out: [n_rows][n]; weight: [n]. out may alias x.
  virtual Status rms_norm(const float* x, const float* weight, float* out, int64_t n_rows, int64_t n, float eps) = 0;
  // out[r] = (x[r] - mean(x[r])) / sqrt(var(x[r]) + eps) * weight + bias: LayerNorm (starcoder2);
  // bias ([n]) may be null. x, out: [n_rows][n]; out may alias x.
  virtual Status layer_norm(const float* x, const float* weight, const float* bias, float* out, int64_t n_rows,
                            int64_t n, float eps) = 0;
  // y[t][r] = sum_c W[r][c] * x[t][c]; x: [n_tokens][w.cols] f32, y: [n_tokens][w.rows] f32.
  // n_tokens == 1 is a matrix-vector product (decode); more is a GEMM (prompt batches).
  virtual Status matmul(const MatrixView& w, const float* x, int64_t n_tokens, float* y) = 0;
  // Several products of the same x ([n_tokens][cols], every w of those cols): y of each as
  // matmul(w, x, n_tokens, y) gives it. Backends may run them together (the CPU quantizes x once
  // for weights whose types share the activations' layout and hands all their rows out in one
  // parallel region: a layer's q, k, v, or gate and up); this default calls matmul() for each in
  // order and stops at the first error.
  struct MatmulOut {
    MatrixView w;
    float* y = nullptr;  // [n_tokens][w.rows]
  };
  virtual Status matmul_many(std::span<const MatmulOut> outs, const float* x, int64_t n_tokens) {
    for (const MatmulOut& o : outs) STRATA_RETURN_IF_ERROR(matmul(o.w, x, n_tokens, o.y));
    return {};
  }
  // y[i] += x[i]; [n].
  virtual Status add(float* y, const float* x, int64_t n) = 0;
  // y[r][i] += bias[i]; y: [n_rows][n], bias: [n].
  virtual Status add_rows(float* y, const float* bias, int64_t n_rows, int64_t n) = 0;
  // y[i] *= x[i]; [n].
  virtual Status mul(float* y, const float* x, int64_t n) = 0;
  // x: [n_tokens][n_heads * head_dim], token t at position pos0 + t; rotated in place.
  virtual Status rope(float* x, int64_t n_tokens, int64_t n_heads, int64_t head_dim, int64_t pos0,
                      const RopeParams& params) = 0;
  virtual Status attention(const AttentionArgs& args) = 0;
  // Several sequences' attention (a batched decode step: one call per layer for every sequence
  // in the batch), each exactly as attention(args[i]) would do it; the sequences' caches are
  // distinct. Backends may run them together (the CPU shares their key blocks out over its
  // threads at once); this default calls attention() for each in order and stops at the first
  // error.
  virtual Status attention_batch(std::span<const AttentionArgs> batch) {
    for (const AttentionArgs& a : batch) STRATA_RETURN_IF_ERROR(attention(a));
    return {};
  }
  // gate[i] = silu(gate[i]) * up[i]; [n].
  virtual Status swiglu(float* gate, const float* up, int64_t n) = 0;
  // gate[i] = gelu_tanh(gate[i]) * up[i]; gelu_tanh(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); [n].
  virtual Status geglu(float* gate, const float* up, int64_t n) = 0;
  // x[i] = gelu_tanh(x[i]) (the geglu's GELU, alone: a non-gated FFN's activation); [n].
  virtual Status gelu(float* x, int64_t n) = 0;
  // gate[i] = swiglu_oai(gate[i], up[i]): gpt-oss's clamped SwiGLU, x = min(gate, 7),
  // y = clamp(up, -7, 7), x sigmoid(1.702 x) (y + 1) (kernels/common/scalar_math.h); [n].
  virtual Status swiglu_oai(float* gate, const float* up, int64_t n) = 0;
  // x[i] *= s; [n].
  virtual Status scale(float* x, float s, int64_t n) = 0;
  // x[i] = cap * tanh(x[i] / cap) (kernels::softcap; gemma2's final logits); [n], cap > 0.
  virtual Status softcap(float* x, float cap, int64_t n) = 0;
  // x[i] = 0; [n].
  virtual Status zero(float* x, int64_t n) = 0;
  // Softmax of each row in place; x: [n_rows][n].
  virtual Status softmax(float* x, int64_t n_rows, int64_t n) = 0;

  // Rows by index, for mixture-of-experts layers (the tokens routed to one expert are gathered,
  // run through that expert's matrices as one batch, and added back weighted).
  // dst[i] = src[rows[i]] for i < n_rows; src: [src_rows][n], dst: [n_rows][n] f32. rows: host
  // memory (the host picks the experts). InvalidArgument names the first row outside [0, src_rows).
  virtual Status gather_rows(const float* src, int64_t src_rows, int64_t n, const int32_t* rows, int64_t n_rows,
                             float* dst) = 0;
  // dst[rows[i]] += scales[i] * src[i] for i < n_rows; src: [n_rows][n], dst: [dst_rows][n] f32.
  // rows, scales: host memory. The rows must be distinct (backends update them in parallel):
  // InvalidArgument names a row outside [0, dst_rows) or one given twice.
  virtual Status scale_add_rows(float* dst, int64_t dst_rows, int64_t n, const float* src, const int32_t* rows,
                                const float* scales, int64_t n_rows) = 0;

  // Copies within and across the host boundary. to_host blocks until the bytes are in host
  // memory (it is how logits come back); from_host may return before the copy ran only where the
  // backend keeps its own copy of the source (pinned staging).
  virtual Status to_host(const void* src, void* host_dst, size_t bytes) = 0;
  virtual Status from_host(const void* host_src, void* dst, size_t bytes) = 0;
  virtual Status copy(const void* src, void* dst, size_t bytes) = 0;  // both in this device's memory

  // Blocks until every op submitted so far has run. A device error surfaces here (or from the
  // call that met it) as Code::Device; a sticky one also marks the device failed.
  virtual Status synchronize() = 0;
  // An event after the work submitted so far.
  virtual Expected<std::unique_ptr<Event>> record_event() = 0;
  // Whether an op may return before the device has run it: the host issues ahead of the device's
  // queue (a paced simulated device's timeline; a GPU stream, whose device memory the host does not
  // see anyway). The trace then times a device's work by its events, not by the host's clock around
  // the calls, which would end each span when its last op was issued.
  virtual bool issues_ahead() const { return false; }
};

}  // namespace strata::backend
