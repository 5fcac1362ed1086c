// kernels/cpu/matmul.cpp — matrix product over the thread pool: quantize activations once,
// then dot products in row x token tiles handed out dynamically (an atomic counter), so threads
// that finish early take more work. Batch invariance (issue 45, dot_order.h): every output is
// summed in one order whatever the batch, so prompts of quantized weights go to the packed-tile
// kernels of gemm.h (wide: one lane a token, 16 tokens a group, 16-row x 48-token items, each
// thread unpacking 4 weight rows at a time into its own scratch; batches of up to 8 tokens in the
// pairs or in-place layouts, whose lanes of a token are added as integers before each block's
// float step), all of which sum in the one-token dot's order; below the type's min_tokens, and on CPUs without the tiles,
// to the one-token vec_dot per token; float weights to gemm_float.h's `small` (the one-token
// dot's chain). Threads split rows and tokens, never k.
#include "kernels/cpu/matmul.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <optional>
#include <span>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_float.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/quant.h"
#include "kernels/cpu/type_kernels.h"

namespace strata::kernels {
namespace {

constexpr int64_t kTokenBlock = 64;  // tokens per tile at most
// ... and, for tiles of one-token dots, no more than fit this many activation bytes: every weight
// row of such a tile streams its tokens' whole activation rows, which must stay in L2 (512 KiB a
// core on Zen 3). With long rows (14336 columns: 16 KiB of Q8_K, 56 KiB of f32 a token) 64 tokens
// spilled to L3 and a 512-token product ran slower per token than an 8-token one. (The 4-token
// dots cut k into segments instead: kDot4SegmentBytes.)
constexpr int64_t kTokenBlockBytes = 256 << 10;
constexpr int64_t kRowBlockPrompt = 16;  // weight rows per tile in prompt mode (L1-sized)
// The 4-token dots' k segment: this many bytes of activations (4 tokens' blocks of the segment),
// which stay in L1 (32-48 KiB a core) while each weight row of the tile passes over them.
constexpr int64_t kDot4SegmentBytes = 8 << 10;
// F32 weights take the 4-token dot (or the float tiles) only from this many tokens on: they sum
// in another order than the one-token dot, and below it (a batched decode step of up to 15
// sequences) every token then gets bit for bit what it gets alone (the one-token dot, or
// gemm_float.h's F32 `small`, which sums in exactly its order). Quantized types re-quantize
// activations per row anyway.
constexpr int64_t kF32Dot4MinTokens = 16;

// The 4-token dots (VecDot4) keep their running sums in float vectors, lanes across blocks: not
// dot_order.h's order, so a token's output would depend on whether it shares a call. matmul no
// longer takes them (batch invariance, issue 45): quantized prompts take the packed tiles, which
// follow dot_order.h, or the one-token dot per token.
bool use_dot4(DType, int64_t) { return false; }

// Float weights (F32, F16, BF16) take the register-tiled GEMM (gemm_float.h) from this many
// tokens on. For F32 it is kF32Dot4MinTokens's bit-for-bit promise. F16 / BF16 make no such
// promise (their 4-token dot already sums in another order than the one-token dot), but at 8
// tokens the tiles were slower than the 4-token dot (W 4096 x 14336 F16, 1 thread: 46 vs 26 ms of
// CPU time): a block then converts its weight rows chunk by chunk for only 8 tokens, in short
// runs the hardware prefetcher does not follow, where the 4-token dot streams whole rows.
constexpr int64_t kFloatTilesMinTokens = kF32Dot4MinTokens;

// Batch invariance (issue 45): the tiles sum k in blocks per register tile, another order than
// the one-token dot's one chain, so matmul does not take them; every batch of float weights takes
// `small`, which sums each output in the one-token dot's order (F16 / BF16 now included).
const FloatGemmKernels* float_tiles(DType, Isa, int64_t) { return nullptr; }

// Batches of 2 to kFloatTilesMinTokens - 1 tokens take gemm_float.h's `small` (each weight row
// streamed once for all of them): F16 / BF16 instead of the one-token dot per token (W 4096 x
// 14336, 1 thread, AVX-512, mean ms at 2 / 3 tokens: F16 16.1-17.7 / 22.3-23.1 -> 11.2-12.5 /
// 11.3-12.9, BF16 14.7-20.7 / 18.8-23.6 -> 11.4-12.5 / 11.9-12.4), F32
// in the one-token dot's exact order (kF32Dot4MinTokens's promise holds).
const FloatGemmKernels* float_small(DType wtype, Isa isa, int64_t n_tokens) {
  if (n_tokens < 2) return nullptr;
  return float_gemm_kernels(wtype, isa);
}

// Packed-tile path (gemm.h): tokens per work item (their packed activations stay in L2) and
// weight rows per work item. 48 tokens: the AVX-512 tiles run 3 groups of 16 a pass (a 4 x 48
// register tile); with 64, each item ran 3 groups then 1. W 4096 x 14336, n = 512, 1 thread, mean
// ms, 64 with 2-group tiles vs 48 with 3-group tiles, three alternations: Q4_K 323 / 297 / 318 vs
// 293 / 280 / 284, Q6_K 376 / 299 / 349 vs 277 / 292 / 338, Q8_0 308 / 340 / 327 vs 298 / 296 / 302.
constexpr int64_t kGemmTokenChunk = 48;
constexpr int64_t kGemmRowChunk = 16;

struct alignas(64) WorkCounter {
  std::atomic<int64_t> next{0};
};

uint8_t* align64(uint8_t* p) {
  return reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(p) + 63) & ~uintptr_t{63});
}

