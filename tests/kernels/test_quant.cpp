// tests/kernels/test_quant.cpp — quantize/dequantize of every type: round-trip error bounds,
// hand-built blocks with known values, every ISA's dequantizer and activation quantizer
// bit-exact with the scalar reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

#include "kernel_test_util.h"
#include "kernels/cpu/blocks.h"
#include "kernels/cpu/type_kernels.h"

namespace strata::kernels {
namespace {

using test::dequantized;
using test::quantized;
using test::random_floats;

// RMS(dequant(quant(x)) - x) / RMS(x) on N(0, 1) data, per type. Bounds sit ~15-20% above what
// the quantizers reach (measured values in the comments), so a regression in the scale search shows.
const std::map<DType, double> kRoundTripBound = {
    {DType::F32, 0.0},        {DType::F16, 3e-4},       {DType::BF16, 2.5e-3},
    {DType::Q8_0, 0.0065},    // measured 0.0054
    {DType::Q8_1, 0.0065},    // 0.0054
    {DType::Q8_K, 0.0085},    // 0.0070 (one scale per 256)
    {DType::Q5_0, 0.050},     // 0.0426
    {DType::Q5_1, 0.045},     // 0.0376
    {DType::Q4_0, 0.100},     // 0.0865
    {DType::Q4_1, 0.092},     // 0.0782
    {DType::Q6_K, 0.021},     // 0.0177
    {DType::Q5_K, 0.042},     // 0.0358
    {DType::Q4_K, 0.085},     // 0.0718
    {DType::Q3_K, 0.180},     // 0.1545
    {DType::Q2_K, 0.330},     // 0.2891
};

double rel_rms_error(const std::vector<float>& x, const std::vector<float>& y) {
  double e = 0, s = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    e += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
    s += double(x[i]) * x[i];
  }
  return std::sqrt(e / s);
}

TEST(Quant, RoundTripErrorPerType) {
  const int64_t n = 256 * 64;
  const std::vector<float> x = random_floats(n, 1234);
  for (const auto& [t, bound] : kRoundTripBound) {
    const std::vector<float> y = dequantized(t, quantized(t, x).data(), n);
    const double err = rel_rms_error(x, y);
    std::printf("  %-5s rel rms error %.5f (bound %.4f)\n", dtype_name(t), err, bound);
    EXPECT_LE(err, bound) << dtype_name(t);
  }
}

TEST(Quant, RoundTripScaledAndShiftedData) {
  // Large magnitudes, an offset (types with a min) and a row of zeros must all behave.
  const int64_t n = 256 * 8;
  for (DType t : test::weight_types()) {
    std::vector<float> x = random_floats(n, 99, 300.f);
    for (float& f : x) f += 50.f;
    const double err = rel_rms_error(x, dequantized(t, quantized(t, x).data(), n));
    EXPECT_LE(err, kRoundTripBound.at(t) * 1.5 + 1e-6) << dtype_name(t);
    const std::vector<float> zeros(n, 0.f);
    for (float f : dequantized(t, quantized(t, zeros).data(), n)) ASSERT_EQ(f, 0.f) << dtype_name(t);
  }
}

TEST(Quant, KnownBytesQ4_0) {
  BlockQ4_0 b;
  b.d = 0x3800;  // 0.5
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  float y[32];
  dequantize_row(DType::Q4_0, &b, y, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.5f * float(j - 8));
    EXPECT_EQ(y[j + 16], 0.5f * float(7 - j));
  }
  // And the quantizer reproduces those bytes from those values (max |x| = 4 maps to -8).
  BlockQ4_0 q;
  quantize_row(DType::Q4_0, y, &q, 32);
  float z[32];
  dequantize_row(DType::Q4_0, &q, z, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(z[j], y[j]);
}

TEST(Quant, KnownBytesQ8_0) {
  uint8_t raw[34];
  const uint16_t d = 0x3400;  // 0.25
  std::memcpy(raw, &d, 2);
  for (int j = 0; j < 32; ++j) raw[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(j - 16));
  float y[32];
  dequantize_row(DType::Q8_0, raw, y, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], 0.25f * float(j - 16));
}

