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
// Layouts (all little-endian; a "vector" is 64 bytes = 16 lanes of 4 bytes, lane t = token t of
// the group of 16):
//   Q8_0 activations, per 32-element block: corr[16] i32 (-128 * sum q), d[16] f32,
//     q[8 steps][16 tokens][4] i8                                            = 640 bytes
//   Q8_K activations, per 256-element block: d[16] f32, bs16[8][16] (two int16 sums of 16,
//     groups 2p and 2p+1), bs32[4][16] (two int16 sums of 32), q[64][16][4] i8 = 4928 bytes
//   Weights for Q8_0 activations, per block of 4 rows: d[4] f32, q[4 rows][32] u8 = w + 128
//   Q4_K / Q5_K weights per block of 4 rows: d[4], dmin[4] f32, sc[4 rows][8] i32, min pairs
//     [4 rows][4] (two int16), q[4 rows][256] u8 (0..15 / 0..31)
//   Q6_K weights per block of 4 rows: d[4] f32, dmin[4] f32 (0), sc[4 rows][16] i32, offset pairs
//     [4 rows][8] (two int16: -32 * scale), q[4 rows][256] u8 (0..63); Q3_K the same with offsets
//     -4 * scale and q = level + 4 (0..7); Q2_K with dmin, 4-bit scales, its 4-bit mins in place of
//     the offsets (scaled by dmin, not d) and q = level (0..3)
// Rows past the last of a quad are unpacked as zeros (scales, sums and quants), so every byte
// of scratch_bytes(cols) is written by each unpack.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/cpu/blocks.h"
#include "kernels/cpu/fp16.h"

namespace strata::kernels::gemm_layout {

constexpr int kG = 16;  // tokens per group (kGemmTokenGroup)
constexpr int kR = 4;   // weight rows per micro-tile

// min_tokens of each table: where the AVX-512 kernels beat VecDot4 + vec_dot (kernel_bench,
// 2048 x 2048, one thread on Zen 4). The emulated tables carry the same values; matmul never
// uses those.
constexpr int64_t kMinTokensW80 = 5;  // Q4_0, Q5_0, Q8_0
constexpr int64_t kMinTokensW45 = 6;  // Q4_K, Q5_K
constexpr int64_t kMinTokensW6 = 7;   // Q6_K
constexpr int64_t kMinTokensW3 = 7;   // Q3_K, Q2_K (Q6_K's tile)

// ---- activations ---------------------------------------------------------------------------

// Q8_0 activation block of a group: corr at 0, d at 64, q at 128 (8 vectors).
constexpr int64_t kA80Corr = 0, kA80D = 64, kA80Q = 128;
constexpr int64_t kA80Block = kA80Q + 8 * 64;
// Q8_K activation block of a group: d at 0, bs16 (8 vectors), bs32 (4 vectors), q (64 vectors).
constexpr int64_t kA8KD = 0, kA8KBs16 = 64, kA8KBs32 = 64 + 512, kA8KQ = 64 + 512 + 256;
constexpr int64_t kA8KBlock = kA8KQ + 64 * 64;

static inline int64_t group_bytes_q8_0(int64_t cols) { return cols / 32 * kA80Block; }
static inline int64_t group_bytes_q8_k(int64_t cols) { return cols / 256 * kA8KBlock; }

// The activation quantizer of the caller's ISA (TypeKernels::quantize_row; every ISA's gives
// the same bits, test_quant).
using QuantizeRow = void (*)(const float* src, void* dst, int64_t n);

static inline void put32(uint8_t* p, int32_t v) { std::memcpy(p, &v, 4); }
static inline void putf(uint8_t* p, float v) { std::memcpy(p, &v, 4); }

// Tokens [16 group, 16 group + 16) of x ([n_tokens][cols] f32) as Q8_0, into the layout above;
// tokens at or past n_tokens as zeros.
static inline void pack_act_q8_0(QuantizeRow quantize, const float* x, int64_t cols, int64_t n_tokens,
                                 int64_t group, uint8_t* dst) {
  const int64_t nb = cols / 32;
  for (int t = 0; t < kG; ++t) {
    const int64_t tok = group * kG + t;
    for (int64_t k = 0; k < nb; ++k) {
      uint8_t* o = dst + k * kA80Block;
      BlockQ8_0 b;
      int32_t sum = 0;
      if (tok < n_tokens) {
        quantize(x + tok * cols + k * 32, &b, 32);
        for (int j = 0; j < 32; ++j) sum += b.qs[j];
      } else {
        std::memset(&b, 0, sizeof b);
      }
      put32(o + kA80Corr + 4 * t, -128 * sum);
      putf(o + kA80D + 4 * t, fp16_to_f32(b.d));
      for (int j = 0; j < 8; ++j) std::memcpy(o + kA80Q + 64 * j + 4 * t, b.qs + 4 * j, 4);
    }
  }
}

// The same for Q8_K (K-quant weights).
static inline void pack_act_q8_k(QuantizeRow quantize, const float* x, int64_t cols, int64_t n_tokens,
                                 int64_t group, uint8_t* dst) {
  const int64_t nb = cols / 256;
  for (int t = 0; t < kG; ++t) {
    const int64_t tok = group * kG + t;
    for (int64_t k = 0; k < nb; ++k) {
      uint8_t* o = dst + k * kA8KBlock;
      BlockQ8_K b;
      if (tok < n_tokens) quantize(x + tok * cols + k * 256, &b, 256);
      else std::memset(&b, 0, sizeof b);
      putf(o + kA8KD + 4 * t, b.d);
      for (int p = 0; p < 8; ++p) std::memcpy(o + kA8KBs16 + 64 * p + 4 * t, &b.bsums[2 * p], 4);
      for (int p = 0; p < 4; ++p) {
        const int16_t s[2] = {static_cast<int16_t>(b.bsums[4 * p] + b.bsums[4 * p + 1]),
                              static_cast<int16_t>(b.bsums[4 * p + 2] + b.bsums[4 * p + 3])};
        std::memcpy(o + kA8KBs32 + 64 * p + 4 * t, s, 4);
      }
      for (int s = 0; s < 64; ++s) std::memcpy(o + kA8KQ + 64 * s + 4 * t, b.qs + 4 * s, 4);
    }
  }
}

// ---- weight scratch ------------------------------------------------------------------------

// Q8_0 / Q4_0 / Q5_0 block of 4 rows: d[4] at 0, q[4][32] at 16.
constexpr int64_t kW80D = 0, kW80Q = 16;
constexpr int64_t kW80Block = kW80Q + kR * 32;
// Q4_K / Q5_K block of 4 rows.
constexpr int64_t kW45D = 0, kW45Dmin = 16, kW45Sc = 32, kW45Mp = 32 + 128, kW45Q = 32 + 128 + 64;
constexpr int64_t kW45Block = kW45Q + kR * 256;
// Q6_K block of 4 rows.
constexpr int64_t kW6D = 0, kW6Dmin = 16, kW6Sc = 32, kW6Op = 32 + 256, kW6Q = 32 + 256 + 128;
constexpr int64_t kW6Block = kW6Q + kR * 256;

static inline int64_t scratch_bytes_w80(int64_t cols) { return cols / 32 * kW80Block; }
static inline int64_t scratch_bytes_w45(int64_t cols) { return cols / 256 * kW45Block; }
static inline int64_t scratch_bytes_w6(int64_t cols) { return cols / 256 * kW6Block; }

}  // namespace strata::kernels::gemm_layout