// The packed path's scratch, in bytes: up to 63 of alignment, then the packed activations
// ([n_groups][group_bytes], 16 tokens a group), then one 64-byte-aligned work area per thread.
struct PackedScratch {
  int64_t n_groups, group_bytes, worker_bytes, total;
  PackedScratch(const GemmKernels& gk, int64_t cols, int64_t n_tokens, int n_threads)
      : n_groups((n_tokens + kGemmTokenGroup - 1) / kGemmTokenGroup),
        group_bytes(gk.group_bytes(cols)),
        worker_bytes((gk.scratch_bytes(cols) + 63) / 64 * 64),
        total(64 + n_groups * group_bytes + n_threads * worker_bytes) {}
};

// Which activation layout and row kernel a packed product of n_tokens uses (GemmKernels::
// in_place_max_tokens and pairs_max_tokens): the in-place layout with the fewest lanes a token
// that holds the batch, the pairs layout (one group of at most 8 tokens, 2 lanes a token), or
// 16-token wide groups. Batch invariance (issue 45): every layout sums a token's lanes as integers
// before each block's float step, in dot_order.h's order, so a token's output is the same bits in
// each of them and as the one-token dot's.
// token_chunk: tokens per work item (GemmKernels::large_item_bytes).
struct GemmLayoutChoice {
  GemmPackGroup pack_group;
  GemmRows rows;
  bool in_place;
  int64_t token_chunk = kGemmTokenChunk;
};
GemmLayoutChoice gemm_layout_for(const GemmKernels& gk, int64_t n_tokens, int64_t cols) {
  if (n_tokens <= gk.in_place_max_tokens)
    for (int i = kGemmInPlaceLayouts - 1; i >= 0; --i)  // the fewest tokens first: octets, quads, pairs
      if (n_tokens <= kGemmInPlaceTokens[i] && gk.in_place[i].rows)
        return {gk.in_place[i].pack_group, gk.in_place[i].rows, true};
  if (n_tokens <= gk.pairs_max_tokens) return {gk.pack_group_pairs, gk.rows_pairs, false};
  GemmLayoutChoice wide{gk.pack_group, gk.rows, false};
  if (gk.rows_large != nullptr && n_tokens >= gk.large_min_tokens) {
    wide.rows = gk.rows_large;
    wide.token_chunk = kGemmTokenGroup * std::clamp<int64_t>(gk.large_item_bytes / gk.group_bytes(cols), 3, 16);
  }
  return wide;
}

// One weight matrix of a packed product: its row kernel, rows and output (gemm.h's `rows`
// arguments that differ between the matrices of a matmul_many call).
struct PackedPart {
  GemmRows rows_fn;
  const uint8_t* w;
  int64_t w_row_bytes, rows;
  float* y;  // [n_tokens][rows]
  int64_t first_item;  // its items' offset in the product's item space (row chunks x token chunks)
};

