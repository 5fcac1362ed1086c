// kernels/cuda/attention.cu — causal multi-head attention with GQA over an f32 or f16 KV cache:
// the write of the new keys / values into the cache, then attention of every new token.
//
// Variants:
//   kv_write_kernel<F16>      new K / V rows -> cache positions [pos0, pos0 + n_tokens).
//   attn_kernel<D, F16>       one kernel for decode and prompts: a block takes 16 query rows
//                             (token, query head) that share one KV head (GQA: the group's heads
//                             of consecutive tokens), stages K / V tiles in shared memory once for
//                             all 16, and runs an online (flash-style) softmax in f32, base 2.
//                             D = head_dim rounded up to 64, 128 or 256 (zero-padded).
//   attn_merge_kernel         the split form's second half (below).
//   attention_wide.cu         heads longer than 256 (up to 1024: DeepSeek's latent rows of 576),
//                             a warp per query row, keys one at a time.
//
// Batch invariance (docs/backends.md): a row's result depends on its query and its keys only,
// never on the rows beside it, the call's size, the chunking of a prompt or the GPU's SM count.
// The keys are cut into chunks of kAttnChunk at absolute positions (0, 256, 512, ...); each chunk
// runs the online softmax over tiles that also start at absolute multiples of the tile size, from
// a fresh state, and the chunks' (max, sum, output) are folded in position order by AttnFold,
// skipping chunks in which the row sees no key. Tiles and chunks in which a row sees nothing leave
// its state untouched (bit for bit), so which block, chunk range or tile range covers the row does
// not matter. Two schedules compute exactly that:
//   in-block                  a block folds its chunks itself (prompts, and decode when the
//                             workspace is too small);
//   split                     decode-sized calls (<= kSplitMaxTokens tokens): one block per
//                             (row tile, KV head, chunk) writes the chunk's unnormalised output
//                             with its max and sum to the workspace, and attn_merge_kernel folds
//                             them in chunk order: more blocks for one token's long context. Past
//                             64 chunks (16k keys) of workspace, in rounds, the rows' running
//                             state kept in the workspace between them: the same folds in the same
//                             order, so the workspace stays bounded and the bits do not move.
#include "kernels/cuda/attention_wide.h"
#include "kernels/cuda/common.cuh"

