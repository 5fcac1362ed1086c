// kernels/cuda/attention_wide.cu — attention over heads longer than attn_kernel's 256 (up to
// kMaxWideHeadDim = 1024): DeepSeek's MLA latent rows of 576 (kv_lora_rank 512 + 64 RoPE dims),
// read as one KV head by all 128 query heads. attention.cu writes the new keys and values into
// the cache first, then calls attention_wide for these sizes.
//
// attn_wide_kernel<kPerLane, F16>: a warp per query row (token, head), 4 rows of one token a
// block. Lane l holds dimensions l, l + 32, ... of the query and of the row's running output
// (kPerLane of each: head_dim <= 32 kPerLane). For each visible key, in position order: the
// score is the lanes' fma chains over their dimensions summed by a xor butterfly (every lane ends
// with the same bits: each step adds the same two numbers on both sides), then the online
// softmax takes one key at a time, with explicit roundings (__fmaf_rn / __fmul_rn).
//
// Batch invariance (docs/backends.md): a row's result depends on its query and its keys only, in
// one order, so the same bits whatever the call's size, the chunking of a prompt or the GPU. It is
// not the bits of attn_kernel (which tiles and folds chunks) and not meant to be: a model's head
// size picks one kernel for every call.
//
// Speed: a row reads its keys from global memory (L1 / L2 serve the block's other rows of the same
// KV head); there is no split of a long context over blocks. Measured on no GPU yet
// (tools/gpu-check.sh).
#include "kernels/cuda/attention_wide.h"

#include "kernels/cuda/common.cuh"

namespace strata::kernels::cuda {
namespace {

constexpr int kWideRowsPerBlock = 4;  // warps, each one query row

// Element e of a cache row that starts at `row` (a pointer to its first element).
template <bool kF16>
__device__ __forceinline__ float load_kv(const void* row, int e) {
  if (kF16) return f16_to_f32(static_cast<const uint16_t*>(row)[e]);
  return static_cast<const float*>(row)[e];
}

template <bool kF16>
__device__ __forceinline__ const void* kv_row_ptr(const void* cache, int64_t elem) {
  if (kF16) return static_cast<const uint16_t*>(cache) + elem;
  return static_cast<const float*>(cache) + elem;
}

// The call's arguments as they are (cuda_kernels.h's AttentionArgs, by value; k and v unused:
// attention.cu has written them into the cache).
template <int kPerLane, bool kF16>
__global__ void __launch_bounds__(kWideRowsPerBlock * kWarp) attn_wide_kernel(const AttentionArgs p) {
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int64_t t = blockIdx.y;
  const int64_t h = static_cast<int64_t>(blockIdx.x) * kWideRowsPerBlock + threadIdx.x / kWarp;
  if (h >= p.n_heads) return;  // the whole warp: no block-wide barrier below
  const int64_t j = h / (p.n_heads / p.n_kv_heads);
  const float* q = p.q + (t * p.n_heads + h) * p.head_dim;
  // This lane's dimensions lane + 32 i for i < mine (32-bit offsets from a row pointer: an
  // immediate per element, no 64-bit address arithmetic in the loops).
  const int mine = static_cast<int>((p.head_dim - lane + kWarp - 1) / kWarp);
  float qv[kPerLane], o[kPerLane];
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    qv[i] = i < mine ? q[lane + kWarp * i] : 0.f;
    o[i] = 0.f;
  }
  const int64_t last = p.causal ? p.pos0 + t : p.pos0 + p.n_tokens - 1;
  const int64_t first = p.window > 0 && last - p.window + 1 > 0 ? last - p.window + 1 : 0;
  float M = -INFINITY, L = 0.f;
  for (int64_t pos = first; pos <= last; ++pos) {
    const int64_t base = cache_row(pos, p.kv_cells) * p.kv_stride + j * p.head_dim + lane;
    const void* krow = kv_row_ptr<kF16>(p.k_cache, base);
    const void* vrow = kv_row_ptr<kF16>(p.v_cache, base);
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i)
      if (i < mine) s = __fmaf_rn(qv[i], load_kv<kF16>(krow, kWarp * i), s);
    s = __fmul_rn(warp_sum(s), p.scale);
    if (p.softcap > 0.f) s = __fmul_rn(p.softcap, tanhf(__fdiv_rn(s, p.softcap)));
    const float M_new = fmaxf(M, s);
    const float a = M == -INFINITY ? 0.f : expf(M - M_new);  // the running state's weight
    const float b = expf(s - M_new);                         // this key's
    L = __fmaf_rn(L, a, b);
#pragma unroll
    for (int i = 0; i < kPerLane; ++i)
      if (i < mine) o[i] = __fmaf_rn(o[i], a, __fmul_rn(b, load_kv<kF16>(vrow, kWarp * i)));
    M = M_new;
  }
  if (p.sinks) {  // a logit with no value joins the denominator (gpt-oss)
    const float sink = p.sinks[h];
    const float M_new = fmaxf(M, sink);
    const float a = M == -INFINITY ? 0.f : expf(M - M_new);
    L = __fmaf_rn(L, a, expf(sink - M_new));
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) o[i] = __fmul_rn(o[i], a);
  }
  const float inv = L > 0.f ? 1.0f / L : 0.f;
  float* dst = p.out + (t * p.n_heads + h) * p.head_dim;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i)
    if (i < mine) dst[lane + kWarp * i] = __fmul_rn(o[i], inv);
}

template <int kPerLane>
void launch_wide(const AttentionArgs& a, dim3 grid, cudaStream_t stream) {
  if (a.kv_f16) attn_wide_kernel<kPerLane, true><<<grid, kWideRowsPerBlock * kWarp, 0, stream>>>(a);
  else attn_wide_kernel<kPerLane, false><<<grid, kWideRowsPerBlock * kWarp, 0, stream>>>(a);
}

}  // namespace

cudaError_t attention_wide(const AttentionArgs& a, cudaStream_t stream) {
  if (a.head_dim <= 0 || a.head_dim > kMaxWideHeadDim) return cudaErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>(ceil_div(a.n_heads, kWideRowsPerBlock)), static_cast<unsigned>(a.n_tokens));
  const int64_t per_lane = ceil_div(a.head_dim, kWarp);
  if (per_lane <= 12) launch_wide<12>(a, grid, stream);
  else if (per_lane <= 18) launch_wide<18>(a, grid, stream);
  else if (per_lane <= 24) launch_wide<24>(a, grid, stream);
  else launch_wide<32>(a, grid, stream);
  return cudaGetLastError();
}

}  // namespace strata::kernels::cuda