// The packed products of the parts, all against the same activations packed once (every part's
// pack function and group bytes are pack_group's and gb's): 1. the activations quantized and
// packed; 2. every part's row chunks x token chunks handed out from one counter, in part order.
// ws_bytes: the largest worker scratch of the parts' kernels.
void matmul_packed_parts(ThreadPool& pool, GemmPackGroup pack_group, int64_t gb, int64_t ws_bytes,
                         int64_t token_chunk, std::span<const PackedPart> parts, int64_t cols, const float* x,
                         int64_t n_tokens, std::vector<uint8_t>& scratch) {
  const int nth = pool.n_threads();
  const int64_t n_groups = (n_tokens + kGemmTokenGroup - 1) / kGemmTokenGroup;
  const int64_t wsb = (ws_bytes + 63) / 64 * 64;
  const int64_t total = 64 + n_groups * gb + nth * wsb;  // PackedScratch's layout
  if (scratch.size() < static_cast<size_t>(total)) scratch.resize(static_cast<size_t>(total));
  uint8_t* act = align64(scratch.data());
  uint8_t* wscratch = act + n_groups * gb;

  struct Job {
    GemmPackGroup pack_group;
    std::span<const PackedPart> parts;
    const float* x;
    uint8_t *act, *wscratch;
    int64_t cols, n_tokens, n_groups, gb, wsb, token_chunk, n_tc, n_items;
    WorkCounter counter;
  };
  Job job{pack_group, parts, x, act, wscratch, cols, n_tokens, n_groups, gb, wsb, token_chunk, 0, 0, {}};
  job.n_tc = (n_tokens + token_chunk - 1) / token_chunk;
  const PackedPart& last = parts.back();
  job.n_items = last.first_item + (last.rows + kGemmRowChunk - 1) / kGemmRowChunk * job.n_tc;

  // 1. Quantize and pack the activations, 16 tokens per group, groups split across threads.
  static constexpr auto pack = [](Job* j, int ith, int n) {
    for (int64_t g = ith; g < j->n_groups; g += n) j->pack_group(j->x, j->cols, j->n_tokens, g, j->act + g * j->gb);
  };
  // The part that holds item (parts in item order; a call has a few).
  static constexpr auto part_of = [](const Job* j, int64_t item) -> const PackedPart& {
    size_t i = 0;
    while (i + 1 < j->parts.size() && j->parts[i + 1].first_item <= item) ++i;
    return j->parts[i];
  };
  // 2. Row chunks x token chunks, handed out dynamically.
  static constexpr auto work = [](Job* j, int ith) {
    uint8_t* ws = j->wscratch + ith * j->wsb;
    // Each thread claims its next item before computing the current one, so the kernel can
    // prefetch that item's first weight rows (of the same matrix or of the next one).
    int64_t item = j->counter.next.fetch_add(1, std::memory_order_relaxed);
    while (item < j->n_items) {
      const int64_t next = j->counter.next.fetch_add(1, std::memory_order_relaxed);
      const PackedPart& p = part_of(j, item);
      const int64_t local = item - p.first_item;
      const int64_t r0 = (local / j->n_tc) * kGemmRowChunk, r1 = std::min(p.rows, r0 + kGemmRowChunk);
      const int64_t t0 = (local % j->n_tc) * j->token_chunk, t1 = std::min(j->n_tokens, t0 + j->token_chunk);
      const uint8_t* next_w = nullptr;
      int64_t next_nr = 0;
      if (next < j->n_items) {
        const PackedPart& np = part_of(j, next);
        const int64_t nr0 = ((next - np.first_item) / j->n_tc) * kGemmRowChunk;
        next_w = np.w + nr0 * np.w_row_bytes;
        next_nr = std::min(np.rows, nr0 + kGemmRowChunk) - nr0;
        if (np.w_row_bytes != p.w_row_bytes) next_nr = 0, next_w = nullptr;  // `rows` prefetches rows of its own size
      }
      p.rows_fn(p.w + r0 * p.w_row_bytes, p.w_row_bytes, r1 - r0, j->cols, j->act + (t0 / kGemmTokenGroup) * j->gb,
                t1 - t0, p.y + t0 * p.rows + r0, p.rows, ws, next_w, next_nr);
      item = next;
    }
  };
  // One group (a batched decode step: up to 8 or 16 tokens) is packed on the calling thread:
  // a parallel region for it would leave the other threads nothing to do but wake and wait.
  if (nth == 1 || n_groups == 1) {
    pack(&job, 0, 1);
  } else {
    pool.run([j = &job](int ith, int n) { pack(j, ith, n); });  // one pointer: no allocation
  }
  if (nth == 1) {
    work(&job, 0);
    return;
  }
  pool.run([j = &job](int ith, int) { work(j, ith); });
}