TEST(Quant, KnownBytesQ4_K) {
  // d = 1, dmin = 0.5; group g has scale g+1 (and for g >= 4 uses the packed high bits) and min 2g.
  BlockQ4_K b{};
  b.d = 0x3C00;
  b.dmin = 0x3800;
  uint8_t sc[8], mn[8];
  for (int g = 0; g < 8; ++g) { sc[g] = static_cast<uint8_t>(g == 7 ? 63 : g + 1); mn[g] = static_cast<uint8_t>(2 * g + (g == 6 ? 40 : 0)); }
  for (int g = 0; g < 4; ++g) { b.scales[g] = sc[g]; b.scales[g + 4] = mn[g]; }
  for (int g = 4; g < 8; ++g) {
    b.scales[g + 4] = static_cast<uint8_t>((sc[g] & 0xF) | ((mn[g] & 0xF) << 4));
    b.scales[g - 4] |= static_cast<uint8_t>((sc[g] >> 4) << 6);
    b.scales[g] |= static_cast<uint8_t>((mn[g] >> 4) << 6);
  }
  for (int i = 0; i < 128; ++i) b.qs[i] = static_cast<uint8_t>((i % 16) | ((15 - i % 16) << 4));
  float y[256];
  dequantize_row(DType::Q4_K, &b, y, 256);
  for (int e = 0; e < 256; ++e) {
    const int chunk = e / 64, l = e % 32, g = e / 32;
    const int byte = b.qs[chunk * 32 + l];
    const int q = (e % 64) < 32 ? (byte & 0xF) : (byte >> 4);
    ASSERT_EQ(y[e], float(sc[g]) * float(q) - 0.5f * float(mn[g])) << e;
  }
}

TEST(Quant, KnownBytesQ6_K) {
  // d = 2, scales[g] = g - 8; every 6-bit level of element e = e % 64.
  BlockQ6_K b{};
  b.d = 0x4000;
  for (int g = 0; g < 16; ++g) b.scales[g] = static_cast<int8_t>(g - 8);
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 32; ++l) {
      int q[4];
      for (int k = 0; k < 4; ++k) q[k] = (h * 128 + 32 * k + l) % 64;
      b.ql[h * 64 + l] = static_cast<uint8_t>((q[0] & 0xF) | ((q[2] & 0xF) << 4));
      b.ql[h * 64 + l + 32] = static_cast<uint8_t>((q[1] & 0xF) | ((q[3] & 0xF) << 4));
      b.qh[h * 32 + l] = static_cast<uint8_t>((q[0] >> 4) | ((q[1] >> 4) << 2) | ((q[2] >> 4) << 4) | ((q[3] >> 4) << 6));
    }
  float y[256];
  dequantize_row(DType::Q6_K, &b, y, 256);
  for (int e = 0; e < 256; ++e) ASSERT_EQ(y[e], 2.0f * float(e / 16 - 8) * float(e % 64 - 32)) << e;
}

TEST(Quant, EveryIsaDequantizeIsBitExact) {
  for (Isa isa : test::all_isas()) {
    if (!isa_supported(isa)) {
      std::printf("  %s not supported here: skipped\n", isa_name(isa));
      continue;
    }
    for (DType t : test::weight_types()) {
      const TypeKernels* k = type_kernels(t, isa);
      ASSERT_NE(k, nullptr);
      for (int64_t n : {256, 512, 2816}) {
        const std::vector<uint8_t> q = test::random_bytes_row(t, n, 7 + static_cast<uint32_t>(n));
        const std::vector<float> ref = dequantized(t, q.data(), n);
        std::vector<float> y(static_cast<size_t>(n), -1.f);
        k->dequantize_row(q.data(), y.data(), n);
        ASSERT_EQ(std::memcmp(ref.data(), y.data(), n * sizeof(float)), 0) << dtype_name(t) << " " << isa_name(isa);
      }
    }
  }
}

