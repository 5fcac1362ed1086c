// kernels/cpu/attention_block.h — the inner kernel of kernels/cpu/attention.cpp: one key block
// against a set of query rows, giving each row its partial softmax. Variants: scalar (the
// reference, attention_block.cpp) and AVX2 + FMA (attention_block_avx2.cpp: 2 rows x 4 keys of
// dot products per step, 8-wide exp, 2 rows x 32 floats of value accumulation per step), and,
// for decode, an AVX2 variant that reads the block straight from an F32 / F16 / Q8_0 cache
// (converting each element in registers, once per group of 4 query rows) instead of from f32
// copies: the same arithmetic, so the same bits. AVX-512 (attention_block_avx512.cpp): the same
// pair of kernels 16 floats wide, for head sizes that are multiples of 16; its scores are summed
// in another order than the AVX2 kernels', so a caller takes both kernels from one family
// (attention_block_family). No engine types.
#pragma once

#include <cstdint>

#include "kernels/cpu/dtype.h"
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
  float softcap = 0.0f;  // > 0: each scaled score s becomes kernels::softcap(s, softcap)
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
void attention_block_avx512(const AttentionBlockArgs& a);  // a.hdp a multiple of 16

// One KV head's key block in the cache, as it is stored: key j of the block (j in [0, 64)) is
// head_dim elements of `type` at k + j * row_stride_bytes, value j likewise at v. Only the keys in
// [min lo, max hi) of the rows are read (AVX-512: from min lo rounded down to a multiple of 4), so
// the rows past the cache's last position are never touched.
struct CacheBlock {
  const uint8_t* k = nullptr;
  const uint8_t* v = nullptr;
  int64_t row_stride_bytes = 0;
  DType type = DType::F16;  // F32, F16 or Q8_0
  // Bytes [0, next_bytes) from next_k and from next_v (in the cache: what the caller runs next)
  // are prefetched into L2 while this block runs, spread over its keys (AVX2: during the scores;
  // AVX-512: half during the scores, half during the values); none when next_bytes is 0.
  const uint8_t* next_k = nullptr;
  const uint8_t* next_v = nullptr;
  int64_t next_bytes = 0;
};

// attention_block_avx2 on a block read from the cache (a.k and a.v are unused; a.hdp is the head
// size): for the same rows and the same values it gives bit-identical m, l and acc, so decode
// (this kernel) and prompts (f32 copies of the block) keep giving a token the same output.
void attention_block_cache_avx2(const AttentionBlockArgs& a, const CacheBlock& kv);
// The same for attention_block_avx512.
void attention_block_cache_avx512(const AttentionBlockArgs& a, const CacheBlock& kv);
using AttentionCacheBlockFn = void (*)(const AttentionBlockArgs&, const CacheBlock&);

// The block kernels a caller uses for one head size: the f32-copy kernel and, where the family has
// one, its in-place twin (bit-identical to it).
struct AttentionBlockFamily {
  Isa isa = Isa::Scalar;                  // Scalar, Avx2 or Avx512
  AttentionBlockFn block = nullptr;        // on f32 copies
  AttentionCacheBlockFn cache = nullptr;   // in place; nullptr for the scalar family
};

// The widest family `isa` allows on this CPU for heads of head_dim: AVX-512 when isa is Avx512 and
// head_dim is a multiple of 16, else AVX2 when isa is not Scalar, else scalar.
AttentionBlockFamily attention_block_family(Isa isa, int64_t head_dim);

// Whether the family's in-place kernel takes heads of this type and size (F32 / F16: head_dim a
// multiple of 8 for AVX2, of 16 for AVX-512; Q8_0: of 32) on this CPU.
bool attention_block_cache_supported(Isa family, DType type, int64_t head_dim);

}  // namespace strata::kernels::detail
