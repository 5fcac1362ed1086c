// kernels/cpu/ops_f32.h — the float32 element-wise and attention operations of a transformer
// layer on the CPU (everything but the matrix products). Knows buffers and shapes, not models.
#pragma once

#include <cstdint>

#include "kernels/common/scalar_math.h"

namespace strata::kernels {

// out[i] = x[i] / sqrt(mean(x^2) + eps) * weight[i]; x, weight, out: [n]. out may alias x.
// The sum of squares in float64 (each square exact there), element i into running sum i % 8,
// the eight then added pairwise (sum_squares_of_lanes): one order for the scalar loop and the
// AVX2 lanes, so every ISA gives the same bits.
void rms_norm_f32(const float* x, const float* weight, float* out, int64_t n, float eps);
// out = (x - mean) / sqrt(var + eps) * weight + bias (LayerNorm of one row; bias may be null);
// mean and variance summed in double, then f32.
void layer_norm_f32(const float* x, const float* weight, const float* bias, float* out, int64_t n, float eps);

// Rotates the first rope_dims dimensions of each of n_heads heads of x ([n_heads][head_dim]) by
// position. theta_i = position * freq_scale * base^(-2i/rope_dims) / freq_divisors[i]
// (freq_divisors may be null). interleaved: pairs (2i, 2i+1); else NeoX pairs (i, i + rope_dims/2).
// The rotation uses attn_factor * cos and attn_factor * sin. yarn.on: freq_scale is ignored and the
// angle is rope_theta_yarn's (scalar_math.h); attn_factor then already holds YaRN's mscale.
void rope_f32(float* x, int64_t n_heads, int64_t head_dim, int64_t rope_dims, int64_t position,
              float freq_base, float freq_scale, const float* freq_divisors, bool interleaved,
              float attn_factor = 1.0f, const RopeYarn& yarn = RopeYarn{});

// x[i] = silu(gate[i]) * up[i], written into gate; [n].
void swiglu_f32(float* gate, const float* up, int64_t n);

// x[i] = gelu_tanh(gate[i]) * up[i], written into gate; [n].
// gelu_tanh(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
void geglu_f32(float* gate, const float* up, int64_t n);
// gate[i] = swiglu_oai(gate[i], up[i]) (scalar_math.h: gpt-oss's clamped SwiGLU).
void swiglu_oai_f32(float* gate, const float* up, int64_t n);
// x[i] = gelu_tanh(x[i]) (scalar_math.h): the activation of a non-gated FFN (starcoder2).
void gelu_f32(float* x, int64_t n);

namespace detail {
// The eight running sums of rms_norm's squares added as ((s0 + s4) + (s2 + s6)) + ((s1 + s5) +
// (s3 + s7)), and the scale 1 / sqrt(sum / n + eps) of them, shared by both loops.
static inline double sum_squares_of_lanes(const double (&s)[8]) {
  return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
}
static inline float rms_inverse(double sum_sq, int64_t n, float eps) {
  return 1.0f / __builtin_sqrtf(static_cast<float>(sum_sq / static_cast<double>(n)) + eps);  // builtin: no shared weak copy (tools/isa_check.sh)
}
// ops_f32_avx2.cpp: rms_norm_f32, swiglu_f32, geglu_f32 and gelu_f32 eight lanes a step, the same
// bits (those call them when active_isa() has AVX2).
void rms_norm_avx2(const float* x, const float* weight, float* out, int64_t n, float eps);
void swiglu_avx2(float* gate, const float* up, int64_t n);
void geglu_avx2(float* gate, const float* up, int64_t n);
void gelu_avx2(float* x, int64_t n);
}  // namespace detail

// x[i] *= s; [n].
void scale_f32(float* x, float s, int64_t n);

// x[i] = softcap(x[i], cap) (scalar_math.h); [n].
void softcap_f32(float* x, float cap, int64_t n);

// y[i] += x[i]; [n].
void add_f32(float* y, const float* x, int64_t n);

// In-place softmax over [n].
void softmax_f32(float* x, int64_t n);

}  // namespace strata::kernels
