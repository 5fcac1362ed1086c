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

// The rotary angle of pair i (of rope_dims / 2) at a position already multiplied by freq_scale:
// pos * base^(-2i / rope_dims), divided by the pair's frequency divisor where the model has them
// (longrope / llama3 scaling). Each operation is rounded to f32 in this order. base^e is f32 pow
// on the host; on the device it is evaluated in double and rounded, because the device's f32 pow
// is not correctly rounded and large positions amplify its error.
static STRATA_MATH_HD float rope_theta(float pos, int64_t i, int64_t rope_dims, float freq_base, const float* divisors) {
  const float expo = -2.0f * static_cast<float>(i) / static_cast<float>(rope_dims);
#if defined(__CUDA_ARCH__)
  const float inv_freq = static_cast<float>(pow(static_cast<double>(freq_base), static_cast<double>(expo)));
#else
  const float inv_freq = std::pow(freq_base, expo);
#endif
  float theta = pos * inv_freq;
  if (divisors) theta /= divisors[i];
  return theta;
}

}  // namespace strata::kernels