namespace strata::kernels::cuda {
namespace {

constexpr int kAttnThreads = 128;
constexpr int kAttnRows = 16;          // query rows per block (8 threads per row)
constexpr int64_t kSplitMaxTokens = 8;  // the split schedule is for decode-sized calls only
constexpr int64_t kAttnChunk = 256;      // keys per chunk, at absolute positions; a multiple of every tile
constexpr int64_t kMaxRoundChunks = 64;  // chunks one split round holds (the workspace's size); more: rounds

template <int D>
struct AttnGeom {
  static constexpr int kKT = D == 64 ? 64 : (D == 128 ? 32 : 16);  // keys per tile
  static constexpr int kKPT = kKT / 8;                             // scores per thread per tile
  static constexpr int kRowPad = D + 4;                            // K / V tile row (floats), odd in 16 B units
  static constexpr int kOPT = D / 8;                               // output dims per thread
  static constexpr int kPRow = kKT + 4;                            // probability tile row (floats)
};

struct AttnParams {
  const float* q;                // [n_tokens][n_heads * head_dim]
  const void* k_cache;           // position p of KV head j at cache_row(p) * kv_stride + j * head_dim
  const void* v_cache;
  int64_t kv_stride, n_tokens, pos0, n_heads, n_kv_heads, head_dim, group;  // group = n_heads / n_kv_heads
  int64_t kv_cells;              // 0: row p holds position p; else a ring of kv_cells rows
  int64_t window;                // 0: all keys up to the row's last; else only its last `window` keys
  bool causal;                   // false: every row's last key is pos0 + n_tokens - 1
  float q_scale;                 // scale * log2(e): scores in base 2
  float softcap2;                // softcap * log2(e) (0: none): base-2 scores s become softcap2 tanh(s / softcap2)
  const float* sinks;            // [n_heads] natural-log sink logits (null: none), folded once per row at the end
  bool split;                    // split schedule: block z writes chunk chunk0 + z's partial
  int64_t chunk0;                // split: block z takes chunk chunk0 + z (keys [kAttnChunk (chunk0 + z), +kAttnChunk))
  float* out;                    // [n_tokens][n_heads * head_dim] (in-block)
  float* part_o;                 // [gridDim.z][n_tokens * n_heads][head_dim] (split)
  float* part_ml;                // [gridDim.z][n_tokens * n_heads][2]: the chunk's max (base 2), sum
};

static_assert(kAttnChunk % 64 == 0, "chunks hold whole tiles of every head size");

// Folds a chunk's (m, l, o) into a row's running (M, L, O): M' = max(M, m), L' = L 2^(M - M') +
// l 2^(m - M'), O' likewise. The one definition both schedules use, with explicit roundings (no
// contraction choice left to the compiler), so in-block and split give the same bits. A chunk with
// m = -inf (no key seen) is never folded; the first fold (M = -inf) takes the chunk as it is
// (b = 2^0 = 1) and never reads the running value (in-block, that lives in the output row).
struct AttnFold {
  float a, b;  // weights of the running state and of the chunk
  bool first;
  __device__ __forceinline__ AttnFold(float& M, float m) : first(M == -INFINITY) {
    const float M_new = fmaxf(M, m);
    a = first ? 0.f : exp2f(M - M_new);
    b = exp2f(m - M_new);
    M = M_new;
  }
  __device__ __forceinline__ float operator()(float acc, float x) const {
    return first ? __fmul_rn(x, b) : __fmaf_rn(acc, a, __fmul_rn(x, b));
  }
};


__device__ __forceinline__ float4 load4_kv(const void* cache, int64_t off, bool f16) {
  if (f16) {
    const uint2 raw = __ldg(reinterpret_cast<const uint2*>(static_cast<const uint16_t*>(cache) + off));
    return make_float4(f16_to_f32(static_cast<uint16_t>(raw.x & 0xffffu)), f16_to_f32(static_cast<uint16_t>(raw.x >> 16)),
                       f16_to_f32(static_cast<uint16_t>(raw.y & 0xffffu)), f16_to_f32(static_cast<uint16_t>(raw.y >> 16)));
  }
  return __ldg(reinterpret_cast<const float4*>(static_cast<const float*>(cache) + off));
}

// K or V rows [k0, k0 + kKT) of KV head j into dst [kKT][kRowPad] (f32); rows at or past k_end
// and dims past head_dim are zero. Coalesced: consecutive threads take consecutive 4-element
// groups of a row.
template <int D, bool kF16>
__device__ __forceinline__ void attn_load_tile(float* dst, const void* cache, const AttnParams& p, int64_t j,
                                               int64_t k0, int64_t k_end) {
  using G = AttnGeom<D>;
  constexpr int kGroups = D / 4;
  static_assert(G::kKT * kGroups % kAttnThreads == 0);
  // The tile's first row, once: a tile (at most 64 keys) wraps a ring (a multiple of 64 rows) at
  // most once, so each key's row is that plus kk, less the ring's rows past its end (no division
  // per element: it cost the 64-wide kernel registers and spills).
  const int64_t row0 = cache_row(k0, p.kv_cells);
  const int64_t wrap = p.kv_cells > 0 ? p.kv_cells : INT64_MAX;
#pragma unroll
  for (int it = 0; it < G::kKT * kGroups / kAttnThreads; ++it) {
    const int e = threadIdx.x + it * kAttnThreads;
    const int kk = e / kGroups, d = (e % kGroups) * 4;
    const int64_t pos = k0 + kk;
    const int64_t row = row0 + kk >= wrap ? row0 + kk - wrap : row0 + kk;
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
    if (pos < k_end && d < p.head_dim) v = load4_kv(cache, row * p.kv_stride + j * p.head_dim + d, kF16);
    *reinterpret_cast<float4*>(dst + kk * G::kRowPad + d) = v;
  }
}

// Launch: grid (ceil(n_tokens * group / 16), n_kv_heads, chunks of the split round or 1), block 128.
// Block (x, j, z): query rows rho in [16x, 16x + 16) of KV head j, rho = t * group + g -> token t,
// query head j * group + g; in-block (split false): every chunk from the one holding its rows' first
// key (window) to the one holding their last, folded; split: chunk chunk0 + z alone, written to the
// workspace. Within a chunk, keys up to the last one of its last row.
// Thread: row r = tid / 8 and lane l8 = tid % 8 of that row's 8 threads. Per tile of kKT keys:
// stage K (shared, row-major, padded), each thread computes kKPT scores (keys l8 + 8k) from
// shared Q and K (float4), masks causally, the row's 8 threads agree on max / sum by shuffles,
// write the probabilities to shared memory; stage V in the same buffer; each thread accumulates
// its D / 8 output dims (float4 groups l8 * 4 + 32 i) in registers.
// Registers (ptxas, sm_90): 153 / 155 / 163 at D = 64 / 128 / 256, no spill, 3 blocks per SM.
// The minimum of 1 block lets ptxas use them; without it, it held the kernel to 128 and spilled.
template <int D, bool kF16>
__global__ void __launch_bounds__(kAttnThreads, 1) attn_kernel(const AttnParams p) {
  using G = AttnGeom<D>;
  __shared__ __align__(16) float qs[kAttnRows][D];
  __shared__ __align__(16) float kv[G::kKT * G::kRowPad];
  __shared__ __align__(16) float ps[kAttnRows][G::kPRow];

  const int tid = threadIdx.x, r = tid / 8, l8 = tid % 8;
  const int64_t j = blockIdx.y;
  const int64_t n_rows = p.n_tokens * p.group;
  const int64_t rho0 = static_cast<int64_t>(blockIdx.x) * kAttnRows;

  // Q rows, pre-scaled; zero for padding dims and rows past the end.
  static_assert(kAttnRows * D / 4 % kAttnThreads == 0);
#pragma unroll
  for (int it = 0; it < kAttnRows * D / 4 / kAttnThreads; ++it) {
    const int e = tid + it * kAttnThreads;
    const int rr = e / (D / 4), d = (e % (D / 4)) * 4;
    const int64_t rho = rho0 + rr;
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
    if (rho < n_rows && d < p.head_dim) {
      const int64_t t = rho / p.group, h = j * p.group + rho % p.group;
      v = __ldg(reinterpret_cast<const float4*>(p.q + (t * p.n_heads + h) * p.head_dim + d));
      v.x *= p.q_scale; v.y *= p.q_scale; v.z *= p.q_scale; v.w *= p.q_scale;
    }
    *reinterpret_cast<float4*>(&qs[rr][d]) = v;
  }

  const int64_t my_rho = rho0 + r;
  const bool row_ok = my_rho < n_rows;
  const int64_t my_t = row_ok ? my_rho / p.group : 0;
  const int64_t limit = !row_ok ? -1 : p.causal ? p.pos0 + my_t : p.pos0 + p.n_tokens - 1;  // last key this row sees
  const int64_t first = p.window > 0 ? limit - p.window + 1 : 0;  // first key this row sees
  const int64_t last_rho = (rho0 + kAttnRows < n_rows ? rho0 + kAttnRows : n_rows) - 1;
  const int64_t block_last_key = p.causal ? p.pos0 + last_rho / p.group : p.pos0 + p.n_tokens - 1;
  // With a window, keys before the block's first row's window are skipped (its rows' windows
  // start there or later); the first tile still starts at a multiple of the tile size.
  const int64_t block_first_key =
      p.window <= 0 ? 0 : (p.causal ? p.pos0 + (rho0 / p.group) : p.pos0 + p.n_tokens - 1) - p.window + 1;
  const int64_t key_lo = block_first_key > 0 ? block_first_key / G::kKT * G::kKT : 0;
  const int64_t key_end = block_last_key + 1;
  const bool split = p.split;
  const int64_t c_begin = split ? p.chunk0 + blockIdx.z : key_lo / kAttnChunk;
  const int64_t c_end = split ? c_begin + 1 : (key_end + kAttnChunk - 1) / kAttnChunk;

  // In-block, the row's folded state: M, L here, O in its own output row (each thread reads and
  // writes only its own dims there; registers for a second output vector would spill).
  float M = -INFINITY, L = 0.f;
  float m = -INFINITY, l = 0.f;  // the current chunk's online softmax
  float o[G::kOPT];
  // The row's output (row_ok rows): [t][h] row of head_dim floats. Recomputed where used: kept
  // live across the key loops it cost registers (and spills at D = 256).
  auto head_of_row = [&] { return j * p.group + my_rho % p.group; };
  auto out_of_row = [&] { return p.out + (my_t * p.n_heads + head_of_row()) * p.head_dim; };

  for (int64_t c = c_begin; c < c_end; ++c) {
    m = -INFINITY;
    l = 0.f;
#pragma unroll
    for (int i = 0; i < G::kOPT; ++i) o[i] = 0.f;
    const int64_t k_begin = c * kAttnChunk > key_lo ? c * kAttnChunk : key_lo;
    const int64_t k_end = (c + 1) * kAttnChunk < key_end ? (c + 1) * kAttnChunk : key_end;

    for (int64_t k0 = k_begin; k0 < k_end; k0 += G::kKT) {
      __syncthreads();  // Q staged (first tile) / previous V no longer read
      attn_load_tile<D, kF16>(kv, p.k_cache, p, j, k0, k_end);
      __syncthreads();

      float s[G::kKPT];
#pragma unroll
      for (int k = 0; k < G::kKPT; ++k) s[k] = 0.f;
#pragma unroll 4
      for (int d = 0; d < D; d += 4) {
        const float4 qv = *reinterpret_cast<const float4*>(&qs[r][d]);
#pragma unroll
        for (int k = 0; k < G::kKPT; ++k) {
          const float4 kv4 = *reinterpret_cast<const float4*>(&kv[(l8 + 8 * k) * G::kRowPad + d]);
          s[k] += qv.x * kv4.x + qv.y * kv4.y + qv.z * kv4.z + qv.w * kv4.w;
        }
      }
      float tile_max = -INFINITY;
#pragma unroll
      for (int k = 0; k < G::kKPT; ++k) {
        const int64_t pos = k0 + l8 + 8 * k;
        if (p.softcap2 > 0.f) s[k] = p.softcap2 * tanhf(s[k] / p.softcap2);
        if (pos >= k_end || pos > limit || pos < first) s[k] = -INFINITY;
        tile_max = fmaxf(tile_max, s[k]);
      }
#pragma unroll
      for (int off = 1; off < 8; off <<= 1) tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, off));
      const float m_new = fmaxf(m, tile_max);
      const bool none = m_new == -INFINITY;  // nothing visible yet for this row
      const float alpha = none ? 1.f : exp2f(m - m_new);
      float psum = 0.f;
#pragma unroll
      for (int k = 0; k < G::kKPT; ++k) {
        const float pk = none ? 0.f : exp2f(s[k] - m_new);
        ps[r][l8 + 8 * k] = pk;
        psum += pk;
      }
#pragma unroll
      for (int off = 1; off < 8; off <<= 1) psum += __shfl_xor_sync(0xffffffffu, psum, off);
      l = l * alpha + psum;
      m = m_new;
#pragma unroll
      for (int i = 0; i < G::kOPT; ++i) o[i] *= alpha;

      __syncthreads();  // K no longer read; probabilities visible
      attn_load_tile<D, kF16>(kv, p.v_cache, p, j, k0, k_end);
      __syncthreads();

#pragma unroll 2
      for (int kk = 0; kk < G::kKT; kk += 4) {
        const float4 pv = *reinterpret_cast<const float4*>(&ps[r][kk]);
        const float pc[4] = {pv.x, pv.y, pv.z, pv.w};
#pragma unroll
        for (int cc = 0; cc < 4; ++cc) {
          const float* vrow = kv + (kk + cc) * G::kRowPad + l8 * 4;
#pragma unroll
          for (int i = 0; i < D / 32; ++i) {
            const float4 vv = *reinterpret_cast<const float4*>(vrow + 32 * i);
            o[4 * i + 0] += pc[cc] * vv.x;
            o[4 * i + 1] += pc[cc] * vv.y;
            o[4 * i + 2] += pc[cc] * vv.z;
            o[4 * i + 3] += pc[cc] * vv.w;
          }
        }
      }
    }
    if (!split && m != -INFINITY) {
      const AttnFold fold(M, m);
      L = fold(L, l);
      if (row_ok) {
        float* const out = out_of_row();
#pragma unroll
        for (int i = 0; i < D / 32; ++i) {
          const int d = l8 * 4 + 32 * i;
          if (d >= p.head_dim) continue;
          const float4 prev = fold.first ? make_float4(0.f, 0.f, 0.f, 0.f) : *reinterpret_cast<const float4*>(out + d);
          *reinterpret_cast<float4*>(out + d) = make_float4(fold(prev.x, o[4 * i]), fold(prev.y, o[4 * i + 1]),
                                                            fold(prev.z, o[4 * i + 2]), fold(prev.w, o[4 * i + 3]));
        }
      }
    }
  }

