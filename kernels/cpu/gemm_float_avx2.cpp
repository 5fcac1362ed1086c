// kernels/cpu/gemm_float_avx2.cpp — the AVX2 (+FMA, F16C) variant of gemm_float.h: 256-bit
// vectors, a 3-row x 4-token register tile (12 ymm accumulators, 3 weight vectors and one token
// vector: all 16 ymm registers), items of 48 rows x 64 tokens. Compiled with the AVX2 flags
// (file suffix); reached only through float_gemm_kernels() after a cpuid check.
#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/fp16.h"
#include "kernels/cpu/gemm_float.h"

namespace strata::kernels::gemm_float_avx2 {
namespace {

struct Simd {
  using V = __m256;
  static constexpr int kLanes = 8;
  static constexpr int kRm = 3, kRn = 4;
  static constexpr int kRowPanels = 16, kTokenPanels = 16;
  static V zero() { return _mm256_setzero_ps(); }
  static V load(const float* p) { return _mm256_load_ps(p); }
  static void store(float* p, V v) { _mm256_store_ps(p, v); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static float hsum(V v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
};

}  // namespace

#include "kernels/cpu/gemm_float_x86.inc"

}  // namespace strata::kernels::gemm_float_avx2

namespace strata::kernels::detail {
const FloatGemmKernels* avx2_float_gemm(DType wtype) { return gemm_float_avx2::lookup(wtype); }
}  // namespace strata::kernels::detail
