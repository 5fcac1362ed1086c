// kernels/cuda/mmv_kernel.cuh — the generic quantized matrix-vector kernel, templated on a block
// decoder of quant_blocks.cuh and on the token count class; included by the mmv_*.cu files, which
// instantiate it for their types (keeps the instantiations of one type group in one object).
//
// Variants:
//   mmv_tiled_kernel<Dec, T>  every matrix product of the CUDA backend, decode and prompts: 16-byte
//                             coalesced loads of raw weight bytes into shared memory
//                             (software-pipelined one tile ahead), decode from there, weights read
//                             once for the T tokens of a token group, x shared by 4 rows. A prompt
//                             is a grid of (row group, token group) CTAs.
//   mmv_simple_kernel<Dec>    for float rows whose length is not a multiple of 8 (the tiled kernel's
//                             oct): a warp per row, scalar loads. Correct, not fast.
//
// Batch invariance (docs/backends.md): an output's sum is taken in one order that depends only on
// the row length and the weight type, never on how many tokens share the call, which token group
// or class T holds it, or where x lies: lane l of warp w sums octs l + 32 ko of tiles w, w + 4, ...
// in that order, then the warp's butterfly, then warps 0..3 in order. So a prompt's rows have the
// bits of one-token decode.
#pragma once

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/mmv_launch.h"
#include "kernels/cuda/quant_blocks.cuh"

namespace strata::kernels::cuda::detail {

constexpr int kMmvWarps = 4;  // warps per CTA; they split the column tiles of the CTA's rows
constexpr int kMmvRows = 4;   // rows per CTA; every warp works on all of them (x loaded once for 4 rows)

template <class Dec>
struct MmvGeom {
  static constexpr int kOctsPerBlock = Dec::kElems / 8;
  // Octs each lane decodes per row and tile: 1024 elements per tile for the quantized types,
  // 512 (f16 / bf16) or 256 (f32) so a row's tile stays near 1 KB.
  static constexpr int kOctsPerLane = Dec::kMode != MinMode::kRaw ? 4 : (Dec::kBytes == 32 ? 1 : 2);
  static constexpr int kTileOcts = kWarp * kOctsPerLane;
  static constexpr int kTileBlocks = kTileOcts / kOctsPerBlock;
  static constexpr int kTileBytes = kTileBlocks * Dec::kBytes;
  // A tile starts anywhere (even address); its bytes land at the same offset mod 16 in shared
  // memory, so one row's buffer needs the tile plus up to 15 bytes in front.
  static constexpr int kRowSmem = (kTileBytes + 16 + 15) / 16 * 16;
  static constexpr int kChunks = kRowSmem / 16;
  static constexpr int kChunkIters = (kChunks + kWarp - 1) / kWarp;
  static_assert(kTileOcts % kOctsPerBlock == 0, "a tile holds whole blocks");
};

// 16 bytes at the 16-aligned address a; bytes outside [lo, hi) read as zero (only the chunks at
// the very ends of the matrix take the byte path). Weights are streamed once: no L1 allocation.
__device__ __forceinline__ uint4 mmv_load_chunk(const uint8_t* a, const uint8_t* lo, const uint8_t* hi) {
  if (a >= lo && a + 16 <= hi) {
    uint4 v;
#if defined(__CUDA_ARCH__) && !defined(STRATA_CUDA_EMULATION)
    // volatile: never speculated above the bounds check.
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(a));
#else
    // Portable path (the emulated GPU of tests/cuda_emu, where the host compiler builds this): the
    // same 16 bytes by a plain aligned load.
    v = *reinterpret_cast<const uint4*>(a);
#endif
    return v;
  }
  uint64_t w0 = 0, w1 = 0;
#pragma unroll 1
  for (int b = 0; b < 16; ++b)
    if (a + b >= lo && a + b < hi) {
      const uint64_t byte = a[b];
      if (b < 8) w0 |= byte << (8 * b);
      else w1 |= byte << (8 * (b - 8));
    }
  return make_uint4(static_cast<uint32_t>(w0), static_cast<uint32_t>(w0 >> 32), static_cast<uint32_t>(w1),
                    static_cast<uint32_t>(w1 >> 32));
}

// A CTA's share of a (row group, token group) grid: rows [row0, row0 + 4), tokens [t0, t0 + n_tok)
// of token groups of T. The one-token class has one token group (fewer registers).
template <int T>
struct MmvCta {
  int64_t row0, t0;
  int n_tok;
  __device__ __forceinline__ explicit MmvCta(const MmvParams& p) {
    const unsigned groups = T == 1 ? 1u : static_cast<unsigned>(p.token_groups);
    row0 = static_cast<int64_t>(blockIdx.x / groups) * kMmvRows;
    t0 = static_cast<int64_t>(blockIdx.x % groups) * T;
    n_tok = T == 1 ? 1 : static_cast<int>(p.n_tokens - t0 < T ? p.n_tokens - t0 : T);
  }
};

