// tests/cuda_emu/test_cuda_emu_kernels.cpp — every entry point of kernels/cuda/cuda_kernels.h, run on
// the emulated GPU, against the CPU references of kernels/cpu (dequantize_row, the f32 ops, fp16.h)
// or a float64 reference where the CPU has no scalar one (attention, the f16 GEMM). Tolerances are
// stated at each check, per type. Shapes are small (the emulation runs every CUDA thread as an OS
// thread) but cover each kernel's variants: matvec token classes 1 / 4 / 8, warps with different
// tile counts, more than 4096 columns (the prefetch path) and the simple (unaligned x) kernel;
// attention at head_dim 64, 128, 256 and 80 (padded to 128), f32 and f16 caches, split-context
// decode and tiled prompts, windows and non-causal rows.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/common/scalar_math.h"
#include "kernels/cpu/fp16.h"
#include "kernels/cpu/ops_f32.h"
#include "kernels/cpu/quant.h"
#include "kernels/cuda/cuda_kernels.h"
#include "../kernels/kernel_test_util.h"

namespace {

using strata::kernels::DType;
namespace kc = strata::kernels::cuda;

// A device buffer of n elements (poisoned by the emulation until written).
template <class T>
class Dev {
 public:
  explicit Dev(size_t n) : n_(n) { EXPECT_EQ(cudaMalloc(&p_, std::max<size_t>(n, 1) * sizeof(T)), cudaSuccess); }
  explicit Dev(const std::vector<T>& h) : Dev(h.size()) { put(h); }
  ~Dev() { cudaFree(p_); }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
  T* get() const { return p_; }
  void put(const std::vector<T>& h) {
    ASSERT_EQ(h.size(), n_);
    ASSERT_EQ(cudaMemcpy(p_, h.data(), n_ * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  std::vector<T> host() const {
    std::vector<T> h(n_);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(h.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
  }

 private:
  T* p_ = nullptr;
  size_t n_;
};

std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

const DType kWeightTypes[] = {DType::F32,     DType::F16,    DType::BF16,    DType::Q4_0,    DType::Q4_1,
                              DType::Q5_0,    DType::Q5_1,   DType::Q8_0,    DType::Q2_K,    DType::Q3_K,
                              DType::Q4_K,    DType::Q5_K,   DType::Q6_K,    DType::IQ4_NL,  DType::IQ4_XS,
                              DType::MXFP4,   DType::TQ1_0,  DType::TQ2_0,   DType::IQ2_XXS, DType::IQ2_XS,
                              DType::IQ2_S,   DType::IQ3_XXS, DType::IQ3_S,  DType::IQ1_S,   DType::IQ1_M};

std::string type_name(const testing::TestParamInfo<DType>& i) { return strata::kernels::dtype_name(i.param); }

// Weights of `type` (quantized from random floats by the CPU reference quantizer; the grid types,
// which have none, random bytes with sane scales) and their dequantized values, as the CPU sees them.
struct Weights {
  std::vector<uint8_t> bytes;
  std::vector<float> values;  // [rows][cols]
};
Weights make_weights(DType type, int64_t rows, int64_t cols, uint32_t seed) {
  const std::vector<float> f = random_floats(rows * cols, seed);
  const int64_t rb = strata::kernels::row_bytes(type, cols);
  Weights w;
  w.bytes.resize(rows * rb);
  w.values.resize(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    if (strata::kernels::can_quantize(type)) {
      strata::kernels::quantize_row(type, &f[r * cols], &w.bytes[r * rb], cols);
    } else {
      const std::vector<uint8_t> row = strata::kernels::test::random_bytes_row(type, cols, seed * 7919u + static_cast<uint32_t>(r));
      std::memcpy(&w.bytes[r * rb], row.data(), static_cast<size_t>(rb));
    }
    strata::kernels::dequantize_row(type, &w.bytes[r * rb], &w.values[r * cols], cols);
  }
  return w;
}

// ---- mmv ---------------------------------------------------------------------------------------

class Mmv : public testing::TestWithParam<DType> {};

// y = W x for the dequantized weights, in float64; mag = sum |w x| (the scale of the rounding).
void mmv_reference(const Weights& w, const std::vector<float>& x, int64_t rows, int64_t cols, int64_t n_tokens,
                   std::vector<double>& ref, std::vector<double>& mag) {
  ref.assign(rows * n_tokens, 0.0);
  mag.assign(rows * n_tokens, 0.0);
  for (int64_t t = 0; t < n_tokens; ++t)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const double p = static_cast<double>(w.values[r * cols + c]) * x[t * cols + c];
        ref[t * rows + r] += p;
        mag[t * rows + r] += std::fabs(p);
      }
}

// Runs mmv over tokens [t0, t0 + n) of x (offset by `shift` floats from a 16-byte boundary) and
// returns y: [n][rows].
std::vector<float> mmv_rows(DType type, const Dev<uint8_t>& dw, int64_t rows, int64_t cols, const std::vector<float>& x,
                            int64_t t0, int64_t n, int shift) {
  std::vector<float> xs(static_cast<size_t>(n * cols + shift));
  std::memcpy(xs.data() + shift, &x[t0 * cols], static_cast<size_t>(n * cols) * 4);
  Dev<float> dx(xs);
  Dev<float> dy(rows * n);
  EXPECT_EQ(kc::mmv(kc::MatView{dw.get(), type, rows, cols}, dx.get() + shift, n, dy.get(), nullptr), cudaSuccess);
  return dy.host();
}

void check_mmv(DType type, int64_t rows, int64_t cols, int64_t n_tokens, bool misalign_x, uint32_t seed) {
  SCOPED_TRACE(std::string(strata::kernels::dtype_name(type)) + " rows " + std::to_string(rows) + " cols " +
               std::to_string(cols) + " tokens " + std::to_string(n_tokens) + (misalign_x ? " x unaligned" : ""));
  const Weights w = make_weights(type, rows, cols, seed);
  const std::vector<float> x = random_floats(n_tokens * cols, seed + 1);
  Dev<uint8_t> dw(w.bytes);
  const std::vector<float> y = mmv_rows(type, dw, rows, cols, x, 0, n_tokens, misalign_x ? 1 : 0);
  std::vector<double> ref, mag;
  mmv_reference(w, x, rows, cols, n_tokens, ref, mag);
  // The kernel sums exact f32 products of the CPU's dequantized values (d * sum(q x) + m * sum(x)
  // per oct) in another order than the reference: f32 rounding only, 1e-5 of sum |w x|.
  for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], ref[i], 1e-5 * mag[i]) << "element " << i;
}

TEST_P(Mmv, TiledTokenClassesAndUnevenWarps) {
  // 5376 columns (> 4096: the prefetch path): 6 tiles of 1024 quantized elements (warps 0-1 take
  // two, warps 2-3 one), 21 f32 tiles of 256, 11 f16 / bf16 tiles of 512. 7 rows: a partial CTA.
  for (int64_t n_tokens : {1, 3, 4, 5, 8}) check_mmv(GetParam(), 7, 5376, n_tokens, false, 10 + n_tokens);
}

TEST_P(Mmv, UnalignedXAndPromptSizes) {
  // x one float off 16-byte alignment (scalar loads), and prompt-sized calls (token groups).
  for (int64_t n_tokens : {1, 6}) check_mmv(GetParam(), 6, 768, n_tokens, true, 30 + n_tokens);
  for (int64_t n_tokens : {9, 21}) check_mmv(GetParam(), 5, 768, n_tokens, false, 40 + n_tokens);
}

// Batch invariance (issue 45): a token's outputs have the bits of a one-token call whatever the
// call's size (token classes 1, 4, 8; groups of 8 with a partial last one), the token's place in
// it, and x's alignment. 2304 columns: 3 quantized tiles (warps 0-2), 9 f32 tiles.
TEST_P(Mmv, EveryTokenHasTheBitsOfAOneTokenCall) {
  const DType type = GetParam();
  constexpr int64_t kRows = 7, kCols = 2304, kTokens = 37;
  const Weights w = make_weights(type, kRows, kCols, 70);
  const std::vector<float> x = random_floats(kTokens * kCols, 71);
  Dev<uint8_t> dw(w.bytes);
  std::vector<float> one(kTokens * kRows);
  for (int64_t t = 0; t < kTokens; ++t) {
    const std::vector<float> y = mmv_rows(type, dw, kRows, kCols, x, t, 1, 0);
    std::copy(y.begin(), y.end(), one.begin() + t * kRows);
  }
  struct Cut {
    int64_t t0, n;
    int shift;
  };
  for (const Cut c : {Cut{0, kTokens, 0}, Cut{0, kTokens, 1}, Cut{3, 4, 0}, Cut{5, 3, 2}, Cut{9, 5, 0},
                      Cut{11, 8, 3}, Cut{20, 17, 0}, Cut{1, 1, 1}}) {
    SCOPED_TRACE("tokens [" + std::to_string(c.t0) + ", +" + std::to_string(c.n) + ") x shifted " +
                 std::to_string(c.shift));
    const std::vector<float> y = mmv_rows(type, dw, kRows, kCols, x, c.t0, c.n, c.shift);
    ASSERT_EQ(std::memcmp(y.data(), &one[c.t0 * kRows], y.size() * 4), 0);
  }
}

// Float rows whose length is not a multiple of 8 take mmv_simple_kernel: correct, and batch-invariant.
TEST(MmvSimple, FloatRowsOfAnyLength) {
  for (DType type : {DType::F32, DType::F16, DType::BF16}) {
    for (int64_t n_tokens : {1, 3, 11}) check_mmv(type, 6, 770, n_tokens, false, 80 + n_tokens);
    const Weights w = make_weights(type, 6, 770, 90);
    const std::vector<float> x = random_floats(11 * 770, 91);
    Dev<uint8_t> dw(w.bytes);
    const std::vector<float> all = mmv_rows(type, dw, 6, 770, x, 0, 11, 0);
    for (int64_t t = 0; t < 11; ++t) {
      const std::vector<float> y = mmv_rows(type, dw, 6, 770, x, t, 1, t % 3);
      ASSERT_EQ(std::memcmp(y.data(), &all[t * 6], 6 * 4), 0) << strata::kernels::dtype_name(type) << " token " << t;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllWeightTypes, Mmv, testing::ValuesIn(kWeightTypes), type_name);

// MXFP4's 17-byte blocks: rows of an odd number of blocks start at odd addresses (every other row
// of a 33-block row), which its decoder reads by bytes; both kernels, several token classes.
TEST(MmvMxfp4, RowsAtOddAddresses) {
  for (int64_t n_tokens : {1, 4, 8}) check_mmv(DType::MXFP4, 7, 32 * 33, n_tokens, false, 50 + n_tokens);
  check_mmv(DType::MXFP4, 6, 32 * 33, 2, true, 60);
}

TEST(MmvArgs, RejectsBadShapes) {
  Dev<float> x(64), y(64);
  Dev<uint8_t> w(64 * 34);
  EXPECT_EQ(kc::mmv(kc::MatView{w.get(), DType::Q8_0, 2, 48}, x.get(), 1, y.get(), nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(kc::mmv(kc::MatView{w.get(), DType::Q8_0, 2, 32}, x.get(), 0, y.get(), nullptr), cudaErrorInvalidValue);
  EXPECT_TRUE(kc::supports_weight_type(DType::Q6_K));
  EXPECT_FALSE(kc::supports_weight_type(DType::Q8_K));
}

// ---- dequantize_f16, embed_rows ------------------------------------------------------------------

class Dequant : public testing::TestWithParam<DType> {};

TEST_P(Dequant, F16BitsOfTheCpuValues) {
  const DType type = GetParam();
  constexpr int64_t kRows = 3, kCols = 512;
  const Weights w = make_weights(type, kRows, kCols, 5);
  Dev<uint8_t> dw(w.bytes);
  Dev<uint16_t> out(kRows * kCols);
  ASSERT_EQ(kc::dequantize_f16(kc::MatView{dw.get(), type, kRows, kCols}, out.get(), nullptr), cudaSuccess);
  const std::vector<uint16_t> got = out.host();
  // Bit for bit: quant_blocks.cuh decodes to the CPU's floats, rounded to f16 (nearest even).
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(got[i], strata::kernels::f32_to_fp16(w.values[i])) << "element " << i;
}

TEST_P(Dequant, EmbedRowsAreTheCpuValues) {
  const DType type = GetParam();
  constexpr int64_t kRows = 10, kCols = 512;
  const Weights w = make_weights(type, kRows, kCols, 6);
  const std::vector<int32_t> tokens = {3, 0, 9, 3, 7};
  Dev<uint8_t> dw(w.bytes);
  Dev<int32_t> dt(tokens);
  Dev<float> out(tokens.size() * kCols);
  ASSERT_EQ(kc::embed_rows(kc::MatView{dw.get(), type, kRows, kCols}, dt.get(), tokens.size(), out.get(), nullptr),
            cudaSuccess);
  const std::vector<float> got = out.host();
  for (size_t i = 0; i < tokens.size(); ++i)
    for (int64_t c = 0; c < kCols; ++c)  // bit for bit
      ASSERT_EQ(got[i * kCols + c], w.values[tokens[i] * kCols + c]) << "row " << i << " col " << c;
}

INSTANTIATE_TEST_SUITE_P(AllWeightTypes, Dequant, testing::ValuesIn(kWeightTypes), type_name);

// ---- convert, gemm_f16 -----------------------------------------------------------------------------

TEST(Convert, F32ToF16RoundsToNearestEvenBothPaths) {
  std::vector<float> x = random_floats(1027, 7, -70000.f, 70000.f);
  const float specials[] = {0.f, -0.f, 65504.f, 65519.f, 65520.f, -1e9f, 1e-8f, 6e-8f, 2.98e-8f, 5.96e-8f,
                            1.0009765625f, 1.00048828125f, INFINITY, -INFINITY};
  for (size_t i = 0; i < std::size(specials); ++i) x[i * 3] = specials[i];
  Dev<float> dx(x.size() + 1);
  Dev<uint16_t> out(x.size() + 1);
  for (bool aligned : {true, false}) {
    SCOPED_TRACE(aligned ? "vector path" : "scalar path");
    std::vector<float> xp(x.size() + 1);
    std::memcpy(xp.data() + (aligned ? 0 : 1), x.data(), x.size() * 4);
    dx.put(xp);
    const float* src = dx.get() + (aligned ? 0 : 1);
    ASSERT_EQ(kc::convert_f32_to_f16(src, out.get(), static_cast<int64_t>(x.size()), nullptr), cudaSuccess);
    const std::vector<uint16_t> got = out.host();
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_EQ(got[i], strata::kernels::f32_to_fp16(x[i])) << "x = " << x[i];  // bit for bit (no NaN inputs)
  }
}

TEST(GemmF16, MatchesFloat64ReferenceOfTheF16Inputs) {
  constexpr int64_t kRows = 9, kCols = 64, kTokens = 5;
  const std::vector<float> wf = random_floats(kRows * kCols, 8), xf = random_floats(kTokens * kCols, 9);
  std::vector<uint16_t> w(wf.size()), x(xf.size());
  for (size_t i = 0; i < w.size(); ++i) w[i] = strata::kernels::f32_to_fp16(wf[i]);
  for (size_t i = 0; i < x.size(); ++i) x[i] = strata::kernels::f32_to_fp16(xf[i]);
  Dev<uint16_t> dw(w), dx(x);
  Dev<float> dy(kRows * kTokens);
  cublasHandle_t h;
  ASSERT_EQ(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(kc::gemm_f16(h, dw.get(), dx.get(), dy.get(), kRows, kCols, kTokens), CUBLAS_STATUS_SUCCESS);
  const std::vector<float> y = dy.host();
  for (int64_t t = 0; t < kTokens; ++t)
    for (int64_t r = 0; r < kRows; ++r) {
      double ref = 0, mag = 0;
      for (int64_t c = 0; c < kCols; ++c) {
        const double p = static_cast<double>(strata::kernels::fp16_to_f32(w[r * kCols + c])) *
                         strata::kernels::fp16_to_f32(x[t * kCols + c]);
        ref += p;
        mag += std::fabs(p);
      }
      EXPECT_NEAR(y[t * kRows + r], ref, 1e-5 * mag) << t << "," << r;  // f32 accumulation of exact products
    }
  cublasDestroy(h);
}

// ---- norms and element-wise ops ------------------------------------------------------------------

TEST(RmsNorm, MatchesCpuBothPaths) {
  for (int64_t n : {1000, 999}) {  // float4 path, scalar path
    constexpr int64_t kRows = 3;
    const std::vector<float> x = random_floats(kRows * n, 11, -3.f, 3.f), w = random_floats(n, 12);
    Dev<float> dx(x), dw(w), out(kRows * n);
    ASSERT_EQ(kc::rms_norm(dx.get(), dw.get(), out.get(), kRows, n, 1e-5f, nullptr), cudaSuccess);
    const std::vector<float> got = out.host();
    std::vector<float> ref(kRows * n);
    for (int64_t r = 0; r < kRows; ++r) strata::kernels::rms_norm_f32(&x[r * n], w.data(), &ref[r * n], n, 1e-5f);
    // The sum of squares: f32 tree on the device, float64 on the CPU: a few f32 ulps of the scale.
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], ref[i], 2e-6 * std::fabs(ref[i]) + 1e-7) << n << "/" << i;
  }
  // In place (out aliases x).
  std::vector<float> x = random_floats(512, 13), w = random_floats(512, 14), ref(512);
  strata::kernels::rms_norm_f32(x.data(), w.data(), ref.data(), 512, 1e-6f);
  Dev<float> dx(x), dw(w);
  ASSERT_EQ(kc::rms_norm(dx.get(), dw.get(), dx.get(), 1, 512, 1e-6f, nullptr), cudaSuccess);
  const std::vector<float> got = dx.host();
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], ref[i], 2e-6 * std::fabs(ref[i]) + 1e-7) << i;
}

TEST(Elementwise, AddMulScaleAddRowsAreExact) {
  for (bool aligned : {true, false}) {
    SCOPED_TRACE(aligned ? "vector path" : "scalar path");
    constexpr int64_t kN = 1001;
    const int off = aligned ? 0 : 1;
    std::vector<float> y0 = random_floats(kN + 1, 15), x0 = random_floats(kN + 1, 16);
    Dev<float> dy(kN + 1), dx(x0);
    auto run = [&](auto op, auto cpu) {
      dy.put(y0);
      ASSERT_EQ(op(dy.get() + off, dx.get() + off), cudaSuccess);
      const std::vector<float> got = dy.host();
      std::vector<float> ref(y0);
      cpu(ref.data() + off, x0.data() + off);
      for (int64_t i = 0; i < kN; ++i) ASSERT_EQ(got[i + off], ref[i + off]) << i;  // one IEEE op each
    };
    run([&](float* y, const float* x) { return kc::add(y, x, kN, nullptr); },
        [&](float* y, const float* x) { strata::kernels::add_f32(y, x, kN); });
    run([&](float* y, const float* x) { return kc::mul(y, x, kN, nullptr); },
        [&](float* y, const float* x) { for (int64_t i = 0; i < kN; ++i) y[i] *= x[i]; });
    run([&](float* y, const float*) { return kc::scale(y, 0.375f, kN, nullptr); },
        [&](float* y, const float*) { strata::kernels::scale_f32(y, 0.375f, kN); });
  }
  constexpr int64_t kRows = 4, kN = 300;
  const std::vector<float> y0 = random_floats(kRows * kN, 17), bias = random_floats(kN, 18);
  Dev<float> dy(y0), db(bias);
  ASSERT_EQ(kc::add_rows(dy.get(), db.get(), kRows, kN, nullptr), cudaSuccess);
  const std::vector<float> got = dy.host();
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t i = 0; i < kN; ++i) ASSERT_EQ(got[r * kN + i], y0[r * kN + i] + bias[i]);
}

TEST(Elementwise, SwigluGegluMatchCpu) {
  constexpr int64_t kN = 1003;
  const std::vector<float> g = random_floats(kN, 19, -8.f, 8.f), u = random_floats(kN, 20, -2.f, 2.f);
  for (bool swi : {true, false}) {
    Dev<float> dg(g), du(u);
    ASSERT_EQ(swi ? kc::swiglu(dg.get(), du.get(), kN, nullptr) : kc::geglu(dg.get(), du.get(), kN, nullptr),
              cudaSuccess);
    const std::vector<float> got = dg.host();
    std::vector<float> ref(g);
    if (swi) strata::kernels::swiglu_f32(ref.data(), u.data(), kN);
    else strata::kernels::geglu_f32(ref.data(), u.data(), kN);
    // silu and gelu_tanh take exp_activation's f32 steps (scalar_math.h: explicit fma, products and
    // sums the device may not fuse) on both sides, so the device gives the CPU's bits.
    for (int64_t i = 0; i < kN; ++i) ASSERT_EQ(got[i], ref[i]) << (swi ? "swiglu " : "geglu ") << i;
  }
}

// Distance in ulps between two finite floats (0: the same bits, or +0 and -0).
int64_t ulp_distance(float a, float b) {
  auto ordered = [](float f) {
    int32_t i;
    std::memcpy(&i, &f, 4);
    return i < 0 ? -static_cast<int64_t>(i & 0x7fffffff) : static_cast<int64_t>(i);
  };
  return std::llabs(ordered(a) - ordered(b));
}

// gpt-oss's clamped SwiGLU (kernels/common/scalar_math.h swiglu_oai, shared by both sides) on
// gates and ups up to |12|, past both limits, and the edges (each limit exactly and one ulp past,
// up = -1), in the float4 path and the scalar one (x one float off 16 bytes).
TEST(Elementwise, SwigluOaiMatchesCpu) {
  constexpr int64_t kN = 1003;
  std::vector<float> g = random_floats(kN + 1, 27, -12.f, 12.f), u = random_floats(kN + 1, 28, -12.f, 12.f);
  const float edge_g[] = {7.f, std::nextafter(7.f, 8.f), std::nextafter(7.f, 6.f), 12.f, -12.f, -7.f, 0.f};
  const float edge_u[] = {7.f, std::nextafter(7.f, 8.f), -7.f, std::nextafter(-7.f, -8.f), 12.f, -12.f, -1.f};
  size_t e = 0;
  for (float eg : edge_g)
    for (float eu : edge_u) {
      g[e] = g[kN - e] = eg;  // at both ends: each path's first and last elements
      u[e] = u[kN - e] = eu;
      ++e;
    }
  int64_t gate_over = 0, up_outside = 0;
  for (int64_t i = 0; i <= kN; ++i) {
    gate_over += g[i] > 7.f;
    up_outside += std::fabs(u[i]) > 7.f;
  }
  ASSERT_GT(gate_over, kN / 6);  // about 5/24 of them
  ASSERT_GT(up_outside, kN / 3);  // about 5/12
  for (bool aligned : {true, false}) {
    SCOPED_TRACE(aligned ? "vector path" : "scalar path");
    const int off = aligned ? 0 : 1;
    Dev<float> dg(g), du(u);
    ASSERT_EQ(kc::swiglu_oai(dg.get() + off, du.get() + off, kN, nullptr), cudaSuccess);
    const std::vector<float> got = dg.host();
    std::vector<float> ref(g);
    strata::kernels::swiglu_oai_f32(ref.data() + off, u.data() + off, kN);
    const int64_t untouched = aligned ? kN : 0;  // the element outside [off, off + kN)
    EXPECT_EQ(got[untouched], g[untouched]) << "an element outside the n was written";
    // The same f32 operations in the same order; the device's expf within 1 ulp of the host's:
    // at most 1 ulp apart (2 ulp of expf at most turn into 1 after the division and product).
    for (int64_t i = 0; i < kN; ++i) {
      const int64_t j = i + off;
      ASSERT_TRUE(std::isfinite(got[j])) << i;
      ASSERT_LE(ulp_distance(got[j], ref[j]), 1) << "gate " << g[j] << " up " << u[j] << ": device " << got[j]
                                                   << ", cpu " << ref[j];
    }
    // And the formula itself (the CPU kernel shares the scalar code): float64 x sigmoid(1.702 x)
    // (y + 1), x = min(g, 7), y = clamp(u, -7, 7), within 4e-6 of |x sigmoid(1.702 x)| (|y| + 1):
    // the f32 product 1.702 x (up to 20.4) is rounded by up to 6e-8 of itself, 1.2e-6 relative
    // in its exp; expf, the division and the products add a few ulps; alpha 1.702f is 1.3e-8 off.
    for (int64_t i = 0; i < kN; ++i) {
      const int64_t j = i + off;
      const double x = std::min<double>(g[j], 7.0), y = std::clamp<double>(u[j], -7.0, 7.0);
      const double silu = x / (1.0 + std::exp(-1.702 * x));
      ASSERT_NEAR(got[j], silu * (y + 1.0), 4e-6 * std::fabs(silu) * (std::fabs(y) + 1.0))
          << "gate " << g[j] << " up " << u[j];
    }
  }
}

TEST(Softmax, MatchesCpuShortAndLongRows) {
  for (int64_t n : {1000, 8192}) {  // 256-thread and 1024-thread blocks
    const int64_t rows = n > 4096 ? 1 : 3;
    std::vector<float> x = random_floats(rows * n, 21, -10.f, 10.f);
    x[5] = -INFINITY;  // a masked entry
    Dev<float> dx(x);
    ASSERT_EQ(kc::softmax_rows(dx.get(), rows, n, nullptr), cudaSuccess);
    const std::vector<float> got = dx.host();
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<float> cpu(x.begin() + r * n, x.begin() + (r + 1) * n);
      strata::kernels::softmax_f32(cpu.data(), n);
      const float* xr = &x[r * n];
      double mx = -INFINITY, sum = 0;
      for (int64_t i = 0; i < n; ++i) mx = std::max<double>(mx, xr[i]);
      for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(xr[i]) - mx);
      for (int64_t i = 0; i < n; ++i) {
        const double ref = std::exp(static_cast<double>(xr[i]) - mx) / sum;
        // Against float64: __expf and the f32 sums (a tree on the device): 4e-6 relative. The CPU
        // reference sums 8192 terms in sequence and is itself only 1e-5 close.
        ASSERT_NEAR(got[r * n + i], ref, 4e-6 * ref + 1e-12) << "n " << n << " row " << r << " i " << i;
        ASSERT_NEAR(got[r * n + i], cpu[i], 1e-5 * cpu[i] + 1e-12) << "n " << n << " row " << r << " i " << i;
      }
    }
  }
}

