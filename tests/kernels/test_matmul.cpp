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
  // Prompt shapes cross the switch to the packed kernels (gemm.h: 5-7 tokens) and its 16-token
  // groups and 64-token chunks.
  const Shape shapes[] = {{37, 256, 1}, {64, 512, 1}, {33, 256, 3}, {21, 512, 6},
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

INSTANTIATE_TEST_SUITE_P(Isas, MatmulTest, ::testing::Values(Isa::Scalar, Isa::Avx2, Isa::Avx512),
                         [](const auto& info) { return std::string(isa_name(info.param)); });

}  // namespace
}  // namespace strata::kernels