void matmul_packed(ThreadPool& pool, const GemmKernels& gk, const void* w, int64_t w_row_bytes, int64_t rows,
                   int64_t cols, const float* x, int64_t n_tokens, float* y, std::vector<uint8_t>& scratch) {
  const GemmLayoutChoice use = gemm_layout_for(gk, n_tokens, cols);
  const PackedPart part{use.rows, static_cast<const uint8_t*>(w), w_row_bytes, rows, y, 0};
  matmul_packed_parts(pool, use.pack_group, gk.group_bytes(cols), gk.scratch_bytes(cols), use.token_chunk,
                      std::span<const PackedPart>(&part, 1), cols, x, n_tokens, scratch);
}

}  // namespace

namespace detail {
// The AMX wide kernel unpacks its 16 weight rows once per work item, and its tiles run them so
// fast that the unpack would cost as much as the products with 48 tokens an item: its items take
// as many token groups as fit in 1 MiB of packed activations (L2: 2 MiB a core on Sapphire
// Rapids), 3 to 16 groups.
constexpr int64_t kAmxItemBytes = 1 << 20;

const GemmKernels* amx_gemm(DType wtype) {
  if (!amx_supported()) return nullptr;
  static const auto tables = [] {
    constexpr int kTypeIds = 40;  // DType values are GGUF ids, all below 40
    std::array<std::optional<GemmKernels>, kTypeIds> t;
    for (int i = 0; i < kTypeIds; ++i) {
      const DType type = static_cast<DType>(i);
      const GemmKernels* vnni = avx512_gemm(type);
      const AmxWide wide = amx_wide(type);
      if (vnni == nullptr || wide.rows == nullptr) continue;
      GemmKernels k = *vnni;
      k.scratch_bytes = wide.scratch_bytes;
      k.rows_large = wide.rows;
      k.large_min_tokens = wide.min_tokens;
      k.large_item_bytes = kAmxItemBytes;
      t[i] = k;
    }
    return t;
  }();
  const auto id = static_cast<size_t>(wtype);
  return id < tables.size() && tables[id] ? &*tables[id] : nullptr;
}
}  // namespace detail

const GemmKernels* gemm_kernels(DType wtype, Isa isa) {
  if (!isa_supported(isa)) return nullptr;
  switch (isa) {
    case Isa::Avx512:
      if (amx_active())
        if (const GemmKernels* amx = detail::amx_gemm(wtype)) return amx;
      return detail::avx512_gemm(wtype);
    case Isa::Avx2: return detail::avx2_gemm(wtype);
    default: return nullptr;
  }
}

