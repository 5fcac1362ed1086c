// kernels/cpu/gemm_amx.cpp — the wide packed-tile kernels of gemm.h on Intel AMX (AMX-TILE +
// AMX-INT8: Sapphire Rapids and later) for Q8_0, Q4_0, Q5_0, Q4_1, Q5_1, Q4_K, Q5_K and Q6_K, which
// matmul takes for prompt batches of 64 tokens and more (GemmKernels::rows_large). Compiled with the
// AVX-512 and AMX flags (file suffix); reached only through gemm_kernels() when amx_active()
// (isa.h: cpuid, and the kernel's permission for the tile state). No engine types.
//
// What the tiles do: one TDPBSSD / TDPBUSD multiplies 16 weight rows (A: 16 rows x K bytes) by 16
// tokens (B: K / 4 rows x 64 bytes, s8: exactly one wide activation group's steps, gemm_layout.h)
// into 16 x 16 int32 sums (C), where the VNNI tile needs K / 4 x 16 vpdpbusd. The 32-element types
// take K = 32, one block, whose sum is one integer of dot_order.h (Q8_0 / Q4_0 / Q5_0 with signed
// weights, so without the activations' offset correction). Q4_K / Q5_K (W45) and Q6_K (W6F) take
// K = 64 over a whole 256-element block with the group scales folded into the weights, in parts
// whose C tiles, shifted and added, are that block's scaled integer sum. C goes through memory
// (tilestored) to the AVX-512 registers, which then take the same integer and float steps as
// gemm_avx512.cpp's wide tile, in the same order: every output is the same bits as the VNNI tiles,
// the one-token dots and the scalar reference give (test_gemm checks it bit for bit).
// Q3_K / Q2_K keep the VNNI tiles: an AMX version with one product of K = 16 per 16-element scale
// group was slower than those (it was measured on Q6_K: W 4096 x 4096, 512 tokens, 1 thread, 75 vs
// 65-70 ms), and their few users run them at decode. docs/benchmarks.md, "AMX tiles for prompt
// batches".
//
// Weights: the 16 rows of a panel are unpacked by the VNNI kernels' unpackers into four 4-row
// scratches (gemm_layout.h; their scales and mins are read there), and their levels gathered into
// the A layout (unpack_panel). The products then run per pass of token groups, a chunk of blocks at
// a time, two chunks ahead of their steps (rows_amx).
// The tile state is configured at the start of each call and released at its end (the calling
// thread's AMX state: configure, use and release all happen within one call, on one thread).
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <type_traits>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "kernels/cpu/blocks.h"
#include "kernels/cpu/fp16.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_layout.h"
#include "kernels/cpu/type_kernels.h"
#include "kernels/cpu/weight_prefetch.h"

