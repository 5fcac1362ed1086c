// tests/kernels/test_gemm_float.cpp — the register-tiled float GEMM (gemm_float.h) for F32, F16
// and BF16 weights: against a double-precision product of the same (exactly dequantized)
// weights within a stated tolerance, and bit for bit against the scalar chain it promises
// (s = fma(w[k], x[k], s) for k in order); rows, tokens and k that are not multiples of the
// tiles (6 x 2 groups of 8 tokens on AVX2, 12 x 2 groups of 16 on AVX-512), of the groups or of
// the 256-element k chunk, 1 and 2 threads; outputs outside the block left untouched; block()
// calls chained on one scratch, each converting the next one's first chunk; every
// output independent of the thread count and of where its row and token fall in a tile (bit for
// bit); and matmul's routing: F32 batches under 16 rows keep the one-token dot's order (bit for
// bit what each token gets alone; `small` keeps that order), F16 / BF16 batches of 2-15 take
// `small` (whole rows streamed to 3 tokens, 3 rows x 4 tokens from 4; checked the same ways),
// from 16 rows all three types take the tiles. The AVX-512 variant runs where the CPU has it; its
// AVX2 emulation (same layout and order of operations) runs on every AVX2 CPU, and where both run
// they must agree bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/cpu/gemm_float.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/type_kernels.h"

