// kernels/cpu/gemm_float.h — register-tiled products of float weights (F32, F16, BF16) with f32
// activations, for prompt shapes (internal to kernels/cpu; matmul uses it for n_tokens > 1).
// Depends on dtype.h, isa.h and thread_pool.h; no engine types.
//
// y[t][r] = sum_k W[r][k] * x[t][k], W rows and x rows both contiguous along k (matmul.h).
// Activations are first packed by groups of kLanes tokens (8 on AVX2, 16 on AVX-512), k-major
// (for each k, the group's kLanes values in one vector): an 8x8 transpose of x, once per call,
// shared by the threads. A work item is a block of weight rows x token groups; it walks k in
// chunks of 256, converting the chunk of its weight rows to f32 in per-thread scratch (F16 by
// F16C, BF16 by a 16-bit shift; F32 copied, which also puts the rows at a stride that is not a
// multiple of 4 KiB). The micro-kernel is an outer product: per k it loads one vector of each
// of its token groups and broadcasts one weight of each of its rows, for rows x groups FMAs
// (AVX2: 6 rows x 2 groups = 12 ymm accumulators, 8 loads per 12 FMAs; a one-token dot does two
// loads per FMA). Every output is one lane of one accumulator: a single chain of FMAs over k in
// order, carried across chunks in scratch. So the result of every output is that of a scalar
// loop `s = fma(w[k], x[k], s)` for k = 0, 1, ...: the same bits on every ISA variant, at every
// thread count, wherever the row and token fall in a tile; and k needs no multiple of anything.
// Rows past the block's last tile are zeros in scratch, tokens past the last group zeros in the
// packed activations; their outputs are not written.
//
// Variants: Avx2 (256-bit, 16 ymm: 6 rows x 2 groups of 8 tokens, or 12 rows x 1 group where
// one group is left) and Avx512 (512-bit, 32 zmm: 12 rows x 2 groups of 16 tokens, or 24 x 1);
// the same code (gemm_float_x86.inc) compiled for each. No scalar variant: matmul keeps vec_dot /
// VecDot4 there. For tests, the Avx512 variant also exists emulated with AVX2 (16-float vectors
// as two ymm halves: the same bits; never chosen by float_gemm_kernels()).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cpu/dtype.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/thread_pool.h"