TEST(Quant, EveryIsaActivationQuantizerIsBitExact) {
  for (Isa isa : test::all_isas()) {
    if (!isa_supported(isa)) continue;
    for (DType t : {DType::Q8_0, DType::Q8_1, DType::Q8_K}) {
      for (int64_t n : {256, 1024, 4096}) {
        std::vector<float> x = random_floats(n, 3 + static_cast<uint32_t>(n), 2.f);
        x[5] = 0.f;
        std::fill(x.begin() + 256 - 32, x.begin() + 256, 0.f);  // an all-zero block
        const std::vector<uint8_t> ref = quantized(t, x);
        std::vector<uint8_t> q(ref.size(), 0xAB);
        type_kernels(t, isa)->quantize_row(x.data(), q.data(), n);
        ASSERT_EQ(ref, q) << dtype_name(t) << " " << isa_name(isa) << " n=" << n;
      }
    }
  }
}

// The KV-cache element types' stores (store_kv_row: F16, BF16, F32) at every ISA against the
// scalar conversion, bit for bit, on ordinary values and on the edges of f16: values that round
// to subnormals or to zero, halfway cases (round to even), overflow to infinity, infinities,
// quiet and signalling NaNs with payloads, -0; n = 4099 also runs the tail after the 8-wide loop.
TEST(Quant, EveryIsaFloatStoreIsBitExact) {
  auto f = [](uint32_t bits) {
    float v;
    std::memcpy(&v, &bits, 4);
    return v;
  };
  std::vector<float> x = random_floats(4099, 11, 3.f);
  const std::vector<float> edges = {
      0.f, -0.f, 1.f, -1.f, 65504.f, 65519.f, 65520.f, -65520.f, 1e6f, -1e6f,
      f(0x7f800000u), f(0xff800000u),               // +-inf
      f(0x7fc00001u), f(0xffc12345u),               // quiet NaNs with payloads
      f(0x7f800001u), f(0x7fa00000u),               // signalling NaNs
      f(0x33000000u), f(0x33000001u), f(0x337fffffu),  // around half of the smallest subnormal
      f(0x387fe000u), f(0x38800000u), f(0x387ff000u),  // the largest subnormals, the smallest normal
      5.9604645e-8f, 6.1035156e-5f, 3.0517578e-5f, 1e-10f, -1e-7f,
      1.0009766f, 1.00048828125f, 1.00146484375f,  // 1 + 2^-10, halfway up from 1 and from 1 + 2^-10
      2049.f, 2051.f, -2051.f};                     // halfway between integers past 2048
  std::copy(edges.begin(), edges.end(), x.begin() + 100);
  for (Isa isa : test::all_isas()) {
    if (!isa_supported(isa)) continue;
    for (DType t : {DType::F16, DType::BF16, DType::F32}) {
      for (int64_t n : {int64_t{7}, int64_t{256}, int64_t{4099}}) {
        const std::vector<float> xn(x.begin() + (n == 7 ? 100 : 0), x.begin() + (n == 7 ? 107 : n));
        const std::vector<uint8_t> ref = quantized(t, xn);
        std::vector<uint8_t> q(ref.size(), 0xAB);
        type_kernels(t, isa)->quantize_row(xn.data(), q.data(), n);
        ASSERT_EQ(ref, q) << dtype_name(t) << " " << isa_name(isa) << " n=" << n;
      }
    }
  }
}

TEST(Quant, VecDotTypes) {
  EXPECT_EQ(vec_dot_type(DType::F32), DType::F32);
  EXPECT_EQ(vec_dot_type(DType::F16), DType::F32);
  EXPECT_EQ(vec_dot_type(DType::BF16), DType::F32);
  EXPECT_EQ(vec_dot_type(DType::Q4_0), DType::Q8_0);
  EXPECT_EQ(vec_dot_type(DType::Q5_0), DType::Q8_0);
  EXPECT_EQ(vec_dot_type(DType::Q8_0), DType::Q8_0);
  EXPECT_EQ(vec_dot_type(DType::Q4_1), DType::Q8_1);
  EXPECT_EQ(vec_dot_type(DType::Q5_1), DType::Q8_1);
  for (DType t : {DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K})
    EXPECT_EQ(vec_dot_type(t), DType::Q8_K);
}

}  // namespace
}  // namespace strata::kernels