// Launch: grid (ceil(rows / 4) * token_groups), block 128 (4 warps). CTA b owns rows
// [4 * (b / token_groups), +4) and tokens [T * (b % token_groups), +T). The row length is cut into
// tiles of kTileBlocks blocks, warp w takes tiles w, w + 4, ... For each tile a warp loads the 4
// rows' raw bytes with 16-byte loads (lane l: chunks l, l + 32, ...) into its shared buffers,
// issues the loads of its next tile, then each lane decodes its octs (8 elements, lane-consecutive)
// of the 4 rows and multiplies them with x (f32, from global/L1, 2 x float4 per token when
// x_aligned, else 8 scalar loads; loaded once for the 4 rows) for the group's tokens, accumulating
// in f32 registers. At the end each (row, token) sum is reduced over the warp (shuffles) and over
// the 4 warps (shared memory); threads 0 .. 4T - 1 write y. T is the token class (1, 4, 8: a T = 2
// class would need as many registers as T = 4); a group's tokens past n_tokens are skipped.
template <class Dec, int T>
__global__ void __launch_bounds__(kMmvWarps * kWarp) mmv_tiled_kernel(const MmvParams p) {
  using G = MmvGeom<Dec>;
  __shared__ __align__(16) uint8_t tiles[kMmvWarps][kMmvRows][G::kRowSmem];
  __shared__ float partial[kMmvWarps][kMmvRows * T];

  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const MmvCta<T> cta(p);
  const int64_t row0 = cta.row0, t0 = cta.t0;
  const int n_tok = cta.n_tok;
  const float* x = p.x + t0 * p.cols;
  const int64_t n_blocks = p.cols / Dec::kElems;
  const int64_t n_tiles = (n_blocks + G::kTileBlocks - 1) / G::kTileBlocks;

  const uint8_t* row_ptr[kMmvRows];
#pragma unroll
  for (int i = 0; i < kMmvRows; ++i) {
    const int64_t r = row0 + i < p.rows ? row0 + i : p.rows - 1;  // rows past the end repeat the last
    row_ptr[i] = p.w + r * p.row_bytes;
  }

  float acc[kMmvRows][T];
#pragma unroll
  for (int i = 0; i < kMmvRows; ++i)
#pragma unroll
    for (int t = 0; t < T; ++t) acc[i][t] = 0.f;

  uint4 stage[kMmvRows][G::kChunkIters];
  int next_off[kMmvRows];
  auto fetch = [&](int64_t tile) {
    const int64_t blk0 = tile * G::kTileBlocks;
    const int64_t left = n_blocks - blk0;
    const int bytes = static_cast<int>(left < G::kTileBlocks ? left : G::kTileBlocks) * Dec::kBytes;
#pragma unroll
    for (int i = 0; i < kMmvRows; ++i) {
      const uint8_t* s = row_ptr[i] + blk0 * Dec::kBytes;
      const int off = static_cast<int>(reinterpret_cast<uintptr_t>(s) & 15u);
      const int n_chunks = (off + bytes + 15) / 16;
      next_off[i] = off;
#pragma unroll
      for (int k = 0; k < G::kChunkIters; ++k) {
        const int c = lane + kWarp * k;
        stage[i][k] = c < n_chunks ? mmv_load_chunk(s - off + 16 * c, p.w, p.w_end) : make_uint4(0u, 0u, 0u, 0u);
      }
    }
  };

  int64_t tile = warp;
  if (tile < n_tiles) fetch(tile);
  for (; tile < n_tiles; tile += kMmvWarps) {
    int cur_off[kMmvRows];
    __syncwarp();  // the previous tile's decode is done with the buffers
#pragma unroll
    for (int i = 0; i < kMmvRows; ++i) {
#pragma unroll
      for (int k = 0; k < G::kChunkIters; ++k) {
        const int c = lane + kWarp * k;
        if (c < G::kChunks) *reinterpret_cast<uint4*>(&tiles[warp][i][16 * c]) = stage[i][k];
      }
      cur_off[i] = next_off[i];
    }
    __syncwarp();
    if (tile + kMmvWarps < n_tiles) fetch(tile + kMmvWarps);  // in flight during the decode below

    const int64_t blk0 = tile * G::kTileBlocks;
    const int64_t left = n_blocks - blk0;
    const int n_blk = static_cast<int>(left < G::kTileBlocks ? left : G::kTileBlocks);
#pragma unroll 1
    for (int ko = 0; ko < G::kOctsPerLane; ++ko) {
      const int o = lane + kWarp * ko;
      const int b = o / G::kOctsPerBlock, io = o % G::kOctsPerBlock;
      if (b >= n_blk) continue;
      const int64_t col = (blk0 + b) * Dec::kElems + io * 8;
      float xv[T][8], sum_x[T];
#pragma unroll
      for (int t = 0; t < T; ++t) {
        sum_x[t] = 0.f;
        if (t < n_tok) {
          const float* xt = x + t * p.cols + col;
          if (T == 1 || p.x_aligned) {  // T = 1 is launched for aligned x only (registers)
            const float4* xp = reinterpret_cast<const float4*>(xt);
            const float4 a = __ldg(xp), c = __ldg(xp + 1);
            xv[t][0] = a.x; xv[t][1] = a.y; xv[t][2] = a.z; xv[t][3] = a.w;
            xv[t][4] = c.x; xv[t][5] = c.y; xv[t][6] = c.z; xv[t][7] = c.w;
          } else {
#pragma unroll
            for (int k = 0; k < 8; ++k) xv[t][k] = __ldg(xt + k);
          }
          if constexpr (kOctNeedsSumX<Dec>)
            sum_x[t] = ((xv[t][0] + xv[t][1]) + (xv[t][2] + xv[t][3])) + ((xv[t][4] + xv[t][5]) + (xv[t][6] + xv[t][7]));
        }
      }
#pragma unroll
      for (int i = 0; i < kMmvRows; ++i) {
        Oct oc;
        Dec::oct(&tiles[warp][i][cur_off[i] + b * Dec::kBytes], io, oc);
#pragma unroll
        for (int t = 0; t < T; ++t)
          if (t < n_tok) acc[i][t] += oct_dot<Dec>(oc, xv[t], sum_x[t]);
      }
    }
  }

#pragma unroll
  for (int i = 0; i < kMmvRows; ++i)
#pragma unroll
    for (int t = 0; t < T; ++t) {
      const float v = warp_sum(acc[i][t]);
      if (lane == 0) partial[warp][i * T + t] = v;
    }
  __syncthreads();
  if (threadIdx.x < kMmvRows * T) {
    const int i = threadIdx.x / T, t = threadIdx.x % T;
    const int64_t row = row0 + i;
    if (row < p.rows && t < n_tok) {
      float s = 0.f;
#pragma unroll
      for (int w = 0; w < kMmvWarps; ++w) s += partial[w][i * T + t];
      p.y[(t0 + t) * p.rows + row] = s;
    }
  }
}

