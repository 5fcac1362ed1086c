// kernels/cpu/gemm_float_avx2.cpp — the AVX2 (+FMA, F16C) variant of gemm_float.h: groups of 8
// tokens in a ymm, a 6-row x 2-group register tile (12 ymm accumulators, 2 token vectors and one
// broadcast weight of the 16 ymm registers; 12 x 1 where one group is left), items of 48 rows x
// up to 256 tokens. Compiled with the AVX2 flags (file suffix); reached only through
// float_gemm_kernels() after a cpuid check.
#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/fp16.h"
#include "kernels/cpu/gemm_float.h"

namespace strata::kernels::gemm_float_avx2 {
namespace {

struct Simd {
  using V = __m256;
  static constexpr int kLanes = 8;
  static constexpr int kMr = 6, kNr = 2, kMr1 = 12;
  static constexpr int kStreamTokens = 3;  // small(): 4 x 3 accumulators + 3 token vectors + the weights
  static constexpr int64_t kRowBlock = 48, kTokenGroups = 32;
  static V zero() { return _mm256_setzero_ps(); }
  static V load(const float* p) { return _mm256_load_ps(p); }
  static void store(float* p, V v) { _mm256_store_ps(p, v); }
  static V bcast(const float* p) { return _mm256_broadcast_ss(p); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
};

}  // namespace

#include "kernels/cpu/gemm_float_x86.inc"

}  // namespace strata::kernels::gemm_float_avx2

namespace strata::kernels::detail {
const FloatGemmKernels* avx2_float_gemm(DType wtype) { return gemm_float_avx2::lookup(wtype); }
}  // namespace strata::kernels::detail
