// kernels/cpu/gemm.h — prompt-shape matrix products on packed tiles (internal to kernels/cpu;
// matmul uses them for n_tokens > 1). Depends on dtype.h and isa.h only; no engine types.
//
// Variants: Avx512 (AVX-512 VNNI, 512-bit) for Q4_0, Q5_0, Q8_0 (activations Q8_0), Q4_1, Q5_1
// (activations Q8_1: the min term from its s) and Q2_K-Q6_K
// (activations Q8_K; Q2_K and Q3_K in the Q6_K tile). Activations are quantized with the ISA's
// own quantizer (the same bits as the vec_dot path) and packed in groups of 16 tokens: for every 4-element step,
// one 64-byte vector holds that step of all 16 tokens. A batch of at most 8 tokens (decode of
// up to 8 sequences) can instead be packed in pairs (pack_group_pairs / rows_pairs): two lanes a
// token, 8 elements a step, so that its vpdpbusd have no padding lanes (gemm_layout.h). Weights are unpacked, 4 rows at a time,
// into per-thread scratch as unsigned bytes; the micro-kernel then broadcasts 4 weight bytes of
// a row and does one vpdpbusd per (row, 16 tokens): a 4 rows x 48 tokens register tile. Integer
// sums are scaled per group (vpmulld; Q2_K / Q3_K, whose group sums fit in int16: vpdpwssd) and
// per block (float); offsets of signed weights come from activation sums packed beside the
// activations (per lane: each lane's own quants).
//
// In-place tiles (GemmKernels::in_place; Q4_0, Q5_0, Q8_0, Q4_1, Q5_1 on Avx512 and Avx2): for
// 2-8 tokens the weight rows are not unpacked: a tile of 8 (Avx2: 4) rows reads each row's blocks
// in place (Q8_0: a broadcast and the sign-bit flip; the others: the block's nibbles unpacked in
// registers), in an activation layout with as many lanes a token as the batch allows (pairs,
// quads, octets), so that neither an unpack pass nor padding lanes cost anything. The Avx2 tile
// runs both halves of a layout vector on each weight step (the step's bytes repeat in both), with
// the Avx2 scratch tile's integer sums: its pairs give that tile's bits.
//
// Avx2 (gemm_avx2.cpp, CPUs without AVX-512 VNNI) for Q4_0, Q5_0, Q8_0, Q4_1, Q5_1 and Q2_K-Q6_K:
// the same activation groups and Q4_1 / Q5_1 / K-quant scratch, a 4-row x 8-lane tile over each
// half of a group, each step a vpmaddubsw whose int16 sums are added over as many steps as the
// type's levels allow before a vpmaddwd widens them with the group's scale. Its outputs are
// bit-identical to the Avx512 kernels' in every layout (the same integer sums in every lane, the
// same float operations in the same order). The other ISAs and types have no such kernel
// (nullptr): matmul then uses vec_dot / VecDot4.
//
// Emulated (gemm_emulated.cpp, plain C++ without ISA flags): the same algorithm for the same
// types on the same bytes (the layouts are gemm_layout.h's), each vector instruction written as
// the lane-by-lane scalar code of what it does (vpdpbusd: four u8 x s8 products summed into an
// int32 lane; vfmadd: std::fma). Its outputs are bit-identical to the Avx512 kernels'. It is
// there so that the packed-tile algorithm is checked against the scalar reference on CPUs
// without AVX-512 VNNI; it is much slower than vec_dot, and gemm_kernels() never returns it
// (matmul keeps vec_dot / VecDot4 on such CPUs): only detail::emulated_gemm() does.
#pragma once

#include <array>
#include <cstdint>

#include "kernels/cpu/dtype.h"
#include "kernels/cpu/isa.h"