  if (!row_ok) return;
  const int64_t h = head_of_row();
  const int64_t out_row = my_t * p.n_heads + h;
  if (!split) {
    float* const out = p.out + out_row * p.head_dim;
    // out = O / L, after the sink (base 2, as the scores) joins the denominator as one more chunk
    // of sum 1 and no value.
    auto finish = [&](auto&& adjust) {
      const float inv = 1.0f / L;
#pragma unroll
      for (int i = 0; i < D / 32; ++i) {
        const int d = l8 * 4 + 32 * i;
        if (d >= p.head_dim) continue;
        const float4 v = *reinterpret_cast<const float4*>(out + d);
        *reinterpret_cast<float4*>(out + d) =
            make_float4(adjust(v.x) * inv, adjust(v.y) * inv, adjust(v.z) * inv, adjust(v.w) * inv);
      }
    };
    if (p.sinks) {
      const AttnFold sink(M, __ldg(p.sinks + h) * 1.4426950408889634f);
      L = sink(L, 1.f);
      finish([&](float v) { return sink(v, 0.f); });
    } else {
      finish([](float v) { return v; });
    }
  } else {
    const int64_t total_rows = p.n_tokens * p.n_heads;
    float* dst = p.part_o + (static_cast<int64_t>(blockIdx.z) * total_rows + out_row) * p.head_dim;
#pragma unroll
    for (int i = 0; i < D / 32; ++i) {
      const int d = l8 * 4 + 32 * i;
      if (d < p.head_dim) *reinterpret_cast<float4*>(dst + d) = make_float4(o[4 * i], o[4 * i + 1], o[4 * i + 2], o[4 * i + 3]);
    }
    if (l8 == 0) {
      p.part_ml[(static_cast<int64_t>(blockIdx.z) * total_rows + out_row) * 2] = m;
      p.part_ml[(static_cast<int64_t>(blockIdx.z) * total_rows + out_row) * 2 + 1] = l;
    }
  }
}

