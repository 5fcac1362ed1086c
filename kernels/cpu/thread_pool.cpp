// kernels/cpu/thread_pool.cpp — spin-then-sleep worker pool with index stealing (see
// thread_pool.h).
//
// A run publishes a claim word (generation, next index). Workers claim indices 1..n-1 from it
// with a CAS; when the caller has finished index 0 it claims whatever is left itself, so a run
// never waits for a worker that is asleep or descheduled (a loaded machine, more threads than
// cores) unless that worker already holds an index. Every index runs exactly once.
#include "kernels/cpu/thread_pool.h"

#include <immintrin.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace strata::kernels {

namespace {
// Spin iterations (each a pause, ~20-40 ns) before a worker sleeps: ~100-300 us, which covers
// the gap between the parallel regions of one decode step without burning a core when idle.
constexpr int kSpinIterations = 1 << 13;
constexpr int kIndexBits = 16;  // claim word: generation << kIndexBits | next index
constexpr uint64_t kIndexMask = (uint64_t{1} << kIndexBits) - 1;
}  // namespace

struct ThreadPool::Impl {
  int n = 1;
  std::vector<std::thread> workers;
  // Workers look at the claim word when generation changes; unfinished counts claimed-or-not
  // indices 1..n-1 that have not completed.
  alignas(64) std::atomic<uint64_t> generation{0};
  alignas(64) std::atomic<uint64_t> claim{0};
  alignas(64) std::atomic<int> unfinished{0};
  alignas(64) std::atomic<int> sleepers{0};
  std::atomic<bool> stop{false};
  const std::function<void(int, int)>* job = nullptr;
  std::mutex mu;
  std::condition_variable cv;

  // Runs unclaimed indices of run g until none is left (or a newer run has started).
  void claim_and_run(uint64_t g) {
    uint64_t c = claim.load(std::memory_order_acquire);
    for (;;) {
      if ((c >> kIndexBits) != g) return;
      const int index = static_cast<int>(c & kIndexMask);
      if (index >= n) return;
      if (claim.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel, std::memory_order_acquire)) {
        // Run g cannot finish (and job cannot change) before this index is done.
        (*job)(index, n);
        unfinished.fetch_sub(1, std::memory_order_release);
        c = claim.load(std::memory_order_acquire);
      }
    }
  }

  void worker() {
    uint64_t seen = 0;
    for (;;) {
      uint64_t g = generation.load(std::memory_order_acquire);
      for (int spin = 0; g == seen && spin < kSpinIterations; ++spin) {
        _mm_pause();
        g = generation.load(std::memory_order_acquire);
      }
      if (g == seen) {
        std::unique_lock<std::mutex> lock(mu);
        sleepers.fetch_add(1, std::memory_order_seq_cst);
        cv.wait(lock, [&] {
          return generation.load(std::memory_order_seq_cst) != seen || stop.load(std::memory_order_seq_cst);
        });
        sleepers.fetch_sub(1, std::memory_order_relaxed);
        g = generation.load(std::memory_order_acquire);
      }
      if (stop.load(std::memory_order_acquire)) return;
      seen = g;
      claim_and_run(g);
    }
  }

  void wake_sleepers() {
    if (sleepers.load(std::memory_order_seq_cst) > 0) {
      { std::lock_guard<std::mutex> lock(mu); }
      cv.notify_all();
    }
  }
};

ThreadPool::ThreadPool(int n_threads) : impl_(std::make_unique<Impl>()) {
  impl_->n = n_threads < 1 ? 1 : (n_threads > static_cast<int>(kIndexMask) ? static_cast<int>(kIndexMask) : n_threads);
  impl_->workers.reserve(impl_->n - 1);
  for (int i = 1; i < impl_->n; ++i) impl_->workers.emplace_back([this] { impl_->worker(); });
}

ThreadPool::~ThreadPool() {
  impl_->stop.store(true, std::memory_order_seq_cst);
  impl_->generation.fetch_add(1, std::memory_order_seq_cst);
  { std::lock_guard<std::mutex> lock(impl_->mu); }
  impl_->cv.notify_all();
  for (std::thread& t : impl_->workers) t.join();
}

int ThreadPool::n_threads() const { return impl_->n; }

void ThreadPool::run(const std::function<void(int, int)>& fn) {
  Impl& p = *impl_;
  if (p.n == 1) {
    fn(0, 1);
    return;
  }
  const uint64_t g = (p.generation.load(std::memory_order_relaxed) + 1) & (~uint64_t{0} >> kIndexBits);
  p.job = &fn;
  p.unfinished.store(p.n - 1, std::memory_order_relaxed);
  p.claim.store(g << kIndexBits | 1, std::memory_order_relaxed);
  p.generation.store(g, std::memory_order_seq_cst);  // publishes job, unfinished and claim
  p.wake_sleepers();
  fn(0, p.n);
  p.claim_and_run(g);  // indices no worker has taken yet
  // Wait for indices workers are running: spin, then yield (the machine may be oversubscribed).
  int spins = 0;
  while (p.unfinished.load(std::memory_order_acquire) != 0) {
    if (++spins < kSpinIterations) _mm_pause();
    else std::this_thread::yield();
  }
}

}  // namespace strata::kernels
