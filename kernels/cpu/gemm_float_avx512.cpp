// kernels/cpu/gemm_float_avx512.cpp — the AVX-512 variant of gemm_float.h: 512-bit vectors, a
// 3-row x 8-token register tile (24 zmm accumulators, 3 weight vectors and one token vector of
// the 32 zmm registers), items of 48 rows x 64 tokens. The same code as the AVX2 variant
// (gemm_float_x86.inc) with 16-float vectors. Compiled with the AVX-512 flags (file suffix);
// reached only through float_gemm_kernels() after a cpuid check.
#include <immintrin.h>

#include <cstdint>

// GCC 12 reports the _mm256_undefined_pd() inside _mm512_castps512_ps256 as maybe-uninitialized.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "kernels/cpu/fp16.h"
#include "kernels/cpu/gemm_float.h"

namespace strata::kernels::gemm_float_avx512 {
namespace {

struct Simd {
  using V = __m512;
  static constexpr int kLanes = 16;
  static constexpr int kRm = 3, kRn = 8;
  static constexpr int kRowPanels = 16, kTokenPanels = 8;
  static V zero() { return _mm512_setzero_ps(); }
  static V load(const float* p) { return _mm512_load_ps(p); }
  static void store(float* p, V v) { _mm512_store_ps(p, v); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  // Halves added down to one lane: 16 -> 8 -> 4 -> 2 -> 1, the same order for every output.
  static float hsum(V v) {
    const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
};

}  // namespace

#include "kernels/cpu/gemm_float_x86.inc"

}  // namespace strata::kernels::gemm_float_avx512

namespace strata::kernels::detail {
const FloatGemmKernels* avx512_float_gemm(DType wtype) { return gemm_float_avx512::lookup(wtype); }
}  // namespace strata::kernels::detail