TEST(Rows, GatherAndScaleAddAreExact) {
  constexpr int64_t kN = 300, kSrcRows = 6;
  const std::vector<float> src = random_floats(kSrcRows * kN, 22);
  const std::vector<int32_t> idx = {4, 0, 5, 2};
  Dev<float> dsrc(src), dst(idx.size() * kN);
  Dev<int32_t> didx(idx);
  ASSERT_EQ(kc::gather_rows(dsrc.get(), kN, didx.get(), idx.size(), dst.get(), nullptr), cudaSuccess);
  const std::vector<float> g = dst.host();
  for (size_t i = 0; i < idx.size(); ++i)
    for (int64_t j = 0; j < kN; ++j) ASSERT_EQ(g[i * kN + j], src[idx[i] * kN + j]);

  const std::vector<float> base = random_floats(kSrcRows * kN, 23), scales = {0.5f, -1.25f, 2.f, 0.125f};
  Dev<float> dbase(base), dscales(scales);
  ASSERT_EQ(kc::scale_add_rows(dbase.get(), kN, dst.get(), didx.get(), dscales.get(), idx.size(), nullptr), cudaSuccess);
  const std::vector<float> got = dbase.host();
  std::vector<float> ref(base);
  for (size_t i = 0; i < idx.size(); ++i)
    for (int64_t j = 0; j < kN; ++j) ref[idx[i] * kN + j] += scales[i] * g[i * kN + j];
  for (size_t k = 0; k < ref.size(); ++k) ASSERT_EQ(got[k], ref[k]) << k;
}

