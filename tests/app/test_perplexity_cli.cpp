// tests/app/test_perplexity_cli.cpp — `strata-engine perplexity` as a user runs it on the trained
// stories260K model: the figure is printed and sane, --save-logits / --kl-base compare two runs
// (identical settings: KL 0 and full top-1 agreement; an f16 KV cache against an f32 one: a small
// positive KL), and a saved file of another window is refused with the reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <regex>

#include "cli_runner.h"

namespace strata::test {
namespace {

const std::string kPassage = std::string(STRATA_SOURCE_DIR) + "/tests/data/perplexity_passage.txt";

double number_after(const std::string& text, const std::string& pattern) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(pattern))) return -1.0;
  return std::stod(m[1].str());
}

TEST(PerplexityCli, FigureSavedLogitsAndKlDivergence) {
  const std::string model = shared_model("stories260K.gguf").string();
  const fs::path dir = temp_dir("ppl-cli");
  const std::string base = (dir / "base.logits").string();
  const std::vector<std::string> common = {"perplexity", "-m", model, "-f", kPassage, "--ctx", "64", "-t", "1"};

  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = common;
    args.insert(args.end(), extra.begin(), extra.end());
    return engine(args);
  };
  const CliRun saved = with({"--kv-type", "f32", "--save-logits", base});
  ASSERT_EQ(saved.exit_code, 0) << saved.err;
  const double ppl = number_after(saved.out, R"(PPL = ([0-9.]+))");
  // stories260K was trained on children's stories, not on Austen and Carroll: high, but finite.
  EXPECT_GT(ppl, 1.0) << saved.out;
  EXPECT_LT(ppl, 512.0) << saved.out;  // the vocabulary size: worse than uniform would be a bug

  const CliRun same = with({"--kv-type", "f32", "--kl-base", base});
  ASSERT_EQ(same.exit_code, 0) << same.err;
  EXPECT_EQ(number_after(same.out, R"(KL divergence vs [^:]+: mean ([0-9.e-]+))"), 0.0) << same.out;
  EXPECT_EQ(number_after(same.out, R"(top-1 agreement ([0-9.]+)%)"), 100.0) << same.out;
  EXPECT_EQ(number_after(same.out, R"(PPL = ([0-9.]+))"), ppl);

  // stories260K's heads are 8 wide, too narrow for q8_0 blocks: an f16 cache is the other type.
  const CliRun q8 = with({"--kv-type", "f16", "--kl-base", base});
  ASSERT_EQ(q8.exit_code, 0) << q8.err;
  const double kl = number_after(q8.out, R"(KL divergence vs [^:]+: mean ([0-9.e-]+))");
  EXPECT_GT(kl, 0.0) << q8.out;
  EXPECT_LT(kl, 0.01) << q8.out;  // an f16 cache moves the distribution a little, not a lot
  EXPECT_GT(number_after(q8.out, R"(top-1 agreement ([0-9.]+)%)"), 80.0) << q8.out;

  std::vector<std::string> other_window = common;
  other_window[6] = "32";  // the value after "--ctx"
  other_window.insert(other_window.end(), {"--kl-base", base});
  const CliRun refused = engine(other_window);
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("window 64 vs 32"), std::string::npos) << refused.err;
}

TEST(PerplexityCli, TooShortTextIsOneLineError) {
  const fs::path dir = temp_dir("ppl-cli");
  const fs::path tiny = dir / "tiny.txt";
  std::ofstream(tiny) << "Once upon a time.";
  const CliRun r = engine({"perplexity", "-m", shared_model("stories260K.gguf").string(), "-f", tiny.string(),
                           "--ctx", "64"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("needs at least"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace
}  // namespace strata::test
