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
  static constexpr int kRegisters = 16;  // vector registers: the sums small() keeps
  // small(): rows streamed for up to 4 tokens (4 rows x 1-3 tokens, 3 x 4: 12 sums, 3 weight
  // vectors and a token vector). 3 x 4 streamed against the 3 x 4 tiles over k segments, Xeon with
  // the AVX2 kernels forced, W 4096 x 14336, 1 thread: F32 / F16 / BF16 17.44 / 9.24 / 9.21 ->
  // 14.22 / 7.71 / 8.15 ms; 2 rows x 5-6 tokens was faster for F32 but 10-13% slower for F16.
  static constexpr int kStreamTokens = 4;
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
