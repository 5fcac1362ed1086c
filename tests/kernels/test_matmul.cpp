// tests/kernels/test_matmul.cpp — matmul of every weight type against a naive f32 product with
// the dequantized weights: decode (1 token) and prompt shapes (the one-row and the packed-tile
// paths), odd row counts, 1 and 2 threads, every ISA the CPU has.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iterator>

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

// matmul_many runs runs of products that share their activations in one parallel region; each
// product must still get the bits matmul() gives it alone. Jobs of every kind in one list: runs
// that share (K-quants of the Q8_K layout, the Q8_0-activation types, one-token dots of one dot
// type), neighbours that break a run (Q4_1's Q8_1 activations, float weights, a change of path),
// a job with no rows, and more jobs than kMatmulManyMax; every path's batch sizes; 1-3 threads.
TEST_P(MatmulTest, ManyGivesEachProductTheBitsOfMatmulAlone) {
  const Isa isa = GetParam();
  if (!isa_supported(isa)) GTEST_SKIP() << isa_name(isa) << " not supported on this CPU";
  force_isa(isa);
  constexpr int64_t kCols = 512;
  struct Spec {
    DType type;
    int64_t rows;
  };
  const Spec specs[] = {{DType::Q4_K, 37}, {DType::Q4_K, 16}, {DType::Q6_K, 21}, {DType::Q5_K, 5},
                        {DType::Q3_K, 19}, {DType::Q2_K, 0},  {DType::Q2_K, 33}, {DType::Q8_0, 29},
                        {DType::Q4_0, 18}, {DType::Q5_0, 7},  {DType::Q4_1, 23}, {DType::Q5_1, 9},
                        {DType::F16, 13},  {DType::F32, 11},  {DType::BF16, 6},  {DType::Q6_K, 40},
                        {DType::Q8_0, 3}};
  constexpr size_t kJobs = std::size(specs);
  static_assert(kJobs > kMatmulManyMax, "the list crosses a run's cut");
  std::vector<std::vector<uint8_t>> weights(kJobs);
  for (size_t i = 0; i < kJobs; ++i) {
    const std::vector<float> wf = test::random_floats(specs[i].rows * kCols, 100 + static_cast<uint32_t>(i));
    weights[i].resize(static_cast<size_t>(row_bytes(specs[i].type, kCols) * specs[i].rows));
    for (int64_t r = 0; r < specs[i].rows; ++r)
      quantize_row(specs[i].type, wf.data() + r * kCols, weights[i].data() + r * row_bytes(specs[i].type, kCols), kCols);
  }
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (int64_t n : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{5}, int64_t{8}, int64_t{16}, int64_t{17}, int64_t{64}}) {
      const std::vector<float> x = test::random_floats(n * kCols, 7 + static_cast<uint32_t>(n));
      std::vector<std::vector<float>> alone(kJobs), many(kJobs);
      std::vector<MatmulJob> jobs;
      std::vector<uint8_t> scratch;
      for (size_t i = 0; i < kJobs; ++i) {
        alone[i].assign(static_cast<size_t>(n * specs[i].rows), NAN);
        many[i].assign(static_cast<size_t>(n * specs[i].rows), NAN);
        matmul(pool, specs[i].type, weights[i].data(), specs[i].rows, kCols, x.data(), n, alone[i].data(), scratch);
        jobs.push_back({specs[i].type, weights[i].data(), specs[i].rows, many[i].data()});
      }
      std::vector<uint8_t> many_scratch;
      matmul_many(pool, jobs, kCols, x.data(), n, many_scratch);
      EXPECT_LE(static_cast<int64_t>(many_scratch.size()), matmul_scratch_bound(kCols, n, threads)) << "tokens=" << n;
      for (size_t i = 0; i < kJobs; ++i) {
        for (size_t e = 0; e < alone[i].size(); ++e) {
          uint32_t a, b;
          std::memcpy(&a, &alone[i][e], 4);
          std::memcpy(&b, &many[i][e], 4);
          ASSERT_EQ(a, b) << "job " << i << " (" << dtype_name(specs[i].type) << ", " << specs[i].rows
                          << " rows), tokens=" << n << " threads=" << threads << " element " << e << ": "
                          << many[i][e] << " vs " << alone[i][e] << " alone";
        }
      }
    }
  }
  force_isa(best_isa());
}

INSTANTIATE_TEST_SUITE_P(Isas, MatmulTest, ::testing::Values(Isa::Scalar, Isa::Avx2, Isa::Avx512),
                         [](const auto& info) { return std::string(isa_name(info.param)); });

}  // namespace
}  // namespace strata::kernels
