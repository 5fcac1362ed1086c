// tests/engine/exec/test_golden_stories.cpp — whole-model greedy decoding of the trained
// stories260K against the reference token ids and text in ../shared/models/stories260K.golden.json.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/exec/generate.h"
#include "engine/exec/session.h"
#include "engine/model/model.h"
#include "test_support.h"

namespace strata {
namespace {

struct GoldenCase {
  std::string prompt;
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> generated_ids;
  std::string text;
  int steps;
};

std::vector<GoldenCase> load_cases() {
  std::ifstream in(test::shared_model("stories260K.golden.json"));
  std::vector<GoldenCase> cases;
  if (!in) return cases;
  nlohmann::json j = nlohmann::json::parse(in);
  for (const auto& c : j["cases"]) {
    cases.push_back({c["prompt"].get<std::string>(), c["prompt_ids"].get<std::vector<int32_t>>(),
                     c["generated_ids"].get<std::vector<int32_t>>(), c["text"].get<std::string>(),
                     c["steps"].get<int>()});
  }
  return cases;
}

class GoldenStories : public ::testing::TestWithParam<std::tuple<std::string, int, int>> {};

TEST_P(GoldenStories, GreedyTokensAndTextMatchReference) {
  const auto [file, case_index, threads] = GetParam();
  const auto path = test::shared_model(file);
  if (!test::have(path)) GTEST_FAIL() << "missing " << path;
  const auto cases = load_cases();
  ASSERT_GT(cases.size(), static_cast<size_t>(case_index));
  const GoldenCase& g = cases[static_cast<size_t>(case_index)];

  auto model = model::Model::load(path);
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  const auto prompt = (*model)->tokenizer().encode(g.prompt, true, true);
  ASSERT_EQ(prompt, g.prompt_ids);

  kernels::ThreadPool pool(threads);
  auto session = exec::Session::create(**model, pool, 512, 7);  // small batches: exercises chunking
  ASSERT_TRUE(session.ok()) << session.error().to_string();
  exec::GenerateOptions opts;
  // llama2.c's steps count positions from the BOS; the 512-step case must stop by itself (on BOS).
  opts.max_tokens = g.steps - static_cast<int64_t>(g.prompt_ids.size()) + 1;
  opts.sampling.temperature = 0.0f;
  opts.echo_prompt = true;
  std::string streamed;
  auto result = exec::generate(**session, prompt, opts, [&](std::string_view s) {
    streamed += s;
    return true;
  });
  ASSERT_TRUE(result.ok()) << result.error().to_string();
  const size_t n = std::min(result->tokens.size(), g.generated_ids.size());
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(result->tokens[i], g.generated_ids[i]) << "first difference at token " << i;
  EXPECT_EQ(result->tokens.size(), g.generated_ids.size());
  EXPECT_EQ(streamed, g.text);
}

INSTANTIATE_TEST_SUITE_P(
    AllCases, GoldenStories,
    ::testing::Values(std::make_tuple("stories260K.gguf", 0, 1), std::make_tuple("stories260K.gguf", 1, 2),
                      std::make_tuple("stories260K.gguf", 2, 2), std::make_tuple("stories260K.tied.gguf", 0, 2),
                      std::make_tuple("stories260K.ggml-org.gguf", 0, 2), std::make_tuple("stories260K.tied.gguf", 1, 1)));

}  // namespace
}  // namespace strata