namespace strata::kernels::gemm_amx {
namespace {

using namespace gemm_layout;

#include "kernels/cpu/gemm_x86.inc"
#include "kernels/cpu/gemm_avx512.inc"

constexpr int kPanelRows = 16;  // weight rows of an A tile (and of a C tile)

// A 4-row unpacker of gemm_avx512.inc / gemm_x86.inc (pack_w80, pack_w81, pack_w45).
using PackW = void (*)(const uint8_t* w, int64_t wrb, int64_t nr, int64_t nb, uint8_t* ws);

// The 64-byte LDTILECFG operand (palette 1): tiles 0-3 are C (16 x 16 int32), 4 / 5 are A (16
// rows x kK bytes), 6 / 7 are B (kK / 4 rows x 64 bytes). A tile register is not renamed: a
// product's zero -> TDPBUSD -> store is a chain of about 70 cycles on its C tile (TDPBUSD alone
// has a latency of about 52 and a throughput of 16), so four C tiles in turn keep the unit busy.
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64);

template <int kK>
constexpr TileConfig tile_config() {
  TileConfig c;
  for (int t = 0; t < 4; ++t) c.colsb[t] = 64, c.rows[t] = kPanelRows;
  for (int t = 0; t < 2; ++t) {
    c.colsb[4 + t] = kK, c.rows[4 + t] = kPanelRows;
    c.colsb[6 + t] = 64, c.rows[6 + t] = kK / 4;
  }
  return c;
}
template <int kK>
constexpr TileConfig kTileConfig = tile_config<kK>();

// One A tile (16 weight rows x kK bytes at a, rows kK apart) against G token groups (B: kK / 4
// steps of group g at b + g * b_stride, 64 bytes apart): c + 256 g (int32 [16][16], 64-byte
// aligned) = A . B_g. *slot counts the products, which take the C tiles in turn; the A tile
// alternates with each call, the B tile with each product. kSigned: A holds signed bytes
// (TDPBSSD), else unsigned (TDPBUSD); B is signed.
#define STRATA_AMX_PRODUCT(C, A, B)     \
  _tile_loadd(B, b + g * b_stride, 64); \
  _tile_zero(C);                        \
  if constexpr (kSigned)                \
    _tile_dpbssd(C, A, B);              \
  else                                  \
    _tile_dpbusd(C, A, B);              \
  _tile_stored(C, c + 256 * g, 64);     \
  break
#define STRATA_AMX_PRODUCTS(A)                        \
  _tile_loadd(A, a, kK);                              \
  for (int g = 0; g < G; ++g, ++*slot) {              \
    switch (*slot & 3) {                              \
      case 0: STRATA_AMX_PRODUCT(0, A, 6);               \
      case 1: STRATA_AMX_PRODUCT(1, A, 7);               \
      case 2: STRATA_AMX_PRODUCT(2, A, 6);               \
      default: STRATA_AMX_PRODUCT(3, A, 7);              \
    }                                                 \
  }
// GCC's tile intrinsics paste their tile numbers into the instruction text: literals only.
template <int kK, bool kSigned>
inline void tile_products(const uint8_t* a, const uint8_t* b, int64_t b_stride, int G, int32_t* c, int* slot,
                          bool a_odd) {
  if (a_odd) {
    STRATA_AMX_PRODUCTS(5)
  } else {
    STRATA_AMX_PRODUCTS(4)
  }
}
#undef STRATA_AMX_PRODUCTS
#undef STRATA_AMX_PRODUCT

// The four 4-row scratches of a panel and its A layout, for a weight family of gemm_layout.h:
// kBlockBytes bytes of scratch per block of kElems elements, the levels at kQ (kRowBytes = kElems
// bytes a row), cut into products of kK. kSigned: the A panel holds the signed weights (the
// scratch's u8 = w + 128 with the top bit flipped), whose products need no correction for the
// offset (the same integer sums as the VNNI tile's u8 sums plus corr).
struct W80 {
  static constexpr int kParts = 1;
  static constexpr int64_t kElems = 32, kBlockBytes = kW80Block, kQ = kW80Q;
  static constexpr int kK = 32;
  static constexpr bool kSigned = true;  // the scratch's w + 128, less 128 in the A panel
  static int64_t quad_bytes(int64_t cols) { return scratch_bytes_w80(cols); }
};
struct W81 {
  static constexpr bool kSigned = false;
  static constexpr int kParts = 1;
  static constexpr int64_t kElems = 32, kBlockBytes = kW81Block, kQ = kW81Q;
  static constexpr int kK = 32;
  static int64_t quad_bytes(int64_t cols) { return scratch_bytes_w81(cols); }
};
// Q4_K / Q5_K: folded (kParts > 1), the 6-bit scale of each 32-element group folded into the A panel as two
// parts, levels x (scale & 7) and levels x (scale >> 3) (at most 31 x 7 = 217: u8), so that the
// tile sums a whole 256-element block (4 products of K = 64 into each of two C tiles) and the
// block's scaled integer sum is C1 + 8 C2: the same integer as the VNNI tile's sum of vpmulld'ed
// group sums, with no multiply on the vector side.
struct W45 {
  static constexpr bool kSigned = false;
  static constexpr int kParts = 2;
  static constexpr int64_t kElems = 256, kBlockBytes = kW45Block, kQ = kW45Q;
  static constexpr int kK = 64;
  static int64_t quad_bytes(int64_t cols) { return scratch_bytes_w45(cols); }
};
// Q6_K: folded in three signed parts. Each 16-element group's 8-bit scale sc (-128..127) is
// written in base 8 with digits in [-3, 4] (a complete set of residues mod 8, so every sc has
// exactly one such form; sc = d0 + 8 d1 + 64 d2), and part i holds (level - 32) x d_i, which is
// -32..31 times -3..4: -128..124, s8 (TDPBSSD). Then C0 + 8 C1 + 64 C2 is the block's integer
// sum of sc x (level - 32) x activation: the VNNI tile's isum (its scaled group sums plus the
// -32 sc offsets taken with the activations' 16-element sums), here without the offset term.
struct W6F {
  static constexpr bool kSigned = true;
  static constexpr int kParts = 3;
  static constexpr int64_t kElems = 256, kBlockBytes = kW6Block, kQ = kW6Q;
  static constexpr int kK = 64;
  static int64_t quad_bytes(int64_t cols) { return scratch_bytes_w6(cols); }
};

// The families with more than one part fold their scales into the A panel.
template <class F>
constexpr bool kFolded = F::kParts > 1;

// A block's products (kElems / kK; a folded block's parts), the token groups a pass runs
// (kGroups: their products of a chunk stay in L1), and the blocks a chunk holds (kChunk: a
// 32-element family's step runs 2 blocks with its sums in registers).
template <class F>
constexpr int kProducts = kFolded<F> ? F::kParts : static_cast<int>(F::kElems / F::kK);
template <class F>
constexpr int kGroups = kFolded<F> ? 2 : 4;
template <class F>
constexpr int64_t kChunk = kFolded<F> ? 1 : 2;
// Bytes of the A panel per element of a row: the folded families hold one a part.
template <class F>
constexpr int64_t kPanelParts = F::kParts;
// C tiles of one chunk: [kChunk blocks][kProducts][kGroups] x 256 int32; the products run
// kAhead chunks ahead of the steps, in a ring of kAhead + 1 chunks.
template <class F>
constexpr int64_t kChunkInts = kChunk<F> * kProducts<F> * kGroups<F> * 256;
constexpr int64_t kAhead = 2, kRing = kAhead + 1;

// Per-thread scratch of a call, all 64-byte aligned (at least the VNNI wide kernel's, which is one
// quad's): the four quads, the A panel (kPanelParts x cols bytes a row, 16 rows), the ring of
// kRing chunks of C tiles (one being read while those ahead are stored) and the pass's running
// sums (f32 [kGroups][16 rows][16 tokens]).
template <class F>
int64_t quads_bytes(int64_t cols) {
  return (4 * F::quad_bytes(cols) + 63) / 64 * 64;
}
template <class F>
int64_t scratch_bytes(int64_t cols) {
  return quads_bytes<F>(cols) + kPanelParts<F> * kPanelRows * cols + kRing * kChunkInts<F> * 4 +
         kGroups<F> * kPanelRows * 64;
}

// Where row r's fields of block k sit: its quad's block, and its row within the quad.
template <class F>
inline const uint8_t* quad_block(const uint8_t* quads, int64_t qb, int r, int64_t k) {
  return quads + (r / 4) * qb + k * F::kBlockBytes;
}

// Unpacks rows [0, rp) of the panel at w (rows past rp: zeros) into the quads, and gathers
// their levels into the A layout: product p of block k is panel[(k kProducts + p)][16][kK]
// (folded: block k is its part 1 [16][256], then its part 2).
template <class F, PackW kPack>
void unpack_panel(const uint8_t* w, int64_t wrb, int64_t rp, int64_t nb, uint8_t* quads, uint8_t* panel) {
  constexpr int kK = F::kK;
  const int64_t qb = F::quad_bytes(nb * F::kElems);
  for (int q = 0; q < 4; ++q) kPack(w + 4 * q * wrb, wrb, min_i64(4, rp - 4 * q > 0 ? rp - 4 * q : 0), nb, quads + q * qb);
  if constexpr (F::kParts == 3) {
    // block k: part i [16 rows][256] at i x 16 x 256; 32-element piece j of row r (its groups 2j,
    // 2j + 1) at 32 j
    for (int64_t k = 0; k < nb; ++k)
      for (int r = 0; r < kPanelRows; ++r) {
        const uint8_t* blk = quad_block<F>(quads, qb, r, k);
        const uint8_t* lv = blk + F::kQ + F::kElems * (r % 4);
        uint8_t* d0 = panel + k * (3 * kPanelRows * 256) + 256 * r;
        int16_t digits[3][16];  // sc = d0 + 8 d1 + 64 d2, each in [-3, 4]
        for (int grp = 0; grp < 16; ++grp) {
          int32_t sc;
          std::memcpy(&sc, blk + kW6Sc + 64 * (r % 4) + 4 * grp, 4);
          for (int i = 0; i < 3; ++i) {
            const int32_t d = ((sc + 3) & 7) - 3;
            digits[i][grp] = static_cast<int16_t>(d);
            sc = (sc - d) / 8;
          }
        }
        for (int j = 0; j < 8; ++j) {
          const __m512i w16 = _mm512_sub_epi16(_mm512_cvtepu8_epi16(loadu256(lv + 32 * j)), _mm512_set1_epi16(32));
          for (int i = 0; i < 3; ++i) {
            const __m512i dig = _mm512_inserti64x4(_mm512_set1_epi16(digits[i][2 * j]),
                                                   _mm256_set1_epi16(digits[i][2 * j + 1]), 1);
            storeu256(d0 + i * kPanelRows * 256 + 32 * j, _mm512_cvtepi16_epi8(_mm512_mullo_epi16(w16, dig)));
          }
        }
      }
    return;
  } else if constexpr (kFolded<F>) {
    // block k: part 1 [16 rows][256] then part 2 [16 rows][256]; group j of row r at 32 j
    for (int64_t k = 0; k < nb; ++k)
      for (int r = 0; r < kPanelRows; ++r) {
        const uint8_t* blk = quad_block<F>(quads, qb, r, k);
        const uint8_t* lv = blk + F::kQ + F::kElems * (r % 4);
        uint8_t* d1 = panel + k * (2 * kPanelRows * 256) + 256 * r;
        for (int j = 0; j < 8; ++j) {
          int32_t sc;
          std::memcpy(&sc, blk + kW45Sc + 32 * (r % 4) + 4 * j, 4);
          const __m512i l16 = _mm512_cvtepu8_epi16(loadu256(lv + 32 * j));
          storeu256(d1 + 32 * j, _mm512_cvtepi16_epi8(_mm512_mullo_epi16(l16, _mm512_set1_epi16(static_cast<short>(sc & 7)))));
          storeu256(d1 + kPanelRows * 256 + 32 * j,
                    _mm512_cvtepi16_epi8(_mm512_mullo_epi16(l16, _mm512_set1_epi16(static_cast<short>(sc >> 3)))));
        }
      }
    return;
  }
  for (int64_t k = 0; k < nb; ++k)
    for (int p = 0; p < kProducts<F>; ++p) {
      uint8_t* dst = panel + (k * kProducts<F> + p) * (kPanelRows * kK);
      for (int r = 0; r < kPanelRows; ++r) {
        const uint8_t* src = quad_block<F>(quads, qb, r, k) + F::kQ + F::kElems * (r % 4) + kK * p;
        const __m256i q = loadu256(src);
        storeu256(dst + kK * r, F::kSigned ? _mm256_xor_si256(q, _mm256_set1_epi8(static_cast<char>(0x80))) : q);
      }
    }
}

// The float step of the 32-element families for one block of one group (dot_order.h, as
// tile_w8): facc[r] += C[r] * (d_a * d_w[r]) (C: the signed sum, which tile_w8 gets as its u8
// sum + corr), and for kMin (Q4_1 / Q5_1) then s_a * m_w.
template <class F, bool kMin>
inline void step_w8(const int32_t* c, int64_t, const uint8_t* ab, const uint8_t* quads, int64_t qb, int64_t k,
                    __m512 (&facc)[kPanelRows]) {
  constexpr int64_t kD = kMin ? kW81D : kW80D;
  const __m512 da = _mm512_load_ps(ab + Wide::k80D);
  for (int r = 0; r < kPanelRows; ++r) {
    const uint8_t* wb = quad_block<F>(quads, qb, r, k);
    const __m512i acc = _mm512_load_si512(c + 16 * r);
    const __m512 dd = _mm512_mul_ps(da, _mm512_set1_ps(loadf(wb + kD + 4 * (r % 4))));
    facc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc), dd, facc[r]);
    if constexpr (kMin) {
      const __m512 s_a = _mm512_load_ps(ab + Wide::k80Corr);
      facc[r] = _mm512_fmadd_ps(s_a, _mm512_set1_ps(loadf(wb + kW81M + 4 * (r % 4))), facc[r]);
    }
  }
}

