// kernels/cpu/quant.cpp — the public row conversions and the scalar kernel table.
#include "kernels/cpu/quant.h"

#include "kernels/cpu/ref_kernels.h"
#include "kernels/cpu/type_kernels.h"

namespace strata::kernels {
namespace {

#define STRATA_REF_TABLE(T) \
  TypeKernels { &ref::dequantize_##T, &ref::quantize_##T, &ref::vec_dot_##T }
#define STRATA_READ_ONLY_TABLE(T) \
  TypeKernels { &ref::dequantize_##T, nullptr, &ref::vec_dot_##T }

const TypeKernels kScalar[] = {
    STRATA_REF_TABLE(f32),  STRATA_REF_TABLE(f16),  STRATA_REF_TABLE(bf16), STRATA_REF_TABLE(q4_0),
    STRATA_REF_TABLE(q4_1), STRATA_REF_TABLE(q5_0), STRATA_REF_TABLE(q5_1), STRATA_REF_TABLE(q8_0),
    STRATA_REF_TABLE(q8_1), STRATA_REF_TABLE(q2_k), STRATA_REF_TABLE(q3_k), STRATA_REF_TABLE(q4_k),
    STRATA_REF_TABLE(q5_k), STRATA_REF_TABLE(q6_k), STRATA_REF_TABLE(q8_k),
    // 15..: the IQ, ternary and MXFP4 types (ref_iquants.cpp); the grid types have no quantizer.
    STRATA_REF_TABLE(iq4_nl), STRATA_REF_TABLE(iq4_xs), STRATA_REF_TABLE(tq1_0), STRATA_REF_TABLE(tq2_0),
    STRATA_REF_TABLE(mxfp4),
    STRATA_READ_ONLY_TABLE(iq2_xxs), STRATA_READ_ONLY_TABLE(iq2_xs), STRATA_READ_ONLY_TABLE(iq2_s),
    STRATA_READ_ONLY_TABLE(iq3_xxs), STRATA_READ_ONLY_TABLE(iq3_s), STRATA_READ_ONLY_TABLE(iq1_s),
    STRATA_READ_ONLY_TABLE(iq1_m),
};
#undef STRATA_REF_TABLE
#undef STRATA_READ_ONLY_TABLE

int scalar_index(DType t) {
  switch (t) {
    case DType::F32: return 0;
    case DType::F16: return 1;
    case DType::BF16: return 2;
    case DType::Q4_0: return 3;
    case DType::Q4_1: return 4;
    case DType::Q5_0: return 5;
    case DType::Q5_1: return 6;
    case DType::Q8_0: return 7;
    case DType::Q8_1: return 8;
    case DType::Q2_K: return 9;
    case DType::Q3_K: return 10;
    case DType::Q4_K: return 11;
    case DType::Q5_K: return 12;
    case DType::Q6_K: return 13;
    case DType::Q8_K: return 14;
    case DType::IQ4_NL: return 15;
    case DType::IQ4_XS: return 16;
    case DType::TQ1_0: return 17;
    case DType::TQ2_0: return 18;
    case DType::MXFP4: return 19;
    case DType::IQ2_XXS: return 20;
    case DType::IQ2_XS: return 21;
    case DType::IQ2_S: return 22;
    case DType::IQ3_XXS: return 23;
    case DType::IQ3_S: return 24;
    case DType::IQ1_S: return 25;
    case DType::IQ1_M: return 26;
  }
  return -1;
}

}  // namespace

const TypeKernels* type_kernels(DType t, Isa isa) {
  if (!isa_supported(isa)) return nullptr;
  switch (isa) {
    case Isa::Scalar: {
      const int i = scalar_index(t);
      return i < 0 ? nullptr : &kScalar[i];
    }
    case Isa::Avx2: return detail::avx2_kernels(t);
    case Isa::Avx512: return detail::avx512_kernels(t);
  }
  return nullptr;
}

const TypeKernels& best_type_kernels(DType t, Isa isa) {
  for (int level = static_cast<int>(isa); level > 0; --level) {
    const TypeKernels* k = type_kernels(t, static_cast<Isa>(level));
    if (k) return *k;
  }
  return *type_kernels(t, Isa::Scalar);
}

VecDot4 vec_dot4_kernel(DType t, Isa isa) {
  if (!isa_supported(isa)) return nullptr;
  switch (isa) {
    case Isa::Scalar: return nullptr;
    case Isa::Avx2: return detail::avx2_vec_dot4(t);
    case Isa::Avx512: return detail::avx512_vec_dot4(t);
  }
  return nullptr;
}

void dequantize_row(DType t, const void* src, float* dst, int64_t n) {
  const TypeKernels* k = type_kernels(t, Isa::Scalar);
  if (k) k->dequantize_row(src, dst, n);
}

void quantize_row(DType t, const float* src, void* dst, int64_t n) {
  const TypeKernels* k = type_kernels(t, Isa::Scalar);
  if (k && k->quantize_row) k->quantize_row(src, dst, n);
}

bool can_quantize(DType t) {
  const TypeKernels* k = type_kernels(t, Isa::Scalar);
  return k && k->quantize_row;
}

DType vec_dot_type(DType w) {
  switch (w) {
    case DType::F32:
    case DType::F16:
    case DType::BF16: return DType::F32;
    case DType::Q4_0:
    case DType::Q5_0:
    case DType::Q8_0: return DType::Q8_0;
    case DType::Q4_1:
    case DType::Q5_1:
    case DType::Q8_1: return DType::Q8_1;
    case DType::Q2_K:
    case DType::Q3_K:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
    case DType::Q8_K: return DType::Q8_K;
    // Decoded block by block and dotted with f32 activations (ref_iquants.cpp).
    case DType::IQ2_XXS:
    case DType::IQ2_XS:
    case DType::IQ2_S:
    case DType::IQ3_XXS:
    case DType::IQ3_S:
    case DType::IQ1_S:
    case DType::IQ1_M:
    case DType::IQ4_NL:
    case DType::IQ4_XS:
    case DType::TQ1_0:
    case DType::TQ2_0:
    case DType::MXFP4: return DType::F32;
  }
  return DType::F32;
}

}  // namespace strata::kernels
