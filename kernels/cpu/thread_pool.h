// kernels/cpu/thread_pool.h — a fixed set of worker threads for the CPU kernels, built for many
// short parallel regions (decode runs ~200 per token). Depends on the standard library only.
#pragma once

#include <functional>
#include <memory>

namespace strata::kernels {

class ThreadPool {
 public:
  // n_threads includes the calling thread (values < 1 are treated as 1, above 65535 as 65535).
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int n_threads() const;

  // Runs fn(thread_index, n_threads) once for every index 0..n_threads-1 and returns when all
  // have finished. Index 0 runs on the caller; the others on the workers, concurrently, except
  // that the caller runs any index no worker has started by the time index 0 is done (so a
  // sleeping or descheduled worker never delays a run): fn must not wait for another index,
  // must not throw and must not call run() on the same pool. One run() at a time per pool. No
  // allocation per call: workers spin briefly on a generation counter, then sleep on a
  // condition variable.
  void run(const std::function<void(int, int)>& fn);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::kernels