// Q4_K / Q5_K, one superblock of one group (as tile_w45): isum = sum of scale x group sum, msum =
// sum of min x activation sums of 32, then facc += isum dd, facc -= msum dmin d_a.
inline void step_w45(const int32_t* c, int64_t cps, const uint8_t* ab, const uint8_t* quads, int64_t qb, int64_t k,
                     __m512 (&facc)[kPanelRows]) {
  const __m512 da = _mm512_load_ps(ab + Wide::k8KD);
  __m512i bs[4];
  for (int p = 0; p < 4; ++p) bs[p] = _mm512_load_si512(ab + Wide::k8KBs32 + 64 * p);
  for (int r = 0; r < kPanelRows; ++r) {
    const uint8_t* wb = quad_block<W45>(quads, qb, r, k);
    const int rr = r % 4;
    // sum of scale x group sum = part 1 + 8 part 2 (W45's folded scales), exact in int32
    const __m512i isum = _mm512_add_epi32(_mm512_load_si512(c + 16 * r), _mm512_slli_epi32(_mm512_load_si512(c + cps + 16 * r), 3));
    __m512i msum = _mm512_setzero_si512();
    for (int p = 0; p < 4; ++p) msum = _mm512_dpwssd_epi32(msum, bs[p], bcast_step<4>(wb + kW45Mp + 16 * rr + 4 * p));
    const __m512 dd = _mm512_mul_ps(da, _mm512_set1_ps(loadf(wb + kW45D + 4 * rr)));
    const __m512 dm = _mm512_mul_ps(da, _mm512_set1_ps(loadf(wb + kW45Dmin + 4 * rr)));
    facc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), dd, facc[r]);
    facc[r] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(msum), dm, facc[r]);
  }
}

