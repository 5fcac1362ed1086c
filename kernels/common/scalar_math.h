// kernels/common/scalar_math.h — scalar math that the CPU kernels (kernels/cpu) and the CUDA kernels
// (kernels/cuda) must agree on, stated once and compiled by both (host and device), as
// kernels/cuda/quant_blocks.cuh is for block decoding: the activations of the gated FFNs and the
// rotary angle. Functions are static inline (internal linkage): the AVX2 / AVX-512 objects include
// this header too, and a shared weak copy built with their flags could reach the scalar path
// (tools/isa_check.sh). No engine types.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define STRATA_MATH_HD __host__ __device__ __forceinline__
#else
#define STRATA_MATH_HD inline
#endif

namespace strata::kernels {

// SiLU(g) = g * sigmoid(g), as swiglu multiplies it into the up projection.
static STRATA_MATH_HD float silu(float g) { return g / (1.0f + expf(-g)); }

// GELU with the tanh approximation (gemma's geglu): 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))).
static STRATA_MATH_HD float gelu_tanh(float g) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  return 0.5f * g * (1.0f + tanhf(kSqrt2OverPi * (g + 0.044715f * g * g * g)));
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
