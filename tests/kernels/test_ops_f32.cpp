// tests/kernels/test_ops_f32.cpp — ops_f32's loops that have AVX2 lanes: the gated FFN activations
// (kernels/common/scalar_math.h: exp_activation, silu and gelu_tanh against float64 math within a
// stated error; swiglu_f32 / geglu_f32 / gelu_f32 at every ISA bit for bit the scalar functions,
// special values included) and rms_norm_f32 (float64 within a stated error; every ISA the scalar
// bits). (The CUDA kernels' activation bits: tests/cuda_emu, Elementwise.SwigluGegluMatchCpu.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/common/scalar_math.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/ops_f32.h"

namespace strata::kernels {
namespace {

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// Every float of a wide sweep: random normals at several scales, a dense grid over the range
// where the activations bend, the ends of exp's range and the special values.
std::vector<float> sweep_values() {
  std::vector<float> v;
  for (float sigma : {0.01f, 1.f, 4.f, 30.f, 200.f}) {
    const std::vector<float> r = test::random_floats(2003, static_cast<uint32_t>(sigma * 100), sigma);
    v.insert(v.end(), r.begin(), r.end());
  }
  for (int i = -40000; i <= 40000; ++i) v.push_back(static_cast<float>(i) * 0.00025f);  // [-10, 10]
  for (float f : {0.f, -0.f, 1e-30f, -1e-30f, 1e-40f, -1e-40f, 86.99f, 87.f, 87.01f, -86.99f, -87.f, -87.01f, 88.f,
                  88.5f, -88.5f, 1e30f, -1e30f, std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
                  std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN()})
    v.push_back(f);
  return v;
}

// |got - want| within `ulps` units of float rounding at want's size, or `floor` absolutely (results
// that the clamp of exp's argument keeps off zero: e.g. silu(-100) = -100 / (1 + e^88) ~ -6e-37).
void expect_close(float got, double want, double ulps, double floor, const char* what, float x) {
  const double tol = ulps * std::ldexp(1.0, -23) * std::fabs(want) + floor;
  EXPECT_LE(std::fabs(static_cast<double>(got) - want), tol) << what << "(" << x << ") = " << got << ", want " << want;
}

TEST(Activations, ExpWithinTwoUlpOfFloat64OverItsRange) {
  for (int i = -87000; i < 88000; i += 7) {
    const float x = static_cast<float>(i) * 0.001f + 0.0003f;
    expect_close(exp_activation(x), std::exp(static_cast<double>(x)), 2.0, 0.0, "exp", x);
  }
  expect_close(exp_activation(88.f), std::exp(88.0), 2.0, 0.0, "exp", 88.f);
  // The ends: e^-87 below -87 and for NaN, +inf above 88.
  EXPECT_EQ(bits_of(exp_activation(-1000.f)), bits_of(exp_activation(-87.f)));
  EXPECT_EQ(exp_activation(88.01f), std::numeric_limits<float>::infinity());
  EXPECT_EQ(exp_activation(1000.f), std::numeric_limits<float>::infinity());
  EXPECT_EQ(bits_of(exp_activation(std::numeric_limits<float>::quiet_NaN())), bits_of(exp_activation(-87.f)));
  EXPECT_EQ(exp_activation(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  EXPECT_EQ(exp_activation(0.f), 1.0f);
}

// silu takes e^-g of an exact argument: 4 ulp. gelu_tanh's argument z = g (a + b g^2) is rounded
// (about 1.5 ulp), and e^z carries that error times |z| into the result: 4 + 1.5 |z| ulp. (The
// function itself is that sensitive; the tanh form it replaces also lost 1 + tanh(u) to
// cancellation for negative g.)
TEST(Activations, SiluAndGeluWithinStatedUlpsOfFloat64) {
  for (float g : sweep_values()) {
    if (!std::isfinite(g)) continue;
    const double gd = g;
    const double silu_want = gd / (1.0 + std::exp(-gd));
    // 0.5 g (1 + tanh(u)) in the form g / (1 + e^-2u): the same function, without double's own
    // cancellation in 1 + tanh(u) for u below -19.
    const double z = -2.0 * 0.7978845608028654 * (gd + 0.044715 * gd * gd * gd);
    const double gelu_want = gd / (1.0 + std::exp(z));
    // Below e^-87 the true values are under 1e-36 in size; the clamp keeps ours there too.
    expect_close(silu(g), silu_want, 4.0, 1e-35, "silu", g);
    expect_close(gelu_tanh(g), gelu_want, 4.0 + 1.5 * std::fabs(z), 1e-35, "gelu_tanh", g);
  }
  EXPECT_TRUE(std::isnan(silu(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isnan(gelu_tanh(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(silu(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(silu(-std::numeric_limits<float>::infinity())));  // -inf / inf, as with libm's expf
  EXPECT_EQ(bits_of(silu(-1e30f)), bits_of(-0.0f));
  EXPECT_EQ(gelu_tanh(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  // The tanh form's known points: GELU(1) = 0.841192, GELU(-1) = -0.158808 (tanh approximation).
  EXPECT_NEAR(gelu_tanh(1.f), 0.8411920071, 2e-7);
  EXPECT_NEAR(gelu_tanh(-1.f), -0.1588079929, 2e-7);
}

// Same float, or both NaN.
void expect_same(float got, float want, const char* what, size_t i) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << what << " at " << i;
  } else {
    EXPECT_EQ(bits_of(got), bits_of(want)) << what << " at " << i << ": " << got << " vs " << want;
  }
}

TEST(Activations, EveryIsaGivesTheScalarBits) {
  const std::vector<float> g = sweep_values();
  std::vector<float> u = test::random_floats(static_cast<int64_t>(g.size()), 77, 2.f);
  u[5] = std::numeric_limits<float>::infinity();
  u[6] = 0.f;
  const int64_t n = static_cast<int64_t>(g.size()) - 5;  // an odd count: a tail after the 8-lane steps
  std::vector<float> want_swi(g), want_geg(g), want_gelu(g);
  for (int64_t i = 0; i < n; ++i) {
    want_swi[i] = silu(g[i]) * u[i];
    want_geg[i] = gelu_tanh(g[i]) * u[i];
    want_gelu[i] = gelu_tanh(g[i]);
  }
  int tested = 0;
  for (Isa isa : test::all_isas()) {
    if (!isa_supported(isa)) continue;
    force_isa(isa);
    ASSERT_EQ(active_isa(), isa);
    std::vector<float> swi(g), geg(g), gel(g);
    swiglu_f32(swi.data(), u.data(), n);
    geglu_f32(geg.data(), u.data(), n);
    gelu_f32(gel.data(), n);
    for (size_t i = 0; i < g.size(); ++i) {
      expect_same(swi[i], want_swi[i], isa_name(isa), i);
      expect_same(geg[i], want_geg[i], isa_name(isa), i);
      expect_same(gel[i], want_gelu[i], isa_name(isa), i);
    }
    ++tested;
  }
  force_isa(best_isa());
  EXPECT_GE(tested, 1);
  if (isa_supported(Isa::Avx2)) {
    // The AVX2 lanes directly, at every start offset of a short row (aligned or not, all-tail).
    for (int64_t off = 0; off < 9; ++off) {
      std::vector<float> x(g.begin() + 40000, g.begin() + 40000 + 37);
      std::vector<float> want(x);
      for (int64_t i = off; i < 37; ++i) want[i] = gelu_tanh(x[i]);
      detail::gelu_avx2(x.data() + off, 37 - off);
      for (size_t i = 0; i < x.size(); ++i) expect_same(x[i], want[i], "gelu_avx2", i);
    }
  }
}

// Lengths around the 8-lane steps (tails of 0-7), the models' widths, and one element.
const int64_t kNormLengths[] = {1, 7, 8, 9, 64, 100, 576, 640, 1000, 2048, 2051};

TEST(RmsNorm, WithinTwoUlpOfFloat64AndTheScaleAppliedInOrder) {
  for (int64_t n : kNormLengths) {
    const std::vector<float> x = test::random_floats(n, static_cast<uint32_t>(n), 3.f);
    const std::vector<float> w = test::random_floats(n, static_cast<uint32_t>(n) + 1);
    std::vector<float> out(static_cast<size_t>(n));
    rms_norm_f32(x.data(), w.data(), out.data(), n, 1e-6f);
    long double ss = 0;
    for (float v : x) ss += static_cast<long double>(v) * v;
    const double inv = 1.0 / std::sqrt(static_cast<double>(ss / n) + 1e-6);
    for (int64_t i = 0; i < n; ++i) {
      const double want = x[i] * inv * w[i];
      // the f32 scale (about 1 ulp after its sqrt and division), then two f32 products
      EXPECT_NEAR(out[i], want, 4.0 * std::ldexp(1.0, -24) * std::fabs(want) + 1e-30) << "n=" << n << " i=" << i;
    }
  }
}

TEST(RmsNorm, EveryIsaGivesTheScalarBitsInPlaceToo) {
  for (int64_t n : kNormLengths) {
    // Large and small magnitudes in one row: the float64 sums' order shows in the last bits.
    std::vector<float> x = test::random_floats(n, static_cast<uint32_t>(n) + 7, 1.f);
    for (int64_t i = 0; i < n; i += 5) x[i] *= 1e4f;
    const std::vector<float> w = test::random_floats(n, static_cast<uint32_t>(n) + 8);
    force_isa(Isa::Scalar);
    std::vector<float> want(static_cast<size_t>(n));
    rms_norm_f32(x.data(), w.data(), want.data(), n, 1e-5f);
    for (Isa isa : test::all_isas()) {
      if (!isa_supported(isa)) continue;
      force_isa(isa);
      std::vector<float> got(static_cast<size_t>(n)), in_place(x);
      rms_norm_f32(x.data(), w.data(), got.data(), n, 1e-5f);
      rms_norm_f32(in_place.data(), w.data(), in_place.data(), n, 1e-5f);
      for (int64_t i = 0; i < n; ++i) {
        EXPECT_EQ(bits_of(got[i]), bits_of(want[i])) << isa_name(isa) << " n=" << n << " i=" << i;
        EXPECT_EQ(bits_of(in_place[i]), bits_of(want[i])) << isa_name(isa) << " in place, n=" << n << " i=" << i;
      }
    }
    force_isa(best_isa());
  }
}

}  // namespace
}  // namespace strata::kernels
