// tests/engine/sample/test_sampler.cpp — each sampling knob against its definition, and the
// distribution of draws against the expected probabilities (20,000 draws, tolerance 0.015).
#include <gtest/gtest.h>

#include <cmath>

#include "engine/sample/sampler.h"
#include "engine/sample/stop_strings.h"

namespace strata::sample {
namespace {

SamplerParams plain(float temperature) {
  SamplerParams p;
  p.temperature = temperature;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  return p;
}

std::vector<double> frequencies(SamplerParams p, const std::vector<float>& logits, int draws = 20000) {
  Sampler s(p, static_cast<int32_t>(logits.size()));
  std::vector<double> f(logits.size(), 0.0);
  for (int i = 0; i < draws; ++i) {
    std::vector<float> l = logits;
    f[static_cast<size_t>(s.sample(l.data()))] += 1.0 / draws;
  }
  return f;
}

const std::vector<float> kLogits = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};

TEST(Sampler, GreedyTakesFirstMaximum) {
  Sampler s(plain(0.0f), 5);
  std::vector<float> l = {0.1f, 3.0f, -1.0f, 3.0f, 2.9f};
  EXPECT_EQ(s.sample(l.data()), 1);
}

TEST(Sampler, TemperatureOneFollowsSoftmax) {
  const auto f = frequencies(plain(1.0f), kLogits);
  EXPECT_NEAR(f[0], 0.5, 0.015);
  EXPECT_NEAR(f[1], 0.3, 0.015);
  EXPECT_NEAR(f[2], 0.2, 0.015);
}

TEST(Sampler, LowTemperatureSharpens) {
  // T = 0.5 squares the probabilities: 0.25 : 0.09 : 0.04 -> 0.658, 0.237, 0.105.
  const auto f = frequencies(plain(0.5f), kLogits);
  EXPECT_NEAR(f[0], 0.25 / 0.38, 0.015);
  EXPECT_NEAR(f[1], 0.09 / 0.38, 0.015);
  EXPECT_NEAR(f[2], 0.04 / 0.38, 0.015);
}

TEST(Sampler, TopKKeepsTheKBest) {
  SamplerParams p = plain(1.0f);
  p.top_k = 2;
  const auto f = frequencies(p, kLogits);
  EXPECT_NEAR(f[0], 0.625, 0.015);
  EXPECT_NEAR(f[1], 0.375, 0.015);
  EXPECT_EQ(f[2], 0.0);
}

TEST(Sampler, TopPKeepsSmallestNucleus) {
  SamplerParams p = plain(1.0f);
  p.top_p = 0.6f;  // 0.5 < 0.6 -> the second token is needed too
  const auto f = frequencies(p, kLogits);
  EXPECT_NEAR(f[0], 0.625, 0.015);
  EXPECT_EQ(f[2], 0.0);
  p.top_p = 0.4f;
  EXPECT_NEAR(frequencies(p, kLogits, 2000)[0], 1.0, 1e-9);
}

TEST(Sampler, MinPDropsTokensBelowFractionOfBest) {
  SamplerParams p = plain(1.0f);
  p.min_p = 0.5f;  // keeps p >= 0.25: tokens 0 and 1
  const auto f = frequencies(p, kLogits);
  EXPECT_NEAR(f[0], 0.625, 0.015);
  EXPECT_EQ(f[2], 0.0);
}

TEST(Sampler, SameSeedSameDraws) {
  SamplerParams p = plain(1.0f);
  p.seed = 7;
  Sampler a(p, 3), b(p, 3);
  for (int i = 0; i < 100; ++i) {
    std::vector<float> la = kLogits, lb = kLogits;
    ASSERT_EQ(a.sample(la.data()), b.sample(lb.data()));
  }
}

TEST(Sampler, RepeatPenaltyDemotesSeenToken) {
  SamplerParams p = plain(0.0f);
  p.repeat_penalty = 1.2f;
  Sampler s(p, 2);
  s.accept(0);
  std::vector<float> l = {2.0f, 1.9f};  // 2.0 / 1.2 = 1.67 < 1.9
  EXPECT_EQ(s.sample(l.data()), 1);
  EXPECT_NEAR(l[0], 2.0f / 1.2f, 1e-6f);
}

TEST(Sampler, FrequencyAndPresencePenalties) {
  SamplerParams p = plain(0.0f);
  p.frequency_penalty = 0.5f;
  p.presence_penalty = 0.25f;
  Sampler s(p, 3);
  s.accept(0);
  s.accept(0);
  s.accept(1);
  std::vector<float> l = {3.0f, 2.0f, 1.0f};
  s.sample(l.data());
  EXPECT_FLOAT_EQ(l[0], 3.0f - 2 * 0.5f - 0.25f);
  EXPECT_FLOAT_EQ(l[1], 2.0f - 0.5f - 0.25f);
  EXPECT_FLOAT_EQ(l[2], 1.0f);
}

TEST(Sampler, ValidateRejectsOutOfDomainValues) {
  SamplerParams p;
  p.temperature = -1.0f;
  EXPECT_FALSE(validate(p).ok());
  EXPECT_NE(validate(p).error().message.find("temperature"), std::string::npos);
  p = SamplerParams{};
  p.top_p = 1.5f;
  EXPECT_FALSE(validate(p).ok());
  p = SamplerParams{};
  p.top_k = -3;
  EXPECT_FALSE(validate(p).ok());
  EXPECT_TRUE(validate(SamplerParams{}).ok());
}

TEST(StopStrings, HoldsBackPossiblePrefixAndCutsAtMatch) {
  StopStrings s({"\n\nUser:", "END"});
  EXPECT_EQ(s.push("Hello"), "Hello");
  EXPECT_EQ(s.push(" world\n"), " world");  // "\n" may start "\n\nUser:"
  EXPECT_EQ(s.push("\nUs"), "");
  EXPECT_EQ(s.push("er: more"), "");
  EXPECT_TRUE(s.stopped());
  EXPECT_EQ(s.matched(), "\n\nUser:");
  EXPECT_EQ(s.flush(), "");
}

TEST(StopStrings, ReleasesHeldTextWhenItDiverges) {
  StopStrings s({"END"});
  EXPECT_EQ(s.push("the EN"), "the ");
  EXPECT_EQ(s.push("D"), "");
  EXPECT_TRUE(s.stopped());
  StopStrings t({"END"});
  EXPECT_EQ(t.push("the EN"), "the ");
  EXPECT_EQ(t.push("ding"), "ENding");
  EXPECT_EQ(t.flush(), "");
  StopStrings u({"END"});
  EXPECT_EQ(u.push("E"), "");
  EXPECT_EQ(u.flush(), "E");
}

}  // namespace
}  // namespace strata::sample