namespace strata::kernels {
namespace {

const DType kFloatTypes[] = {DType::F32, DType::F16, DType::BF16};

struct Problem {
  int64_t rows, cols, tokens;
  std::vector<uint8_t> w;  // [rows][row_bytes(type, cols)]
  std::vector<float> wd;   // the same weights as f32 (exact: f16 and bf16 widen without rounding)
  std::vector<float> x;    // [tokens][cols]
};

Problem make_problem(DType wt, int64_t rows, int64_t cols, int64_t tokens, uint32_t seed) {
  Problem p{rows, cols, tokens, {}, {}, test::random_floats(tokens * cols, seed + 1)};
  const std::vector<float> wf = test::random_floats(rows * cols, seed);
  const int64_t rb = row_bytes(wt, cols);
  p.w.resize(static_cast<size_t>(rb * rows));
  for (int64_t r = 0; r < rows; ++r) quantize_row(wt, wf.data() + r * cols, p.w.data() + r * rb, cols);
  p.wd = test::dequantized(wt, p.w.data(), rows * cols);
  return p;
}

// y ([tokens][y_stride]) against sum_k wd[r][k] x[t][k] in double. Tolerance: 1e-5 of
// sum_k |w x| (float rounding of one running sum: about 2^-24 |partial sum| per term, a random
// walk). A dropped or doubled term of k (|w x| ~ 1 of sum ~ 0.64 cols) is above it up to
// k ~ 150000, far past the test shapes. Then bit for bit against the FMA chain.
void check_against_double(const Problem& p, const std::vector<float>& y, int64_t y_stride, const std::string& what) {
  for (int64_t t = 0; t < p.tokens; ++t) {
    for (int64_t r = 0; r < p.rows; ++r) {
      double ref = 0, mag = 0;
      for (int64_t k = 0; k < p.cols; ++k) {
        const double v = double(p.wd[r * p.cols + k]) * p.x[t * p.cols + k];
        ref += v;
        mag += std::fabs(v);
      }
      ASSERT_NEAR(y[t * y_stride + r], ref, 1e-5 * mag)
          << what << " rows=" << p.rows << " cols=" << p.cols << " tokens=" << p.tokens << " t=" << t << " r=" << r;
      // The kernel's promise: one FMA chain over k in order.
      float chain = 0.f;
      for (int64_t k = 0; k < p.cols; ++k) chain = std::fma(p.wd[r * p.cols + k], p.x[t * p.cols + k], chain);
      ASSERT_EQ(std::memcmp(&chain, &y[t * y_stride + r], 4), 0)
          << what << " not the FMA chain: " << y[t * y_stride + r] << " vs " << chain << " rows=" << p.rows
          << " cols=" << p.cols << " tokens=" << p.tokens << " t=" << t << " r=" << r;
    }
  }
}

std::string label(const FloatGemmKernels& fk, DType wt, int threads) {
  return std::string(dtype_name(wt)) + " tile " + std::to_string(fk.rm) + "x" + std::to_string(fk.rn) + " threads=" +
         std::to_string(threads);
}

std::vector<float> run_tiles(const FloatGemmKernels& fk, ThreadPool& pool, DType wt, const Problem& p,
                             std::vector<uint8_t>& scratch) {
  std::vector<float> y(static_cast<size_t>(p.tokens * p.rows), NAN);
  matmul_float_tiles(pool, fk, p.w.data(), row_bytes(wt, p.cols), p.rows, p.cols, p.x.data(), p.tokens, y.data(),
                     scratch);
  return y;
}

// The edge shapes: rows 1, 3, 17, 64, 67 (tiles of 6 / 12 rows and 48-row items: 67 is
// two items, the second of 19 rows); tokens 16, 17, 33, 64, 100 (groups of 8 / 16; a lone last
// group takes the one-group tile) and 300 (two token blocks of up to 256); k 32, 37 and 40 (one chunk; 37 and 40 not
// multiples of 16, 37 not of 8: the packing's transpose tail), 1000 (3 chunks of 256 and a part),
// 4104 = 4096 + 8 and 4099 (16 chunks and a part of 8 / 3).
void check_tiles_at_edges(const FloatGemmKernels& fk, DType wt, int threads) {
  ThreadPool pool(threads);
  std::vector<uint8_t> scratch;
  for (int64_t cols : {32, 37, 40, 1000, 4099, 4104}) {
    for (int64_t rows : {1, 3, 17, 64, 67}) {
      for (int64_t tokens : {16, 17, 33, 64, 100, 300}) {
        // The long rows only at a few shapes: the double reference is the slow part.
        if (cols >= 1000 && !((rows == 17 && tokens != 300) || tokens == 17 || (rows == 67 && tokens == 100))) continue;
        const Problem p = make_problem(wt, rows, cols, tokens, static_cast<uint32_t>(rows * 1000 + tokens * 7 + cols));
        const std::vector<float> y = run_tiles(fk, pool, wt, p, scratch);
        check_against_double(p, y, rows, label(fk, wt, threads));
      }
    }
  }
  // Fewer tokens or columns than one tile / one vector: matmul does not route these here, but
  // the kernels handle them.
  for (int64_t cols : {1, 5, 8, 15}) {
    for (int64_t tokens : {1, 2, 3}) {
      const Problem p = make_problem(wt, 5, cols, tokens, static_cast<uint32_t>(cols * 13 + tokens));
      check_against_double(p, run_tiles(fk, pool, wt, p, scratch), 5, label(fk, wt, threads));
    }
  }
}

class FloatGemmIsa : public ::testing::TestWithParam<Isa> {};

TEST_P(FloatGemmIsa, MatchesDoubleReferenceAtEdges) {
  const Isa isa = GetParam();
  if (!isa_supported(isa)) GTEST_SKIP() << isa_name(isa) << " not supported on this CPU";
  for (DType wt : kFloatTypes) {
    const FloatGemmKernels* fk = float_gemm_kernels(wt, isa);
    ASSERT_NE(fk, nullptr) << dtype_name(wt);
    for (int threads : {1, 2}) check_tiles_at_edges(*fk, wt, threads);
  }
}

uint8_t* align64(std::vector<uint8_t>& v) {
  return reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(v.data()) + 63) & ~uintptr_t{63});
}

// p's tokens packed by fk.pack_group, group after group (cols * lanes floats each), into buf.
float* pack_tokens(const FloatGemmKernels& fk, const Problem& p, std::vector<uint8_t>& buf) {
  const int64_t L = fk.lanes, ng = (p.tokens + L - 1) / L;
  buf.assign(static_cast<size_t>(ng * p.cols * L * 4 + 64), 0);
  float* xp = reinterpret_cast<float*>(align64(buf));
  for (int64_t g = 0; g < ng; ++g) fk.pack_group(p.x.data(), p.cols, p.tokens, g, xp + g * p.cols * L);
  return xp;
}