namespace strata::kernels {

constexpr int64_t kGemmTokenGroup = 16;  // tokens per packed activation group
constexpr int64_t kGemmPairTokens = 8;   // most tokens of the pairs layout (one group)

// The in-place tiles' activation layouts (GemmKernels::in_place), by index: pairs (at most 8
// tokens, 2 lanes a token), quads (at most 4, 4 lanes) and octets (at most 2, 8 lanes).
constexpr int kGemmInPlaceLayouts = 3;
constexpr int64_t kGemmInPlaceTokens[kGemmInPlaceLayouts] = {8, 4, 2};

// Packs tokens [T group, T group + T) of x into dst (T: the layout's tokens a group).
using GemmPackGroup = void (*)(const float* x, int64_t cols, int64_t n_tokens, int64_t group, uint8_t* dst);
// y[t * y_stride + r] = dot(w row r, token t); see GemmKernels::rows.
using GemmRows = void (*)(const uint8_t* w, int64_t w_row_bytes, int64_t nr, int64_t cols, const uint8_t* act,
                          int64_t n_tokens, float* y, int64_t y_stride, uint8_t* scratch, const uint8_t* next_w,
                          int64_t next_nr);

struct GemmKernels {
  // matmul uses these kernels from this many tokens on (below, the one-row VecDot4 / vec_dot
  // path is faster: a group of 16 lanes is then mostly padding).
  int64_t min_tokens;
  // Bytes of one packed group of 16 tokens of `cols` activations.
  int64_t (*group_bytes)(int64_t cols);
  // Quantizes tokens [16 * group, 16 * group + 16) of x ([n_tokens][cols] f32, cols a multiple
  // of the weight type's block) into dst (group_bytes(cols), 64-byte aligned); tokens at or
  // past n_tokens are packed as zeros.
  void (*pack_group)(const float* x, int64_t cols, int64_t n_tokens, int64_t group, uint8_t* dst);
  // Bytes of the per-thread weight scratch `rows` needs for rows of `cols` elements.
  int64_t (*scratch_bytes)(int64_t cols);
  // y[t * y_stride + r] = dot(w row r, token t) for r in [0, nr), t in [0, n_tokens): w row r
  // at w + r * w_row_bytes; act: the packed groups of those tokens, one after the other;
  // scratch: scratch_bytes(cols), 64-byte aligned, owned by the calling thread. next_w /
  // next_nr: the rows (same row bytes) the caller will pass next, prefetched into L2 while the
  // last rows compute (nullptr / 0: none).
  void (*rows)(const uint8_t* w, int64_t w_row_bytes, int64_t nr, int64_t cols, const uint8_t* act,
               int64_t n_tokens, float* y, int64_t y_stride, uint8_t* scratch, const uint8_t* next_w,
               int64_t next_nr);
  // The pairs layout, for n_tokens <= kGemmPairTokens (group 0 only; fewer vpdpbusd than one
  // wide group of the same tokens): pack_group_pairs packs tokens [0, n_tokens) into dst (at
  // most group_bytes(cols) bytes, 64-byte aligned); rows_pairs is `rows` for that group.
  void (*pack_group_pairs)(const float* x, int64_t cols, int64_t n_tokens, int64_t group, uint8_t* dst);
  void (*rows_pairs)(const uint8_t* w, int64_t w_row_bytes, int64_t nr, int64_t cols, const uint8_t* act,
                     int64_t n_tokens, float* y, int64_t y_stride, uint8_t* scratch, const uint8_t* next_w,
                     int64_t next_nr);
  // In-place tiles for a batch of at most kGemmInPlaceTokens[i] tokens (a batched decode step),
  // in layout i (pairs, quads, octets), one group: the weight rows are read where they are, with
  // no unpacking into scratch (scratch and next_w are unused), because at a few tokens a weight
  // byte meets the batch once and unpacking it costs as much as the products. Pairs give the
  // bits of rows_pairs. {nullptr, nullptr} where the type has none in that layout.
  struct InPlace {
    GemmPackGroup pack_group = nullptr;
    GemmRows rows = nullptr;
  };
  std::array<InPlace, kGemmInPlaceLayouts> in_place = {};
  // Which layout matmul gives a batch of n tokens (n >= min_tokens): the in-place layout with the
  // fewest lanes that holds them while n <= in_place_max_tokens, else pairs while n <=
  // pairs_max_tokens, else wide. Every layout gives a token the same bits (its lanes' integer sums
  // are added before each block's float step, dot_order.h), so these choose speed only. AVX-512:
  // pairs fill the 16 lanes up to 8 tokens; AVX2 runs 8 lanes a half, which pairs fill at 4 tokens
  // and the wide layout at 8 (docs/benchmarks.md, "Batches of 2-8 tokens in every layout").
  int64_t in_place_max_tokens = kGemmPairTokens;
  int64_t pairs_max_tokens = kGemmPairTokens;
  // A second wide kernel for batches of at least large_min_tokens tokens (the AMX tiles: faster
  // from there, slower below), in the wide layout with the same bits; nullptr: none. Its work
  // items take as many 16-token groups as fit in large_item_bytes of packed activations (3 to 16;
  // the others take 48 tokens). scratch_bytes covers both kernels.
  GemmRows rows_large = nullptr;
  int64_t large_min_tokens = 0;
  int64_t large_item_bytes = 0;
};

// nullptr when wtype has no packed kernel at that ISA (or the CPU lacks the ISA).
const GemmKernels* gemm_kernels(DType wtype, Isa isa);

namespace detail {
const GemmKernels* avx512_gemm(DType wtype);  // gemm_avx512.cpp; call only if Avx512 is supported
// gemm_avx2.cpp (Q4_0, Q5_0, Q8_0, Q2_K-Q6_K; bit-identical outputs to avx512_gemm's); call only
// if Avx2 is supported.
const GemmKernels* avx2_gemm(DType wtype);
// gemm_amx.cpp: the wide kernel (prompt batches) of a type on AMX tiles, the same bits as
// avx512_gemm's, its scratch and its threshold (Q4_0, Q5_0, Q8_0, Q4_1, Q5_1, Q4_K, Q5_K, Q6_K; else
// {}); call its rows only if amx_supported().
struct AmxWide {
  int64_t (*scratch_bytes)(int64_t cols) = nullptr;  // at least the VNNI wide kernel's too
  GemmRows rows = nullptr;
  int64_t min_tokens = 0;  // from here on faster than the VNNI wide kernel
};
AmxWide amx_wide(DType wtype);
// matmul.cpp: the avx512_gemm table of the type with amx_wide's kernel as its rows_large; nullptr
// where the type has none or the CPU lacks AMX.
const GemmKernels* amx_gemm(DType wtype);
// gemm_emulated.cpp: the Avx512 kernels emulated in plain C++ (runs on any CPU; for tests). The
// same types as avx512_gemm, else nullptr.
const GemmKernels* emulated_gemm(DType wtype);
}  // namespace detail

}  // namespace strata::kernels
