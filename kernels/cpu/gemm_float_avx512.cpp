// kernels/cpu/gemm_float_avx512.cpp — the AVX-512 variant of gemm_float.h: groups of 16 tokens
// in a zmm, a 12-row x 2-group register tile (24 zmm accumulators, 2 token vectors and one
// broadcast weight of the 32 zmm registers; 24 x 1 where one group is left), items of 48 rows x
// up to 256 tokens. The same code as the AVX2 variant (gemm_float_x86.inc) with 16-float vectors.
// Compiled with the AVX-512 flags (file suffix); reached only through float_gemm_kernels()
// after a cpuid check.
#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/fp16.h"
#include "kernels/cpu/gemm_float.h"

namespace strata::kernels::gemm_float_avx512 {
namespace {

struct Simd {
  using V = __m512;
  static constexpr int kLanes = 16;
  static constexpr int kMr = 12, kNr = 2, kMr1 = 24;
  // small(): rows streamed for up to 8 tokens (4 rows x 4-6 tokens, 3 x 7-8: 24 ymm sums of the 32
  // registers); with 3 x 4 tiles from 4 tokens it ran at 0.89-0.99 of llama.cpp at 4 tokens and
  // 0.95-0.98 at 8 (Xeon, W 4096 x 14336, 1 thread). 2 rows x 9-12 tokens was slower than the tiles.
  static constexpr int kRegisters = 32;  // vector registers: the sums small() keeps
  static constexpr int kStreamTokens = 8;
  static constexpr int64_t kRowBlock = 48, kTokenGroups = 16;
  static V zero() { return _mm512_setzero_ps(); }
  static V load(const float* p) { return _mm512_load_ps(p); }
  static void store(float* p, V v) { _mm512_store_ps(p, v); }
  static V bcast(const float* p) { return _mm512_set1_ps(*p); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
};

}  // namespace

#include "kernels/cpu/gemm_float_x86.inc"

}  // namespace strata::kernels::gemm_float_avx512

namespace strata::kernels::detail {
const FloatGemmKernels* avx512_float_gemm(DType wtype) { return gemm_float_avx512::lookup(wtype); }
}  // namespace strata::kernels::detail