// pack_group and one block call with a row stride wider than its rows: the packed layout is
// the promised one (zeros past the last token), and the block writes exactly its nr x nt outputs.
TEST_P(FloatGemmIsa, PackAndBlockWriteOnlyTheirOutputs) {
  const Isa isa = GetParam();
  if (!isa_supported(isa)) GTEST_SKIP() << isa_name(isa) << " not supported on this CPU";
  for (DType wt : kFloatTypes) {
    const FloatGemmKernels* fk = float_gemm_kernels(wt, isa);
    ASSERT_NE(fk, nullptr);
    const Problem p = make_problem(wt, 7, 301, 9, 5);
    const int64_t L = fk->lanes, ng = (p.tokens + L - 1) / L;
    std::vector<uint8_t> xbuf;
    float* xp = pack_tokens(*fk, p, xbuf);
    for (int64_t g = 0; g < ng; ++g)
      for (int64_t k = 0; k < p.cols; ++k)
        for (int64_t l = 0; l < L; ++l) {
          const int64_t t = g * L + l;
          const float want = t < p.tokens ? p.x[t * p.cols + k] : 0.f;
          ASSERT_EQ(xp[(g * p.cols + k) * L + l], want) << "packed token " << t << " k " << k;
        }
    std::vector<uint8_t> buf(static_cast<size_t>(fk->scratch_bytes + 64));
    uint8_t* scratch = align64(buf);
    const int64_t ys = p.rows + 3;
    std::vector<float> y(static_cast<size_t>(p.tokens * ys), NAN);
    fk->block(p.w.data(), row_bytes(wt, p.cols), p.rows, p.cols, xp, p.tokens, y.data(), ys, scratch, nullptr, 0,
              kNoChunkReady);
    check_against_double(p, y, ys, dtype_name(wt));
    for (int64_t t = 0; t < p.tokens; ++t)
      for (int64_t r = p.rows; r < ys; ++r) EXPECT_TRUE(std::isnan(y[t * ys + r])) << "wrote past the rows, t=" << t;
  }
}

// block() called in a chain on one scratch, each call given the next call's rows: each converts
// the next rows' first weight chunk while its last chunk computes and says in which buffer
// (0 or 1; kNoChunkReady after the last call), and the next call starts from it. Blocks of
// row_block, 5 and row_block - 1 rows in both orders (padding rows and tile counts that differ
// between neighbours), k of one chunk, of two with a tail of 45 (not a multiple of 8: converted
// outside the tiles), of three (an odd count: the hand-over lands in the other buffer) and of
// four; scratch starts as NaN bytes. Each block's outputs: the double reference and the FMA
// chain's bits, as when called alone.
void check_block_chain(const FloatGemmKernels& fk, DType wt) {
  const int64_t rb = fk.row_block;
  for (const std::vector<int64_t>& sizes : {std::vector<int64_t>{rb, 5, rb - 1}, std::vector<int64_t>{5, rb - 1, rb}}) {
    for (int64_t cols : {40, 301, 700, 1024}) {
      int64_t rows = 0;
      for (int64_t n : sizes) rows += n;
      const Problem p = make_problem(wt, rows, cols, 20, static_cast<uint32_t>(cols + sizes[0]));
      std::vector<uint8_t> xbuf;
      const float* xp = pack_tokens(fk, p, xbuf);
      std::vector<uint8_t> buf(static_cast<size_t>(fk.scratch_bytes + 64), 0xFF);
      uint8_t* scratch = align64(buf);
      std::vector<float> y(static_cast<size_t>(p.tokens * rows), NAN);
      const int64_t rbytes = row_bytes(wt, cols);
      const std::string what = std::string("chain ") + dtype_name(wt) + " lanes=" + std::to_string(fk.lanes) +
                                " first block " + std::to_string(sizes[0]) + " cols=" + std::to_string(cols);
      int ready = kNoChunkReady;
      int64_t r0 = 0;
      for (size_t i = 0; i < sizes.size(); ++i) {
        const bool more = i + 1 < sizes.size();
        const uint8_t* next_w = more ? p.w.data() + (r0 + sizes[i]) * rbytes : nullptr;
        ready = fk.block(p.w.data() + r0 * rbytes, rbytes, sizes[i], cols, xp, p.tokens, y.data() + r0, rows, scratch,
                         next_w, more ? sizes[i + 1] : 0, ready);
        if (more)
          ASSERT_TRUE(ready == 0 || ready == 1) << what << " call " << i << ": " << ready;
        else
          ASSERT_EQ(ready, kNoChunkReady) << what << ": no next rows";
        r0 += sizes[i];
      }
      check_against_double(p, y, rows, what);
    }
  }
}