// Launch: grid (n_tokens * n_heads), block 128. Block = one output row (token, head): each thread
// strides over dims and folds the round's chunk partials in chunk order into the row's running
// state (AttnFold: the in-block schedule's arithmetic; chunks that saw no key have m = -inf and are
// skipped). A context of more chunks than the workspace holds runs in rounds: the state (max, sum,
// output) waits in state_ml / state_o between them, exactly as it stands in registers in-block, so
// the rounds change no bit. The last round folds the sink (sinks: [n_heads], null: none) as one
// more chunk of sum 1 and no value and writes out = O / L.
__global__ void __launch_bounds__(128) attn_merge_kernel(const float* part_o, const float* part_ml, int n_chunks,
                                                        int64_t total_rows, int64_t head_dim, const float* sinks,
                                                        int64_t n_heads, float* state_o, float* state_ml,
                                                        bool first_round, bool last_round, float* out) {
  const int64_t row = blockIdx.x;
  const float M0 = first_round ? -INFINITY : state_ml[row * 2];
  const float L0 = first_round ? 0.f : state_ml[row * 2 + 1];
  float M = M0, L = L0;
  for (int64_t d = threadIdx.x; d < head_dim; d += blockDim.x) {
    float O = first_round ? 0.f : state_o[row * head_dim + d];
    M = M0;
    L = L0;
    for (int s = 0; s < n_chunks; ++s) {
      const float ms = part_ml[(s * total_rows + row) * 2];
      if (ms == -INFINITY) continue;
      const AttnFold fold(M, ms);
      L = fold(L, part_ml[(s * total_rows + row) * 2 + 1]);
      O = fold(O, part_o[(s * total_rows + row) * head_dim + d]);
    }
    if (!last_round) {
      state_o[row * head_dim + d] = O;
      continue;
    }
    if (sinks) {
      const AttnFold fold(M, sinks[row % n_heads] * 1.4426950408889634f);
      L = fold(L, 1.f);
      O = fold(O, 0.f);
    }
    const float inv = 1.0f / L;
    out[row * head_dim + d] = O * inv;
  }
  if (last_round) return;
  __syncthreads();  // every thread has read M0 / L0
  if (threadIdx.x == 0) {  // thread 0 always has dim 0, so M and L are this round's result
    state_ml[row * 2] = M;
    state_ml[row * 2 + 1] = L;
  }
}

