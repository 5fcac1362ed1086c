// kernels/cpu/matmul.cpp — matrix product over the thread pool: quantize activations once,
// then dot products in row x token tiles handed out dynamically (an atomic counter), so threads
// that finish early take more work.
#include "kernels/cpu/matmul.h"

#include <algorithm>
#include <atomic>

#include "kernels/cpu/isa.h"
#include "kernels/cpu/quant.h"
#include "kernels/cpu/type_kernels.h"

namespace strata::kernels {
namespace {

constexpr int64_t kTokenBlock = 64;  // tokens per tile: their activations stay in L2
constexpr int64_t kRowBlockPrompt = 16;  // weight rows per tile in prompt mode (L1-sized)

struct alignas(64) WorkCounter {
  std::atomic<int64_t> next{0};
};

}  // namespace

void matmul(ThreadPool& pool, DType wtype, const void* w, int64_t rows, int64_t cols,
            const float* x, int64_t n_tokens, float* y, std::vector<uint8_t>& scratch) {
  if (rows <= 0 || n_tokens <= 0) return;
  const Isa isa = active_isa();
  const DType at = vec_dot_type(wtype);
  const TypeKernels& wk = best_type_kernels(wtype, isa);
  const TypeKernels& ak = best_type_kernels(at, isa);
  const int64_t w_row_bytes = row_bytes(wtype, cols);
  const int64_t a_row_bytes = row_bytes(at, cols);
  const int nth = pool.n_threads();

  // 1. Activations in the dot type (f32 activations are used in place).
  const uint8_t* act = reinterpret_cast<const uint8_t*>(x);
  if (at != DType::F32) {
    const size_t need = static_cast<size_t>(a_row_bytes * n_tokens);
    if (scratch.size() < need) scratch.resize(need);
    uint8_t* q = scratch.data();
    if (n_tokens == 1 || nth == 1) {
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
    act = q;
  }

  // 2. Tiles: rb rows x tb tokens. Decode: big row chunks, ~4 per thread for balance.
  const int64_t tb = std::min(n_tokens, kTokenBlock);
  int64_t rb = kRowBlockPrompt;
  if (n_tokens == 1) rb = std::max<int64_t>(16, (rows + 4 * nth - 1) / (4 * nth));
  const int64_t n_rb = (rows + rb - 1) / rb;
  const int64_t n_tb = (n_tokens + tb - 1) / tb;
  const int64_t n_items = n_rb * n_tb;
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  const auto vec_dot = wk.vec_dot;
  const VecDot4 vec_dot4 = n_tokens >= 4 ? vec_dot4_kernel(wtype, isa) : nullptr;

  WorkCounter counter;
  auto work = [&]() {
    for (;;) {
      const int64_t item = counter.next.fetch_add(1, std::memory_order_relaxed);
      if (item >= n_items) return;
      const int64_t r0 = (item / n_tb) * rb, r1 = std::min(rows, r0 + rb);
      const int64_t t0 = (item % n_tb) * tb, t1 = std::min(n_tokens, t0 + tb);
      for (int64_t r = r0; r < r1; ++r) {
        const uint8_t* wr = wb + r * w_row_bytes;
        int64_t t = t0;
        if (vec_dot4) {
          float o[4];
          for (; t + 4 <= t1; t += 4) {
            vec_dot4(cols, wr, act + t * a_row_bytes, a_row_bytes, o);
            for (int c = 0; c < 4; ++c) y[(t + c) * rows + r] = o[c];
          }
        }
        for (; t < t1; ++t) vec_dot(cols, wr, act + t * a_row_bytes, y + t * rows + r);
      }
    }
  };
  if (nth == 1) {
    work();
  } else {
    pool.run([wp = &work](int, int) { (*wp)(); });  // one pointer: no std::function allocation
  }
}

}  // namespace strata::kernels
