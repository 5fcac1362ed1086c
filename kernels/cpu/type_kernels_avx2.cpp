// kernels/cpu/type_kernels_avx2.cpp — the AVX2 (+FMA, F16C) kernel table: the shared 256-bit
// kernels of type_kernels_x86.inc compiled with maddubs + madd for the int8 dots.
#include <immintrin.h>

#include <cstddef>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/blocks.h"
#include "kernels/cpu/dot_order.h"
#include "kernels/cpu/fp16.h"
#include "kernels/cpu/ref_kernels.h"
#include "kernels/cpu/type_kernels.h"
#include "kernels/cpu/weight_prefetch.h"

namespace strata::kernels::avx2_impl {
#include "kernels/cpu/type_kernels_x86.inc"
}  // namespace strata::kernels::avx2_impl

namespace strata::kernels::detail {
const TypeKernels* avx2_kernels(DType t) { return avx2_impl::x86_tables::lookup(t); }
VecDot4 avx2_vec_dot4(DType t) { return avx2_impl::x86_tables::lookup4(t); }
}  // namespace strata::kernels::detail
