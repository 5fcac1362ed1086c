// kernels/cuda/rope.cu — rotary position embedding of the first rope_dims dims of every head,
// both pair layouts (interleaved (2i, 2i+1) and NeoX (i, i + rope_dims/2)), optional per-pair
// frequency divisors. One variant. The angle is kernels/common/scalar_math.h's rope_theta, the
// CPU's own (base^e in double on the device); sin / cos are evaluated in double and rounded (the
// fast-math f32 versions are far too coarse at large positions), and the rotation uses unfused
// products as the CPU does.
#include "kernels/common/scalar_math.h"
#include "kernels/cuda/common.cuh"

namespace strata::kernels::cuda {
namespace {

constexpr int kRopeHeadsPerThread = 8;  // heads sharing one angle computation

struct RopeParams {
  float* x;
  int64_t n_tokens, n_heads, head_dim, pos0, rope_dims, head_groups;
  float freq_base, freq_scale;
  const float* divisors;
  bool interleaved;
  float attn_factor;
};

// Launch: grid-stride over n_tokens * head_groups * rope_dims/2 items, 256 threads. Item
// (t, group, i): the angle of pair i at position pos0 + t, applied to pair i of heads
// [8 group, 8 group + 8). Consecutive threads take consecutive pairs (coalesced).
__global__ void __launch_bounds__(256) rope_kernel(const RopeParams p) {
  const int64_t half = p.rope_dims / 2;
  const int64_t n_items = p.n_tokens * p.head_groups * half;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < n_items;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = idx % half;
    const int64_t rest = idx / half;
    const int64_t group = rest % p.head_groups;
    const int64_t t = rest / p.head_groups;
    const float pos = __fmul_rn(static_cast<float>(p.pos0 + t), p.freq_scale);
    const float theta = rope_theta(pos, i, p.rope_dims, p.freq_base, p.divisors);
    double sd, cd;
    sincos(static_cast<double>(theta), &sd, &cd);
    const float s = __fmul_rn(static_cast<float>(sd), p.attn_factor), c = __fmul_rn(static_cast<float>(cd), p.attn_factor);
    const int64_t a = p.interleaved ? 2 * i : i;
    const int64_t b = p.interleaved ? 2 * i + 1 : i + half;
    const int64_t h_end = (group + 1) * kRopeHeadsPerThread < p.n_heads ? (group + 1) * kRopeHeadsPerThread : p.n_heads;
    for (int64_t h = group * kRopeHeadsPerThread; h < h_end; ++h) {
      float* head = p.x + (t * p.n_heads + h) * p.head_dim;
      const float x0 = head[a], x1 = head[b];
      head[a] = __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s));
      head[b] = __fadd_rn(__fmul_rn(x0, s), __fmul_rn(x1, c));
    }
  }
}

}  // namespace

cudaError_t rope(float* x, const RopeArgs& args, cudaStream_t stream) {
  if (args.n_tokens < 0 || args.n_heads < 0 || args.rope_dims < 0 || args.rope_dims % 2 != 0 ||
      args.rope_dims > args.head_dim)
    return cudaErrorInvalidValue;
  if (args.n_tokens == 0 || args.n_heads == 0 || args.rope_dims == 0) return cudaSuccess;
  RopeParams p;
  p.x = x;
  p.n_tokens = args.n_tokens;
  p.n_heads = args.n_heads;
  p.head_dim = args.head_dim;
  p.pos0 = args.pos0;
  p.rope_dims = args.rope_dims;
  p.head_groups = ceil_div(args.n_heads, kRopeHeadsPerThread);
  p.freq_base = args.freq_base;
  p.freq_scale = args.freq_scale;
  p.divisors = args.divisors;
  p.interleaved = args.interleaved;
  p.attn_factor = args.attn_factor;
  const int64_t n_items = p.n_tokens * p.head_groups * (p.rope_dims / 2);
  rope_kernel<<<grid_for(n_items, 256), 256, 0, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace strata::kernels::cuda