namespace {

// Which kernel path a product takes: the one routing that matmul(), matmul_path() and
// matmul_scratch_bound() all read, so the path a benchmark names and the scratch a device
// reserves are those of the product that runs.
enum class Path { Packed, FloatTiles, FloatSmall, Dot };
struct Route {
  Path path = Path::Dot;
  const GemmKernels* gk = nullptr;       // Packed
  const FloatGemmKernels* fk = nullptr;  // FloatTiles, FloatSmall
};

Route route(DType wtype, Isa isa, int64_t n_tokens) {
  if (n_tokens > 1) {
    const GemmKernels* gk = gemm_kernels(wtype, isa);
    if (gk && n_tokens >= gk->min_tokens) return {Path::Packed, gk, nullptr};
    if (const FloatGemmKernels* fk = float_tiles(wtype, isa, n_tokens)) return {Path::FloatTiles, nullptr, fk};
    if (const FloatGemmKernels* fk = float_small(wtype, isa, n_tokens)) return {Path::FloatSmall, nullptr, fk};
  }
  return {};
}

// Bytes matmul() grows scratch to for one call.
int64_t scratch_need(DType wtype, Isa isa, int64_t cols, int64_t n_tokens, int n_threads) {
  const Route r = route(wtype, isa, n_tokens);
  switch (r.path) {
    case Path::Packed: return PackedScratch(*r.gk, cols, n_tokens, n_threads).total;
    case Path::FloatTiles: return float_tiles_scratch_bytes(*r.fk, cols, n_tokens, n_threads);
    case Path::FloatSmall: return 0;
    case Path::Dot: break;
  }
  const DType at = vec_dot_type(wtype);
  return at == DType::F32 ? 0 : row_bytes(at, cols) * n_tokens;  // f32 activations are used in place
}

}  // namespace

int64_t matmul_scratch_bound(int64_t cols, int64_t n_tokens, int n_threads) {
  const Isa isa = active_isa();
  int64_t bound = 0;
  for (uint32_t raw = 0; raw < 64; ++raw) {
    const DTypeTraits* tr = dtype_traits(raw);
    if (tr == nullptr || !tr->weight_type) continue;
    // Every size grows with the columns: the widest row of this type that fits in `cols`.
    const int64_t c = cols / tr->block_elems * tr->block_elems;
    if (c <= 0) continue;
    // Every batch size up to n_tokens: the path, and so the size, changes with the batch.
    for (int64_t n = 1; n <= n_tokens; ++n) bound = std::max(bound, scratch_need(tr->type, isa, c, n, n_threads));
  }
  return bound;
}

std::string matmul_path(DType wtype, int64_t n_tokens) {
  const Isa isa = active_isa();
  const Route r = route(wtype, isa, n_tokens);
  switch (r.path) {
    case Path::Packed: {
      // 256 columns: the layout and kernel do not depend on them (only the large items' tokens do)
      const GemmLayoutChoice use = gemm_layout_for(*r.gk, n_tokens, 256);
      const bool amx = use.rows != nullptr && use.rows == r.gk->rows_large;
      return std::string(isa_name(isa)) + (amx ? "-amx" : isa == Isa::Avx512 ? "-vnni" : "") +
             (use.in_place ? " in-place tiles" : " packed tiles");
    }
    case Path::FloatTiles:
      return std::string(isa_name(isa)) + " float tiles " + std::to_string(r.fk->rm) + "x" + std::to_string(r.fk->rn);
    case Path::FloatSmall:
      return std::string(isa_name(isa)) + (wtype == DType::F32 ? " f32" : " float") +
             (n_tokens <= r.fk->stream_max_tokens ? " stream" : " 3x4") + (wtype == DType::F32 ? " exact dot" : " dot");
    case Path::Dot: break;
  }
  // The highest ISA at or below the active one with a table for the type (best_type_kernels' choice).
  Isa used = Isa::Scalar;
  for (Isa i : {Isa::Avx512, Isa::Avx2}) {
    if (static_cast<int>(i) <= static_cast<int>(isa) && isa_supported(i) && type_kernels(wtype, i)) {
      used = i;
      break;
    }
  }
  if (use_dot4(wtype, n_tokens) && vec_dot4_kernel(wtype, isa)) return std::string(isa_name(used)) + " 4-token vec_dot";
  return std::string(isa_name(used)) + " vec_dot";
}

