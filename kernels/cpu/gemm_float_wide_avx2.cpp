// kernels/cpu/gemm_float_wide_avx2.cpp — the AVX-512 variant of gemm_float.h emulated with AVX2:
// the same code (gemm_float_x86.inc) with the same 16-float vectors, 3 x 8 tile and item sizes,
// each 512-bit vector held as two ymm halves (lanes 0-7, 8-15). A 512-bit FMA rounds each lane
// like two 256-bit ones, and hsum adds the halves first and then the same 8-lane tree as the
// AVX-512 hsum, so the outputs are bit-identical to the AVX-512 variant's. It is there so that
// the 16-lane configuration is checked against the reference on CPUs without AVX-512 (and bit
// for bit against the real one where it runs); float_gemm_kernels() never returns it (only
// detail::avx512_float_gemm_emulated() does), and it spills registers: tests only.
#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/fp16.h"
#include "kernels/cpu/gemm_float.h"

namespace strata::kernels::gemm_float_wide_avx2 {
namespace {

struct Simd {
  struct V {
    __m256 lo, hi;
  };
  static constexpr int kLanes = 16;
  static constexpr int kRm = 3, kRn = 8;
  static constexpr int kRowPanels = 16, kTokenPanels = 8;
  static V zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  static V load(const float* p) { return {_mm256_load_ps(p), _mm256_load_ps(p + 8)}; }
  static void store(float* p, V v) {
    _mm256_store_ps(p, v.lo);
    _mm256_store_ps(p + 8, v.hi);
  }
  static V fma(V a, V b, V c) { return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)}; }
  static float hsum(V v) {
    const __m256 h = _mm256_add_ps(v.lo, v.hi);
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
};

}  // namespace

#include "kernels/cpu/gemm_float_x86.inc"

}  // namespace strata::kernels::gemm_float_wide_avx2

namespace strata::kernels::detail {
const FloatGemmKernels* avx512_float_gemm_emulated(DType wtype) { return gemm_float_wide_avx2::lookup(wtype); }
}  // namespace strata::kernels::detail