namespace strata::kernels {

// FloatGemmKernels::block's hand-over of the next rows' first weight chunk: none (else the
// weight buffer, 0 or 1, that holds it).
inline constexpr int kNoChunkReady = -1;

struct FloatGemmKernels {
  int64_t lanes;          // tokens per packed activation group
  int64_t rm, rn;         // register tile: weight rows x tokens (rn = groups x lanes)
  int64_t row_block;      // rows of a work item at most
  int64_t token_block;    // tokens of a work item at most (a multiple of lanes)
  int64_t scratch_bytes;  // per-thread scratch one block() call needs (64-byte aligned)
  // Packs tokens [group * lanes, group * lanes + lanes) of x ([n_tokens][cols] f32) into dst
  // (cols * lanes floats, 64-byte aligned): element k of token group * lanes + l at
  // dst[k * lanes + l]; zeros for tokens at or past n_tokens.
  void (*pack_group)(const float* x, int64_t cols, int64_t n_tokens, int64_t group, float* dst);
  // y[t * y_stride + r] = dot(W row r, token t) for r in [0, nr), t in [0, nt): W row r at
  // w + r * w_row_bytes (cols elements of the kernel's type); xp: the packed groups of those
  // tokens, one after the other (cols * lanes floats each). nr <= row_block, nt <= token_block;
  // scratch: scratch_bytes, 64-byte aligned, owned by the calling thread. Nothing outside those
  // outputs is written. next_w / next_nr: the weight rows (same row bytes and cols) the caller
  // passes to its next call with this scratch (nullptr / 0: none, or not known). Their first
  // chunk is prefetched while the chunk before the last computes and converted into scratch
  // while the last one does (its tiles leave the load and store ports idle; converting it at the
  // start of the next call waited on those loads: 5% of an F16 x 64-token block's samples on
  // Zen 3, taken with the other core busy; 2-5% faster at 2 threads, level at 1).
  // Returns which of scratch's two weight buffers (0 or 1) holds it when it did, else
  // kNoChunkReady. first_ready: what the previous call with this scratch returned, where that
  // call's next_w / next_nr were exactly this call's w / nr (else kNoChunkReady); the call then
  // starts from that converted chunk instead of converting it.
  int (*block)(const uint8_t* w, int64_t w_row_bytes, int64_t nr, int64_t cols, const float* xp, int64_t nt,
               float* y, int64_t y_stride, uint8_t* scratch, const uint8_t* next_w, int64_t next_nr, int first_ready);
  // For a few tokens (matmul: batches of 2-15): the same y from x unpacked ([nt][cols]) as dot
  // products, each weight row streamed whole (too few tokens to pay for converting weights into
  // scratch); 256-bit in every variant, no scratch. Each output one 8-lane FMA chain over the whole
  // 8s of k in order, its horizontal sum, then the k % 8 tail in order: for F32 the one-token dot's
  // order, so each token gets bit for bit what it gets alone (kF32Dot4MinTokens in matmul.cpp). Up
  // to stream_max_tokens tokens: 3-4 rows x all the tokens over the whole k in one pass (at most
  // 24 accumulators), each row read once, in order; more: 3 rows x 4 tokens at a
  // time over k segments (12 accumulators: one weight vector feeds 4 FMAs, one token vector 3).
  // Both give every output the same bits.
  void (*small)(const uint8_t* w, int64_t w_row_bytes, int64_t nr, int64_t cols, const float* x, int64_t nt,
                float* y, int64_t y_stride);
  // small's last token count that streams whole rows (matmul_path names the kernel by it): 4 where
  // the variant has 16 vector registers (AVX2), 8 with AVX-512's 32.
  int64_t stream_max_tokens;
};

// nullptr when wtype is not F32 / F16 / BF16 or the ISA has no variant (Scalar) or the CPU
// lacks the ISA.
const FloatGemmKernels* float_gemm_kernels(DType wtype, Isa isa);

// Bytes matmul_float_tiles grows scratch to for n_tokens tokens of cols columns with n_threads
// threads (the packed activations, rounded up to 64 bytes, one block scratch per thread, and 64
// bytes to align the start).
int64_t float_tiles_scratch_bytes(const FloatGemmKernels& fk, int64_t cols, int64_t n_tokens, int n_threads);

// y = x W^T over the pool with the kernels fk (matmul.h's layout and contract): work items of
// row_block rows x up to token_block tokens handed out dynamically; scratch grows to hold the
// packed activations and one block scratch per thread.
void matmul_float_tiles(ThreadPool& pool, const FloatGemmKernels& fk, const void* w, int64_t w_row_bytes, int64_t rows,
                        int64_t cols, const float* x, int64_t n_tokens, float* y, std::vector<uint8_t>& scratch);

// y = x W^T with fk.small over the pool: row chunks handed out dynamically, every token in each.
void matmul_float_small(ThreadPool& pool, const FloatGemmKernels& fk, const void* w, int64_t w_row_bytes, int64_t rows,
                        int64_t cols, const float* x, int64_t n_tokens, float* y);

namespace detail {
const FloatGemmKernels* avx2_float_gemm(DType wtype);    // gemm_float_avx2.cpp
const FloatGemmKernels* avx512_float_gemm(DType wtype);  // gemm_float_avx512.cpp; only if Avx512 is supported
// gemm_float_wide_avx2.cpp: the Avx512 variant (16-token groups, 12 x 2 and 24 x 1 tiles, the
// same item sizes; bit-identical outputs) emulated with pairs of AVX2 vectors, for tests on CPUs
// without AVX-512; call only if Avx2 is supported.
const FloatGemmKernels* avx512_float_gemm_emulated(DType wtype);
}  // namespace detail

}  // namespace strata::kernels