// Q6_K, one superblock of one group (as tile_w6): isum = C0 + 8 C1 + 64 C2 (W6F's digits of the
// scales; the offsets are in the signed levels), then facc += isum d_w d_a.
inline void step_w6(const int32_t* c, int64_t cps, const uint8_t* ab, const uint8_t* quads, int64_t qb, int64_t k,
                    __m512 (&facc)[kPanelRows]) {
  const __m512 da = _mm512_load_ps(ab + Wide::k8KD);
  for (int r = 0; r < kPanelRows; ++r) {
    const uint8_t* wb = quad_block<W6F>(quads, qb, r, k);
    const __m512i isum = _mm512_add_epi32(
        _mm512_add_epi32(_mm512_load_si512(c + 16 * r), _mm512_slli_epi32(_mm512_load_si512(c + cps + 16 * r), 3)),
        _mm512_slli_epi32(_mm512_load_si512(c + 2 * cps + 16 * r), 6));
    const __m512 dd = _mm512_mul_ps(da, _mm512_set1_ps(loadf(wb + kW6D + 4 * (r % 4))));
    facc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), dd, facc[r]);
  }
}

// One product into C tile C of A tile A and B tile B: TDPBSSD where the A panel holds signed
// bytes (kSigned), else TDPBUSD (unsigned); B (the activations) is signed either way.
#define STRATA_AMX_DP(C, A, B) \
  if constexpr (kSigned)       \
    _tile_dpbssd(C, A, B);     \
  else                         \
    _tile_dpbusd(C, A, B)

