// kernels/cpu/type_kernels_avx512.cpp — the AVX-512 kernel table: the shared 256-bit kernels
// of type_kernels_x86.inc compiled with AVX512-VL VNNI (vpdpbusd / vpdpwssd replace maddubs +
// madd, and 32 vector registers leave room for the 4-token kernels' accumulators).
#include <immintrin.h>

#include <cstddef>
#include <cstring>
#include <type_traits>

// GCC 12 reports the _mm512_undefined_* inside _mm512_cast*_*512 as (maybe-)uninitialized.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include "kernels/cpu/blocks.h"
#include "kernels/cpu/dot_order.h"
#include "kernels/cpu/fp16.h"
#include "kernels/cpu/ref_kernels.h"
#include "kernels/cpu/type_kernels.h"
#include "kernels/cpu/weight_prefetch.h"

namespace strata::kernels::avx512_impl {
#include "kernels/cpu/type_kernels_x86.inc"
}  // namespace strata::kernels::avx512_impl

namespace strata::kernels::detail {
const TypeKernels* avx512_kernels(DType t) { return avx512_impl::x86_tables::lookup(t); }
VecDot4 avx512_vec_dot4(DType t) { return avx512_impl::x86_tables::lookup4(t); }
}  // namespace strata::kernels::detail
