// kernels/cuda/cuda_kernels.h — host entry points of the CUDA kernels (one op per .cu file in this
// folder). Knows device pointers, shapes and types; no engine types. Every entry enqueues on
// `stream` and returns the launch status (cudaGetLastError after the launch); the engine glue
// (engine/backend/cuda/) turns a non-success into a Status. Only the engine glue and the kernels
// include this header.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "kernels/common/scalar_math.h"

#include "kernels/cpu/dtype.h"

namespace strata::kernels::cuda {

// A matrix in device memory: [rows][cols] of `type`, row-major (row r at r * row_bytes(type, cols)).
struct MatView {
  const void* data = nullptr;
  DType type = DType::F32;
  int64_t rows = 0;
  int64_t cols = 0;
};

// --- matrix products -------------------------------------------------------------------------
// Whether mmv (and dequantize_f16) handle this weight type: F32, F16, BF16, Q4_0, Q4_1, Q5_0,
// Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K.
bool supports_weight_type(DType type);
// Tokens that share one read of a weight tile in mmv (its largest token class).
constexpr int64_t kMmvTokenGroup = 8;
// y[t][r] = sum_c W[r][c] * x[t][c] for t < n_tokens (any count): decode and prompts.
// x: [n_tokens][w.cols] f32, y: [n_tokens][w.rows] f32. w.cols is a multiple of the block size.
// Batch-invariant: each output has the bits it has at n_tokens = 1, whatever n_tokens, the token's
// place and x's alignment (one summation order per row length and type, mmv_kernel.cuh).
cudaError_t mmv(const MatView& w, const float* x, int64_t n_tokens, float* y, cudaStream_t stream);
// out: [w.rows][w.cols] f16 (stored as uint16_t bits) <- W dequantized.
cudaError_t dequantize_f16(const MatView& w, void* out_f16, cudaStream_t stream);
// out: [n] f16 bits <- x [n] f32 (round to nearest even).
cudaError_t convert_f32_to_f16(const float* x, void* out_f16, int64_t n, cudaStream_t stream);
// The fast prompt mode: out [n_rows][n] f16 bits <- x [n_rows][n] f32 * 2^k_r (round to nearest even),
// where k_r = 0 unless row r's largest |value| is past f16's range (65504), then the power of two
// that brings it into [2^14, 2^15): values above 65504 do not become inf. factor: device
// [n_rows] f32 <- 2^-k_r, for scale_rows on the product.
cudaError_t convert_rows_f32_to_f16(const float* x, void* out_f16, float* factor, int64_t n_rows, int64_t n,
                                    cudaStream_t stream);
// y[r][i] *= factor[r] for r < n_rows, i < n (y: [n_rows][n] f32, factor: device [n_rows]).
cudaError_t scale_rows(float* y, const float* factor, int64_t n_rows, int64_t n, cudaStream_t stream);
// The fast prompt mode (not batch-invariant) on tensor cores: y[t][r] = sum_c W16[r][c] * X16[t][c], f32 sums.
// w_f16: [rows][cols], x_f16: [n_tokens][cols], y: [n_tokens][rows] f32. `handle` is bound to
// `stream` by the caller. Returns the cuBLAS status.
cublasStatus_t gemm_f16(cublasHandle_t handle, const void* w_f16, const void* x_f16, float* y, int64_t rows,
                        int64_t cols, int64_t n_tokens);

// --- element-wise and normalisation ------------------------------------------------------------
// out[r] = x[r] / sqrt(mean(x[r]^2) + eps) * weight; [n_rows][n]; out may alias x.
cudaError_t rms_norm(const float* x, const float* weight, float* out, int64_t n_rows, int64_t n, float eps,
                     cudaStream_t stream);
// out[r] = (x[r] - mean) / sqrt(var + eps) * weight + bias (bias may be null); out may alias x.
cudaError_t layer_norm(const float* x, const float* weight, const float* bias, float* out, int64_t n_rows, int64_t n,
                       float eps, cudaStream_t stream);
cudaError_t add(float* y, const float* x, int64_t n, cudaStream_t stream);                 // y += x
cudaError_t add_rows(float* y, const float* bias, int64_t n_rows, int64_t n, cudaStream_t stream);  // y[r] += bias
cudaError_t mul(float* y, const float* x, int64_t n, cudaStream_t stream);                 // y *= x
cudaError_t swiglu(float* gate, const float* up, int64_t n, cudaStream_t stream);          // gate = silu(gate)*up
cudaError_t geglu(float* gate, const float* up, int64_t n, cudaStream_t stream);           // gate = gelu_tanh(gate)*up
cudaError_t swiglu_oai(float* gate, const float* up, int64_t n, cudaStream_t stream);      // gate = swiglu_oai(gate, up)
cudaError_t gelu(float* x, int64_t n, cudaStream_t stream);                                 // x = gelu_tanh(x)
cudaError_t scale(float* x, float s, int64_t n, cudaStream_t stream);                      // x *= s
cudaError_t softcap(float* x, float cap, int64_t n, cudaStream_t stream);                  // x = softcap(x, cap)
cudaError_t softmax_rows(float* x, int64_t n_rows, int64_t n, cudaStream_t stream);        // in place per row
// Mixture-of-experts rows (rows.cu). rows, scales: device memory, already checked on the host
// (indices in range; for scale_add_rows, distinct). src / dst rows are n floats long.
// dst[i] = src[rows[i]], i < n_rows.
cudaError_t gather_rows(const float* src, int64_t n, const int32_t* rows, int64_t n_rows, float* dst,
                        cudaStream_t stream);
// dst[rows[i]] += scales[i] * src[i], i < n_rows.
cudaError_t scale_add_rows(float* dst, int64_t n, const float* src, const int32_t* rows, const float* scales,
                           int64_t n_rows, cudaStream_t stream);

// Rotates the first rope_dims dims of each head of x: [n_tokens][n_heads][head_dim], token t at
// position pos0 + t. theta_i = pos * freq_scale * freq_base^(-2i/rope_dims) / divisors[i]
// (divisors: device [rope_dims/2] or null). interleaved: pairs (2i, 2i+1); else (i, i + rope_dims/2).
struct RopeArgs {
  int64_t n_tokens = 0, n_heads = 0, head_dim = 0, pos0 = 0, rope_dims = 0;
  float freq_base = 10000.0f, freq_scale = 1.0f;
  const float* divisors = nullptr;
  bool interleaved = true;
  float attn_factor = 1.0f;  // multiplies cos and sin
  RopeYarn yarn;             // on: freq_scale ignored, rope_theta_yarn's angle
};
cudaError_t rope(float* x, const RopeArgs& args, cudaStream_t stream);

// out: [n][table.cols] f32 <- rows tokens[0..n) of table, dequantized. tokens: device memory,
// already checked to lie in [0, table.rows).
cudaError_t embed_rows(const MatView& table, const int32_t* tokens, int64_t n, float* out, cudaStream_t stream);

// --- attention ---------------------------------------------------------------------------------
// Writes n_tokens new keys and values into the cache at positions [pos0, pos0 + n_tokens), then
// each new token t attends causally over [0, pos0 + t]. GQA: query head h reads KV head
// h / (n_heads / n_kv_heads). Cache: position p of KV head j at element row(p) * kv_stride + j * head_dim,
// row(p) = p, or p mod kv_cells in a ring (kv_cells > 0: a sliding-window layer's cache; at least
// the positions the call's tokens see together, which the caller checks), F32 or F16 (kv_f16).
// head_dim <= kMaxAttentionHeadDim (above 256: attention_wide.cu's kernel).
constexpr int64_t kMaxAttentionHeadDim = 1024;
struct AttentionArgs {
  const float* q = nullptr;   // [n_tokens][n_heads * head_dim]
  const float* k = nullptr;   // [n_tokens][n_kv_heads * head_dim]
  const float* v = nullptr;
  void* k_cache = nullptr;
  void* v_cache = nullptr;
  bool kv_f16 = false;
  int64_t kv_stride = 0, n_tokens = 0, pos0 = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0;
  int64_t kv_cells = 0;  // 0: row p holds position p; else a ring of kv_cells rows
  int64_t window = 0;  // 0: causal; else each token sees its last `window` positions
  bool causal = true;  // false: every token sees every position up to pos0 + n_tokens - 1 (window from there)
  float scale = 1.0f;
  float softcap = 0.0f;  // > 0: scores become softcap * tanh(score / softcap) before the softmax
  const float* sinks = nullptr;  // [n_heads] per-head logits joining each row's denominator (gpt-oss); null: none
  float* out = nullptr;       // [n_tokens][n_heads * head_dim]
};
// Device workspace (bytes) for the split schedule of decode-sized calls (up to 8 of max_tokens
// tokens at up to max_ctx positions): one partial result per 256-key chunk.
size_t attention_workspace_bytes(int64_t max_tokens, int64_t max_ctx, int64_t n_heads, int64_t head_dim);
// Batch-invariant: a row's output has the same bits however many tokens share the call, how the
// prompt was chunked and whether the workspace allowed the split schedule (attention.cu). Decode
// (n_tokens <= 8) splits the context into 256-key chunks processed by separate blocks and folds
// them in order; prompt batches fold the same chunks inside each block. workspace: null, or
// attention_workspace_bytes(...) bytes of device memory (less: the in-block schedule, slower).
cudaError_t attention(const AttentionArgs& args, void* workspace, size_t workspace_bytes, cudaStream_t stream);

}  // namespace strata::kernels::cuda
