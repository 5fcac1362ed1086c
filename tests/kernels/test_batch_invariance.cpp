// tests/kernels/test_batch_invariance.cpp — batch invariance of the CPU kernels: every token row
// of a product (and of an attention call) gets the bits it gets alone, whatever the number of
// rows in the call, its place among them, the thread count and the ISA (issue 45).
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "kernel_test_util.h"
#include "kernels/cpu/matmul.h"

namespace strata::kernels {
namespace {

class BatchInvariantMatmul : public ::testing::TestWithParam<Isa> {};

// y of token t in an n-token product is bit for bit y of that token alone (a decode step), for
// every weight type, batch sizes that take every path (one-token dot, two-token dots, small batches, in-place
// and pair tiles, 16-token groups, several token chunks), 1 and 2 threads.
TEST_P(BatchInvariantMatmul, EveryTokenGetsItsOneTokenBits) {
  const Isa isa = GetParam();
  if (!isa_supported(isa)) GTEST_SKIP() << isa_name(isa) << " not supported on this CPU";
  force_isa(isa);
  const int64_t rows = 37, cols = 512;
  for (int nth : {1, 2}) {
    ThreadPool pool(nth);
    std::vector<uint8_t> scratch;
    for (DType wt : test::weight_types()) {
      std::vector<uint8_t> w;
      for (int64_t r = 0; r < rows; ++r) {
        const std::vector<uint8_t> row = test::random_bytes_row(wt, cols, 100 + static_cast<uint32_t>(r));
        w.insert(w.end(), row.begin(), row.end());
      }
      for (int64_t n : {2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 64, 100}) {
        const std::vector<float> x = test::random_floats(n * cols, 7 + static_cast<uint32_t>(n));
        std::vector<float> y(static_cast<size_t>(n * rows));
        matmul(pool, wt, w.data(), rows, cols, x.data(), n, y.data(), scratch);
        int64_t differ = 0;
        for (int64_t t = 0; t < n; ++t) {
          std::vector<float> y1(static_cast<size_t>(rows));
          matmul(pool, wt, w.data(), rows, cols, x.data() + t * cols, 1, y1.data(), scratch);
          differ += std::memcmp(y1.data(), y.data() + t * rows, rows * sizeof(float)) != 0;
        }
        EXPECT_EQ(differ, 0) << dtype_name(wt) << " " << isa_name(isa) << " threads=" << nth << " n=" << n
                             << ": tokens whose row differs from their one-token product; path "
                             << matmul_path(wt, n) << " vs " << matmul_path(wt, 1);
      }
    }
  }
  force_isa(best_isa());
}

INSTANTIATE_TEST_SUITE_P(Isas, BatchInvariantMatmul, ::testing::Values(Isa::Scalar, Isa::Avx2, Isa::Avx512),
                         [](const auto& info) { return std::string(isa_name(info.param)); });

// And one order on every ISA: a quantized product gives the same bits on the scalar reference, at
// AVX2 and at AVX-512, for one token and for a batch (float weights: AVX2 and AVX-512 agree; the
// scalar reference of the float types sums in 8 lanes, another order).
TEST(BatchInvariantMatmulIsas, TheSameBitsOnEveryIsa) {
  const int64_t rows = 21, cols = 512;
  ThreadPool pool(2);
  std::vector<uint8_t> scratch;
  for (DType wt : test::weight_types()) {
    const bool float_type = traits(wt).block_elems == 1;
    std::vector<uint8_t> w;
    for (int64_t r = 0; r < rows; ++r) {
      const std::vector<uint8_t> row = test::random_bytes_row(wt, cols, 300 + static_cast<uint32_t>(r));
      w.insert(w.end(), row.begin(), row.end());
    }
    for (int64_t n : {1, 17}) {
      const std::vector<float> x = test::random_floats(n * cols, 11);
      std::vector<float> first;
      Isa first_isa = Isa::Scalar;
      int checked = 0;
      for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
        if (!isa_supported(isa) || (float_type && isa == Isa::Scalar)) continue;
        force_isa(isa);
        std::vector<float> y(static_cast<size_t>(n * rows));
        matmul(pool, wt, w.data(), rows, cols, x.data(), n, y.data(), scratch);
        if (checked++ == 0) {
          first = y;
          first_isa = isa;
        } else {
          EXPECT_EQ(0, std::memcmp(first.data(), y.data(), y.size() * sizeof(float)))
              << dtype_name(wt) << " n=" << n << ": " << isa_name(isa) << " vs " << isa_name(first_isa);
        }
      }
    }
  }
  force_isa(best_isa());
}

}  // namespace
}  // namespace strata::kernels
