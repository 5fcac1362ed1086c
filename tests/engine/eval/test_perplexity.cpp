// tests/engine/eval/test_perplexity.cpp — the windowed perplexity of llama-perplexity, checked
// against the definition computed by hand (token-by-token evaluation, log-softmax, mean NLL over
// the second half of each window) on the trained stories260K model; and the KL / top-1 figures
// of LogitComparison on cases worked out on paper.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>

#include "engine/eval/perplexity.h"
#include "engine/exec/session.h"
#include "engine/model/model.h"
#include "test_support.h"

namespace strata {
namespace {

std::vector<int32_t> passage_tokens(const model::Model& m) {
  std::ifstream in(std::string(STRATA_SOURCE_DIR) + "/tests/data/perplexity_passage.txt");
  EXPECT_TRUE(in.good());
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return m.tokenizer().encode(text, true, false);
}

TEST(Perplexity, MatchesTheDefinitionComputedByHand) {
  auto m = model::Model::load(test::shared_model("stories260K.gguf"));
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  kernels::ThreadPool pool(1);
  auto s = exec::Session::create(**m, pool, 64, 64, kernels::DType::F32);
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  exec::Session& session = **s;
  const std::vector<int32_t> tokens = passage_tokens(**m);
  ASSERT_GT(tokens.size(), 3u * 32);

  eval::PerplexityOptions o;
  o.n_ctx = 32;
  o.max_chunks = 3;
  o.bos = 1;  // stories260K adds BOS (id 1): each window starts with it
  int64_t rows = 0, progress_calls = 0;
  auto got = eval::perplexity(
      session, tokens, o, [&](const eval::PerplexityProgress&) { ++progress_calls; },
      [&](const float*, int64_t n_vocab, int32_t) {
        EXPECT_EQ(n_vocab, (*m)->config().n_vocab);
        ++rows;
        return Status{};
      });
  ASSERT_TRUE(got.ok()) << got.error().to_string();
  EXPECT_EQ(got->scored, 3 * (32 - 1 - 16));
  EXPECT_EQ(rows, got->scored);
  EXPECT_EQ(progress_calls, 3);

  // By hand: every position evaluated one token at a time from an empty cache.
  double nll = 0;
  int64_t count = 0;
  std::vector<double> lp;
  for (int64_t c = 0; c < 3; ++c) {
    session.reset();
    std::vector<int32_t> w(tokens.begin() + c * 32, tokens.begin() + (c + 1) * 32);
    w[0] = 1;
    for (int64_t i = 0; i < 31; ++i) {
      auto logits = session.eval(std::span<const int32_t>(&w[static_cast<size_t>(i)], 1));
      ASSERT_TRUE(logits.ok());
      if (i < 16) continue;
      eval::log_softmax(*logits, (*m)->config().n_vocab, lp);
      nll -= lp[static_cast<size_t>(w[static_cast<size_t>(i + 1)])];
      ++count;
    }
  }
  const double want = std::exp(nll / static_cast<double>(count));
  // Tolerance 1e-4 relative: the tool evaluates each window's first half as one batch, the hand
  // computation one token at a time (f32 sums in another order).
  EXPECT_NEAR(got->ppl, want, 1e-4 * want);
  EXPECT_GT(got->ppl, 1.0);
  EXPECT_GT(got->ppl_stderr, 0.0);
}

TEST(Perplexity, RefusesTooShortTextsAndWindows) {
  auto m = model::Model::load(test::shared_model("stories260K.gguf"));
  ASSERT_TRUE(m.ok());
  kernels::ThreadPool pool(1);
  auto s = exec::Session::create(**m, pool, 64);
  ASSERT_TRUE(s.ok());
  const std::vector<int32_t> few(20, 5);
  eval::PerplexityOptions o;
  o.n_ctx = 32;
  auto short_text = eval::perplexity(**s, few, o, {}, {});
  ASSERT_FALSE(short_text.ok());
  EXPECT_EQ(short_text.error().code, Code::InvalidArgument);
  EXPECT_NE(short_text.error().message.find("20 tokens"), std::string::npos) << short_text.error().message;
  o.n_ctx = 128;  // past the loaded context of 64
  auto too_wide = eval::perplexity(**s, std::vector<int32_t>(300, 5), o, {}, {});
  ASSERT_FALSE(too_wide.ok());
  EXPECT_NE(too_wide.error().message.find("64"), std::string::npos) << too_wide.error().message;
}

TEST(LogitComparison, KlTop1AndPerplexityOnWorkedCases) {
  eval::LogitComparison same;
  const float a[3] = {1.0f, 2.0f, 0.5f};
  const float shifted[3] = {11.0f, 12.0f, 10.5f};  // softmax is shift-invariant
  same.add(a, a, 3, 1);
  same.add(a, shifted, 3, 0);
  EXPECT_NEAR(same.mean_kl(), 0.0, 1e-12);
  EXPECT_DOUBLE_EQ(same.top1_agreement(), 1.0);
  EXPECT_NEAR(same.base_ppl(), same.test_ppl(), 1e-12);

  // base p = (1/4, 3/4), test q = (1/2, 1/2): KL = 1/4 ln(1/2) + 3/4 ln(3/2) = 0.1308120...
  eval::LogitComparison worked;
  const float base[2] = {0.0f, std::log(3.0f)};
  const float test[2] = {0.0f, 0.0f};
  worked.add(base, test, 2, 1);
  EXPECT_NEAR(worked.mean_kl(), 0.25 * std::log(0.5) + 0.75 * std::log(1.5), 1e-6);
  EXPECT_DOUBLE_EQ(worked.top1_agreement(), 0.0);  // base's top is 1; test's tie goes to the first index, 0
  EXPECT_NEAR(worked.base_ppl(), 1.0 / 0.75, 1e-6);  // next token 1: NLL -ln(3/4)
  EXPECT_NEAR(worked.test_ppl(), 2.0, 1e-6);         // -ln(1/2)
}

}  // namespace
}  // namespace strata