TEST_P(FloatGemmIsa, BlockHandsTheNextRowsFirstChunkOver) {
  const Isa isa = GetParam();
  if (!isa_supported(isa)) GTEST_SKIP() << isa_name(isa) << " not supported on this CPU";
  for (DType wt : kFloatTypes) {
    const FloatGemmKernels* fk = float_gemm_kernels(wt, isa);
    ASSERT_NE(fk, nullptr);
    check_block_chain(*fk, wt);
  }
}

// Every output sums in the same order wherever it falls: 1 and 2 threads, and each token alone
// (a block of one token) or each row alone, give the same bits as the whole product.
TEST_P(FloatGemmIsa, OutputsDoNotDependOnThreadsOrTilePosition) {
  const Isa isa = GetParam();
  if (!isa_supported(isa)) GTEST_SKIP() << isa_name(isa) << " not supported on this CPU";
  ThreadPool one(1), two(2);
  std::vector<uint8_t> scratch;
  for (DType wt : kFloatTypes) {
    const FloatGemmKernels* fk = float_gemm_kernels(wt, isa);
    ASSERT_NE(fk, nullptr);
    const Problem p = make_problem(wt, 67, 1000, 37, 11);
    const std::vector<float> y1 = run_tiles(*fk, one, wt, p, scratch);
    const std::vector<float> y2 = run_tiles(*fk, two, wt, p, scratch);
    ASSERT_EQ(std::memcmp(y1.data(), y2.data(), y1.size() * 4), 0) << dtype_name(wt) << ": 1 vs 2 threads";
    const int64_t rb = row_bytes(wt, p.cols);
    for (int64_t t = 0; t < p.tokens; t += 5) {
      std::vector<float> yt(static_cast<size_t>(p.rows));
      matmul_float_tiles(one, *fk, p.w.data(), rb, p.rows, p.cols, p.x.data() + t * p.cols, 1, yt.data(), scratch);
      ASSERT_EQ(std::memcmp(yt.data(), y1.data() + t * p.rows, yt.size() * 4), 0) << dtype_name(wt) << " token " << t;
    }
    for (int64_t r = 1; r < p.rows; r += 7) {
      std::vector<float> yr(static_cast<size_t>(p.tokens));
      matmul_float_tiles(two, *fk, p.w.data() + r * rb, rb, 1, p.cols, p.x.data(), p.tokens, yr.data(), scratch);
      for (int64_t t = 0; t < p.tokens; ++t)
        ASSERT_EQ(std::memcmp(&yr[t], &y1[t * p.rows + r], 4), 0) << dtype_name(wt) << " row " << r << " token " << t;
    }
  }
}

// What `small` promises for one output: 8 lane sums (lane l: an FMA chain over k = l, l + 8, ...
// below cols rounded down to 8), added as ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)), then
// the tail products added in order.
float small_order(const Problem& p, int64_t r, int64_t t) {
  const float* w = p.wd.data() + r * p.cols;
  const float* x = p.x.data() + t * p.cols;
  const int64_t kv = p.cols / 8 * 8;
  float l[8] = {};
  for (int64_t k = 0; k < kv; ++k) l[k % 8] = std::fma(w[k], x[k], l[k % 8]);
  float s = ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
  for (int64_t k = kv; k < p.cols; ++k) s += w[k] * x[k];
  return s;
}