TEST(Rope, MatchesCpuBothLayouts) {
  constexpr int64_t kTokens = 3, kHeads = 10, kHeadDim = 64;  // 10 heads: two groups of 8, one partial
  const std::vector<float> divisors = random_floats(kHeadDim / 2, 24, 1.f, 4.f);
  Dev<float> ddiv(divisors);
  for (bool interleaved : {true, false})
    for (int64_t rope_dims : {64, 32})
      for (bool with_div : {false, true}) {
        SCOPED_TRACE(std::string(interleaved ? "interleaved" : "neox") + " rope_dims " + std::to_string(rope_dims) +
                     (with_div ? " divisors" : ""));
        const std::vector<float> x = random_floats(kTokens * kHeads * kHeadDim, 25, -2.f, 2.f);
        Dev<float> dx(x);
        kc::RopeArgs a;
        a.n_tokens = kTokens;
        a.n_heads = kHeads;
        a.head_dim = kHeadDim;
        a.pos0 = 1000;
        a.rope_dims = rope_dims;
        a.freq_base = 10000.f;
        a.freq_scale = 0.5f;
        a.divisors = with_div ? ddiv.get() : nullptr;
        a.interleaved = interleaved;
        a.attn_factor = 1.25f;
        ASSERT_EQ(kc::rope(dx.get(), a, nullptr), cudaSuccess);
        const std::vector<float> got = dx.host();
        std::vector<float> ref(x);
        for (int64_t t = 0; t < kTokens; ++t)
          strata::kernels::rope_f32(&ref[t * kHeads * kHeadDim], kHeads, kHeadDim, rope_dims, a.pos0 + t, a.freq_base,
                                    a.freq_scale, with_div ? divisors.data() : nullptr, interleaved, a.attn_factor);
        // The same IEEE operations; base^e and sin / cos are correctly rounded on both sides
        // (double then rounded on the device, libm's float functions here): at most an ulp apart.
        for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(got[i], ref[i], 1e-6 * std::fabs(ref[i]) + 1e-6) << i;
      }
}

