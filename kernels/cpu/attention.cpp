// kernels/cpu/attention.cpp — attention over F32 / F16 / Q8_0 KV caches (see attention.h).
#include "kernels/cpu/attention.h"

#include <cmath>
#include <cstring>

#include "kernels/cpu/ops_f32.h"
#include "kernels/cpu/quant.h"
#include "kernels/cpu/type_kernels.h"

namespace strata::kernels {

int64_t attention_query_bytes(DType kv_type, int64_t head_dim) {
  if (kv_type == DType::F32) return 0;
  return row_bytes(vec_dot_type(kv_type), head_dim);
}

bool kv_type_supported(DType kv_type, int64_t head_dim) {
  switch (kv_type) {
    case DType::F32:
    case DType::F16: return head_dim > 0;
    case DType::Q8_0: return head_dim > 0 && head_dim % 32 == 0;
    default: return false;
  }
}

void attention_head(const float* q, const KvHeadRows& k, const KvHeadRows& v, int64_t p_begin, int64_t p_end,
                    int64_t head_dim, float scale, Isa isa, const AttentionScratch& scratch, float* out) {
  const int64_t n = p_end - p_begin;
  float* scores = scratch.scores;
  for (int64_t d = 0; d < head_dim; ++d) out[d] = 0.0f;
  if (n <= 0) return;
  if (k.type == DType::F32) {
    for (int64_t p = 0; p < n; ++p) {
      const float* kp = reinterpret_cast<const float*>(k.base + (p_begin + p) * k.row_stride_bytes);
      float dot = 0.0f;
      for (int64_t d = 0; d < head_dim; ++d) dot += q[d] * kp[d];
      scores[p] = dot * scale;
    }
  } else {
    const TypeKernels& tk = best_type_kernels(k.type, isa);
    const TypeKernels& qk = best_type_kernels(vec_dot_type(k.type), isa);
    qk.quantize_row(q, scratch.query, head_dim);
    for (int64_t p = 0; p < n; ++p) {
      float dot = 0.0f;
      tk.vec_dot(head_dim, k.base + (p_begin + p) * k.row_stride_bytes, scratch.query, &dot);
      scores[p] = dot * scale;
    }
  }
  softmax_f32(scores, n);
  if (v.type == DType::F32) {
    for (int64_t p = 0; p < n; ++p) {
      const float* vp = reinterpret_cast<const float*>(v.base + (p_begin + p) * v.row_stride_bytes);
      const float w = scores[p];
      for (int64_t d = 0; d < head_dim; ++d) out[d] += w * vp[d];
    }
  } else {
    const TypeKernels& tv = best_type_kernels(v.type, isa);
    float* row = scratch.value_row;
    for (int64_t p = 0; p < n; ++p) {
      tv.dequantize_row(v.base + (p_begin + p) * v.row_stride_bytes, row, head_dim);
      const float w = scores[p];
      for (int64_t d = 0; d < head_dim; ++d) out[d] += w * row[d];
    }
  }
}

void store_kv_row(const float* src, DType type, int64_t n, Isa isa, void* dst) {
  if (type == DType::F32) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  best_type_kernels(type, isa).quantize_row(src, dst, n);
}

}  // namespace strata::kernels
