// tests/kernels/test_matmul.cpp — matmul of every weight type against a naive f32 product with
// the dequantized weights: decode (1 token) and prompt shapes (the one-row and the packed-tile
// paths), odd row counts, 1 and 2 threads, every ISA the CPU has.
#include <gtest/gtest.h>

#include <cmath>

#include "kernel_test_util.h"
#include "kernels/cpu/matmul.h"

namespace strata::kernels {
namespace {

struct Shape {
  int64_t rows, cols, tokens;
};

void check_matmul(ThreadPool& pool, DType wt, const Shape& s, uint32_t seed, std::vector<uint8_t>& scratch) {
  const std::vector<float> wf = test::random_floats(s.rows * s.cols, seed);
  std::vector<uint8_t> w(static_cast<size_t>(row_bytes(wt, s.cols) * s.rows));
  for (int64_t r = 0; r < s.rows; ++r)
    quantize_row(wt, wf.data() + r * s.cols, w.data() + r * row_bytes(wt, s.cols), s.cols);
  const std::vector<float> wd = test::dequantized(wt, w.data(), s.rows * s.cols);
  const std::vector<float> x = test::random_floats(s.tokens * s.cols, seed + 1);
  std::vector<float> y(static_cast<size_t>(s.tokens * s.rows), NAN);
  matmul(pool, wt, w.data(), s.rows, s.cols, x.data(), s.tokens, y.data(), scratch);
  const bool float_acts = vec_dot_type(wt) == DType::F32;
  for (int64_t t = 0; t < s.tokens; ++t) {
    double x2 = 0;
    for (int64_t c = 0; c < s.cols; ++c) x2 += double(x[t * s.cols + c]) * x[t * s.cols + c];
    for (int64_t r = 0; r < s.rows; ++r) {
      double ref = 0, mag = 0, w2 = 0;
      for (int64_t c = 0; c < s.cols; ++c) {
        const double p = double(wd[r * s.cols + c]) * x[t * s.cols + c];
        ref += p;
        mag += std::fabs(p);
        w2 += double(wd[r * s.cols + c]) * wd[r * s.cols + c];
      }
      // f32 activations: float reassociation only. Quantized activations: 8-bit rounding,
      // bounded by 1% of |w| |x| (see test_vec_dot).
      const double tol = float_acts ? 2e-5 * mag : 0.01 * std::sqrt(w2 * x2);
      ASSERT_NEAR(y[t * s.rows + r], ref, tol)
          << dtype_name(wt) << " rows=" << s.rows << " tokens=" << s.tokens << " t=" << t << " r=" << r;
    }
  }
}

class MatmulTest : public ::testing::TestWithParam<Isa> {};

TEST_P(MatmulTest, AllTypesAgainstNaiveF32) {
  const Isa isa = GetParam();
  if (!isa_supported(isa)) GTEST_SKIP() << isa_name(isa) << " not supported on this CPU";
  force_isa(isa);
  ASSERT_EQ(active_isa(), isa);
  // Prompt shapes cross the switch to the packed kernels (gemm.h: 2-7 tokens), the in-place
  // layouts of batches of 2 (octets), 3 (quads) and 6 (pairs) tokens, its 16-token groups and
  // its token chunks.
  const Shape shapes[] = {{37, 256, 1}, {64, 512, 1}, {29, 512, 2}, {33, 256, 3}, {21, 512, 6},
                          {40, 768, 17}, {19, 512, 64}, {70, 256, 67}};
  std::vector<uint8_t> scratch;
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    for (DType wt : test::weight_types())
      for (const Shape& s : shapes) check_matmul(pool, wt, s, static_cast<uint32_t>(s.rows * 31 + s.tokens), scratch);
  }
  force_isa(best_isa());
}

TEST_P(MatmulTest, DecodeWithManyRows) {
  // Enough rows that the decode split gives every thread several chunks.
  const Isa isa = GetParam();
  if (!isa_supported(isa)) GTEST_SKIP() << isa_name(isa) << " not supported on this CPU";
  force_isa(isa);
  ThreadPool pool(2);
  std::vector<uint8_t> scratch;
  for (DType wt : {DType::Q4_K, DType::Q6_K, DType::Q8_0, DType::F16})
    check_matmul(pool, wt, {1031, 512, 1}, 77, scratch);
  force_isa(best_isa());
}

// A device reserves matmul_scratch_bound(widest row, max batch, threads) up front
// (plan/scratch_layout.h, in the memory estimate), so no product may grow its scratch past it:
// every weight type, batches across each path switch (1, the 4-token dot, the float tiles at
// 16, the packed tiles), rows that are and are not a multiple of 64 bytes, 1 and 2 threads.
// Widths below the bound's own (256 < 300) are covered by the same bound.
TEST_P(MatmulTest, ScratchNeverGrowsPastTheReservedBound) {
  const Isa isa = GetParam();
  if (!isa_supported(isa)) GTEST_SKIP() << isa_name(isa) << " not supported on this CPU";
  force_isa(isa);
  constexpr int64_t kMaxBatch = 70;
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    const int64_t bound = matmul_scratch_bound(300, kMaxBatch, threads);
    for (DType wt : test::weight_types()) {
      for (int64_t cols : {int64_t{256}, int64_t{288}, int64_t{300}}) {
        if (cols % traits(wt).block_elems != 0) continue;
        for (int64_t n : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{4}, int64_t{8}, int64_t{15}, int64_t{16}, int64_t{17}, int64_t{33}, int64_t{64}, kMaxBatch}) {
          std::vector<uint8_t> scratch;
          const std::vector<float> x = test::random_floats(n * cols, 5);
          std::vector<uint8_t> w(static_cast<size_t>(row_bytes(wt, cols) * 3));
          std::vector<float> y(static_cast<size_t>(n * 3));
          matmul(pool, wt, w.data(), 3, cols, x.data(), n, y.data(), scratch);
          EXPECT_LE(static_cast<int64_t>(scratch.size()), bound)
              << dtype_name(wt) << " cols=" << cols << " tokens=" << n << " threads=" << threads;
        }
      }
    }
    // The bound follows the batch: a bigger batch never needs less.
    EXPECT_LE(matmul_scratch_bound(300, 16, threads), bound);
  }
  // Quantized activations alone (Q8_K rows of 256 columns, 292 bytes, for 70 tokens) set a floor.
  EXPECT_GE(matmul_scratch_bound(256, kMaxBatch, 1), 292 * kMaxBatch);
  force_isa(best_isa());
}

INSTANTIATE_TEST_SUITE_P(Isas, MatmulTest, ::testing::Values(Isa::Scalar, Isa::Avx2, Isa::Avx512),
                         [](const auto& info) { return std::string(isa_name(info.param)); });

}  // namespace
}  // namespace strata::kernels