namespace {

// One weight matrix of a one-token-dot product (vec_dot / VecDot4): its kernels, rows and
// output, and how its rows are cut into work items.
struct DotPart {
  const TypeKernels* wk;
  VecDot4 vec_dot4;  // nullptr: one-token dots only
  const uint8_t* w;
  int64_t w_row_bytes, rows, rb, n_rb;  // rb rows an item, n_rb row blocks
  int64_t n_blocks, seg_blocks;  // weight blocks a row; VecDot4's k segment, in blocks
  float* y;  // [n_tokens][rows]
  int64_t first_item;  // its items' offset in the product's item space (row blocks x token blocks)
};

// Activations in the dot type `at` (f32 ones are used in place): x quantized into scratch, tokens
// split across threads.
const uint8_t* quantize_activations(ThreadPool& pool, DType at, Isa isa, const float* x, int64_t cols,
                                    int64_t n_tokens, std::vector<uint8_t>& scratch) {
  if (at == DType::F32) return reinterpret_cast<const uint8_t*>(x);
  const TypeKernels& ak = best_type_kernels(at, isa);
  const int64_t a_row_bytes = row_bytes(at, cols);
  const size_t need = static_cast<size_t>(a_row_bytes * n_tokens);
  if (scratch.size() < need) scratch.resize(need);
  uint8_t* q = scratch.data();
  if (n_tokens == 1 || pool.n_threads() == 1) {
    for (int64_t t = 0; t < n_tokens; ++t) ak.quantize_row(x + t * cols, q + t * a_row_bytes, cols);
  } else {
    // One captured pointer keeps std::function in its small buffer (no allocation).
    struct QuantJob { const TypeKernels* ak; const float* x; uint8_t* q; int64_t cols, arb, n_tokens; };
    const QuantJob job{&ak, x, q, cols, a_row_bytes, n_tokens};
    pool.run([j = &job](int ith, int n) {
      const int64_t t0 = j->n_tokens * ith / n, t1 = j->n_tokens * (ith + 1) / n;
      for (int64_t t = t0; t < t1; ++t) j->ak->quantize_row(j->x + t * j->cols, j->q + t * j->arb, j->cols);
    });
  }
  return q;
}

// Tiles: a part's rb rows x tb tokens, every part's handed out from one counter in part order.
// act: [n_tokens] rows of a_row_bytes in the parts' common dot type.
void matmul_dot_parts(ThreadPool& pool, std::span<const DotPart> parts, int64_t cols, const uint8_t* act,
                      int64_t a_row_bytes, int64_t n_tokens, int64_t tb) {
  const int64_t n_tb = (n_tokens + tb - 1) / tb;
  const DotPart& last = parts.back();
  const int64_t n_items = last.first_item + last.n_rb * n_tb;
  WorkCounter counter;
  auto work = [&]() {
    // The running sums of one 4-token group for each row of a tile, between k segments.
    alignas(32) float state[kRowBlockPrompt][kVecDot4StateFloats];
    size_t pi = 0;  // items are claimed in increasing order: the part index only moves forward
    for (;;) {
      const int64_t item = counter.next.fetch_add(1, std::memory_order_relaxed);
      if (item >= n_items) return;
      while (pi + 1 < parts.size() && parts[pi + 1].first_item <= item) ++pi;
      const DotPart& p = parts[pi];
      const int64_t local = item - p.first_item;
      const int64_t rows = p.rows;
      float* y = p.y;
      const uint8_t* wb = p.w;
      const int64_t w_row_bytes = p.w_row_bytes;
      const int64_t r0 = (local / n_tb) * p.rb, r1 = std::min(rows, r0 + p.rb);
      const int64_t t0 = (local % n_tb) * tb, t1 = std::min(n_tokens, t0 + tb);
      int64_t t = t0;
      if (p.vec_dot4) {
        const int64_t n_blocks = p.n_blocks, seg_blocks = p.seg_blocks;
        // 4 tokens at a time; each k segment of their activations passes every row of the tile.
        for (; t + 4 <= t1; t += 4) {
          const uint8_t* a4 = act + t * a_row_bytes;
          for (int64_t b0 = 0; b0 < n_blocks; b0 += seg_blocks) {
            const int64_t b1 = std::min(n_blocks, b0 + seg_blocks);
            const bool last_seg = b1 == n_blocks;
            for (int64_t r = r0; r < r1; ++r) {
              float o[4];
              p.vec_dot4(b0, b1, wb + r * w_row_bytes, a4, a_row_bytes, state[r - r0], last_seg ? o : nullptr);
              if (last_seg)
                for (int c = 0; c < 4; ++c) y[(t + c) * rows + r] = o[c];
            }
          }
        }
      }
      int64_t r = r0;
      // kDecodeRows rows at once (the same bits as one at a time), for each token left: decode,
      // and the small batches that take the one-token dots (below GemmKernels::min_tokens).
      if (p.wk->vec_dot_rows && t < t1) {
        float o[2 * kDecodeRows];
        for (; r + kDecodeRows <= r1; r += kDecodeRows) {
          int64_t tt = t;
          // Two tokens at a time where the type has it: the same bits as one at a time.
          if (p.wk->vec_dot_rows2) {
            for (; tt + 2 <= t1; tt += 2) {
              p.wk->vec_dot_rows2(cols, wb + r * w_row_bytes, w_row_bytes, act + tt * a_row_bytes, a_row_bytes, o);
              for (int c = 0; c < 2; ++c)
                for (int i = 0; i < kDecodeRows; ++i) y[(tt + c) * rows + r + i] = o[c * kDecodeRows + i];
            }
          }
          for (; tt < t1; ++tt) {
            p.wk->vec_dot_rows(cols, wb + r * w_row_bytes, w_row_bytes, act + tt * a_row_bytes, o);
            for (int i = 0; i < kDecodeRows; ++i) y[tt * rows + r + i] = o[i];
          }
        }
      }
      for (; r < r1; ++r) {
        const uint8_t* wr = wb + r * w_row_bytes;
        for (int64_t tt = t; tt < t1; ++tt) p.wk->vec_dot(cols, wr, act + tt * a_row_bytes, y + tt * rows + r);
      }
    }
  };
  if (pool.n_threads() == 1) {
    work();
  } else {
    pool.run([wp = &work](int, int) { (*wp)(); });  // one pointer: no std::function allocation
  }
}

// Rows an item of a dot product of `rows` rows: decode, big row chunks, ~4 per thread for
// balance; prompts kRowBlockPrompt.
int64_t dot_row_block(int64_t rows, int64_t n_tokens, int nth) {
  if (n_tokens == 1) return std::max<int64_t>(16, (rows + 4 * nth - 1) / (4 * nth));
  return kRowBlockPrompt;
}

DotPart dot_part(DType wtype, Isa isa, const void* w, int64_t rows, int64_t cols, int64_t n_tokens, float* y,
                 int nth, int64_t first_item) {
  DotPart p{};
  p.wk = &best_type_kernels(wtype, isa);
  p.vec_dot4 = use_dot4(wtype, n_tokens) ? vec_dot4_kernel(wtype, isa) : nullptr;
  p.w = static_cast<const uint8_t*>(w);
  p.w_row_bytes = row_bytes(wtype, cols);
  p.rows = rows;
  p.rb = dot_row_block(rows, n_tokens, nth);
  p.n_rb = (rows + p.rb - 1) / p.rb;
  p.n_blocks = cols / traits(wtype).block_elems;
  p.seg_blocks = std::max<int64_t>(1, kDot4SegmentBytes / (4 * (row_bytes(vec_dot_type(wtype), cols) / p.n_blocks)));
  p.y = y;
  p.first_item = first_item;
  return p;
}

}  // namespace

