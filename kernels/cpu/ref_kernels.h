// kernels/cpu/ref_kernels.h — scalar reference kernels of every type (the ground truth the SIMD
// variants are tested against) and small helpers shared with them. Internal to kernels/cpu.
// Its inline helpers are static (internal linkage): the AVX2 / AVX-512 files include this header,
// and a shared weak copy compiled with their flags could reach the scalar path (tools/isa_check.sh).
#pragma once

#include <cstdint>
#include <cstring>

namespace strata::kernels::ref {

// Round to nearest, ties to even, for |f| < 2^22 (the "add 1.5 * 2^23" trick): the same
// result as the SIMD cvtps (round-to-nearest-even mode), so activation quantizers agree bit-exactly.
static inline int nearest_int(float f) {
  const float v = f + 12582912.f;
  int32_t i;
  std::memcpy(&i, &v, sizeof i);
  return (i & 0x007fffff) - 0x00400000;
}

#define STRATA_REF_DECL(T)                                            \
  void dequantize_##T(const void* src, float* dst, int64_t n);        \
  void quantize_##T(const float* src, void* dst, int64_t n);          \
  void vec_dot_##T(int64_t n, const void* w, const void* a, float* out);

STRATA_REF_DECL(f32)
STRATA_REF_DECL(f16)   // activations f32
STRATA_REF_DECL(bf16)  // activations f32
STRATA_REF_DECL(q4_0)  // activations q8_0
STRATA_REF_DECL(q4_1)  // activations q8_1
STRATA_REF_DECL(q5_0)  // activations q8_0
STRATA_REF_DECL(q5_1)  // activations q8_1
STRATA_REF_DECL(q8_0)  // activations q8_0
STRATA_REF_DECL(q8_1)  // vec_dot: q8_1 x q8_1 (not used by matmul)
STRATA_REF_DECL(q2_k)  // activations q8_k
STRATA_REF_DECL(q3_k)
STRATA_REF_DECL(q4_k)
STRATA_REF_DECL(q5_k)
STRATA_REF_DECL(q6_k)
STRATA_REF_DECL(q8_k)  // vec_dot: q8_k x q8_k
// ref_iquants.cpp, all with f32 activations; quantizers only where no grid search is needed.
STRATA_REF_DECL(iq4_nl)
STRATA_REF_DECL(iq4_xs)
STRATA_REF_DECL(tq1_0)
STRATA_REF_DECL(tq2_0)
STRATA_REF_DECL(mxfp4)
#undef STRATA_REF_DECL
#define STRATA_REF_DECL_READ_ONLY(T)                              \
  void dequantize_##T(const void* src, float* dst, int64_t n);    \
  void vec_dot_##T(int64_t n, const void* w, const void* a, float* out);
STRATA_REF_DECL_READ_ONLY(iq2_xxs)
STRATA_REF_DECL_READ_ONLY(iq2_xs)
STRATA_REF_DECL_READ_ONLY(iq2_s)
STRATA_REF_DECL_READ_ONLY(iq3_xxs)
STRATA_REF_DECL_READ_ONLY(iq3_s)
STRATA_REF_DECL_READ_ONLY(iq1_s)
STRATA_REF_DECL_READ_ONLY(iq1_m)
#undef STRATA_REF_DECL_READ_ONLY

}  // namespace strata::kernels::ref
