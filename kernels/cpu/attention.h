// kernels/cpu/attention.h — attention of one query head over a range of a KV cache whose
// elements are F32, F16 or Q8_0, and the store of new rows into such a cache. Knows buffers,
// shapes and element types, not models. F32 is the reference; F16 and Q8_0 rows are read in
// place (the query is converted once to the cache's dot-product type, each value row is
// dequantized into a [head_dim] scratch row), never by converting the whole cache to F32.
#pragma once

#include <cstdint>

#include "kernels/cpu/dtype.h"
#include "kernels/cpu/isa.h"

namespace strata::kernels {

// The rows of one KV head in a cache: position p starts at byte p * row_stride_bytes from base.
struct KvHeadRows {
  const uint8_t* base = nullptr;
  DType type = DType::F32;
  int64_t row_stride_bytes = 0;
};

// Per-thread scratch of attention_head: scores [n_ctx] floats, and for quantized caches the
// converted query (row_bytes(vec_dot_type, head_dim) bytes) and one dequantized value row.
struct AttentionScratch {
  float* scores = nullptr;     // >= p_end - p_begin floats
  void* query = nullptr;       // >= attention_query_bytes(type, head_dim) bytes (unused for F32)
  float* value_row = nullptr;  // >= head_dim floats (unused for F32)
};
int64_t attention_query_bytes(DType kv_type, int64_t head_dim);

// Whether a cache of this type can hold heads of head_dim elements (F32, F16: any; Q8_0: head_dim
// a multiple of 32).
bool kv_type_supported(DType kv_type, int64_t head_dim);

// out[head_dim] = sum_p softmax_p(scale * q·k_p) v_p over positions [p_begin, p_end).
void attention_head(const float* q, const KvHeadRows& k, const KvHeadRows& v, int64_t p_begin, int64_t p_end,
                    int64_t head_dim, float scale, Isa isa, const AttentionScratch& scratch, float* out);

// Writes n floats (one position's keys or values of all local heads) as elements of `type` at dst.
void store_kv_row(const float* src, DType type, int64_t n, Isa isa, void* dst);

}  // namespace strata::kernels
