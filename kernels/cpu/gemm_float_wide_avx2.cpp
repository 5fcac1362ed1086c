// kernels/cpu/gemm_float_wide_avx2.cpp — the AVX-512 variant of gemm_float.h emulated with AVX2:
// the same code (gemm_float_x86.inc) with the same 16-token groups, 12 x 2 / 24 x 1 tiles and
// item sizes, each 512-bit vector held as two ymm halves (lanes 0-7, 8-15). A 512-bit FMA rounds
// each lane like a 256-bit one, so the outputs are bit-identical to the AVX-512 variant's. It is
// there so that the 16-lane configuration (packing, group and tile edges) is checked on CPUs
// without AVX-512 (and bit for bit against the real one where it runs); float_gemm_kernels()
// never returns it (only detail::avx512_float_gemm_emulated() does), and it spills registers:
// tests only.
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
  static constexpr int kMr = 12, kNr = 2, kMr1 = 24;
  static constexpr int kRegisters = 32;  // vector registers: the sums small() keeps
  static constexpr int kStreamTokens = 8;  // as the AVX-512 variant's small() (the same bits either way)
  static constexpr int64_t kRowBlock = 48, kTokenGroups = 16;
  static V zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  static V load(const float* p) { return {_mm256_load_ps(p), _mm256_load_ps(p + 8)}; }
  static void store(float* p, V v) {
    _mm256_store_ps(p, v.lo);
    _mm256_store_ps(p + 8, v.hi);
  }
  static V bcast(const float* p) { return {_mm256_broadcast_ss(p), _mm256_broadcast_ss(p)}; }
  static V fma(V a, V b, V c) { return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)}; }
};

}  // namespace

#include "kernels/cpu/gemm_float_x86.inc"

}  // namespace strata::kernels::gemm_float_wide_avx2

namespace strata::kernels::detail {
const FloatGemmKernels* avx512_float_gemm_emulated(DType wtype) { return gemm_float_wide_avx2::lookup(wtype); }
}  // namespace strata::kernels::detail