void matmul(ThreadPool& pool, DType wtype, const void* w, int64_t rows, int64_t cols,
            const float* x, int64_t n_tokens, float* y, std::vector<uint8_t>& scratch) {
  if (rows <= 0 || n_tokens <= 0) return;
  const Isa isa = active_isa();
  const Route r = route(wtype, isa, n_tokens);
  switch (r.path) {
    case Path::Packed: return matmul_packed(pool, *r.gk, w, row_bytes(wtype, cols), rows, cols, x, n_tokens, y, scratch);
    case Path::FloatTiles:
      return matmul_float_tiles(pool, *r.fk, w, row_bytes(wtype, cols), rows, cols, x, n_tokens, y, scratch);
    case Path::FloatSmall: return matmul_float_small(pool, *r.fk, w, row_bytes(wtype, cols), rows, cols, x, n_tokens, y);
    case Path::Dot: break;
  }
  const DType at = vec_dot_type(wtype);
  const int64_t a_row_bytes = row_bytes(at, cols);
  const uint8_t* act = quantize_activations(pool, at, isa, x, cols, n_tokens, scratch);
  const DotPart part = dot_part(wtype, isa, w, rows, cols, n_tokens, y, pool.n_threads(), 0);
  // The 4-token dots cut k into segments (their activation blocks stay in L1 for every row of the
  // tile), so the token block no longer has to keep whole activation rows in L2.
  const int64_t tb_fit = part.vec_dot4
                             ? kTokenBlock
                             : std::max<int64_t>(4, kTokenBlockBytes / std::max<int64_t>(1, a_row_bytes) / 4 * 4);
  const int64_t tb = std::min({n_tokens, kTokenBlock, tb_fit});
  matmul_dot_parts(pool, std::span<const DotPart>(&part, 1), cols, act, a_row_bytes, n_tokens, tb);
}

