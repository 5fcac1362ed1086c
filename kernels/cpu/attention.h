// kernels/cpu/attention.h — attention of a batch of query tokens over a KV cache whose elements
// are F32, F16 or Q8_0, and the store of new rows into such a cache. Knows buffers, shapes and
// element types, not models. Depends on dtype.h, isa.h and thread_pool.h.
//
// One algorithm for prompts and decode (attention_block.h holds the per-ISA inner kernels):
// keys are taken in blocks of kAttentionKeyBlock positions aligned to absolute positions; each
// block gives every query row a partial softmax (its own max m_b, sum l_b, weighted values
// acc_b), and a row's partials are merged in block order with the log-sum-exp rule
//   m = max(m, m_b);  l = l e^(m_old - m) + l_b e^(m_b - m);  acc = acc e^(m_old - m) + acc_b e^(m_b - m)
// and out = acc / l. A block is read from the cache and converted to f32 once per group of
// query rows that share it (all heads of a KV head's group and, in prompts, a tile of tokens),
// never the whole cache at once; there is no [n x n] score matrix.
//   - Decode (1 token): the key blocks are split across the threads (each block all KV heads;
//     with attention_many, the blocks of several sequences' tokens at once); the partials are
//     merged afterwards, per head, in block order. With AVX2 a block is read
//     where it lies in the cache (F32 / F16 / Q8_0 converted in registers, no f32 copy) while the
//     thread's next block is prefetched as one sequential sweep: decode at depth is a stream
//     of the whole cache, and without the prefetch it waited on memory at every row.
//   - Prompts: the (KV head, tile of query tokens) pairs are split across the threads (longest
//     first); each walks its key blocks in order, skipping blocks past its last token (causal)
//     or before its first token's window.
// Since a row's partials and their merge never depend on which other rows share the block, a
// token gets bit-identical output whether it comes alone, in a prompt, or in any chunking of one.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/cpu/dtype.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/thread_pool.h"

namespace strata::kernels {

// Keys per block (positions [b * 64, (b + 1) * 64)): a 64 x 128-float K and V block fit in L2,
// a 64 x 64 one in L1.
inline constexpr int64_t kAttentionKeyBlock = 64;

// A KV cache of one sequence: position p of KV head j starts at byte row_of(p) * row_stride_bytes +
// j * head_stride_bytes from k (keys) and v (values).
//   cells == 0: row_of(p) = p, one row per position.
//   cells > 0: a ring of `cells` rows, row_of(p) = p mod cells (sliding-window layers keep only
//   their window plus one batch). cells is a multiple of kAttentionKeyBlock, so a key block's
//   positions are consecutive rows; attention reads positions [begin, end) of each token (its
//   window), and these must be the last positions written to their rows: end - begin <= cells.
struct KvCacheView {
  const uint8_t* k = nullptr;
  const uint8_t* v = nullptr;
  DType type = DType::F32;
  int64_t row_stride_bytes = 0;
  int64_t head_stride_bytes = 0;
  int64_t cells = 0;
  int64_t row_of(int64_t position) const { return cells > 0 ? position % cells : position; }
};

struct AttentionShape {
  int64_t n_tokens = 0;    // query tokens, at positions pos0 .. pos0 + n_tokens - 1
  int64_t pos0 = 0;
  int64_t n_heads = 0;     // query heads; head h reads KV head h / (n_heads / n_kv_heads)
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  float scale = 1.0f;      // scores are scale * q.k
  // Causal: token t sees positions [begin, pos0 + t + 1); otherwise every token sees
  // [begin, pos0 + n_tokens). begin = max(0, end - window) when window > 0, else 0.
  bool causal = true;
  int64_t window = 0;
  float softcap = 0.0f;    // > 0: scores become softcap * tanh(score / softcap) (gemma2)
  // Attention sinks (gpt-oss): [n_heads] logits, one per query head, that join each row's softmax
  // denominator with no value (exp(sink - max) added to the sum, the max taken over the sink too).
  // Merged after the key blocks, in the same place on every path. Null: none.
  const float* sinks = nullptr;
};

// Scratch of attention(): per-thread blocks and, for decode, the per-block partials. Grows on
// first use to the largest shape seen and is reused (no allocation per call after that). One
// attention() at a time per workspace.
struct AttentionWorkspace {
  std::vector<float> per_thread;  // [threads][per_thread_floats]
  std::vector<float> partials;    // decode: [n_heads][n_blocks][padded head_dim + 2]
  std::vector<int32_t> bounds;    // [threads][2][rows]: each row's valid keys within a block
};

// Whether a cache of this type can hold heads of head_dim elements (F32, F16: any; Q8_0: head_dim
// a multiple of 32).
bool kv_type_supported(DType kv_type, int64_t head_dim);

// out[t][h * head_dim + d] (rows of n_heads * head_dim floats, like q) = softmax attention of
// query q[t][h * head_dim ..] over the cache positions the shape gives it. The cache must hold
// every position up to pos0 + n_tokens - 1 (store_kv_row them first). isa picks the inner
// kernels (Scalar: the reference; Avx512 runs the AVX2 kernels). Runs on the pool's threads.
void attention(ThreadPool& pool, const float* q, const KvCacheView& kv, const AttentionShape& shape, Isa isa,
               AttentionWorkspace& ws, float* out);

// One sequence's attention() arguments, for attention_many.
struct AttentionJob {
  const float* q = nullptr;
  KvCacheView kv;
  AttentionShape shape;
  float* out = nullptr;
};

// Every job's out, bit for bit what attention() gives it alone (the caches hold the jobs' new
// positions already). The jobs of one query token (a batched decode step: one token of each
// sequence) run together, up to 16 at a time in one pair of parallel regions: every key block of
// every such job is an item for any thread, then every (job, head) merge. At short depth a
// sequence's keys are one block, so attention() per sequence would run each on one thread while
// the others wait. Jobs of several tokens run after them, one attention() each.
void attention_many(ThreadPool& pool, std::span<const AttentionJob> jobs, Isa isa, AttentionWorkspace& ws);

// Writes n floats (one position's keys or values of all local heads) as elements of `type` at dst.
void store_kv_row(const float* src, DType type, int64_t n, Isa isa, void* dst);

}  // namespace strata::kernels