// The angle is the CPU's own to the bit (the frequencies come from the host: f32 pow, no double on
// the device) and sin / cos are f32 (sincosf, no double): on the emulated GPU, whose sincosf is the
// host's libm as the CPU's std::sin / std::cos are, rope equals rope_f32 bit for bit, at large
// positions too (a double sin / cos rounded to f32 differs from libm's f32 ones in the last bit).
TEST(Rope, BitForBitTheCpuAtLargePositionsWithoutDouble) {
  constexpr int64_t kTokens = 4, kHeads = 3, kHeadDim = 128;
  for (float base : {10000.f, 500000.f, 1000000.f})
    for (int64_t pos0 : {int64_t{0}, int64_t{4093}, int64_t{131000}}) {
      SCOPED_TRACE("freq_base " + std::to_string(base) + ", pos0 " + std::to_string(pos0));
      const std::vector<float> x = random_floats(kTokens * kHeads * kHeadDim, 26, -2.f, 2.f);
      Dev<float> dx(x);
      kc::RopeArgs a;
      a.n_tokens = kTokens;
      a.n_heads = kHeads;
      a.head_dim = kHeadDim;
      a.pos0 = pos0;
      a.rope_dims = kHeadDim;
      a.freq_base = base;
      a.interleaved = false;
      ASSERT_EQ(kc::rope(dx.get(), a, nullptr), cudaSuccess);
      const std::vector<float> got = dx.host();
      std::vector<float> ref(x);
      for (int64_t t = 0; t < kTokens; ++t)
        strata::kernels::rope_f32(&ref[t * kHeads * kHeadDim], kHeads, kHeadDim, kHeadDim, pos0 + t, base, 1.0f,
                                  nullptr, false, 1.0f);
      int64_t differ = 0;
      for (size_t i = 0; i < ref.size(); ++i) differ += got[i] != ref[i];
      EXPECT_EQ(differ, 0) << "of " << ref.size() << " values differ from the CPU's";
    }
}

