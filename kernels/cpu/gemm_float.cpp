// kernels/cpu/gemm_float.cpp — which float-weight tiled GEMM the CPU gets (gemm_float.h), and
// the loop that hands its work items (row block x token block) to the thread pool through an
// atomic counter, so threads that finish early take more. Plain C++: no ISA flags here.
#include "kernels/cpu/gemm_float.h"

#include <algorithm>
#include <atomic>

namespace strata::kernels {

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

void matmul_float_tiles(ThreadPool& pool, const FloatGemmKernels& fk, const void* w, int64_t w_row_bytes, int64_t rows,
                        int64_t cols, const float* x, int64_t n_tokens, float* y, std::vector<uint8_t>& scratch) {
  if (rows <= 0 || n_tokens <= 0) return;
  const int nth = pool.n_threads();
  // Token blocks of equal size (a multiple of the tile's rn, so only the last panel is padded):
  // 100 tokens with 64-token blocks are 2 x 52, not 64 + 36.
  const int64_t n_tb = (n_tokens + fk.token_block - 1) / fk.token_block;
  const int64_t per_tb = (n_tokens + n_tb - 1) / n_tb;
  const int64_t tb = (per_tb + fk.rn - 1) / fk.rn * fk.rn;
  const int64_t n_tbs = (n_tokens + tb - 1) / tb;
  const int64_t n_rbs = (rows + fk.row_block - 1) / fk.row_block;
  const size_t need = static_cast<size_t>(64 + nth * fk.scratch_bytes);
  if (scratch.size() < need) scratch.resize(need);
  uint8_t* base = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(scratch.data()) + 63) & ~uintptr_t{63});

  struct alignas(64) Job {
    const FloatGemmKernels* fk;
    const uint8_t* w;
    const float* x;
    float* y;
    uint8_t* scratch;
    int64_t w_row_bytes, rows, cols, n_tokens, tb, n_tbs, n_items;
    alignas(64) std::atomic<int64_t> next{0};
  };
  Job job{&fk, static_cast<const uint8_t*>(w), x, y, base, w_row_bytes, rows, cols, n_tokens, tb, n_tbs, n_rbs * n_tbs};
  // Consecutive items share a row block (its weights stay in cache across the token blocks).
  static constexpr auto work = [](Job* j, int ith) {
    uint8_t* ws = j->scratch + ith * j->fk->scratch_bytes;
    for (;;) {
      const int64_t item = j->next.fetch_add(1, std::memory_order_relaxed);
      if (item >= j->n_items) return;
      const int64_t r0 = (item / j->n_tbs) * j->fk->row_block, nr = std::min(j->rows - r0, j->fk->row_block);
      const int64_t t0 = (item % j->n_tbs) * j->tb, nt = std::min(j->n_tokens - t0, j->tb);
      j->fk->block(j->w + r0 * j->w_row_bytes, j->w_row_bytes, nr, j->cols, j->x + t0 * j->cols, nt,
                   j->y + t0 * j->rows + r0, j->rows, ws);
    }
  };
  if (nth == 1) {
    work(&job, 0);
    return;
  }
  pool.run([j = &job](int ith, int) { work(j, ith); });  // one pointer: no std::function allocation
}

}  // namespace strata::kernels
