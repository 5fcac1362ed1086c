// kernels/cpu/type_kernels.h — per-type kernel tables, one per ISA (scalar, AVX2, AVX-512).
// Depends on dtype.h and isa.h only; no engine types.
//
// Variants: Scalar is the reference of every type. Avx2 (256-bit, maddubs) and Avx512 (VNNI
// vpdpbusd; 512-bit loops for F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K, 256-bit VNNI for
// the rest) have vec_dot and an activation quantizer for every weight type.
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
};

// nullptr if that ISA has no variant of the type (or the CPU lacks the ISA): fall back to a
// lower ISA. type_kernels(t, Isa::Scalar) is never null for a known type.
const TypeKernels* type_kernels(DType t, Isa isa);

// The table of the highest ISA at or below `isa` that the CPU has and that has a variant of t
// (every table is complete: entries an ISA does not speed up point at the scalar reference).
const TypeKernels& best_type_kernels(DType t, Isa isa);

namespace detail {
// Tables defined in type_kernels_avx2.cpp / type_kernels_avx512.cpp; nullptr entries where a
// type has no variant there.
const TypeKernels* avx2_kernels(DType t);
const TypeKernels* avx512_kernels(DType t);
}  // namespace detail

}  // namespace strata::kernels
