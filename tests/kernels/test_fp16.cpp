// tests/kernels/test_fp16.cpp — fp16 / bf16 conversions: exact values, rounding, specials.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kernels/cpu/fp16.h"

namespace strata::kernels {
namespace {

TEST(Fp16, KnownValues) {
  EXPECT_EQ(fp16_to_f32(0x3C00), 1.0f);
  EXPECT_EQ(fp16_to_f32(0xC000), -2.0f);
  EXPECT_EQ(fp16_to_f32(0x7BFF), 65504.0f);
  EXPECT_EQ(fp16_to_f32(0x0400), std::ldexp(1.0f, -14));  // smallest normal
  EXPECT_EQ(fp16_to_f32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(fp16_to_f32(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_EQ(f32_to_fp16(1.0f), 0x3C00);
  EXPECT_EQ(f32_to_fp16(-2.0f), 0xC000);
  EXPECT_EQ(f32_to_fp16(65504.0f), 0x7BFF);
  EXPECT_EQ(f32_to_fp16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(f32_to_fp16(0.1f), 0x2E66);
}

TEST(Fp16, Specials) {
  EXPECT_EQ(f32_to_fp16(0.0f), 0x0000);
  EXPECT_EQ(f32_to_fp16(-0.0f), 0x8000);
  EXPECT_TRUE(std::signbit(fp16_to_f32(0x8000)));
  EXPECT_EQ(f32_to_fp16(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(f32_to_fp16(-std::numeric_limits<float>::infinity()), 0xFC00);
  EXPECT_EQ(f32_to_fp16(70000.0f), 0x7C00);   // overflow -> inf
  EXPECT_EQ(f32_to_fp16(65519.0f), 0x7BFF);   // just below the rounding edge
  EXPECT_EQ(f32_to_fp16(65520.0f), 0x7C00);   // tie rounds to even = inf
  EXPECT_TRUE(std::isinf(fp16_to_f32(0x7C00)));
  EXPECT_TRUE(std::isnan(fp16_to_f32(0x7E00)));
  const uint16_t nan_h = f32_to_fp16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan_h & 0x7C00, 0x7C00);
  EXPECT_NE(nan_h & 0x03FF, 0);
  EXPECT_EQ(f32_to_fp16(std::ldexp(1.0f, -26)), 0x0000);  // underflow to zero
  EXPECT_EQ(f32_to_fp16(std::ldexp(1.0f, -25)), 0x0000);  // tie -> even (0)
  EXPECT_EQ(f32_to_fp16(std::ldexp(3.0f, -26)), 0x0001);  // above the tie -> 1 ulp
}

TEST(Fp16, RoundTripAllHalves) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = fp16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_fp16(f), h) << std::hex << h;
  }
}

TEST(Fp16, RoundsToNearestEven) {
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1.0).
  EXPECT_EQ(f32_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  // 1 + 3 * 2^-11 is halfway between 1+2^-10 (odd) and 1+2^-9: ties up.
  EXPECT_EQ(f32_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  EXPECT_EQ(f32_to_fp16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3C01);
  // Every half-way point between adjacent halves must land within half an ulp.
  for (uint32_t h = 0x0001; h < 0x7BFF; h += 37) {
    const float a = fp16_to_f32(static_cast<uint16_t>(h)), b = fp16_to_f32(static_cast<uint16_t>(h + 1));
    const uint16_t r = f32_to_fp16(a + (b - a) * 0.25f);
    ASSERT_EQ(r, h);
    const uint16_t r2 = f32_to_fp16(a + (b - a) * 0.75f);
    ASSERT_EQ(r2, h + 1);
  }
}

TEST(Bf16, ValuesAndSpecials) {
  EXPECT_EQ(bf16_to_f32(0x3F80), 1.0f);
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(f32_to_bf16(-2.0f), 0xC000);
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(f32_to_bf16(-std::numeric_limits<float>::infinity()), 0xFF80);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  // Signalling-looking nan whose payload sits in the low bits must stay nan, not become inf.
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(bits_to_f32(0x7F800001u)))));
  EXPECT_EQ(f32_to_bf16(bits_to_f32(0x3F808000u)), 0x3F80);  // tie, even stays
  EXPECT_EQ(f32_to_bf16(bits_to_f32(0x3F818000u)), 0x3F82);  // tie, odd rounds up
  EXPECT_EQ(f32_to_bf16(bits_to_f32(0x3F808001u)), 0x3F81);  // above tie
  EXPECT_EQ(f32_to_bf16(bits_to_f32(0x7F7FFFFFu)), 0x7F80);  // max float rounds to inf
  EXPECT_EQ(f32_to_bf16(-0.0f), 0x8000);
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const float f = bf16_to_f32(static_cast<uint16_t>(b));
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_bf16(f), b);
  }
}

}  // namespace
}  // namespace strata::kernels