// `small` (dot products for batches of a few tokens: whole rows streamed for up to 3 tokens, else
// 3 rows x 4 tokens; one 8-lane chain an output, for F32 the one-token dot's order): rows and
// tokens not multiples of the tiles, k not a multiple of 8 or 32, 1 and 2 threads; against the
// double reference (the tolerance above) and bit for bit against its stated order (F32: also the
// one-token vec_dot of the ISA).
TEST_P(FloatGemmIsa, SmallMatchesReferenceAndItsOrder) {
  const Isa isa = GetParam();
  if (!isa_supported(isa)) GTEST_SKIP() << isa_name(isa) << " not supported on this CPU";
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    for (DType wt : kFloatTypes) {
      const FloatGemmKernels* fk = float_gemm_kernels(wt, isa);
      ASSERT_NE(fk, nullptr);
      for (int64_t cols : {5, 37, 40, 72, 4099})
        for (int64_t rows : {1, 2, 3, 4, 17, 67})
          // Streamed to 4 (AVX2) or 8 (AVX-512), 3 x 4 tiles beyond.
          for (int64_t tokens : {1, 2, 3, 4, 5, 6, 7, 8, 15, 21}) {
            if (cols > 100 && rows != 17 && tokens != 15) continue;
            const Problem p = make_problem(wt, rows, cols, tokens, static_cast<uint32_t>(rows * 100 + tokens + cols));
            std::vector<float> y(static_cast<size_t>(tokens * rows), NAN);
            matmul_float_small(pool, *fk, p.w.data(), row_bytes(wt, cols), rows, cols, p.x.data(), tokens, y.data());
            for (int64_t t = 0; t < tokens; ++t)
              for (int64_t r = 0; r < rows; ++r) {
                double ref = 0, mag = 0;
                for (int64_t k = 0; k < cols; ++k) {
                  const double v = double(p.wd[r * cols + k]) * p.x[t * cols + k];
                  ref += v;
                  mag += std::fabs(v);
                }
                const float want = small_order(p, r, t);
                const float got = y[t * rows + r];
                // F32's promise: the one-token dot's bits (that order too).
                if (wt == DType::F32) {
                  float alone = NAN;
                  best_type_kernels(DType::F32, isa).vec_dot(cols, p.w.data() + r * cols * 4, p.x.data() + t * cols, &alone);
                  ASSERT_EQ(std::memcmp(&got, &alone, 4), 0) << "F32 vec_dot, rows=" << rows << " cols=" << cols
                                                             << " tokens=" << tokens << " t=" << t << " r=" << r;
                }
                ASSERT_NEAR(got, ref, 1e-5 * mag) << dtype_name(wt) << " rows=" << rows << " cols=" << cols
                                                  << " tokens=" << tokens << " t=" << t << " r=" << r;
                ASSERT_EQ(std::memcmp(&got, &want, 4), 0) << dtype_name(wt) << " rows=" << rows << " cols=" << cols
                                                          << " tokens=" << tokens << " t=" << t << " r=" << r;
              }
          }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Isas, FloatGemmIsa, ::testing::Values(Isa::Avx2, Isa::Avx512),
                         [](const auto& info) { return std::string(isa_name(info.param)); });

// The AVX-512 variant's configuration (16 lanes, 3 x 8 tile) on any AVX2 CPU, through its
// emulation: the same edge shapes and tolerance, and the same block chains.
TEST(FloatGemm, EmulatedAvx512MatchesDoubleReference) {
  if (!isa_supported(Isa::Avx2)) GTEST_SKIP() << "no AVX2 on this CPU";
  for (DType wt : kFloatTypes) {
    const FloatGemmKernels* fk = detail::avx512_float_gemm_emulated(wt);
    ASSERT_NE(fk, nullptr);
    ASSERT_EQ(fk->lanes, 16);
    for (int threads : {1, 2}) check_tiles_at_edges(*fk, wt, threads);
    check_block_chain(*fk, wt);
  }
}

// Where the CPU has AVX-512: the emulation gives the same bits (tolerance 0).
TEST(FloatGemm, EmulatedIsBitIdenticalToAvx512) {
  if (!isa_supported(Isa::Avx512)) GTEST_SKIP() << "no AVX-512 on this CPU: nothing to compare the emulation with";
  ThreadPool pool(2);
  std::vector<uint8_t> scratch;
  for (DType wt : kFloatTypes) {
    const FloatGemmKernels* hw = float_gemm_kernels(wt, Isa::Avx512);
    const FloatGemmKernels* em = detail::avx512_float_gemm_emulated(wt);
    ASSERT_NE(hw, nullptr);
    ASSERT_NE(em, nullptr);
    EXPECT_EQ(hw->rm, em->rm);
    EXPECT_EQ(hw->rn, em->rn);
    EXPECT_EQ(hw->row_block, em->row_block);
    EXPECT_EQ(hw->token_block, em->token_block);
    EXPECT_EQ(hw->stream_max_tokens, em->stream_max_tokens);
    for (int64_t cols : {40, 4104}) {
      const Problem p = make_problem(wt, 67, cols, 100, static_cast<uint32_t>(cols));
      const std::vector<float> a = run_tiles(*hw, pool, wt, p, scratch);
      const std::vector<float> b = run_tiles(*em, pool, wt, p, scratch);
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0) << dtype_name(wt) << " cols=" << cols;
    }
  }
}

