// kernels/cpu/ops_f32.cpp — portable float32 implementations; these are also the references
// that device backends (simulated, CUDA) are checked against.
#include "kernels/cpu/ops_f32.h"

#include <cmath>

#include "kernels/common/scalar_math.h"
#include "kernels/cpu/isa.h"

namespace strata::kernels {

void rms_norm_f32(const float* x, const float* weight, float* out, int64_t n, float eps) {
  if (active_isa() != Isa::Scalar) return detail::rms_norm_avx2(x, weight, out, n, eps);
  double s[8] = {};
  for (int64_t i = 0; i < n; ++i) s[i % 8] += static_cast<double>(x[i]) * x[i];
  const float inv = detail::rms_inverse(detail::sum_squares_of_lanes(s), n, eps);
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * inv * weight[i];
}

void layer_norm_f32(const float* x, const float* weight, const float* bias, float* out, int64_t n, float eps) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += x[i];
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  double sum_sq = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const float d = x[i] - mean;
    sum_sq += static_cast<double>(d) * d;
  }
  const float inv = 1.0f / std::sqrt(static_cast<float>(sum_sq / static_cast<double>(n)) + eps);
  for (int64_t i = 0; i < n; ++i) {
    const float y = (x[i] - mean) * inv * weight[i];
    out[i] = bias ? y + bias[i] : y;
  }
}

void rope_f32(float* x, int64_t n_heads, int64_t head_dim, int64_t rope_dims, int64_t position,
              float freq_base, float freq_scale, const float* freq_divisors, bool interleaved, float attn_factor,
              const RopeYarn& yarn) {
  const int64_t half = rope_dims / 2;
  // YaRN scales inside the angle (rope_theta_yarn); plain RoPE scales the position.
  const float pos = yarn.on ? static_cast<float>(position) : static_cast<float>(position) * freq_scale;
  for (int64_t i = 0; i < half; ++i) {
    const float theta = yarn.on ? rope_theta_yarn(pos, i, rope_dims, freq_base, freq_divisors, yarn)
                                : rope_theta(pos, i, rope_dims, freq_base, freq_divisors);
    const float c = std::cos(theta) * attn_factor;
    const float s = std::sin(theta) * attn_factor;
    for (int64_t h = 0; h < n_heads; ++h) {
      float* head = x + h * head_dim;
      const int64_t a = interleaved ? 2 * i : i;
      const int64_t b = interleaved ? 2 * i + 1 : i + half;
      const float x0 = head[a];
      const float x1 = head[b];
      head[a] = x0 * c - x1 * s;
      head[b] = x0 * s + x1 * c;
    }
  }
}

void swiglu_f32(float* gate, const float* up, int64_t n) {
  if (active_isa() != Isa::Scalar) return detail::swiglu_avx2(gate, up, n);
  for (int64_t i = 0; i < n; ++i) {
    gate[i] = silu(gate[i]) * up[i];
  }
}

void softcap_f32(float* x, float cap, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = softcap(x[i], cap);
}

void geglu_f32(float* gate, const float* up, int64_t n) {
  if (active_isa() != Isa::Scalar) return detail::geglu_avx2(gate, up, n);
  for (int64_t i = 0; i < n; ++i) gate[i] = gelu_tanh(gate[i]) * up[i];
}

void swiglu_oai_f32(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) gate[i] = swiglu_oai(gate[i], up[i]);
}

void gelu_f32(float* x, int64_t n) {
  if (active_isa() != Isa::Scalar) return detail::gelu_avx2(x, n);
  for (int64_t i = 0; i < n; ++i) x[i] = gelu_tanh(x[i]);
}

void scale_f32(float* x, float s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

void add_f32(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

void softmax_f32(float* x, int64_t n) {
  float max_v = x[0];
  for (int64_t i = 1; i < n; ++i) max_v = x[i] > max_v ? x[i] : max_v;
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max_v);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

}  // namespace strata::kernels
