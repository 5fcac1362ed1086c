// kernels/cpu/gemm_layout.h — the byte layouts of the packed-tile kernels of gemm.h, shared by
// gemm_avx512.cpp (compiled with the AVX-512 flags) and gemm_emulated.cpp (no ISA flags), so
// that both read and write the same bytes: offsets and sizes of the packed activation groups and
// of the 4-row weight scratch, and activation packing (a quantizer, then plain byte moves).
// Internal to kernels/cpu; depends on blocks.h and fp16.h only; no engine types.
//
// Everything here has internal linkage (static functions, non-inline constexpr constants): an
// inline function with external linkage instantiated in the AVX-512 object is a weak symbol, and
// the linker may keep that copy for the scalar object too (tools/isa_check.sh).
//
// Layouts (all little-endian; a "vector" is 64 bytes = 16 lanes of 4 bytes). Activations come in
// lane layouts (ActLayout<kStep>) with the same fields in the same order:
//   Wide (kStep 4): a group of 16 tokens, lane t = token t; a step is 4 elements of every token,
//     and the tile broadcasts 4 weight bytes of a row (vpbroadcastd).
//   Pairs (kStep 8): a group of at most 8 tokens, lanes 2t and 2t + 1 = token t; a step is 8
//     elements (lane 2t the first 4, lane 2t + 1 the last 4) and the tile broadcasts 8 weight
//     bytes (vpbroadcastq). 8 tokens then fill all 16 lanes, where the wide layout would leave
//     half of them padding: decode of 8 sequences does half the vpdpbusd. A token's two lanes'
//     integer sums are added (token_sums in each kernel file) before every block's float step,
//     so its float steps are one lane's, in dot_order.h's order, and the result is either lane.
//   Quads (kStep 16) and Octets (kStep 32), for Q8_0 / Q8_1 activations only: at most 4 (2)
//     tokens, 4 (8) lanes a token, a step of 16 (32) elements; the in-place tiles of batches of
//     2-4 tokens (gemm.h), whose vpdpbusd then have no padding lanes either; a token's lanes'
//     integer sums are added before each block's float step, as in pairs.
//   Q8_1's s sits in a token's first lane only: the min term lands there, and that lane is the
//     token's result.
//   Q8_0 activations, per 32-element block: corr (per lane: -128 * the sum of the q that lane
//     meets), d f32 (in each of a token's lanes), q[32 / kStep steps][lanes] i8
//   Q8_K activations, per 256-element block: d, bs16[32 / kStep] (int16 sums of 16: a lane holds
//     kStep / 2 consecutive sums), bs32[16 / kStep] (int16 sums of 32, the same way), q[256 / kStep]
//   Q8_1 activations (for Q4_1, Q5_1): the Q8_0 layout with s (the block's fp16 d * sum q, as
//     f32; a token's other lanes 0) where corr is
//   Weights for Q8_0 activations, per block of 4 rows: d[4] f32, q[4 rows][32] u8 = w + 128
//   Q4_1 / Q5_1 weights per block of 4 rows: d[4], m[4] f32, q[4 rows][32] u8 (0..15 / 0..31)
//   Q4_K / Q5_K weights per block of 4 rows: d[4], dmin[4] f32, sc[4 rows][8] i32, mins
//     [4 rows][8] int16, q[4 rows][256] u8 (0..15 / 0..31)
//   Q6_K weights per block of 4 rows: d[4] f32, dmin[4] f32 (0), sc[4 rows][16] i32, offsets
//     [4 rows][16] int16 (-32 * scale), q[4 rows][256] u8 (0..63); Q3_K the same with offsets
//     -4 * scale and q = level + 4 (0..7); Q2_K with dmin, 4-bit scales, its 4-bit mins in place of
//     the offsets (scaled by dmin, not d) and q = level (0..3)
// A row's weights (levels, mins, offsets) are in element order, so the kStep bytes a step
// broadcasts are consecutive in either layout; the weight scratch is the same for both.
// Rows past the last of a quad are unpacked as zeros (scales, sums and quants), so every byte
// of scratch_bytes(cols) is written by each unpack.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/cpu/blocks.h"
#include "kernels/cpu/fp16.h"

