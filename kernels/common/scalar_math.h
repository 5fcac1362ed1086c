// kernels/common/scalar_math.h — scalar math that the CPU kernels (kernels/cpu) and the CUDA kernels
// (kernels/cuda) must agree on, stated once and compiled by both (host and device), as
// kernels/cuda/quant_blocks.cuh is for block decoding: the activations of the gated FFNs and the
// rotary angle. Functions are static inline (internal linkage): the AVX2 / AVX-512 objects include
// this header too, and a shared weak copy built with their flags could reach the scalar path
// (tools/isa_check.sh). No engine types.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define STRATA_MATH_HD __host__ __device__ __forceinline__
#else
#define STRATA_MATH_HD inline
#endif

namespace strata::kernels {

// An f32 product and sum that no compiler fuses into an fma: nvcc contracts a * b + c by default
// (--fmad=true), the CPU build does not (-ffp-contract=off), and the two sides must round alike.
static STRATA_MATH_HD float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
static STRATA_MATH_HD float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
static STRATA_MATH_HD float float_from_bits(int32_t bits) {
#if defined(__CUDA_ARCH__)
  return __int_as_float(bits);
#else
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
#endif
}

// e^x of the activations, in f32 operations that every path repeats in this order: the scalar
// loops (kernels/cpu/ops_f32.cpp), their AVX2 lanes (ops_f32_avx2.cpp) and the CUDA kernels
// (kernels/cuda/elementwise.cu) give the same bits, where libm's expf / tanhf and CUDA's differ in
// the last place. Within 2 ulp of e^x on [-87, 88]; +inf above 88 (e^88.72 is the largest
// float: the activations then give g / inf = -0, as they should), e^-87 below -87 and for NaN (the
// activations carry NaN through their factor g instead).
//   n = rint(x / ln 2) by the 1.5 * 2^23 shift, r = x - n ln 2 in two parts (|r| <= ln 2 / 2),
//   e^r = 1 + r + r^2 P(r) with Cephes' degree-5 minimax P, times 2^n built in the exponent bits
//   (the clamp keeps n in [-126, 127]: a normal float).
// exp_activation's and gelu_tanh's constants, named once for every path that repeats their steps
// (the AVX2 lanes of kernels/cpu/ops_f32_avx2.cpp use these very values). Scalar constexpr
// variables at namespace scope: usable in CUDA device code as they are; internal linkage, so no
// shared copy among the ISA objects (tools/isa_check.sh).
namespace activation {
static constexpr float kExpLo = -87.0f, kExpHi = 88.0f;
static constexpr float kShift = 12582912.0f;  // 1.5 * 2^23: its ulp is 1, so fma(x, log2e, shift) rounds to an integer
static constexpr float kLog2e = 1.44269504088896341f;
static constexpr float kLn2Hi = 0.693359375f, kLn2Lo = 2.12194440e-4f;  // ln 2 = hi - lo, hi exact in 9 bits
// Cephes' P, highest power first: e^r = 1 + r + r^2 P(r)
static constexpr float kP0 = 1.9875691500e-4f, kP1 = 1.3981999507e-3f, kP2 = 8.3334519073e-3f,
                       kP3 = 4.1665795894e-2f, kP4 = 1.6666665459e-1f, kP5 = 5.0000001201e-1f;
// gelu_tanh's z = g (a + b g^2): a = -2 sqrt(2/pi), b = 0.044715 a
static constexpr float kGeluA = -1.5957691216057308f, kGeluB = -0.0713548162726f;
}  // namespace activation

static STRATA_MATH_HD float exp_activation(float x) {
  using namespace activation;
  const bool over = x > kExpHi;
  x = x > kExpLo ? x : kExpLo;  // NaN -> kExpLo, as x86's maxps(x, lo)
  x = x < kExpHi ? x : kExpHi;
  const float n = add_rn(fmaf(x, kLog2e, kShift), -kShift);
  float r = fmaf(n, -kLn2Hi, x);
  r = fmaf(n, kLn2Lo, r);
  float p = kP0;
  p = fmaf(p, r, kP1);
  p = fmaf(p, r, kP2);
  p = fmaf(p, r, kP3);
  p = fmaf(p, r, kP4);
  p = fmaf(p, r, kP5);
  p = add_rn(fmaf(p, mul_rn(r, r), r), 1.0f);
  const float e = mul_rn(p, float_from_bits((static_cast<int32_t>(n) + 127) << 23));
  return over ? float_from_bits(0x7f800000) : e;
}

// SiLU(g) = g * sigmoid(g) = g / (1 + e^-g), as swiglu multiplies it into the up projection.
static STRATA_MATH_HD float silu(float g) { return g / add_rn(1.0f, exp_activation(-g)); }

// GELU with the tanh approximation (gemma's geglu): 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))).
// 0.5 (1 + tanh(u)) is sigmoid(2u), so this is g / (1 + e^z) with z = -2u = g (a + b g^2),
// a = -2 sqrt(2/pi), b = 0.044715 a: one exp and one division, the same steps as silu.
static STRATA_MATH_HD float gelu_tanh(float g) {
  const float z = mul_rn(g, fmaf(activation::kGeluB, mul_rn(g, g), activation::kGeluA));
  return g / add_rn(1.0f, exp_activation(z));
}

// gpt-oss's clamped SwiGLU (llama.cpp's swiglu_oai, alpha 1.702, limit 7, as its graph fixes them):
// x = min(g, 7), y = clamp(u, -7, 7); x sigmoid(1.702 x) (y + 1). The same f32 operations in the
// same order as ggml's CPU kernel.
static STRATA_MATH_HD float swiglu_oai(float g, float u) {
  constexpr float kAlpha = 1.702f, kLimit = 7.0f;
  const float x = fminf(g, kLimit);
  const float y = fmaxf(fminf(u, kLimit), -kLimit);
  return x / (1.0f + expf(kAlpha * (-x))) * (y + 1.0f);
}

// The rotary frequency of pair i (of rope_dims / 2): base^(-2i / rope_dims), f32 pow on the host.
// The CUDA rope kernel gets these from the host (a table in its launch parameters), so the device
// uses the CPU's very values and needs no pow (in double it ran at 1/64 rate on sm_86 / sm_89).
static inline float rope_inv_freq(int64_t i, int64_t rope_dims, float freq_base) {
  const float expo = -2.0f * static_cast<float>(i) / static_cast<float>(rope_dims);
  return std::pow(freq_base, expo);
}

// The rotary angle of pair i at a position already multiplied by freq_scale, from its frequency:
// pos * inv_freq, divided by the pair's frequency divisor where the model has them (longrope /
// llama3 scaling). Each operation is rounded to f32 in this order, on the host and the device.
static STRATA_MATH_HD float rope_theta_of(float pos, float inv_freq, int64_t i, const float* divisors) {
  float theta = pos * inv_freq;
  if (divisors) theta /= divisors[i];
  return theta;
}

// The same from the pair's index (the CPU's rope).
static inline float rope_theta(float pos, int64_t i, int64_t rope_dims, float freq_base, const float* divisors) {
  return rope_theta_of(pos, rope_inv_freq(i, rope_dims, freq_base), i, divisors);
}

// Logit soft-capping (gemma2): cap * tanh(x / cap), a smooth clamp to (-cap, cap).
static STRATA_MATH_HD float softcap(float x, float cap) { return cap * tanhf(x / cap); }

// YaRN (rope.scaling.type yarn): each pair's angle mixes the interpolated angle (positions times
// freq_scale = 1 / factor) with the unscaled one, by a ramp over the pair index that is 1 (keep
// the unscaled angle) below pair `low` and 0 (interpolate) above `high`, times ext_factor.
// llama.cpp's ggml_rope_yarn order of f32 operations. on == false: plain RoPE.
struct RopeYarn {
  bool on = false;
  float freq_scale = 1.0f;  // 1 / rope.scaling.factor
  float ext_factor = 1.0f;  // rope.scaling.yarn_ext_factor
  float low = 0.0f, high = 0.0f;  // the ramp's ends in pairs (yarn_corr_dims)
};

// The angle of pair i at an unscaled position under YaRN, from its frequency (rope_theta_of's
// arguments otherwise; the CUDA kernel passes its host-made table entry).
static STRATA_MATH_HD float rope_theta_yarn_of(float pos, float inv_freq, int64_t i, const float* divisors,
                                               const RopeYarn& y) {
  const float extrap = rope_theta_of(pos, inv_freq, i, divisors);
  const float interp = y.freq_scale * extrap;
  const float span = (y.high - y.low) > 0.001f ? (y.high - y.low) : 0.001f;
  float r = (static_cast<float>(i) - y.low) / span;
  r = r < 0.0f ? 0.0f : (r > 1.0f ? 1.0f : r);
  const float mix = (1.0f - r) * y.ext_factor;
  return interp * (1.0f - mix) + extrap * mix;
}

// The same from the pair's index (the CPU's rope).
static inline float rope_theta_yarn(float pos, int64_t i, int64_t rope_dims, float freq_base, const float* divisors,
                                    const RopeYarn& y) {
  return rope_theta_yarn_of(pos, rope_inv_freq(i, rope_dims, freq_base), i, divisors, y);
}

// The pair index at which a frequency turns `n_rot` rotations over n_ctx_orig positions.
static inline float yarn_corr_dim(int64_t rope_dims, int64_t n_ctx_orig, float n_rot, float base) {
  return static_cast<float>(rope_dims) * logf(static_cast<float>(n_ctx_orig) / (n_rot * 2.0f * 3.14159265358979f)) /
         (2.0f * logf(base));
}
// The ramp's ends: pairs below floor(corr(beta_fast)) keep their angle, above ceil(corr(beta_slow))
// are interpolated; clamped to [0, rope_dims - 1] (ggml_rope_yarn_corr_dims).
static inline RopeYarn make_rope_yarn(int64_t rope_dims, int64_t n_ctx_orig, float freq_base, float freq_scale,
                                      float ext_factor, float beta_fast, float beta_slow) {
  RopeYarn y;
  y.on = true;
  y.freq_scale = freq_scale;
  y.ext_factor = ext_factor;
  const float lo = floorf(yarn_corr_dim(rope_dims, n_ctx_orig, beta_fast, freq_base));
  const float hi = ceilf(yarn_corr_dim(rope_dims, n_ctx_orig, beta_slow, freq_base));
  y.low = lo > 0.0f ? lo : 0.0f;
  y.high = hi < static_cast<float>(rope_dims - 1) ? hi : static_cast<float>(rope_dims - 1);
  return y;
}
// YaRN's magnitude correction of cos and sin: 1 + 0.1 ln(1 / freq_scale) where ext_factor != 0.
static inline float yarn_mscale(float freq_scale, float ext_factor) {
  return ext_factor != 0.0f ? 1.0f + 0.1f * logf(1.0f / freq_scale) : 1.0f;
}

}  // namespace strata::kernels
