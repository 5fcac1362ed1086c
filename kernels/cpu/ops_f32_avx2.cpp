// kernels/cpu/ops_f32_avx2.cpp — ops_f32.cpp's hot element-wise loops eight lanes a step with AVX2
// + FMA, bit for bit the scalar loops there: the gated FFN activations (silu, gelu_tanh;
// scalar_math.h), each lane taking exp_activation's f32 operations in the same order (vmaxps /
// vminps pick as its comparisons do, NaN included), the tail through the scalar functions
// themselves; and rms_norm, whose sum of squares keeps the scalar reference's eight running sums.
// Called from ops_f32.cpp on the caller's thread when active_isa() is AVX2 or higher.
#include <immintrin.h>

#include "kernels/common/scalar_math.h"
#include "kernels/cpu/ops_f32.h"

namespace strata::kernels::detail {
namespace {

// exp_activation (scalar_math.h) on 8 lanes, with its constants.
inline __m256 exp_activation8(__m256 x) {
  using namespace activation;
  const __m256 shift = _mm256_set1_ps(kShift);
  const __m256 over = _mm256_cmp_ps(x, _mm256_set1_ps(kExpHi), _CMP_GT_OQ);  // x > hi (false for NaN)
  x = _mm256_max_ps(x, _mm256_set1_ps(kExpLo));  // maxps(a, b) = a > b ? a : b: NaN -> lo
  x = _mm256_min_ps(x, _mm256_set1_ps(kExpHi));
  const __m256 n = _mm256_add_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(kLog2e), shift), _mm256_set1_ps(-kShift));
  __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(-kLn2Hi), x);
  r = _mm256_fmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kP0);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP1));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP2));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP3));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP4));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP5));
  p = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
  // n is an integer in [-126, 127]: the conversion is exact in any rounding mode.
  const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  const __m256 e = _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
  return _mm256_blendv_ps(e, _mm256_set1_ps(__builtin_inff()), over);
}

// silu(g) = g / (1 + e^-g).
inline __m256 silu8(__m256 g) {
  const __m256 e = exp_activation8(_mm256_xor_ps(g, _mm256_set1_ps(-0.0f)));
  return _mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

// gelu_tanh(g) = g / (1 + e^z), z = g (a + b g^2).
inline __m256 gelu8(__m256 g) {
  const __m256 z = _mm256_mul_ps(g, _mm256_fmadd_ps(_mm256_set1_ps(activation::kGeluB), _mm256_mul_ps(g, g),
                                                    _mm256_set1_ps(activation::kGeluA)));
  return _mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), exp_activation8(z)));
}

}  // namespace

void rms_norm_avx2(const float* x, const float* weight, float* out, int64_t n, float eps) {
  // Element i into running sum i % 8 (lanes 0-3 in lo, 4-7 in hi), float64: each square is exact
  // there, so fma(x, x, s) is the scalar reference's s + x * x.
  __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256d a = _mm256_cvtps_pd(_mm_loadu_ps(x + i)), b = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4));
    lo = _mm256_fmadd_pd(a, a, lo);
    hi = _mm256_fmadd_pd(b, b, hi);
  }
  alignas(32) double s[8];
  _mm256_store_pd(s, lo);
  _mm256_store_pd(s + 4, hi);
  for (int64_t l = 0; i < n; ++i, ++l) s[l] += static_cast<double>(x[i]) * x[i];
  const float inv = rms_inverse(sum_squares_of_lanes(s), n, eps);
  const __m256 vinv = _mm256_set1_ps(inv);
  for (i = 0; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), vinv), _mm256_loadu_ps(weight + i)));
  for (; i < n; ++i) out[i] = x[i] * inv * weight[i];
}

void swiglu_avx2(float* gate, const float* up, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(gate + i, _mm256_mul_ps(silu8(_mm256_loadu_ps(gate + i)), _mm256_loadu_ps(up + i)));
  for (; i < n; ++i) gate[i] = silu(gate[i]) * up[i];
}

void geglu_avx2(float* gate, const float* up, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(gate + i, _mm256_mul_ps(gelu8(_mm256_loadu_ps(gate + i)), _mm256_loadu_ps(up + i)));
  for (; i < n; ++i) gate[i] = gelu_tanh(gate[i]) * up[i];
}

void gelu_avx2(float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, gelu8(_mm256_loadu_ps(x + i)));
  for (; i < n; ++i) x[i] = gelu_tanh(x[i]);
}

}  // namespace strata::kernels::detail
