// kernels/cpu/type_kernels_avx512.cpp — the AVX-512 kernel table: the shared 256-bit kernels
// of type_kernels_x86.inc compiled with AVX512-VL VNNI (vpdpbusd / vpdpwssd replace maddubs +
// madd, and 32 vector registers leave room for the 4-token kernels' accumulators), plus 512-bit
// replacements where decode is compute-bound rather than memory-bound (Q4_K: half the
// instructions per block of the 256-bit kernel).
#include <immintrin.h>

#include <cstring>

#include "kernels/cpu/blocks.h"
#include "kernels/cpu/fp16.h"
#include "kernels/cpu/ref_kernels.h"
#include "kernels/cpu/type_kernels.h"

namespace strata::kernels::avx512_impl {
#include "kernels/cpu/type_kernels_x86.inc"

// ---- 512-bit kernels that replace entries of the shared 256-bit table -----------------------
namespace zmm {

// Q4_K x Q8_K, 64 elements per step: the 32 packed bytes of a chunk are broadcast to both
// halves of a zmm, the low half keeps the low nibbles (elements 0..31 of the chunk), the high
// half the high nibbles (32..63), so the activations load straight from y.qs. maddubs gives
// int16 pair sums (no saturation: 2 * 15 * 127), vpdpwssd applies the group scales.
void vec_dot_q4_k(int64_t n, const void* w, const void* a, float* out) {
  using namespace strata::kernels;
  const BlockQ4_K* x = static_cast<const BlockQ4_K*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(a);
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  // vpshufb controls: 128-bit lanes 0-1 take int16 scale 2c, lanes 2-3 scale 2c + 1.
  __m512i sel[4];
  for (int c = 0; c < 4; ++c) {
    const __m128i lo = _mm_set1_epi16(static_cast<short>((4 * c) | ((4 * c + 1) << 8)));
    const __m128i hi = _mm_set1_epi16(static_cast<short>((4 * c + 2) | ((4 * c + 3) << 8)));
    sel[c] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set_m128i(lo, lo)), _mm256_set_m128i(hi, hi), 1);
  }
  // Scale unpacking in SIMD (bytes of the 12 packed scale bytes, see k4_scale_min):
  // A: b0-3 (sc 0-3), b8-11 (sc 4-7 low nibble), b4-7 (m 0-3), b8-11 (m 4-7 high nibble)
  // B: b0-3 (sc 4-7 top bits) at bytes 4-7, b4-7 (m 4-7 top bits) at 12-15, zeros elsewhere.
  const __m128i idx_a = _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11);
  const __m128i idx_b = _mm_setr_epi8(-1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, 4, 5, 6, 7);
  const __m128i mask_a = _mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0);
  const __m128i mask_c = _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15);
  const __m128i three = _mm_set1_epi8(3);
  __m512 acc = _mm512_setzero_ps();
  __m256 macc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / 256; ++i) {
    __m128i v;  // the 12 scale bytes (and 4 bytes of qs, unused)
    std::memcpy(&v, x[i].scales, 16);
    const __m128i sa = _mm_shuffle_epi8(v, idx_a), sb = _mm_shuffle_epi8(v, idx_b);
    const __m128i scm = _mm_or_si128(
        _mm_or_si128(_mm_and_si128(sa, mask_a), _mm_and_si128(_mm_srli_epi16(sa, 4), mask_c)),
        _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(sb, 6), three), 4));  // sc 0-7, m 0-7
    // d * y.d and dmin * y.d.
    uint32_t dd;
    std::memcpy(&dd, &x[i].d, 4);
    const __m128 dm = _mm_mul_ps(_mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(dd))), _mm_set1_ps(y[i].d));
    // mins: sum over groups of m[g] * (bsum[2g] + bsum[2g + 1]).
    const __m256i mp = _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_unpackhi_epi8(scm, scm)), loadu256(y[i].bsums));
    macc = _mm256_fmadd_ps(_mm256_broadcastss_ps(_mm_movehdup_ps(dm)), _mm256_cvtepi32_ps(mp), macc);
    const __m512i sc16 = _mm512_broadcast_i32x4(_mm_cvtepu8_epi16(scm));
    __m512i isum[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
    for (int c = 0; c < 4; ++c) {
      const __m512i b = _mm512_broadcast_i64x4(loadu256(x[i].qs + 32 * c));
      const __m512i q = _mm512_and_si512(_mm512_mask_srli_epi16(b, 0xFFFF0000u, b, 4), m4);
      const __m512i p = _mm512_maddubs_epi16(q, _mm512_loadu_si512(y[i].qs + 64 * c));
      isum[c & 1] = _mm512_dpwssd_epi32(isum[c & 1], p, _mm512_shuffle_epi8(sc16, sel[c]));
    }
    acc = _mm512_fmadd_ps(_mm512_broadcastss_ps(dm), _mm512_cvtepi32_ps(_mm512_add_epi32(isum[0], isum[1])), acc);
  }
  *out = _mm512_reduce_add_ps(acc) - hsum_ps(macc);
}

}  // namespace zmm

const TypeKernels kQ4_K_512{&strata::kernels::ref::dequantize_q4_k, &strata::kernels::ref::quantize_q4_k,
                            &zmm::vec_dot_q4_k};

// The 256-bit table with the 512-bit replacements.
const TypeKernels* lookup512(DType t) {
  switch (t) {
    case DType::Q4_K: return &kQ4_K_512;
    default: return x86_tables::lookup(t);
  }
}
}  // namespace strata::kernels::avx512_impl

namespace strata::kernels::detail {
const TypeKernels* avx512_kernels(DType t) { return avx512_impl::lookup512(t); }
VecDot4 avx512_vec_dot4(DType t) { return avx512_impl::x86_tables::lookup4(t); }
}  // namespace strata::kernels::detail