// ---- attention ---------------------------------------------------------------------------------

struct AttnCase {
  int64_t head_dim, n_tokens, pos0, window;
  bool causal, kv_f16;
  bool sinks = false;     // a sink logit per query head (AttentionArgs::sinks, gpt-oss)
  bool no_split = false;  // no workspace: a decode-sized call takes the unsplit kernel
  int64_t group = 2;      // query heads per KV head (2 KV heads)
  bool rounds = false;    // a workspace of 2 chunks: the split schedule in rounds (state kept between)
};

// Whether attention() takes the split schedule for case c (the workspace is given and sized for
// it): decode-sized calls (8 tokens at most) whose keys span more than one 256-key chunk.
bool attn_splits(const AttnCase& c) {
  const int64_t last = c.pos0 + c.n_tokens - 1;
  const int64_t first = c.window > 0 ? std::max<int64_t>(0, (c.causal ? c.pos0 : last) - c.window + 1) : 0;
  // Heads longer than 256 take attention_wide.cu's kernel, which has no split schedule.
  return !c.no_split && c.head_dim <= 256 && c.n_tokens <= 8 && last / 256 > first / 256;
}

std::string attn_name(const testing::TestParamInfo<AttnCase>& i) {
  const AttnCase& c = i.param;
  std::ostringstream s;
  s << "d" << c.head_dim << "_t" << c.n_tokens << "_pos" << c.pos0;
  if (c.window) s << "_win" << c.window;
  if (!c.causal) s << "_noncausal";
  s << (c.kv_f16 ? "_f16" : "_f32");
  if (c.group != 2) s << "_gqa" << c.group;
  if (c.sinks) s << "_sinks";
  if (c.no_split) s << "_nosplit";
  if (c.rounds) s << "_rounds";
  return s.str();
}

void PrintTo(const AttnCase& c, std::ostream* os) { *os << attn_name(testing::TestParamInfo<AttnCase>(c, 0)); }

class Attention : public testing::TestWithParam<AttnCase> {};