// Launch: grid-stride over n_tokens * kv_dim elements, 256 threads; element (t, c) of k / v goes
// to cache element cache_row(pos0 + t) * kv_stride + c (c = j * head_dim + d).
template <bool kF16>
__global__ void __launch_bounds__(256) kv_write_kernel(const float* k, const float* v, void* k_cache, void* v_cache,
                                                       int64_t kv_stride, int64_t kv_cells, int64_t n_tokens,
                                                       int64_t pos0, int64_t kv_dim) {
  const int64_t n = n_tokens * kv_dim;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = e / kv_dim, c = e % kv_dim;
    const int64_t dst = cache_row(pos0 + t, kv_cells) * kv_stride + c;
    if (kF16) {
      static_cast<uint16_t*>(k_cache)[dst] = f32_to_f16_rn(k[e]);
      static_cast<uint16_t*>(v_cache)[dst] = f32_to_f16_rn(v[e]);
    } else {
      static_cast<float*>(k_cache)[dst] = k[e];
      static_cast<float*>(v_cache)[dst] = v[e];
    }
  }
}

// Chunks a range of n_ctx keys can touch (the workspace's split count).
int64_t max_chunks_for(int64_t n_ctx) { return ceil_div(n_ctx, kAttnChunk); }

// One chunk's partials of every row (output, max, sum); the rows' running state between split
// rounds takes as much again. A split round of n chunks needs (n + 1) of these.
size_t chunk_bytes(int64_t n_tokens, int64_t n_heads, int64_t head_dim) {
  return static_cast<size_t>(n_tokens * n_heads * (head_dim + 2)) * sizeof(float);
}

