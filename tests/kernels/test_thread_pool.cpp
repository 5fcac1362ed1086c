// tests/kernels/test_thread_pool.cpp — ThreadPool: every index runs exactly once per run, index
// 0 on the caller (other indices on workers, or on the caller when it gets there first), results
// are visible after run() returns, sleeping workers wake up.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "kernels/cpu/thread_pool.h"

namespace strata::kernels {
namespace {

void check_runs(int n_threads, int runs) {
  ThreadPool pool(n_threads);
  ASSERT_EQ(pool.n_threads(), n_threads);
  std::vector<std::atomic<int>> count(n_threads);
  std::vector<int> plain(n_threads, 0);  // written without atomics: run() must publish it
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> zero_not_caller{0}, bad_n{0};
  for (int r = 0; r < runs; ++r) {
    pool.run([&](int ith, int n) {
      if (n != n_threads) bad_n.fetch_add(1);
      if (ith == 0 && std::this_thread::get_id() != caller) zero_not_caller.fetch_add(1);
      count[ith].fetch_add(1);
      plain[ith] += 1;
    });
    if (r % 997 == 0) {
      for (int i = 0; i < n_threads; ++i) {
        ASSERT_EQ(count[i].load(), r + 1) << "thread " << i << " run " << r;
        ASSERT_EQ(plain[i], r + 1);
      }
    }
  }
  for (int i = 0; i < n_threads; ++i) {
    EXPECT_EQ(count[i].load(), runs);
    EXPECT_EQ(plain[i], runs);
  }
  EXPECT_EQ(zero_not_caller.load(), 0);
  EXPECT_EQ(bad_n.load(), 0);
}

TEST(ThreadPool, OneThread) { check_runs(1, 1000); }
TEST(ThreadPool, TwoThreadsManyRuns) { check_runs(2, 20000); }
TEST(ThreadPool, FourThreadsOversubscribed) { check_runs(4, 2000); }
TEST(ThreadPool, SixteenThreadsOversubscribed) { check_runs(16, 500); }

TEST(ThreadPool, IndicesRunOnceWhenWorkersAreSlow) {
  // Index 1 of every run is slow on a worker; the caller may take the other indices meanwhile.
  // Whoever runs them, each index runs once per run and all are done when run() returns.
  ThreadPool pool(4);
  const std::thread::id caller = std::this_thread::get_id();
  std::vector<std::atomic<int>> count(4);
  for (int r = 0; r < 50; ++r) {
    pool.run([&](int ith, int) {
      if (ith == 1 && std::this_thread::get_id() != caller) std::this_thread::sleep_for(std::chrono::microseconds(200));
      count[ith].fetch_add(1);
    });
    for (int i = 0; i < 4; ++i) ASSERT_EQ(count[i].load(), r + 1) << "index " << i << " run " << r;
  }
}

TEST(ThreadPool, WakesAfterSleeping) {
  ThreadPool pool(3);
  std::atomic<int> total{0};
  for (int r = 0; r < 3; ++r) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));  // workers fall asleep
    pool.run([&](int, int) { total.fetch_add(1); });
    EXPECT_EQ(total.load(), 3 * (r + 1));
  }
}

TEST(ThreadPool, SumsPartitionedRange) {
  ThreadPool pool(2);
  std::vector<int64_t> partial(2, 0);
  for (int rep = 0; rep < 100; ++rep) {
    pool.run([&](int ith, int n) {
      int64_t s = 0;
      for (int64_t i = 100000 * ith / n; i < 100000 * (ith + 1) / n; ++i) s += i;
      partial[ith] = s;
    });
    ASSERT_EQ(partial[0] + partial[1], int64_t{100000} * 99999 / 2);
  }
}

}  // namespace
}  // namespace strata::kernels