TEST_P(Attention, MatchesFloat64Reference) {
  const AttnCase c = GetParam();
  constexpr int64_t kKvHeads = 2;
  const int64_t kHeads = kKvHeads * c.group;
  const int64_t hd = c.head_dim, kv_dim = kKvHeads * hd, kv_stride = kv_dim + 8;
  const int64_t n_ctx = c.pos0 + c.n_tokens, cache_rows = n_ctx + 3;
  const std::vector<float> q = random_floats(c.n_tokens * kHeads * hd, 40);
  const std::vector<float> k = random_floats(c.n_tokens * kv_dim, 41), v = random_floats(c.n_tokens * kv_dim, 42);
  // The cache before the call: positions < pos0 hold earlier keys and values.
  const std::vector<float> old_k = random_floats(cache_rows * kv_stride, 43), old_v = random_floats(cache_rows * kv_stride, 44);
  const size_t esz = c.kv_f16 ? 2 : 4;
  std::vector<uint8_t> kc_bytes(cache_rows * kv_stride * esz), vc_bytes(kc_bytes.size());
  std::vector<double> kref(cache_rows * kv_stride), vref(cache_rows * kv_stride);  // values as stored
  auto store = [&](std::vector<uint8_t>& bytes, std::vector<double>& ref, int64_t i, float f) {
    if (c.kv_f16) {
      const uint16_t h = strata::kernels::f32_to_fp16(f);
      std::memcpy(&bytes[i * 2], &h, 2);
      ref[i] = strata::kernels::fp16_to_f32(h);
    } else {
      std::memcpy(&bytes[i * 4], &f, 4);
      ref[i] = f;
    }
  };
  for (int64_t i = 0; i < cache_rows * kv_stride; ++i) {
    store(kc_bytes, kref, i, old_k[i]);
    store(vc_bytes, vref, i, old_v[i]);
  }
  Dev<uint8_t> dkc(kc_bytes), dvc(vc_bytes);
  for (int64_t t = 0; t < c.n_tokens; ++t)  // what the kernel will write
    for (int64_t e = 0; e < kv_dim; ++e) {
      store(kc_bytes, kref, (c.pos0 + t) * kv_stride + e, k[t * kv_dim + e]);
      store(vc_bytes, vref, (c.pos0 + t) * kv_stride + e, v[t * kv_dim + e]);
    }
  Dev<float> dq(q), dk(k), dv(v), dout(c.n_tokens * kHeads * hd);
  // rounds: room for 2 chunks' partials and the rows' state (attention.cu, split_bytes).
  const size_t ws_bytes = c.rounds ? static_cast<size_t>(3 * c.n_tokens * kHeads * (hd + 2)) * sizeof(float)
                                   : kc::attention_workspace_bytes(c.n_tokens, n_ctx, kHeads, hd);
  Dev<uint8_t> ws(ws_bytes);
  // Sinks (natural-log logits, one per query head, from -2 to 9: scores here are within about
  // +-1 and a row's sum of exps up to ~e^5.8 at 300 keys, so the sink's share of the denominator
  // goes from negligible to nearly all of it, and 9 is above every score: the row's max is the
  // sink's). The workspace is filled with 0xff bytes first, to see whether the split path wrote it.
  std::vector<float> sinks(kHeads);
  for (int64_t h = 0; h < kHeads; ++h)
    sinks[h] = -2.0f + 11.0f * static_cast<float>(h) / static_cast<float>(kHeads - 1);
  Dev<float> dsinks(sinks);
  ASSERT_EQ(cudaMemset(ws.get(), 0xff, ws_bytes), cudaSuccess);
  kc::AttentionArgs a;
  a.q = dq.get();
  a.k = dk.get();
  a.v = dv.get();
  a.k_cache = dkc.get();
  a.v_cache = dvc.get();
  a.kv_f16 = c.kv_f16;
  a.kv_stride = kv_stride;
  a.n_tokens = c.n_tokens;
  a.pos0 = c.pos0;
  a.n_heads = kHeads;
  a.n_kv_heads = kKvHeads;
  a.head_dim = hd;
  a.window = c.window;
  a.causal = c.causal;
  a.scale = 1.0f / std::sqrt(static_cast<float>(hd));
  a.sinks = c.sinks ? dsinks.get() : nullptr;
  a.out = dout.get();
  ASSERT_EQ(c.no_split ? kc::attention(a, nullptr, 0, nullptr) : kc::attention(a, ws.get(), ws_bytes, nullptr),
            cudaSuccess);
  const std::vector<float> out = dout.host();
  if (c.sinks) {
    // The path taken: the split-context one writes its partials to the workspace, the other
    // leaves it as it was.
    const std::vector<uint8_t> w = ws.host();
    const bool written = std::any_of(w.begin(), w.end(), [](uint8_t b) { return b != 0xff; });
    ASSERT_EQ(written, attn_splits(c)) << (attn_splits(c) ? "the split path did not run" : "the split path ran");
  }
  if (c.rounds) {
    // Rounds fold the chunks in the one order: the bits of the in-block schedule.
    Dev<float> alone(c.n_tokens * kHeads * hd);
    a.out = alone.get();
    ASSERT_EQ(kc::attention(a, nullptr, 0, nullptr), cudaSuccess);
    const std::vector<float> in_block = alone.host();
    ASSERT_EQ(std::memcmp(in_block.data(), out.data(), out.size() * sizeof(float)), 0) << "rounds against in-block";
  }

  // The cache holds the new rows, bit for bit.
  const std::vector<uint8_t> kc_after = dkc.host();
  for (int64_t t = 0; t < c.n_tokens; ++t)
    ASSERT_EQ(std::memcmp(&kc_after[(c.pos0 + t) * kv_stride * esz], &kc_bytes[(c.pos0 + t) * kv_stride * esz],
                          kv_dim * esz),
              0)
        << "cache row " << c.pos0 + t;

  for (int64_t t = 0; t < c.n_tokens; ++t)
    for (int64_t h = 0; h < kHeads; ++h) {
      const int64_t j = h / (kHeads / kKvHeads);
      const int64_t last = c.causal ? c.pos0 + t : n_ctx - 1;
      const int64_t first = c.window > 0 ? std::max<int64_t>(0, last - c.window + 1) : 0;
      std::vector<double> s;
      double mx = c.sinks ? static_cast<double>(sinks[h]) : -INFINITY;  // the max over the sink too
      for (int64_t p = first; p <= last; ++p) {
        double d = 0;
        for (int64_t e = 0; e < hd; ++e) d += static_cast<double>(q[(t * kHeads + h) * hd + e]) * kref[p * kv_stride + j * hd + e];
        s.push_back(d * a.scale);
        mx = std::max(mx, s.back());
      }
      double sum = c.sinks ? std::exp(static_cast<double>(sinks[h]) - mx) : 0.0;  // the sink: no value
      for (double& x : s) sum += (x = std::exp(x - mx));
      for (int64_t e = 0; e < hd; ++e) {
        double o = 0, mag = 0;
        for (int64_t p = first; p <= last; ++p) {
          o += s[p - first] * vref[p * kv_stride + j * hd + e];
          mag += s[p - first] * std::fabs(vref[p * kv_stride + j * hd + e]);
        }
        o /= sum;
        mag /= sum;
        // f32 scores, exp2f and sums over at most a few hundred keys of values in [-1, 1]: 2e-6.
        // With sinks also 4e-6 of the output's scale mag = sum_p w_p |v_p| / sum: the sink's share
        // of the denominator (0.96 at 9 over 300 keys, 1 - 1e-4 over one key) scales outputs down
        // to ~1e-4, where 2e-6 alone would pass a wrong sink weight (2e-6 is ~4e-6 of the mag
        // ~0.5 of a row without a sink). The sink's own error: f32 sink * log2(e) and exp2f,
        // ~1e-6 of the denominator.
        const double tol = c.sinks ? std::min(2e-6, 4e-6 * mag + 1e-9) : 2e-6;
        ASSERT_NEAR(out[(t * kHeads + h) * hd + e], o, tol) << "token " << t << " head " << h << " dim " << e;
      }
    }
}