namespace strata::kernels::gemm_layout {

constexpr int kG = 16;  // tokens per wide group (kGemmTokenGroup)
constexpr int kR = 4;   // weight rows per micro-tile
constexpr int kPairTokens = 8;  // tokens of a pairs group (kGemmPairTokens)

// min_tokens of each table: the fewest tokens from which the AVX-512 kernels (pairs and in-place
// layouts up to 8 tokens) beat the one-token dots (the 4-row decode kernels, token by token). Re-
// measured with the batch-invariant layouts (issue 45; docs/benchmarks.md, "Measurements behind the
// kernel thresholds": W 1536 x 576, 1 thread, Sapphire Rapids, best ms, dots / tiles): at 2 tokens
// the dots win for the 32-element types (Q4_0 0.051 / 0.066, Q8_0 0.055 / 0.071, Q4_1 0.054 /
// 0.076) and the K-quants (Q4_K 0.045 / 0.064, Q6_K 0.041 / 0.074); the tiles win from 3 tokens
// for Q4_K / Q5_K (even at 3), from 4 for Q6_K (0.080 / 0.075) and Q2_K (0.078 / 0.060), from 5
// for Q3_K (0.122 / 0.096; even at 4). The emulated tables carry the same values; matmul never uses
// those. Since the dots take two tokens a pass (vec_dot_rows2: the rows' weights unpacked once for
// both), they beat the tiles longer for the K-quants (AMD Zen 4, same shape, best ms, dots / tiles,
// two runs): Q4_K at 3 tokens 0.050 / 0.058 (at 4 0.058 / 0.058), Q6_K at 4 0.059-0.060 / 0.065-0.067
// (at 6 0.087 / 0.066-0.072); the 32-element types keep 3 (Q4_0 0.056 / 0.054, Q4_1 0.068 / 0.065,
// Q8_0 0.078 / 0.060 at 3 tokens). Q3_K and Q2_K, with decode rows of their own since then: Q3_K
// at 6 tokens 0.094 / 0.106 (at 8 0.125 / 0.107), Q2_K at 4 0.048 / 0.064-0.074, at 5 0.064 /
// 0.064-0.076 (at 6 0.071 / 0.064).
constexpr int64_t kMinTokensW80 = 3;  // Q4_0, Q5_0, Q8_0
constexpr int64_t kMinTokensW45 = 4;  // Q4_K, Q5_K
constexpr int64_t kMinTokensW6 = 5;   // Q6_K
constexpr int64_t kMinTokensW3 = 7;   // Q3_K (Q6_K's tile)
constexpr int64_t kMinTokensW2 = 6;   // Q2_K (Q6_K's tile)
constexpr int64_t kMinTokensW81 = 3;  // Q4_1, Q5_1
// The AVX2 kernels (gemm_avx2.cpp) in the layout matmul gives them (pairs up to 4 tokens, Q8_0
// in place) against the one-token vec_dot per token (docs/benchmarks.md, "Batches of 2-8 tokens
// in every layout": kernel_bench W 1536 x 576, 1 thread, AMD Zen 3, best ms, dots / tiles at 2
// tokens): Q4_0 0.062 / 0.074 and Q8_0 0.066 / 0.092 keep the dots at 2 tokens, Q3_K 0.081 /
// 0.103 too; Q5_0 0.097 / 0.083, Q4_K 0.075 / 0.056, Q6_K 0.080 / 0.064 and Q2_K 0.065 / 0.055
// take the tiles from 2. Q4_1 (0.125 / 0.081 at first) keeps the dots at 2 since its decode rows
// take d and m in one load: 0.069 / 0.083. Re-measured with the two-token dots (vec_dot_rows2;
// AMD Zen 4 as AVX2, same shape, two runs, dots / tiles): at 2 tokens the dots win for every type
// (Q5_0 0.059-0.062 / 0.070, Q5_1 0.058 / 0.078-0.093, Q4_K 0.034-0.035 / 0.046, Q5_K 0.040 /
// 0.049, Q6_K 0.037-0.038 / 0.057-0.059, Q2_K 0.035 / 0.046-0.047); at 3 Q8_0 (0.083-0.086 /
// 0.088-0.116) and Q3_K (0.065 / 0.081-0.082) too, and Q3_K at 4 (0.073 / 0.082); the others take
// the tiles from 3 (Q4_K 0.058 / 0.046).
constexpr int64_t kMinTokensAvx2Q4_0 = 3;  // Q4_0
constexpr int64_t kMinTokensAvx2Q5_0 = 3;  // Q5_0
constexpr int64_t kMinTokensAvx2Q8 = 4;    // Q8_0
constexpr int64_t kMinTokensAvx2K = 3;     // Q4_K-Q6_K
constexpr int64_t kMinTokensAvx2Q3 = 5;
constexpr int64_t kMinTokensAvx2Q2 = 3;
constexpr int64_t kMinTokensAvx2Q4_1 = 3;
constexpr int64_t kMinTokensAvx2Q5_1 = 3;
// AVX2 runs 8 lanes a half: pairs hold 4 tokens in one half, the wide layout 8; past 4 tokens the
// pairs run both halves and cost about twice the wide half (Q4_K at 6 tokens 0.093 / 0.079 ms).
// Only Q8_0's in-place tiles beat the scratch tiles there (3-4 tokens 0.103 / 0.110 pairs, 6-8
// tokens 0.156 / 0.174 wide); for Q4_0 / Q5_0 / Q4_1 / Q5_1 they are slower at every batch.
// Q6_K is the exception: its pairs tile over both halves beats its wide half at 6-8 tokens (0.099 /
// 0.110 ms), where Q4_K (0.093 / 0.079), Q5_K (0.098 / 0.086), Q3_K and Q2_K (equal) do not.
constexpr int64_t kPairsMaxTokensAvx2 = 4;
constexpr int64_t kPairsMaxTokensAvx2Q6 = 8;
constexpr int64_t kInPlaceMaxTokensAvx2Q8 = 8;

// ---- activations ---------------------------------------------------------------------------

// Byte offsets in one activation block of a group, for kStep 4 (wide) or 8 (pairs).
template <int kStep>
struct ActLayout {
  static_assert(kStep == 4 || kStep == 8 || kStep == 16 || kStep == 32,
                "a step is 4 (wide), 8 (pairs), 16 (quads) or 32 (octets) elements");
  static constexpr int kStepElems = kStep;
  static constexpr int kTokens = 64 / kStep;  // tokens of a group
  static constexpr int kLanes = kStep / 4;    // lanes of one token
  // Q8_0: corr at 0, d at 64, q at 128 (32 / kStep vectors).
  static constexpr int64_t k80Corr = 0, k80D = 64, k80Q = 128;
  static constexpr int64_t k80Block = k80Q + 64 * (32 / kStep);
  // Q8_K (wide and pairs only): d at 0, bs16, bs32, q.
  static constexpr int64_t k8KD = 0, k8KBs16 = 64, k8KBs32 = k8KBs16 + 64 * (32 / kStep);
  static constexpr int64_t k8KQ = k8KBs32 + 64 * (16 / kStep);
  static constexpr int64_t k8KBlock = k8KQ + 64 * (256 / kStep);
};
using Wide = ActLayout<4>;
using Pairs = ActLayout<8>;
using Quads = ActLayout<16>;   // Q8_0 / Q8_1 activations only
using Octets = ActLayout<32>;  // Q8_0 / Q8_1 activations only

// Bytes of one group; a pairs group is smaller than a wide one, so group_bytes (wide) holds
// either.
static inline int64_t group_bytes_q8_0(int64_t cols) { return cols / 32 * Wide::k80Block; }
static inline int64_t group_bytes_q8_k(int64_t cols) { return cols / 256 * Wide::k8KBlock; }

// The activation quantizer of the caller's ISA (TypeKernels::quantize_row; every ISA's gives
// the same bits, test_quant).
using QuantizeRow = void (*)(const float* src, void* dst, int64_t n);

static inline void put32(uint8_t* p, int32_t v) { std::memcpy(p, &v, 4); }
static inline void putf(uint8_t* p, float v) { std::memcpy(p, &v, 4); }

// The frame of the 32-element activation layouts (Q8_0, Q8_1): tokens [T group, T group + T) of
// x ([n_tokens][cols] f32, T = L::kTokens) quantized block by block into Block (zeros at or past
// n_tokens); per block, offset(b, i) (4 bytes) in lane i of a token's lanes of the offset slot, d
// in each of its lanes, then the quants.
template <class L, typename Block, typename Offset>
static inline void pack_act_32(QuantizeRow quantize, const float* x, int64_t cols, int64_t n_tokens, int64_t group,
                               uint8_t* dst, Offset offset) {
  constexpr int kStep = L::kStepElems;
  const int64_t nb = cols / 32;
  for (int t = 0; t < L::kTokens; ++t) {
    const int64_t tok = group * L::kTokens + t;
    for (int64_t k = 0; k < nb; ++k) {
      uint8_t* o = dst + k * L::k80Block;
      Block b;
      if (tok < n_tokens) quantize(x + tok * cols + k * 32, &b, 32);
      else std::memset(&b, 0, sizeof b);
      for (int i = 0; i < L::kLanes; ++i) {
        offset(b, i, o + L::k80Corr + 4 * (L::kLanes * t + i));
        putf(o + L::k80D + 4 * (L::kLanes * t + i), fp16_to_f32(b.d));
      }
      for (int j = 0; j < 32 / kStep; ++j) std::memcpy(o + L::k80Q + 64 * j + kStep * t, b.qs + kStep * j, kStep);
    }
  }
}

// Q8_0 activations (Q4_0, Q5_0, Q8_0 weights): lane i of a token's offset slot holds corr_i =
// -128 x the sum of the quants that lane i meets (4 of each step: q[kStep j + 4 i, + 4)). A
// lane's integer sum is then sum (w + 128) q + corr_i = sum w q in every lane, whichever offset a
// kernel's levels carry (w + 128: add corr_i; w + 8 / w + 16: corr_i >> 4 / >> 3, exact as
// corr_i is a multiple of 128; w itself, signed: nothing), so every kernel's lanes hold the same
// integers.
template <class L>
static inline void pack_act_q8_0(QuantizeRow quantize, const float* x, int64_t cols, int64_t n_tokens,
                                 int64_t group, uint8_t* dst) {
  constexpr int kStep = L::kStepElems;
  pack_act_32<L, BlockQ8_0>(quantize, x, cols, n_tokens, group, dst, [](const BlockQ8_0& b, int lane, uint8_t* p) {
    int32_t sum = 0;
    for (int j = 0; j < 32 / kStep; ++j)
      for (int e = 0; e < 4; ++e) sum += b.qs[kStep * j + 4 * lane + e];
    put32(p, -128 * sum);
  });
}

// Q8_1 activations (Q4_1, Q5_1 weights): the offset slot holds s (f32) in a token's first lane,
// 0 in its others.
template <class L>
static inline void pack_act_q8_1(QuantizeRow quantize, const float* x, int64_t cols, int64_t n_tokens,
                                 int64_t group, uint8_t* dst) {
  pack_act_32<L, BlockQ8_1>(quantize, x, cols, n_tokens, group, dst, [](const BlockQ8_1& b, int lane, uint8_t* p) {
    putf(p, lane == 0 ? fp16_to_f32(b.s) : 0.f);
  });
}

// The same for Q8_K (K-quant weights).
template <class L>
static inline void pack_act_q8_k(QuantizeRow quantize, const float* x, int64_t cols, int64_t n_tokens,
                                 int64_t group, uint8_t* dst) {
  constexpr int kStep = L::kStepElems;
  static_assert(kStep <= 8, "Q8_K activations come in the wide and pairs layouts only");
  const int64_t nb = cols / 256;
  for (int t = 0; t < L::kTokens; ++t) {
    const int64_t tok = group * L::kTokens + t;
    for (int64_t k = 0; k < nb; ++k) {
      uint8_t* o = dst + k * L::k8KBlock;
      BlockQ8_K b;
      if (tok < n_tokens) quantize(x + tok * cols + k * 256, &b, 256);
      else std::memset(&b, 0, sizeof b);
      for (int i = 0; i < L::kLanes; ++i) putf(o + L::k8KD + 4 * (L::kLanes * t + i), b.d);
      int16_t s32[8];
      for (int j = 0; j < 8; ++j) s32[j] = static_cast<int16_t>(b.bsums[2 * j] + b.bsums[2 * j + 1]);
      // A lane's 4 bytes are two consecutive int16 sums; a step of kStep bytes covers kStep / 2.
      for (int p = 0; p < 32 / kStep; ++p) std::memcpy(o + L::k8KBs16 + 64 * p + kStep * t, &b.bsums[kStep / 2 * p], kStep);
      for (int p = 0; p < 16 / kStep; ++p) std::memcpy(o + L::k8KBs32 + 64 * p + kStep * t, &s32[kStep / 2 * p], kStep);
      for (int s = 0; s < 256 / kStep; ++s) std::memcpy(o + L::k8KQ + 64 * s + kStep * t, b.qs + kStep * s, kStep);
    }
  }
}

// ---- weight scratch ------------------------------------------------------------------------

// Q8_0 / Q4_0 / Q5_0 block of 4 rows: d[4] at 0, q[4][32] at 16.
constexpr int64_t kW80D = 0, kW80Q = 16;
constexpr int64_t kW80Block = kW80Q + kR * 32;
// Q4_1 / Q5_1 block of 4 rows: d[4] at 0, m[4] at 16, q[4][32] at 32.
constexpr int64_t kW81D = 0, kW81M = 16, kW81Q = 32;
constexpr int64_t kW81Block = kW81Q + kR * 32;
// Q4_K / Q5_K block of 4 rows (mins: kW45Mp).
constexpr int64_t kW45D = 0, kW45Dmin = 16, kW45Sc = 32, kW45Mp = 32 + 128, kW45Q = 32 + 128 + 64;
constexpr int64_t kW45Block = kW45Q + kR * 256;
// Q6_K block of 4 rows.
constexpr int64_t kW6D = 0, kW6Dmin = 16, kW6Sc = 32, kW6Op = 32 + 256, kW6Q = 32 + 256 + 128;
constexpr int64_t kW6Block = kW6Q + kR * 256;

static inline int64_t scratch_bytes_w80(int64_t cols) { return cols / 32 * kW80Block; }
static inline int64_t scratch_bytes_w81(int64_t cols) { return cols / 32 * kW81Block; }
static inline int64_t scratch_bytes_w45(int64_t cols) { return cols / 256 * kW45Block; }
static inline int64_t scratch_bytes_w6(int64_t cols) { return cols / 256 * kW6Block; }

}  // namespace strata::kernels::gemm_layout