template <int D>
void launch_attn(const AttnParams& p, dim3 grid, bool f16, cudaStream_t stream) {
  if (f16) attn_kernel<D, true><<<grid, kAttnThreads, 0, stream>>>(p);
  else attn_kernel<D, false><<<grid, kAttnThreads, 0, stream>>>(p);
}

}  // namespace

size_t attention_workspace_bytes(int64_t max_tokens, int64_t max_ctx, int64_t n_heads, int64_t head_dim) {
  const int64_t tokens = max_tokens < kSplitMaxTokens ? max_tokens : kSplitMaxTokens;
  const int64_t chunks = max_chunks_for(max_ctx);
  // Heads longer than 256 take attention_wide, which needs no workspace.
  if (tokens <= 0 || n_heads <= 0 || head_dim <= 0 || head_dim > 256 || chunks <= 1) return 256;
  return static_cast<size_t>((chunks < kMaxRoundChunks ? chunks : kMaxRoundChunks) + 1) *
         chunk_bytes(tokens, n_heads, head_dim);
}

cudaError_t attention(const AttentionArgs& a, void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  if (a.n_tokens < 0 || a.pos0 < 0 || a.n_heads <= 0 || a.n_kv_heads <= 0 || a.n_heads % a.n_kv_heads != 0 ||
      a.head_dim <= 0 || a.head_dim > kMaxWideHeadDim || a.head_dim % 4 != 0 || a.kv_stride % 4 != 0 ||
      a.kv_stride < a.n_kv_heads * a.head_dim || a.kv_cells < 0)
    return cudaErrorInvalidValue;
  if (a.n_tokens == 0) return cudaSuccess;
  const size_t cache_align = a.kv_f16 ? 8 : 16;
  if (!aligned_to(a.q, 16) || !aligned_to(a.out, 16) || !aligned_to(a.k_cache, cache_align) ||
      !aligned_to(a.v_cache, cache_align))
    return cudaErrorInvalidValue;

  // 1. the new keys and values into the cache.
  const int64_t kv_dim = a.n_kv_heads * a.head_dim;
  const unsigned wgrid = grid_for(a.n_tokens * kv_dim, 256);
  if (a.kv_f16) kv_write_kernel<true><<<wgrid, 256, 0, stream>>>(a.k, a.v, a.k_cache, a.v_cache, a.kv_stride, a.kv_cells, a.n_tokens, a.pos0, kv_dim);
  else kv_write_kernel<false><<<wgrid, 256, 0, stream>>>(a.k, a.v, a.k_cache, a.v_cache, a.kv_stride, a.kv_cells, a.n_tokens, a.pos0, kv_dim);
  STRATA_CUDA_TRY(cudaGetLastError());
  if (a.head_dim > 256) return attention_wide(a, stream);

  // 2. attention: the split schedule for decode-sized calls whose chunks fit the workspace, else
  // in-block. Both give the same bits (see the top of this file), so the choice is speed only.
  AttnParams p;
  p.q = a.q;
  p.k_cache = a.k_cache;
  p.v_cache = a.v_cache;
  p.kv_stride = a.kv_stride;
  p.kv_cells = a.kv_cells;
  p.window = a.window;
  p.causal = a.causal;
  p.n_tokens = a.n_tokens;
  p.pos0 = a.pos0;
  p.n_heads = a.n_heads;
  p.n_kv_heads = a.n_kv_heads;
  p.head_dim = a.head_dim;
  p.group = a.n_heads / a.n_kv_heads;
  p.q_scale = a.scale * 1.4426950408889634f;  // log2(e)
  p.softcap2 = a.softcap > 0.f ? a.softcap * 1.4426950408889634f : 0.f;
  p.sinks = a.sinks;
  p.out = a.out;
  p.part_o = nullptr;
  p.part_ml = nullptr;
  p.split = false;
  p.chunk0 = 0;

  const int64_t row_tiles = ceil_div(a.n_tokens * p.group, kAttnRows);
  int64_t split_chunks = 0, per_round = 0;  // > 0: the split schedule over chunks [c0, c0 + split_chunks)
  int64_t c0 = 0;
  if (a.n_tokens <= kSplitMaxTokens && workspace != nullptr && aligned_to(workspace, 16)) {
    // Keys any row of the call sees: from the first row's window start to the last row's position.
    const int64_t last_key = a.pos0 + a.n_tokens - 1;
    const int64_t first_key_row0 = a.causal ? a.pos0 : last_key;
    const int64_t first_key = a.window > 0 && first_key_row0 - a.window + 1 > 0 ? first_key_row0 - a.window + 1 : 0;
    const int64_t first_chunk = first_key / kAttnChunk;
    const int64_t n_chunks = last_key / kAttnChunk - first_chunk + 1;
    // Chunks a round holds: as many as the workspace has room for besides the state, at most all.
    const int64_t room = static_cast<int64_t>(workspace_bytes / chunk_bytes(a.n_tokens, a.n_heads, a.head_dim)) - 1;
    const int64_t fits = room < n_chunks ? room : n_chunks;
    if (n_chunks > 1 && fits >= 2) {
      c0 = first_chunk;
      per_round = fits;
      split_chunks = n_chunks;
    }
  }

  auto launch = [&](const AttnParams& q, int64_t splits) {
    const dim3 grid(static_cast<unsigned>(row_tiles), static_cast<unsigned>(a.n_kv_heads), static_cast<unsigned>(splits));
    if (a.head_dim <= 64) launch_attn<64>(q, grid, a.kv_f16, stream);
    else if (a.head_dim <= 128) launch_attn<128>(q, grid, a.kv_f16, stream);
    else launch_attn<256>(q, grid, a.kv_f16, stream);
  };
  if (split_chunks == 0) {
    launch(p, 1);
    return cudaGetLastError();
  }
  // Split rounds: a block per chunk of the round writes its partial, the merge kernel folds them
  // into the rows' state (and after the last round writes the output).
  const int64_t total_rows = a.n_tokens * a.n_heads;
  float* const part_o = static_cast<float*>(workspace);
  float* const part_ml = part_o + per_round * total_rows * a.head_dim;
  float* const state_o = part_ml + per_round * total_rows * 2;
  float* const state_ml = state_o + total_rows * a.head_dim;
  for (int64_t done = 0; done < split_chunks; done += per_round) {
    const int64_t here = split_chunks - done < per_round ? split_chunks - done : per_round;
    AttnParams q = p;
    q.split = true;
    q.chunk0 = c0 + done;
    q.part_o = part_o;
    q.part_ml = part_ml;
    launch(q, here);
    STRATA_CUDA_TRY(cudaGetLastError());
    const bool first = done == 0, last = done + here >= split_chunks;
    attn_merge_kernel<<<static_cast<unsigned>(total_rows), 128, 0, stream>>>(
        part_o, part_ml, static_cast<int>(here), total_rows, a.head_dim, a.sinks, a.n_heads, state_o, state_ml, first,
        last, a.out);
    STRATA_CUDA_TRY(cudaGetLastError());
  }
  return cudaSuccess;
}

}  // namespace strata::kernels::cuda
