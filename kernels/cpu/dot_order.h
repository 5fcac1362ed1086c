// kernels/cpu/dot_order.h — the one float reduction order of every quantized dot product (issue 45:
// batch-invariant numerics). Depends on nothing but <cmath>; no engine types.
//
// A quantized dot is an exact integer sum per weight block (any order: int32 adds wrap, so they
// associate) followed by float steps. Those float steps are what can differ between kernels, so
// every kernel that computes one output element (vec_dot at every ISA, the decode rows, the
// packed tiles of gemm.h in every layout, a token's lanes added as integers first) takes them in this order: one
// running sum a row, starting at +0, block after block in increasing order, each step one fused
// multiply-add of the block's integer sum (converted to float, round to nearest) with dd = d_a *
// d_w (one rounded product), then, for the types with a min, the min term:
//   Q4_0, Q5_0, Q8_0 (Q8_0 activations):  acc = fma(isum, dd, acc)
//   Q4_1, Q5_1 (Q8_1 activations):        acc = fma(isum, dd, acc); acc = fma(s_a, m_w, acc)
//   Q4_K, Q5_K:                           acc = fma(isum, dd, acc); acc = fma(-msum, d_a * dmin_w, acc)
//   Q3_K, Q6_K (levels with their offset): acc = fma(isum, dd, acc)
//   Q2_K:                                 acc = fma(-msum, d_a * dmin_w, acc); acc = fma(isum, dd, acc)
// That is the per-lane order of the packed tiles (gemm_emulated.cpp's tile_w8 / tile_w45 /
// tile_w6), which cannot take another without losing their speed; the one-token dots follow it,
// so a token's output is the same bits whether it runs alone (decode), in a batch of any size,
// at any place in it, on any thread count, at AVX2 or AVX-512 or on the scalar reference.
#pragma once

#include <cmath>
#include <cstdint>

namespace strata::kernels::dot_order {
// Internal linkage, and __builtin_fmaf rather than std::fma (an inline function of <cmath>, a weak
// symbol): the AVX2 / AVX-512 files compile these with FMA instructions and the scalar reference
// without, so no copy may be shared between them (tools/isa_check.sh). Either way one rounding.
namespace {

inline float block(float acc, int32_t isum, float dd) { return __builtin_fmaf(static_cast<float>(isum), dd, acc); }
inline float block_min(float acc, int32_t isum, float dd, float s_a, float m_w) {
  return __builtin_fmaf(s_a, m_w, __builtin_fmaf(static_cast<float>(isum), dd, acc));
}
inline float k45(float acc, int32_t isum, int32_t msum, float dd, float ddmin) {
  return __builtin_fmaf(-static_cast<float>(msum), ddmin, __builtin_fmaf(static_cast<float>(isum), dd, acc));
}
inline float k2(float acc, int32_t isum, int32_t msum, float dd, float ddmin) {
  return __builtin_fmaf(static_cast<float>(isum), dd, __builtin_fmaf(-static_cast<float>(msum), ddmin, acc));
}

}  // namespace
}  // namespace strata::kernels::dot_order