// A folded block (W45: two parts, W6F: three) against G (1 or 2) token groups, each part with 4
// products of K = 64 (A: part p's 64 bytes q of 16 rows, 256 apart; B: 16 steps of group g),
// into c [part][g] (kGroups tiles a part). Parts 0 and 1 first: C tiles 0 / 1 for group 0, 2 / 3
// for group 1; then W6F's part 2: C tile 0 for group 0, 1 for group 1.
template <int kParts, bool kSigned>
inline void folded_products(const uint8_t* a, const uint8_t* b, int64_t b_stride, int G, int32_t* c) {
  constexpr int64_t kPart = kPanelRows * 256;
  const bool two = G == 2;
  _tile_zero(0);
  _tile_zero(1);
  if (two) {
    _tile_zero(2);
    _tile_zero(3);
  }
  for (int q = 0; q < 4; ++q) {
    _tile_loadd(4, a + 64 * q, 256);
    _tile_loadd(5, a + kPart + 64 * q, 256);
    _tile_loadd(6, b + 1024 * q, 64);
    STRATA_AMX_DP(0, 4, 6);
    STRATA_AMX_DP(1, 5, 6);
    if (two) {
      _tile_loadd(7, b + b_stride + 1024 * q, 64);
      STRATA_AMX_DP(2, 4, 7);
      STRATA_AMX_DP(3, 5, 7);
    }
  }
  _tile_stored(0, c, 64);
  _tile_stored(1, c + 512, 64);
  if (two) {
    _tile_stored(2, c + 256, 64);
    _tile_stored(3, c + 768, 64);
  }
  if constexpr (kParts == 3) {
    _tile_zero(0);
    if (two) _tile_zero(1);
    for (int q = 0; q < 4; ++q) {
      _tile_loadd(4, a + 2 * kPart + 64 * q, 256);
      _tile_loadd(6, b + 1024 * q, 64);
      STRATA_AMX_DP(0, 4, 6);
      if (two) {
        _tile_loadd(7, b + b_stride + 1024 * q, 64);
        STRATA_AMX_DP(1, 4, 7);
      }
    }
    _tile_stored(0, c + 1024, 64);
    if (two) _tile_stored(1, c + 1280, 64);
  }
}
#undef STRATA_AMX_DP

