// kernels/cpu/thread_pool.cpp — spin-then-sleep worker pool (see thread_pool.h).
#include "kernels/cpu/thread_pool.h"

#include <immintrin.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace strata::kernels {

namespace {
// Spin iterations (each a pause, ~10-40 ns) before a worker sleeps: ~100 us, which covers the
// gap between the parallel regions of one decode step without burning a core when idle.
constexpr int kSpinIterations = 1 << 13;
}  // namespace

struct ThreadPool::Impl {
  int n = 1;
  std::vector<std::thread> workers;
  // Workers start the current job when generation changes; pending counts unfinished workers.
  alignas(64) std::atomic<uint64_t> generation{0};
  alignas(64) std::atomic<int> pending{0};
  alignas(64) std::atomic<int> sleepers{0};
  std::atomic<bool> stop{false};
  const std::function<void(int, int)>* job = nullptr;
  std::mutex mu;
  std::condition_variable cv;

  void worker(int index) {
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
      (*job)(index, n);
      pending.fetch_sub(1, std::memory_order_acq_rel);
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
  impl_->n = n_threads < 1 ? 1 : n_threads;
  impl_->workers.reserve(impl_->n - 1);
  for (int i = 1; i < impl_->n; ++i) impl_->workers.emplace_back([this, i] { impl_->worker(i); });
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
  p.job = &fn;
  p.pending.store(p.n - 1, std::memory_order_relaxed);
  p.generation.fetch_add(1, std::memory_order_seq_cst);  // publishes job and pending
  p.wake_sleepers();
  fn(0, p.n);
  // Wait for the workers: spin, then yield (the machine may be oversubscribed).
  int spins = 0;
  while (p.pending.load(std::memory_order_acquire) != 0) {
    if (++spins < kSpinIterations) _mm_pause();
    else std::this_thread::yield();
  }
}

}  // namespace strata::kernels