// Launch: grid (ceil(rows / 4) * token_groups), block 128 (kMmvRows warps); warp w of CTA b owns
// row 4 (b / token_groups) + w and the kMmvTokenGroup tokens of group b % token_groups. Lanes stride
// the elements of the row (only float types come here); f32 sums per token, warp-reduced. The
// order depends on the row alone, so this path is batch-invariant too (it is the only one that
// such rows take).
template <class Dec>
__global__ void __launch_bounds__(128) mmv_simple_kernel(const MmvParams p) {
  constexpr int T = static_cast<int>(kMmvTokenGroup);
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const MmvCta<T> cta(p);
  const int64_t row = cta.row0 + warp, t0 = cta.t0;
  const int n_tok = cta.n_tok;
  if (row >= p.rows) return;  // whole warp
  const uint8_t* r = p.w + row * p.row_bytes;
  const float* x = p.x + t0 * p.cols;
  float acc[T];
#pragma unroll
  for (int t = 0; t < T; ++t) acc[t] = 0.f;
  for (int64_t c = lane; c < p.cols; c += kWarp) {
    const float w = decode_element<Dec>(r, c);
#pragma unroll
    for (int t = 0; t < T; ++t)
      if (t < n_tok) acc[t] += w * x[t * p.cols + c];
  }
#pragma unroll
  for (int t = 0; t < T; ++t) {
    if (t >= n_tok) break;  // warp-uniform
    const float s = warp_sum(acc[t]);
    if (lane == 0) p.y[(t0 + t) * p.rows + row] = s;
  }
}

// The token class follows the call's size (registers: T = 8 needs about twice T = 4's); every
// class gives each token the same bits, so the choice is speed only.
template <class Dec>
cudaError_t mmv_launch(MmvParams p, cudaStream_t stream) {
  const int64_t row_groups = ceil_div(p.rows, kMmvRows);
  auto launch = [&](auto kernel, int64_t group) {
    p.token_groups = ceil_div(p.n_tokens, group);
    if (row_groups * p.token_groups > INT32_MAX) return cudaErrorInvalidValue;
    kernel<<<static_cast<unsigned>(row_groups * p.token_groups), kMmvWarps * kWarp, 0, stream>>>(p);
    return cudaGetLastError();
  };
  if constexpr (Dec::kMode == MinMode::kRaw) {  // quantized rows are whole blocks (mmv checks)
    if (p.cols % Dec::kElems != 0) return launch(mmv_simple_kernel<Dec>, kMmvTokenGroup);
  }
  p.x_aligned = aligned_to(p.x, 16) && p.cols % 4 == 0;
  // The one-token class has no scalar-load path (it would cost the decode kernel registers and,
  // for some types, spills): unaligned x takes the 4-token class, which gives the same bits.
  if (p.n_tokens <= 1 && p.x_aligned) return launch(mmv_tiled_kernel<Dec, 1>, 1);
  if (p.n_tokens <= 4) return launch(mmv_tiled_kernel<Dec, 4>, 4);
  return launch(mmv_tiled_kernel<Dec, 8>, 8);
}

}  // namespace strata::kernels::cuda::detail