// The products of blocks [k0, k1) of groups [0, G) (group g's activations at ag + g * gb) into
// c ([block - k0][product][g] tiles).
template <class F>
inline void chunk_products(const uint8_t* panel, int64_t k0, int64_t k1, int64_t nb, const uint8_t* ag, int64_t gb,
                           int64_t act_block, int64_t act_q, int G, int32_t* c, int* slot) {
  constexpr int kK = F::kK, kSteps = kK / 4;
  if constexpr (kFolded<F>) {
    constexpr int64_t kBlockPanel = F::kParts * kPanelRows * 256;
    for (int64_t k = k0; k < k1; ++k) {
      const uint8_t* a = panel + k * kBlockPanel;
      const uint8_t* b = ag + k * act_block + act_q;
      folded_products<F::kParts, F::kSigned>(a, b, gb, G, c + (k - k0) * kProducts<F> * kGroups<F> * 256);
      if (k + 1 < nb) {  // the next block's rows into L1, as below
        for (int line = 0; line < kBlockPanel / 64; ++line)
          _mm_prefetch(reinterpret_cast<const char*>(a + kBlockPanel + 64 * line), _MM_HINT_T0);
        for (int g = 0; g < G; ++g)
          for (int line = 0; line < 64; ++line)
            _mm_prefetch(reinterpret_cast<const char*>(b + g * gb + act_block + 64 * line), _MM_HINT_T0);
      }
    }
    return;
  }
  for (int64_t k = k0; k < k1; ++k)
    for (int p = 0; p < kProducts<F>; ++p) {
      const int64_t i = (k - k0) * kProducts<F> + p;
      const uint8_t* a = panel + (k * kProducts<F> + p) * (kPanelRows * kK);
      const uint8_t* b = ag + k * act_block + act_q + 64 * kSteps * p;
      tile_products<kK, F::kSigned>(a, b, gb, G, c + i * kGroups<F> * 256, slot, (i & 1) != 0);
      // The next chunk's weight and activation rows of this product into L1: a tile load does not
      // set off the hardware prefetcher, and from L2 it stalls the products (W 4096 x 4096, 512
      // tokens, 1 thread: with B from a fixed buffer in L1, Q8_0 48 -> 36 ms, Q4_K 56 -> 39; with
      // these prefetches about 49 -> 46 and 58 -> 47).
      if (k + kChunk<F> < nb) {
        for (int line = 0; line < kPanelRows * kK / 64; ++line)
          _mm_prefetch(reinterpret_cast<const char*>(a + kChunk<F> * kProducts<F> * (kPanelRows * kK) + 64 * line),
                       _MM_HINT_T0);
        for (int g = 0; g < G; ++g)
          for (int line = 0; line < kSteps; ++line)
            _mm_prefetch(reinterpret_cast<const char*>(b + g * gb + kChunk<F> * act_block + 64 * line), _MM_HINT_T0);
      }
    }
}