std::vector<AttnCase> attn_cases() {
  std::vector<AttnCase> v;
  for (int64_t d : {64, 128, 256, 80})
    for (bool f16 : {false, true}) {
      v.push_back({d, 1, 600, 0, true, f16});    // decode: split into 3 chunks + merge
      v.push_back({d, 3, 500, 0, true, f16});    // a few decode tokens, 2 chunks
      v.push_back({d, 21, 0, 0, true, f16});     // prompt: in-block, one chunk
      v.push_back({d, 40, 260, 0, true, f16});   // prompt over 2 chunks, folded in-block
      v.push_back({d, 19, 7, 8, true, f16});     // prompt after a prefix, sliding window
      v.push_back({d, 2, 300, 50, true, f16});   // decode, window across a chunk boundary (split)
      v.push_back({d, 5, 10, 0, false, f16});    // non-causal rows
    }
  // Attention sinks: a prompt (in-block: the sink folded in attn_kernel), the same with a window,
  // one decode token at 600 (split into 3 chunks of 256: the sink folded once, in
  // attn_merge_kernel), 3 decode tokens at 500 (2 chunks), a decode token at 600 without a
  // workspace (in-block for one token), and GQA 4.
  for (int64_t d : {64, 128})
    for (bool f16 : {false, true}) {
      v.push_back({d, 21, 0, 0, true, f16, true});
      v.push_back({d, 19, 7, 8, true, f16, true});
      v.push_back({d, 1, 600, 0, true, f16, true});
      v.push_back({d, 3, 500, 0, true, f16, true});
      v.push_back({d, 1, 600, 0, true, f16, true, true});
    }
  v.push_back({64, 1, 600, 0, true, true, true, false, 4});
  v.push_back({64, 17, 5, 0, true, true, true, false, 4});
  v.push_back({64, 5, 10, 0, false, false, true});  // non-causal rows
  // The split schedule in rounds of 2 chunks: 3 chunks (2 + 1, with sinks), 4 chunks of 3 tokens.
  v.push_back({64, 1, 600, 0, true, false, true, false, 2, true});
  v.push_back({128, 3, 1000, 0, true, true, false, false, 2, true});
  // Heads longer than 256 (attention_wide.cu): 320 (10 elements a lane), DeepSeek's latent rows of
  // 576 (18 a lane; GQA 8 below: many query heads on one KV row, as MLA reads it); decode, prompts,
  // a window, non-causal rows, sinks.
  for (int64_t d : {320, 576})
    for (bool f16 : {false, true}) {
      v.push_back({d, 1, 600, 0, true, f16});
      v.push_back({d, 3, 500, 0, true, f16});
      v.push_back({d, 21, 0, 0, true, f16});
      v.push_back({d, 19, 7, 8, true, f16});
      v.push_back({d, 5, 10, 0, false, f16});
    }
  v.push_back({576, 21, 0, 0, true, true, true});
  v.push_back({576, 1, 600, 0, true, false, true});
  v.push_back({576, 3, 40, 0, true, true, false, false, 8});
  v.push_back({1024, 2, 30, 0, true, false});  // the longest head taken (32 elements a lane)
  return v;
}

INSTANTIATE_TEST_SUITE_P(HeadDims, Attention, testing::ValuesIn(attn_cases()), attn_name);

// A sliding-window layer's ring (AttentionArgs::kv_cells): 200 positions with a window of 40 in
// 128 rows, written by the kernel itself at row p mod 128. Prompt chunks of 17 (the tiled path),
// then one token at a time (the split-context decode path): each call's output has the bits of
// the same call over a cache of one row per position, and the ring's rows the bits of the
// positions last written to them.
TEST(Attention, RingOfAWindowGivesTheBitsOfAFullCache) {
  constexpr int64_t kHeads = 4, kKvHeads = 2, hd = 64, kv_dim = kKvHeads * hd, n = 200, window = 40, cells = 128;
  for (bool f16 : {false, true}) {
    SCOPED_TRACE(f16 ? "f16 cache" : "f32 cache");
    const size_t esz = f16 ? 2 : 4;
    const std::vector<float> q = random_floats(n * kHeads * hd, 50);
    const std::vector<float> k = random_floats(n * kv_dim, 51), v = random_floats(n * kv_dim, 52);
    Dev<uint8_t> full_k(n * kv_dim * esz), full_v(n * kv_dim * esz);
    Dev<uint8_t> ring_k(cells * kv_dim * esz), ring_v(cells * kv_dim * esz);
    ASSERT_EQ(cudaMemset(ring_k.get(), 0, cells * kv_dim * esz), cudaSuccess);
    ASSERT_EQ(cudaMemset(ring_v.get(), 0, cells * kv_dim * esz), cudaSuccess);
    ASSERT_EQ(cudaMemset(full_k.get(), 0, n * kv_dim * esz), cudaSuccess);
    ASSERT_EQ(cudaMemset(full_v.get(), 0, n * kv_dim * esz), cudaSuccess);
    Dev<float> dq(q), dk(k), dv(v), out_full(n * kHeads * hd), out_ring(n * kHeads * hd);
    const size_t ws_bytes = kc::attention_workspace_bytes(17, n, kHeads, hd);
    Dev<uint8_t> ws(ws_bytes);
    for (int64_t p0 = 0; p0 < n;) {
      const int64_t len = p0 < 170 ? std::min<int64_t>(17, 170 - p0) : 1;
      for (int ring = 0; ring < 2; ++ring) {
        kc::AttentionArgs a;
        a.q = dq.get() + p0 * kHeads * hd;
        a.k = dk.get() + p0 * kv_dim;
        a.v = dv.get() + p0 * kv_dim;
        a.k_cache = ring ? ring_k.get() : full_k.get();
        a.v_cache = ring ? ring_v.get() : full_v.get();
        a.kv_cells = ring ? cells : 0;
        a.kv_f16 = f16;
        a.kv_stride = kv_dim;
        a.n_tokens = len;
        a.pos0 = p0;
        a.n_heads = kHeads;
        a.n_kv_heads = kKvHeads;
        a.head_dim = hd;
        a.window = window;
        a.scale = 0.125f;
        a.out = (ring ? out_ring.get() : out_full.get()) + p0 * kHeads * hd;
        ASSERT_EQ(kc::attention(a, ws.get(), ws_bytes, nullptr), cudaSuccess);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      }
      p0 += len;
    }
    const std::vector<float> a = out_full.host(), b = out_ring.host();
    for (size_t i = 0; i < a.size(); ++i)
      ASSERT_EQ(std::memcmp(&a[i], &b[i], sizeof(float)), 0)
          << "token " << i / (kHeads * hd) << " element " << i % (kHeads * hd) << ": ring " << b[i] << " vs full " << a[i];
    const std::vector<uint8_t> fk = full_k.host(), rk = ring_k.host();
    for (int64_t p = n - cells; p < n; ++p)
      ASSERT_EQ(std::memcmp(&rk[(p % cells) * kv_dim * esz], &fk[p * kv_dim * esz], kv_dim * esz), 0) << "position " << p;
  }
}

