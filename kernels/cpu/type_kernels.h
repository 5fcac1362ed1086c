// kernels/cpu/type_kernels.h — per-type kernel tables, one per ISA (scalar, AVX2, AVX-512).
// Depends on dtype.h and isa.h only; no engine types.
//
// Variants: Scalar is the reference of every type. Avx2 (256-bit, maddubs + madd) and Avx512
// (the same 256-bit kernels compiled with AVX512-VL VNNI: vpdpbusd / vpdpwssd, no int16
// saturation) have vec_dot for every weight type, SIMD activation quantizers (Q8_0, Q8_1, Q8_K)
// and SIMD dequantizers for F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K (bit for
// bit the scalar ones; token embeddings are read through them), dots against f32 activations for
// IQ4_NL, IQ4_XS and MXFP4 (nibbles to values by one byte shuffle of the type's table); the other
// entries point at the scalar reference (the other IQ and ternary types have no x86 table entry). 256-bit on purpose: on the target (Zen 4) 512-bit ops run as two 256-bit halves,
// and the kernels are memory-bound at decode. Prompt processing uses the packed 512-bit tiles
// of gemm.h where they exist (AVX-512 VNNI: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K-Q6_K), float weights
// (F32, F16, BF16) the register tiles and small-batch dots of gemm_float.h (AVX2 / AVX-512),
// the quantized types else VecDot4 (below): one weight row against 4 tokens over a segment of k.
#pragma once

#include <cstdint>

#include "kernels/cpu/dtype.h"
#include "kernels/cpu/isa.h"

namespace strata::kernels {

struct TypeKernels {
  // Rows of n elements (n a multiple of the block size).
  void (*dequantize_row)(const void* src, float* dst, int64_t n);
  // From f32 into this type; for activation types this is the fast path matmul uses.
  void (*quantize_row)(const float* src, void* dst, int64_t n);
  // *out = dot(w_row, act_row); act_row is of type vec_dot_type(this type).
  void (*vec_dot)(int64_t n, const void* w_row, const void* act_row, float* out);
  // Optional (float weights, the 32-element block types and Q2_K-Q6_K at AVX2 / AVX-512, else
  // nullptr): out[r] = dot(row r, act_row) for the kDecodeRows rows at w_rows + r * w_row_bytes, each
  // summed exactly as vec_dot sums it (the same bits), with all the rows' weights streamed at
  // once. Float weights: decode reads them from memory, and several streams in flight keep more
  // of it moving than one (W 4096 x 14336 F32, one thread on a Xeon: 4 rows 16-20 ms a product,
  // 1 row 20-25). The 32-element block types: the rows share the activation loads, scales and
  // offset terms, and the one-token dot is bound by its vector instructions (docs/benchmarks.md).
  void (*vec_dot_rows)(int64_t n, const void* w_rows, int64_t w_row_bytes, const void* act_row, float* out) = nullptr;
  // Optional (Q4_0-Q5_1, Q8_0 and Q2_K-Q6_K at AVX2 / AVX-512): vec_dot_rows for two activation
  // rows (act_rows, act_rows + act_row_bytes) at once, out[c * kDecodeRows + r] = dot(row r, act
  // row c), each the bits vec_dot gives it. The rows' weights are unpacked once for both tokens,
  // so a batch below the packed tiles' min_tokens (a speculative step's verification, a few
  // sequences decoding together) costs less than one one-token pass a token.
  void (*vec_dot_rows2)(int64_t n, const void* w_rows, int64_t w_row_bytes, const void* act_rows, int64_t act_row_bytes,
                        float* out) = nullptr;
};
inline constexpr int kDecodeRows = 4;

// nullptr if that ISA has no variant of the type (or the CPU lacks the ISA): fall back to a
// lower ISA. type_kernels(t, Isa::Scalar) is never null for a known type.
const TypeKernels* type_kernels(DType t, Isa isa);

// The table of the highest ISA at or below `isa` that the CPU has and that has a variant of t
// (every table is complete: entries an ISA does not speed up point at the scalar reference).
const TypeKernels& best_type_kernels(DType t, Isa isa);

// Optional multi-token dot for prompt processing, for the quantized weight types: one weight row
// against 4 activation rows (act + c * act_stride_bytes, c = 0..3), over the row's blocks
// [b0, b1) only, so that a caller can cut k into segments whose activation blocks stay in L1
// while several weight rows pass over them (matmul.cpp). Between the segments of one row the
// 4 running sums live in `state` (kVecDot4StateFloats floats, owned by the caller): the segment
// with b0 == 0 starts them from zero, and the one given out != nullptr (the last) writes
// out[c] = dot(w_row, act row c) instead of storing them. Cutting a row into segments gives the
// bits of one call over all its blocks.
inline constexpr int kVecDot4StateFloats = 64;
using VecDot4 = void (*)(int64_t b0, int64_t b1, const void* w_row, const void* act, int64_t act_stride_bytes,
                         float* state, float* out);
// nullptr when the type has no such kernel at that ISA (or the CPU lacks the ISA).
VecDot4 vec_dot4_kernel(DType t, Isa isa);

namespace detail {
// Tables defined in type_kernels_avx2.cpp / type_kernels_avx512.cpp; nullptr entries where a
// type has no variant there.
const TypeKernels* avx2_kernels(DType t);
const TypeKernels* avx512_kernels(DType t);
VecDot4 avx2_vec_dot4(DType t);
VecDot4 avx512_vec_dot4(DType t);
}  // namespace detail

}  // namespace strata::kernels
