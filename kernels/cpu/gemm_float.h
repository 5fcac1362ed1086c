// kernels/cpu/gemm_float.h — register-tiled products of float weights (F32, F16, BF16) with f32
// activations, for prompt shapes (internal to kernels/cpu; matmul uses it for n_tokens > 1).
// Depends on dtype.h, isa.h and thread_pool.h; no engine types.
//
// y[t][r] = sum_k W[r][k] * x[t][k], W rows and x rows both contiguous along k (matmul.h).
// A work item is a block of rows x tokens; it walks k in chunks of kc elements. Per chunk it
// packs the chunk of its weight rows (converted to f32: F16 by F16C, BF16 by a 16-bit shift) and
// of its tokens into per-thread scratch, panel by panel (a panel: rm rows or rn tokens, stored
// step by step: for each vector step of k, the rm (rn) vectors of that step one after the other),
// so the micro-kernel reads two contiguous streams and no L1 / L2 set is hit by many rows at a
// power-of-two stride. The micro-kernel keeps rm x rn vector accumulators in registers and, per
// vector step of k, loads rm + rn vectors for rm * rn FMAs (3 x 4 = 12 FMAs for 7 loads on AVX2;
// a one-token dot does one FMA per two loads). Accumulators live in scratch between chunks, so
// every output sums lane l over k = l, l + V, l + 2V, ... in order whatever the chunk, tile,
// item and thread count: the results do not depend on the thread count or on where a row or
// token falls in a tile. At the end each output is the horizontal sum of its accumulator (a
// fixed tree) plus the k % V tail in scalar order. Edge panels are padded with zero rows /
// tokens in scratch; their outputs are not written.
//
// Variants: Avx2 (256-bit, 16 ymm: 3 rows x 4 tokens, V = 8) and Avx512 (512-bit, 32 zmm:
// 3 rows x 8 tokens, V = 16); the same code (gemm_float_x86.inc) compiled for each. No scalar
// variant: matmul keeps vec_dot / VecDot4 there. For tests, the Avx512 variant also exists
// emulated with AVX2 (bit-identical outputs; never chosen by float_gemm_kernels()).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cpu/dtype.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/thread_pool.h"

namespace strata::kernels {

struct FloatGemmKernels {
  int64_t rm, rn;          // register tile: weight rows x tokens
  int64_t row_block;       // rows of a work item at most (a multiple of rm)
  int64_t token_block;     // tokens of a work item at most (a multiple of rn)
  int64_t scratch_bytes;   // per-thread scratch one block() call needs (64-byte aligned)
  // y[t * y_stride + r] = dot(W row r, x row t) for r in [0, nr), t in [0, nt): W row r at
  // w + r * w_row_bytes (cols elements of the kernel's type), x row t at x + t * cols (f32).
  // nr <= row_block, nt <= token_block; scratch: scratch_bytes, 64-byte aligned, owned by the
  // calling thread. Nothing outside those outputs is written.
  void (*block)(const uint8_t* w, int64_t w_row_bytes, int64_t nr, int64_t cols, const float* x, int64_t nt,
                float* y, int64_t y_stride, uint8_t* scratch);
};

// nullptr when wtype is not F32 / F16 / BF16 or the ISA has no variant (Scalar) or the CPU
// lacks the ISA.
const FloatGemmKernels* float_gemm_kernels(DType wtype, Isa isa);

// y = x W^T over the pool with the kernels fk (matmul.h's layout and contract): work items of
// row_block rows x up to token_block tokens handed out dynamically; scratch grows to hold one
// per-thread block scratch per thread.
void matmul_float_tiles(ThreadPool& pool, const FloatGemmKernels& fk, const void* w, int64_t w_row_bytes, int64_t rows,
                        int64_t cols, const float* x, int64_t n_tokens, float* y, std::vector<uint8_t>& scratch);

namespace detail {
const FloatGemmKernels* avx2_float_gemm(DType wtype);    // gemm_float_avx2.cpp
const FloatGemmKernels* avx512_float_gemm(DType wtype);  // gemm_float_avx512.cpp; only if Avx512 is supported
// gemm_float_wide_avx2.cpp: the Avx512 variant (16-float vectors, 3 x 8 tile, same item sizes and
// order of operations, bit-identical outputs) emulated with pairs of AVX2 vectors, for tests on
// CPUs without AVX-512; call only if Avx2 is supported.
const FloatGemmKernels* avx512_float_gemm_emulated(DType wtype);
}  // namespace detail

}  // namespace strata::kernels
