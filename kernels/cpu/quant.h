// kernels/cpu/quant.h — whole-row conversion between f32 and every tensor type (scalar
// reference, bit-exact with ggml layouts), and which activation type each weight type dots with.
// Depends on dtype.h only.
#pragma once

#include <cstdint>

#include "kernels/cpu/dtype.h"

namespace strata::kernels {

// n must be a multiple of the type's block_elems (callers validate).
void dequantize_row(DType t, const void* src, float* dst, int64_t n);
// Reference quantizer from f32 (K-quants with a per-group scale search). Good for making test
// weights and for activations; not tuned for speed.
// Does nothing for the types that have no quantizer (can_quantize() false).
void quantize_row(DType t, const float* src, void* dst, int64_t n);
// False for the grid types (IQ1_S, IQ1_M, IQ2_*, IQ3_*): they are read, not written (their
// quantizers need a grid search with importance weights, which is llama-quantize's job).
bool can_quantize(DType t);

// The type activations are quantized to before vec_dot with weights of type w:
//   F32, F16, BF16 -> F32 (weights converted on the fly, full-precision activations)
//   Q4_0, Q5_0, Q8_0 -> Q8_0;  Q4_1, Q5_1 -> Q8_1;  Q2_K .. Q6_K -> Q8_K;
//   Q8_1 -> Q8_1, Q8_K -> Q8_K (activation types dot with themselves);
//   the IQ types, TQ1_0, TQ2_0, MXFP4 -> F32 (each block decoded, then an f32 dot).
DType vec_dot_type(DType weight_type);

}  // namespace strata::kernels