// matmul's routing at each SIMD ISA the CPU has: F32 batches of 2..15 rows give every token bit
// for bit what it gets alone (the one-token dot's order: a batched decode step equals
// single-sequence decode), F16 / BF16 batches take `small` (its order, bit for bit), and so do all
// three types from 16 rows (the tiles sum in another order: matmul no longer takes them).
TEST_P(FloatGemmIsa, MatmulRoutesFloatWeights) {
  const Isa isa = GetParam();
  if (!isa_supported(isa)) GTEST_SKIP() << isa_name(isa) << " not supported on this CPU";
  force_isa(isa);
  ThreadPool pool(2);
  std::vector<uint8_t> scratch;
  // Rows streamed for up to 4 tokens with AVX2's 16 vector registers, 8 with AVX-512's 32.
  const int64_t stream_max = isa == Isa::Avx512 ? 8 : 4;
  for (DType wt : kFloatTypes) EXPECT_EQ(float_gemm_kernels(wt, isa)->stream_max_tokens, stream_max) << dtype_name(wt);
  const Problem f32 = make_problem(DType::F32, 45, 520, 16, 3);
  for (int64_t n : {2, 3, 4, 6, 7, 8, 15}) {
    EXPECT_NE(matmul_path(DType::F32, n).find(n <= stream_max ? "f32 stream exact dot" : "f32 3x4 exact dot"),
              std::string::npos)
        << n << ": " << matmul_path(DType::F32, n);
    std::vector<float> y(static_cast<size_t>(n * f32.rows));
    matmul(pool, DType::F32, f32.w.data(), f32.rows, f32.cols, f32.x.data(), n, y.data(), scratch);
    for (int64_t t = 0; t < n; ++t) {
      std::vector<float> alone(static_cast<size_t>(f32.rows));
      matmul(pool, DType::F32, f32.w.data(), f32.rows, f32.cols, f32.x.data() + t * f32.cols, 1, alone.data(), scratch);
      ASSERT_EQ(std::memcmp(alone.data(), y.data() + t * f32.rows, alone.size() * 4), 0) << "n=" << n << " t=" << t;
    }
  }
  for (DType wt : {DType::F16, DType::BF16}) {
    EXPECT_NE(matmul_path(wt, 1).find("vec_dot"), std::string::npos) << dtype_name(wt) << ": " << matmul_path(wt, 1);
    for (int64_t n : {2, 3, 4, 5, 6, 7, 8, 15}) {
      EXPECT_NE(matmul_path(wt, n).find(n <= stream_max ? "float stream dot" : "float 3x4 dot"), std::string::npos)
          << dtype_name(wt) << ": " << matmul_path(wt, n);
      const Problem p = make_problem(wt, 45, 520, n, 19);
      std::vector<float> y(static_cast<size_t>(p.tokens * p.rows), NAN);
      matmul(pool, wt, p.w.data(), p.rows, p.cols, p.x.data(), p.tokens, y.data(), scratch);
      for (int64_t t = 0; t < n; ++t)
        for (int64_t r = 0; r < p.rows; ++r) {
          const float want = small_order(p, r, t);
          ASSERT_EQ(std::memcmp(&y[t * p.rows + r], &want, 4), 0) << dtype_name(wt) << " n=" << n;
        }
    }
  }
  // From 16 rows on too (issue 45: batch invariance), every type takes `small`, not the tiles:
  // its order, bit for bit, which is the one-token dot's, so a prompt token gets what it gets alone.
  for (DType wt : kFloatTypes) {
    for (int64_t n : {16, 33}) {
      EXPECT_EQ(matmul_path(wt, n).find("float tiles"), std::string::npos) << dtype_name(wt) << ": " << matmul_path(wt, n);
      const Problem p = make_problem(wt, 45, 520, n, 9);
      std::vector<float> y(static_cast<size_t>(p.tokens * p.rows), NAN);
      matmul(pool, wt, p.w.data(), p.rows, p.cols, p.x.data(), p.tokens, y.data(), scratch);
      for (int64_t t = 0; t < n; ++t)
        for (int64_t r = 0; r < p.rows; ++r) {
          const float want = small_order(p, r, t);
          ASSERT_EQ(std::memcmp(&y[t * p.rows + r], &want, 4), 0) << dtype_name(wt) << " n=" << n;
        }
    }
  }
  force_isa(best_isa());
}

}  // namespace
}  // namespace strata::kernels
