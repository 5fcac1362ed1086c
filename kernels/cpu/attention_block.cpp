// kernels/cpu/attention_block.cpp — the scalar reference of the attention block kernel (see
// attention_block.h): plain loops, std::exp, float accumulation in key order; which family of
// kernels a head size takes, and which cache blocks its in-place kernel reads.
#include <cmath>
#include <limits>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/attention_block.h"
#include "kernels/common/scalar_math.h"

namespace strata::kernels::detail {

void attention_block_scalar(const AttentionBlockArgs& a) {
  constexpr int64_t B = kAttentionKeyBlock;
  const int64_t hdp = a.hdp;
  for (int64_t r = 0; r < a.n_rows; ++r) {
    const float* q = a.q + r * hdp;
    float* p = a.p + r * B;
    const int64_t lo = a.lo[r], hi = a.hi[r];
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t j = lo; j < hi; ++j) {
      const float* k = a.k + j * hdp;
      float dot = 0.0f;
      for (int64_t d = 0; d < hdp; ++d) dot += q[d] * k[d];
      p[j] = dot * a.scale;
      if (a.softcap > 0.0f) p[j] = softcap(p[j], a.softcap);
      m = p[j] > m ? p[j] : m;
    }
    float l = 0.0f;
    for (int64_t j = lo; j < hi; ++j) {
      p[j] = std::exp(p[j] - m);
      l += p[j];
    }
    float* acc = a.acc + r * hdp;
    for (int64_t d = 0; d < hdp; ++d) acc[d] = 0.0f;
    for (int64_t j = lo; j < hi; ++j) {
      const float* v = a.v + j * hdp;
      const float w = p[j];
      for (int64_t d = 0; d < hdp; ++d) acc[d] += w * v[d];
    }
    a.m[r] = m;
    a.l[r] = l;
  }
}

AttentionBlockFamily attention_block_family(Isa isa, int64_t head_dim) {
  if (isa == Isa::Avx512 && isa_supported(Isa::Avx512) && head_dim > 0 && head_dim % 16 == 0)
    return {Isa::Avx512, &attention_block_avx512, &attention_block_cache_avx512};
  if (isa != Isa::Scalar && isa_supported(Isa::Avx2))
    return {Isa::Avx2, &attention_block_avx2, &attention_block_cache_avx2};
  return {Isa::Scalar, &attention_block_scalar, nullptr};
}

bool attention_block_cache_supported(Isa family, DType type, int64_t head_dim) {
  if (family == Isa::Scalar || !isa_supported(family) || head_dim <= 0) return false;
  const int64_t lanes = family == Isa::Avx512 ? 16 : 8;
  switch (type) {
    case DType::F32:
    case DType::F16: return head_dim % lanes == 0;
    case DType::Q8_0: return head_dim % 32 == 0;
    default: return false;
  }
}

}  // namespace strata::kernels::detail
