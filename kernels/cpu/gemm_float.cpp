// kernels/cpu/gemm_float.cpp — which float-weight tiled GEMM the CPU gets (gemm_float.h), and
// the loop that hands its work items (row block x token block) to the thread pool through an
// atomic counter, so threads that finish early take more. Plain C++: no ISA flags here.
#include "kernels/cpu/gemm_float.h"

#include <algorithm>
#include <atomic>

namespace strata::kernels {
namespace {
// matmul_float_small: 24 rows (8 tiles of 3) an item, a few hundred items for a 4096-row matrix.
constexpr int64_t kSmallRows = 24;
}  // namespace

const FloatGemmKernels* float_gemm_kernels(DType wtype, Isa isa) {
  if (wtype != DType::F32 && wtype != DType::F16 && wtype != DType::BF16) return nullptr;
  if (!isa_supported(isa)) return nullptr;
  switch (isa) {
    case Isa::Avx512: return detail::avx512_float_gemm(wtype);
    case Isa::Avx2: return detail::avx2_float_gemm(wtype);
    case Isa::Scalar: return nullptr;
  }
  return nullptr;
}

int64_t float_tiles_scratch_bytes(const FloatGemmKernels& fk, int64_t cols, int64_t n_tokens, int n_threads) {
  const int64_t n_groups = (n_tokens + fk.lanes - 1) / fk.lanes;
  return 64 + (n_groups * cols * fk.lanes * 4 + 63) / 64 * 64 + n_threads * fk.scratch_bytes;
}

void matmul_float_tiles(ThreadPool& pool, const FloatGemmKernels& fk, const void* w, int64_t w_row_bytes, int64_t rows,
                        int64_t cols, const float* x, int64_t n_tokens, float* y, std::vector<uint8_t>& scratch) {
  if (rows <= 0 || n_tokens <= 0 || cols <= 0) return;
  const int nth = pool.n_threads();
  // Token blocks of equal size in whole groups: 100 tokens with 64-token blocks are 56 + 44
  // (groups of 8), not 64 + 36.
  const int64_t n_groups = (n_tokens + fk.lanes - 1) / fk.lanes;
  const int64_t max_groups = fk.token_block / fk.lanes;
  const int64_t n_tb = (n_groups + max_groups - 1) / max_groups;
  const int64_t tb = (n_groups + n_tb - 1) / n_tb * fk.lanes;
  const int64_t n_tbs = (n_tokens + tb - 1) / tb;
  const int64_t n_rbs = (rows + fk.row_block - 1) / fk.row_block;
  const int64_t group_bytes = cols * fk.lanes * 4;
  const size_t need = static_cast<size_t>(float_tiles_scratch_bytes(fk, cols, n_tokens, nth));
  if (scratch.size() < need) scratch.resize(need);
  uint8_t* base = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(scratch.data()) + 63) & ~uintptr_t{63});
  float* xp = reinterpret_cast<float*>(base);  // group_bytes is a multiple of 32: cols * lanes * 4
  uint8_t* thread_scratch = base + (n_groups * group_bytes + 63) / 64 * 64;

  struct Job {
    const FloatGemmKernels* fk;
    const uint8_t* w;
    const float* x;
    float* xp;
    float* y;
    uint8_t* scratch;
    int64_t w_row_bytes, rows, cols, n_tokens, n_groups, tb, n_tbs, n_items;
    alignas(64) std::atomic<int64_t> next{0};
  };
  Job job{&fk, static_cast<const uint8_t*>(w), x, xp, y, thread_scratch, w_row_bytes, rows, cols,
          n_tokens, n_groups, tb, n_tbs, n_rbs * n_tbs};
  // 1. Pack the activations by groups, groups split across threads.
  static constexpr auto pack = [](Job* j, int ith, int n) {
    for (int64_t g = ith; g < j->n_groups; g += n)
      j->fk->pack_group(j->x, j->cols, j->n_tokens, g, j->xp + g * j->cols * j->fk->lanes);
  };
  // 2. Row blocks x token blocks, handed out dynamically. Consecutive items share a row block:
  // its weights stay in cache across the token blocks. Each thread claims its next item before
  // computing the current one, so the kernel can prefetch and convert that item's first weight
  // chunk (when they are other rows) along its own last chunks, and hand it over (ready).
  static constexpr auto work = [](Job* j, int ith) {
    uint8_t* ws = j->scratch + ith * j->fk->scratch_bytes;
    const int64_t rb = j->fk->row_block;
    int64_t item = j->next.fetch_add(1, std::memory_order_relaxed);
    int ready = kNoChunkReady;  // the weight buffer holding item's first chunk, converted by the call before
    while (item < j->n_items) {
      const int64_t next = j->next.fetch_add(1, std::memory_order_relaxed);
      const int64_t r0 = (item / j->n_tbs) * rb, nr = std::min(j->rows - r0, rb);
      const int64_t t0 = (item % j->n_tbs) * j->tb, nt = std::min(j->n_tokens - t0, j->tb);
      const uint8_t* next_w = nullptr;
      int64_t next_nr = 0;
      if (next < j->n_items && next / j->n_tbs != item / j->n_tbs) {
        const int64_t nr0 = (next / j->n_tbs) * rb;
        next_w = j->w + nr0 * j->w_row_bytes;
        next_nr = std::min(j->rows - nr0, rb);
      }
      ready = j->fk->block(j->w + r0 * j->w_row_bytes, j->w_row_bytes, nr, j->cols, j->xp + t0 * j->cols, nt,
                           j->y + t0 * j->rows + r0, j->rows, ws, next_w, next_nr, ready);
      item = next;
    }
  };
  if (nth == 1) {
    pack(&job, 0, 1);
    work(&job, 0);
    return;
  }
  pool.run([j = &job](int ith, int n) { pack(j, ith, n); });  // one pointer: no std::function allocation
  pool.run([j = &job](int ith, int) { work(j, ith); });
}

void matmul_float_small(ThreadPool& pool, const FloatGemmKernels& fk, const void* w, int64_t w_row_bytes, int64_t rows,
                        int64_t cols, const float* x, int64_t n_tokens, float* y) {
  if (rows <= 0 || n_tokens <= 0) return;
  struct Job {
    const FloatGemmKernels* fk;
    const uint8_t* w;
    const float* x;
    float* y;
    int64_t w_row_bytes, rows, cols, n_tokens, n_items;
    alignas(64) std::atomic<int64_t> next{0};
  };
  Job job{&fk, static_cast<const uint8_t*>(w), x, y, w_row_bytes, rows, cols, n_tokens, (rows + kSmallRows - 1) / kSmallRows};
  static constexpr auto work = [](Job* j) {
    for (;;) {
      const int64_t item = j->next.fetch_add(1, std::memory_order_relaxed);
      if (item >= j->n_items) return;
      const int64_t r0 = item * kSmallRows, nr = std::min(j->rows - r0, kSmallRows);
      j->fk->small(j->w + r0 * j->w_row_bytes, j->w_row_bytes, nr, j->cols, j->x, j->n_tokens, j->y + r0, j->rows);
    }
  };
  if (pool.n_threads() == 1) {
    work(&job);
    return;
  }
  pool.run([j = &job](int, int) { work(j); });
}

}  // namespace strata::kernels
