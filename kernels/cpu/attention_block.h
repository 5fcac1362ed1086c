// kernels/cpu/attention_block.h — the inner kernel of kernels/cpu/attention.cpp: one key block
// against a set of query rows, giving each row its partial softmax. Variants: scalar (the
// reference, attention_block.cpp) and AVX2 + FMA (attention_block_avx2.cpp: 2 rows x 4 keys of
// dot products per step, 8-wide exp, 2 rows x 32 floats of value accumulation per step). No
// engine types.
#pragma once

#include <cstdint>

#include "kernels/cpu/isa.h"

namespace strata::kernels::detail {

// All f32 rows are padded to hdp floats (head_dim rounded up to 8), the padding zero.
struct AttentionBlockArgs {
  const float* q = nullptr;   // [n_rows][hdp]
  const float* k = nullptr;   // [kAttentionKeyBlock][hdp]: rows < max(hi) valid, the others finite
  const float* v = nullptr;   // [kAttentionKeyBlock][hdp]: rows < max(hi) valid
  int64_t n_rows = 0;
  int64_t hdp = 0;
  const int32_t* lo = nullptr;  // [n_rows]: row r sees keys [lo[r], hi[r]) of the block
  const int32_t* hi = nullptr;  //   (lo < hi for every row: callers pass only rows that see a key)
  float scale = 1.0f;
  float* p = nullptr;    // [n_rows][kAttentionKeyBlock] scratch (scores, then probabilities)
  float* m = nullptr;    // [n_rows] out: the row's largest score in the block
  float* l = nullptr;    // [n_rows] out: sum of e^(score - m)
  float* acc = nullptr;  // [n_rows][hdp] out: sum of e^(score - m) v
};

// Per-row results depend only on that row's q, lo, hi and the block (not on the other rows):
// the determinism attention.h promises rests on this.
using AttentionBlockFn = void (*)(const AttentionBlockArgs&);

void attention_block_scalar(const AttentionBlockArgs& a);
void attention_block_avx2(const AttentionBlockArgs& a);

}  // namespace strata::kernels::detail