// GemmKernels::rows in the wide layout. Per panel of 16 rows (unpacked once for all the call's
// tokens), per pass of kGroups token groups: the blocks in chunks of kChunk, the tile products of
// chunk i + kAhead issued before the integer and float steps of chunk i (a ring of kRing chunks of
// C tiles in scratch), so that the tile unit and the vector units work at once and a step's loads
// find its C rows stored long before; each A tile (a block's 16 rows) serves every group of the
// pass, and chunk_products prefetches the next chunk's A and B rows into L1.
// Step(c, product stride, group block, quads, quad bytes, k, facc) is the family's step of one
// block of one group; facc stays in registers over a chunk. The rows the next panel (or the
// caller's next item) unpacks are prefetched into L2 during the first pass.
template <class F, PackW kPack, auto Step>
void rows_amx(const uint8_t* w, int64_t wrb, int64_t nr, int64_t cols, const uint8_t* act, int64_t n_tokens,
              float* y, int64_t ys, uint8_t* ws, const uint8_t* next_w, int64_t next_nr) {
  _tile_loadconfig(&kTileConfig<F::kK>);  // this thread's tiles, released at the end of the call
  const int64_t nb = cols / F::kElems;
  const int64_t gb = F::kElems == 32 ? group_bytes_q8_0(cols) : group_bytes_q8_k(cols);
  const int64_t act_block = F::kElems == 32 ? Wide::k80Block : Wide::k8KBlock;
  const int64_t act_q = F::kElems == 32 ? Wide::k80Q : Wide::k8KQ;
  const int64_t qb = F::quad_bytes(cols);
  uint8_t* quads = ws;
  uint8_t* panel = ws + quads_bytes<F>(cols);
  int32_t* cbuf = reinterpret_cast<int32_t*>(panel + kPanelParts<F> * kPanelRows * cols);  // [kRing][kChunkInts]
  float* sums = reinterpret_cast<float*>(cbuf + kRing * kChunkInts<F>);   // [kGroups][16][16]
  const int64_t n_groups = (n_tokens + kG - 1) / kG;
  const int64_t n_chunks = (nb + kChunk<F> - 1) / kChunk<F>;
  int slot = 0;
  // token t's rows are column t of a group's sums (sg below): one gather and one (masked) store a token
  const __m512i column = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                            _mm512_set1_epi32(16));
  for (int64_t r0 = 0; r0 < nr; r0 += kPanelRows) {
    const int64_t rp = min_i64(kPanelRows, nr - r0);
    const __mmask16 rows_mask = static_cast<__mmask16>((1u << rp) - 1);  // the panel's rows in a token's output
    unpack_panel<F, kPack>(w + r0 * wrb, wrb, rp, nb, quads, panel);
    Prefetch pf;
    {
      const bool more = r0 + kPanelRows < nr;
      const int64_t pf_rows = more ? min_i64(kPanelRows, nr - r0 - kPanelRows) : min_i64(kPanelRows, next_nr);
      if (pf_rows > 0) {
        pf.p = more ? w + (r0 + kPanelRows) * wrb : next_w;
        pf.step = (pf_rows * wrb + n_chunks * 64 - 1) / (n_chunks * 64) * 64;
      }
    }
    for (int64_t g0 = 0; g0 < n_groups; g0 += kGroups<F>) {
      const int G = static_cast<int>(min_i64(kGroups<F>, n_groups - g0));
      const uint8_t* ag = act + g0 * gb;
      for (int64_t i = 0; i < G * kPanelRows * 16; i += 16) _mm512_store_ps(sums + i, _mm512_setzero_ps());
      for (int64_t ci = 0; ci < min_i64(kAhead, n_chunks); ++ci)
        chunk_products<F>(panel, ci * kChunk<F>, min_i64(nb, (ci + 1) * kChunk<F>), nb, ag, gb, act_block, act_q, G,
                          cbuf + (ci % kRing) * kChunkInts<F>, &slot);
      for (int64_t ci = 0; ci < n_chunks; ++ci) {
        if (g0 == 0) prefetch_part(pf, ci);
        const int64_t k0 = ci * kChunk<F>, k1 = min_i64(nb, k0 + kChunk<F>);
        if (const int64_t cn = ci + kAhead; cn < n_chunks)
          chunk_products<F>(panel, cn * kChunk<F>, min_i64(nb, (cn + 1) * kChunk<F>), nb, ag, gb, act_block, act_q, G,
                            cbuf + (cn % kRing) * kChunkInts<F>, &slot);
        const int32_t* c = cbuf + (ci % kRing) * kChunkInts<F>;
        for (int g = 0; g < G; ++g) {
          float* sg = sums + g * kPanelRows * 16;
          __m512 facc[kPanelRows];
          for (int r = 0; r < kPanelRows; ++r) facc[r] = _mm512_load_ps(sg + 16 * r);
          for (int64_t k = k0; k < k1; ++k)
            Step(c + ((k - k0) * kProducts<F> * kGroups<F> + g) * 256, int64_t{kGroups<F>} * 256,
                 ag + g * gb + k * act_block, quads, qb, k, facc);
          for (int r = 0; r < kPanelRows; ++r) _mm512_store_ps(sg + 16 * r, facc[r]);
        }
      }
      for (int g = 0; g < G; ++g) {
        const float* sg = sums + g * kPanelRows * 16;
        const int64_t t0 = (g0 + g) * kG, nt = min_i64(kG, n_tokens - t0);
        for (int64_t t = 0; t < nt; ++t)
          _mm512_mask_storeu_ps(y + (t0 + t) * ys + r0, rows_mask,
                                _mm512_i32gather_ps(column, sg + t, 4));
      }
    }
  }
  _tile_release();
}