void matmul_many(ThreadPool& pool, std::span<const MatmulJob> jobs, int64_t cols, const float* x, int64_t n_tokens,
                 std::vector<uint8_t>& scratch) {
  if (n_tokens <= 0) return;
  const Isa isa = active_isa();
  const int nth = pool.n_threads();
  // Runs of consecutive jobs that share their activations: packed products whose layouts pack
  // the same bytes, or one-token dots of the same dot type; the others go alone through matmul().
  size_t i = 0;
  while (i < jobs.size()) {
    const MatmulJob& first = jobs[i];
    const Route r0 = route(first.wtype, isa, n_tokens);
    size_t end = i + 1;
    if (r0.path == Path::Packed) {
      const GemmLayoutChoice l0 = gemm_layout_for(*r0.gk, n_tokens, cols);
      const int64_t gb = r0.gk->group_bytes(cols);
      int64_t ws_bytes = r0.gk->scratch_bytes(cols);
      PackedPart parts[kMatmulManyMax];
      int64_t items = 0;
      const int64_t n_tc = (n_tokens + l0.token_chunk - 1) / l0.token_chunk;
      size_t n = 0;
      for (; i + n < jobs.size() && n < kMatmulManyMax; ++n) {
        const MatmulJob& j = jobs[i + n];
        const Route rj = route(j.wtype, isa, n_tokens);
        if (rj.path != Path::Packed) break;
        const GemmLayoutChoice lj = gemm_layout_for(*rj.gk, n_tokens, cols);
        if (lj.pack_group != l0.pack_group || rj.gk->group_bytes(cols) != gb || lj.token_chunk != l0.token_chunk) break;
        ws_bytes = std::max(ws_bytes, rj.gk->scratch_bytes(cols));
        parts[n] = PackedPart{lj.rows, static_cast<const uint8_t*>(j.w), row_bytes(j.wtype, cols), j.rows, j.y, items};
        items += (std::max<int64_t>(j.rows, 0) + kGemmRowChunk - 1) / kGemmRowChunk * n_tc;
      }
      end = i + n;
      if (items > 0)
        matmul_packed_parts(pool, l0.pack_group, gb, ws_bytes, l0.token_chunk, std::span<const PackedPart>(parts, n),
                            cols, x, n_tokens, scratch);
    } else if (r0.path == Path::Dot && n_tokens == 1) {
      const DType at = vec_dot_type(first.wtype);
      DotPart parts[kMatmulManyMax];
      int64_t items = 0;
      size_t n = 0;
      for (; i + n < jobs.size() && n < kMatmulManyMax; ++n) {
        const MatmulJob& j = jobs[i + n];
        if (route(j.wtype, isa, n_tokens).path != Path::Dot || vec_dot_type(j.wtype) != at) break;
        parts[n] = dot_part(j.wtype, isa, j.w, std::max<int64_t>(j.rows, 0), cols, n_tokens, j.y, nth, items);
        items += parts[n].n_rb;
      }
      end = i + n;
      if (items > 0) {
        const uint8_t* act = quantize_activations(pool, at, isa, x, cols, n_tokens, scratch);
        matmul_dot_parts(pool, std::span<const DotPart>(parts, n), cols, act, row_bytes(at, cols), n_tokens, 1);
      }
    } else {
      matmul(pool, first.wtype, first.w, first.rows, cols, x, n_tokens, first.y, scratch);
    }
    i = end;
  }
}

}  // namespace strata::kernels
