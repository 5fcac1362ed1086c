// kernels/cpu/matmul.h — y = x W^T for one weight matrix of any type on the CPU thread pool.
// Depends on dtype.h and thread_pool.h; no engine types.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kernels/cpu/dtype.h"
#include "kernels/cpu/thread_pool.h"

namespace strata::kernels {

// y[t][r] = sum_c W[r][c] * x[t][c].
//   W: [rows][cols] of type wtype, row-major, row r at byte r * row_bytes(wtype, cols);
//   x: [n_tokens][cols] f32;  y: [n_tokens][rows] f32 (overwritten).
// cols must be a multiple of wtype's block size (the caller validates). scratch grows as needed
// and holds x quantized to vec_dot_type(wtype). Uses every thread of the pool and the ISA of
// active_isa(). n_tokens == 1 (decode) splits rows across threads; n_tokens > 1 works in tiles
// of a few weight rows x many tokens so each weight row is reused while in cache (quantized
// weights with AVX2 / AVX-512 VNNI: the packed tiles of gemm.h in the layout the batch fills, scratch then
// also holds the packed activations and each thread's unpacked weight rows; float weights on
// AVX2 / AVX-512: gemm_float.h's `small` dots). Batch invariance (issue 45): y[t] is bit for bit
// what matmul gives token t alone, whatever n_tokens, t's place and the thread count, on every
// ISA for the quantized types (kernels/cpu/dot_order.h) and on AVX2 / AVX-512 for the float ones.
void matmul(ThreadPool& pool, DType wtype, const void* w, int64_t rows, int64_t cols,
            const float* x, int64_t n_tokens, float* y, std::vector<uint8_t>& scratch);

// One product of matmul_many: y = x W^T for W [rows][cols] of wtype (row-major, as matmul's),
// y: [n_tokens][rows] f32 (overwritten).
struct MatmulJob {
  DType wtype;
  const void* w;
  int64_t rows;
  float* y;
};
// Jobs that matmul_many runs in one parallel region at most (a longer run of sharing jobs is cut
// into runs of this many): the q / k / v or gate / up projections of a layer.
inline constexpr size_t kMatmulManyMax = 8;

// Every job's product with the same x ([n_tokens][cols] f32), each y exactly as matmul() gives it
// (the same kernels on the same bytes: the same bits). Consecutive jobs whose activations are the
// same bytes (packed products in the same layout, e.g. Q4_K and Q6_K at 8 tokens; one-token dots
// of the same dot type, e.g. Q4_K and Q6_K at one token) share one quantization of x and one
// parallel region, their work items handed out from one counter: a layer's q, k and v (or gate
// and up) then pay one pack and one wait for the slowest thread instead of three (two). Other
// jobs go through matmul() one by one. scratch as matmul's, within matmul_scratch_bound.
void matmul_many(ThreadPool& pool, std::span<const MatmulJob> jobs, int64_t cols, const float* x, int64_t n_tokens,
                 std::vector<uint8_t>& scratch);

// The most bytes matmul() (and matmul_many) grows scratch to for n_tokens tokens of `cols` columns with a pool of
// n_threads threads, over every weight type whose blocks divide cols and every path the active
// ISA takes: what a device reserves up front (plan/scratch_layout.h) so that its scratch never
// grows while it runs and the memory estimate holds.
int64_t matmul_scratch_bound(int64_t cols, int64_t n_tokens, int n_threads);

// Which kernel matmul takes for weights of wtype with n_tokens tokens at the active ISA, e.g.
// "avx2 vec_dot" (one token), "avx2 4-token vec_dot" (prompt rows, VecDot4), "avx512-vnni packed
// tiles" / "avx512-vnni in-place tiles" (gemm.h), "avx2 float tiles 6x16", "avx2 float stream
// dot" / "avx2 float 3x4 dot", "avx2 f32 stream exact dot" / "avx2 f32 3x4 exact dot"
// (gemm_float.h), "scalar vec_dot": so a benchmark figure says which code it measured.
std::string matmul_path(DType wtype, int64_t n_tokens);

}  // namespace strata::kernels