// The wide kernel and its scratch of each type. matmul.cpp builds the AMX tables from them (the
// AVX-512 table with these two replaced): a table copied here would need a guarded static, whose
// exception frame the isa_check forbids in an ISA object.
// From how many tokens the AMX kernel beats the VNNI one (W 4096 x 4096, 1 thread, ms VNNI / AMX;
// docs/benchmarks.md, "AMX tiles for prompt batches"): from 64 (Q4_0 at 48 4.59 / 4.58, at 64 5.88
// / 5.12; Q8_0 at 48 4.40 / 4.92, at 64 6.51 / 5.35; Q4_K with its folded scales at 64 6.39 /
// 5.37, Q5_K 6.61 / 5.58).
template <class F>
constexpr int64_t kAmxMinTokens = 64;

template <class F, PackW kPack, auto Step>
constexpr detail::AmxWide kWide = {&scratch_bytes<F>, &rows_amx<F, kPack, Step>, kAmxMinTokens<F>};

}  // namespace
}  // namespace strata::kernels::gemm_amx

namespace strata::kernels::detail {
AmxWide amx_wide(DType t) {
  using namespace gemm_amx;
  switch (t) {
    case DType::Q8_0: return kWide<W80, &pack_w80<DType::Q8_0>, &step_w8<W80, false>>;
    case DType::Q4_0: return kWide<W80, &pack_w80<DType::Q4_0>, &step_w8<W80, false>>;
    case DType::Q5_0: return kWide<W80, &pack_w80<DType::Q5_0>, &step_w8<W80, false>>;
    case DType::Q4_1: return kWide<W81, &pack_w81<DType::Q4_1>, &step_w8<W81, true>>;
    case DType::Q5_1: return kWide<W81, &pack_w81<DType::Q5_1>, &step_w8<W81, true>>;
    case DType::Q4_K: return kWide<W45, &pack_w45<false>, &step_w45>;
    case DType::Q5_K: return kWide<W45, &pack_w45<true>, &step_w45>;
    case DType::Q6_K: return kWide<W6F, &pack_w6, &step_w6>;
    default: return {};
  }
}
}  // namespace strata::kernels::detail