// Batch invariance (issue 45): 300 positions attended as one prompt, as prompt pieces of uneven
// sizes, and as a prefix followed by one-token decode steps with the workspace (split schedule:
// 2 chunks) and without it (in-block): every row has the bits of the one-call prompt. Head sizes
// 64 / 128 / 80 (padded) / 256, f32 and f16 caches, a window across the chunk boundary, sinks,
// a soft-cap, GQA 4.
struct AttnInvCase {
  int64_t head_dim;
  bool f16;
  int64_t window = 0;
  bool sinks = false;
  float softcap = 0.f;
  int64_t group = 2;
};

TEST(AttentionBatchInvariance, PiecesAndDecodeStepsGiveTheOneCallBits) {
  const AttnInvCase cases[] = {{64, false}, {64, true, 100}, {128, false, 0, true, 30.f}, {80, true, 0, false, 0.f, 4},
                               {256, false, 0, true}, {576, true}, {320, false, 100, true, 30.f},
                               {576, false, 0, false, 0.f, 8}};
  constexpr int64_t kKvHeads = 2, n = 300;
  for (const AttnInvCase& c : cases) {
    SCOPED_TRACE("head_dim " + std::to_string(c.head_dim) + (c.f16 ? " f16" : " f32") + " window " +
                 std::to_string(c.window) + (c.sinks ? " sinks" : "") + " softcap " + std::to_string(c.softcap) +
                 " group " + std::to_string(c.group));
    const int64_t hd = c.head_dim, heads = kKvHeads * c.group, kv_dim = kKvHeads * hd;
    const size_t esz = c.f16 ? 2 : 4;
    const std::vector<float> q = random_floats(n * heads * hd, 60, -2.f, 2.f);
    const std::vector<float> k = random_floats(n * kv_dim, 61, -2.f, 2.f), v = random_floats(n * kv_dim, 62);
    std::vector<float> sinks(heads);
    for (int64_t h = 0; h < heads; ++h) sinks[h] = 1.5f * static_cast<float>(h) - 2.f;
    Dev<float> dq(q), dk(k), dv(v), dsinks(sinks);
    const size_t ws_bytes = kc::attention_workspace_bytes(8, n, heads, hd);
    Dev<uint8_t> ws(ws_bytes);

    // Runs the positions in pieces of the given sizes (the last one repeated to the end) and
    // returns the outputs [n][heads * hd].
    auto run = [&](const std::vector<int64_t>& pieces, bool workspace) {
      Dev<uint8_t> kc_(n * kv_dim * esz), vc_(n * kv_dim * esz);
      EXPECT_EQ(cudaMemset(kc_.get(), 0, n * kv_dim * esz), cudaSuccess);
      EXPECT_EQ(cudaMemset(vc_.get(), 0, n * kv_dim * esz), cudaSuccess);
      Dev<float> out(n * heads * hd);
      size_t i = 0;
      for (int64_t p0 = 0; p0 < n;) {
        const int64_t len = std::min(pieces[std::min(i++, pieces.size() - 1)], n - p0);
        kc::AttentionArgs a;
        a.q = dq.get() + p0 * heads * hd;
        a.k = dk.get() + p0 * kv_dim;
        a.v = dv.get() + p0 * kv_dim;
        a.k_cache = kc_.get();
        a.v_cache = vc_.get();
        a.kv_f16 = c.f16;
        a.kv_stride = kv_dim;
        a.n_tokens = len;
        a.pos0 = p0;
        a.n_heads = heads;
        a.n_kv_heads = kKvHeads;
        a.head_dim = hd;
        a.window = c.window;
        a.scale = 1.0f / std::sqrt(static_cast<float>(hd));
        a.softcap = c.softcap;
        a.sinks = c.sinks ? dsinks.get() : nullptr;
        a.out = out.get() + p0 * heads * hd;
        EXPECT_EQ(workspace ? kc::attention(a, ws.get(), ws_bytes, nullptr) : kc::attention(a, nullptr, 0, nullptr),
                  cudaSuccess);
        p0 += len;
      }
      return out.host();
    };
    const std::vector<float> whole = run({n}, true);
    std::vector<int64_t> decode_tail = {37, 37, 37, 37, 37, 37, 37};  // 259 positions, then one at a time
    decode_tail.push_back(1);
    const struct {
      const char* name;
      std::vector<int64_t> pieces;
      bool workspace;
    } schedules[] = {{"pieces 1, 7, 64, 100, 17, ...", {1, 7, 64, 100, 17}, true},
                     {"37-token pieces, then decode with the workspace (split)", decode_tail, true},
                     {"37-token pieces, then decode without it (in-block)", decode_tail, false}};
    for (const auto& sch : schedules) {
      const std::vector<float> got = run(sch.pieces, sch.workspace);
      for (size_t e = 0; e < got.size(); ++e)
        ASSERT_EQ(std::memcmp(&got[e], &whole[e], 4), 0)
            << sch.name << ": position " << e / (heads * hd) << " element " << e % (heads * hd) << ": " << got[e]
            << " vs " << whole[e];
    }
  }
}

TEST(AttentionArgs, RejectsBadShapes) {
  kc::AttentionArgs a;
  a.n_tokens = 1;
  a.n_heads = 3;
  a.n_kv_heads = 2;  // 3 % 2 != 0
  a.head_dim = 64;
  a.kv_stride = 128;
  EXPECT_EQ(kc::attention(a, nullptr, 0, nullptr), cudaErrorInvalidValue);
  a.n_heads = 4;
  a.head_dim = 1028;  // over kMaxAttentionHeadDim
  a.kv_stride = 2056;
  EXPECT_EQ(kc::attention(a, nullptr, 0, nullptr), cudaErrorInvalidValue);
}

}  // namespace
