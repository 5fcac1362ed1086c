// tests/engine/exec/test_batch_invariant_models.cpp — the real chat models setup fetches
// (SmolLM2-135M-Instruct Q4_1, Gemma 3 270M Q4_K_M) give bit-identical logits however the prompt
// reaches them (issue 45): one token a forward pass (the decode path), 7, 64 or 512 tokens a pass,
// the prompt handed over in uneven pieces, one thread or two; and the greedy decode steps after it
// agree bit for bit too (their KV cache was filled each of those ways).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "engine/exec/session.h"
#include "engine/model/model.h"
#include "test_support.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

fs::path model_folder() { return test::real_models(); }

// Long enough for three 64-position key blocks of attention and several token chunks.
const char* kText =
    "The quick brown fox said that the weather in Berlin tomorrow will be sunny with a chance of rain in the "
    "afternoon, and that everyone should bring an umbrella just in case. Meanwhile the lazy dog slept on the "
    "porch, dreaming of bones and long walks in the park with its owner, who was reading a newspaper about the "
    "election results and the price of bread. Later that evening the two friends met at the old bridge by the "
    "river, where the fox told the dog a long story about a clever crow, a piece of cheese, and a very patient "
    "tortoise who won a race against a hare because the hare stopped to sleep under a tree. The dog laughed, "
    "and then asked what the moral of the story was, and the fox";

constexpr int kDecodeSteps = 4;

struct Trace {
  std::vector<std::vector<float>> logits;  // after the prompt, then after each greedy step
};

// The prompt in pieces of the given sizes (the last piece takes the rest), then kDecodeSteps greedy
// steps fed `forced` (the reference run's tokens; empty: its own argmax).
Trace run(const model::Model& m, int threads, int64_t max_batch, const std::vector<int32_t>& prompt,
        const std::vector<int64_t>& pieces, const std::vector<int32_t>& forced) {
  kernels::ThreadPool pool(threads);
  auto session = exec::Session::create(m, pool, 512, max_batch);
  EXPECT_TRUE(session.ok()) << session.error().to_string();
  Trace r;
  if (!session.ok()) return r;
  const size_t nv = static_cast<size_t>(m.config().n_vocab);
  size_t at = 0;
  const float* l = nullptr;
  for (size_t i = 0; at < prompt.size(); ++i) {
    const size_t n = i < pieces.size() ? std::min<size_t>(static_cast<size_t>(pieces[i]), prompt.size() - at)
                                       : prompt.size() - at;
    auto e = (*session)->eval(std::span<const int32_t>(prompt.data() + at, n));
    EXPECT_TRUE(e.ok()) << e.error().to_string();
    if (!e.ok()) return r;
    l = *e;
    at += n;
  }
  r.logits.emplace_back(l, l + nv);
  for (int s = 0; s < kDecodeSteps; ++s) {
    const std::vector<float>& last = r.logits.back();
    int32_t next = static_cast<int32_t>(std::max_element(last.begin(), last.end()) - last.begin());
    if (!forced.empty()) next = forced[static_cast<size_t>(s)];
    auto e = (*session)->eval(std::span<const int32_t>(&next, 1));
    EXPECT_TRUE(e.ok()) << e.error().to_string();
    if (!e.ok()) return r;
    r.logits.emplace_back(*e, *e + nv);
  }
  return r;
}

std::vector<int32_t> greedy_tokens(const Trace& r) {
  std::vector<int32_t> t;
  for (int s = 0; s < kDecodeSteps; ++s) {
    const std::vector<float>& l = r.logits[static_cast<size_t>(s)];
    t.push_back(static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin()));
  }
  return t;
}

class BatchInvariantModel : public ::testing::TestWithParam<const char*> {};

TEST_P(BatchInvariantModel, LogitsAreBitIdenticalForEveryBatchAndChunking) {
  const fs::path path = model_folder() / GetParam();
  ASSERT_TRUE(test::have(path)) << path << " missing: tools/setup.sh fetches it";
  auto model = model::Model::load(path);
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  const model::Model& m = **model;
  const std::vector<int32_t> prompt = m.tokenizer().encode(kText, /*add_special=*/true, /*parse_special=*/false);
  ASSERT_GT(prompt.size(), 130u);  // three key blocks of attention

  // The reference: one token a forward pass, two threads (every product the one-token dot).
  const Trace ref = run(m, 2, 1, prompt, {}, {});
  ASSERT_EQ(ref.logits.size(), size_t{kDecodeSteps + 1});
  const std::vector<int32_t> forced = greedy_tokens(ref);

  struct Variant {
    const char* what;
    int threads;
    int64_t max_batch;
    std::vector<int64_t> pieces;
  };
  const Variant variants[] = {
      {"--batch 7", 2, 7, {}},
      {"--batch 64", 2, 64, {}},
      {"--batch 512", 2, 512, {}},
      {"--batch 64, one thread", 1, 64, {}},
      {"pieces 13, 1, 40, rest at --batch 512", 2, 512, {13, 1, 40}},
      {"pieces 100, rest at --batch 16", 2, 16, {100}},
  };
  for (const Variant& v : variants) {
    const Trace got = run(m, v.threads, v.max_batch, prompt, v.pieces, forced);
    ASSERT_EQ(got.logits.size(), ref.logits.size()) << v.what;
    for (size_t s = 0; s < ref.logits.size(); ++s) {
      size_t differ = 0;
      float worst = 0.f;
      for (size_t i = 0; i < ref.logits[s].size(); ++i) {
        differ += std::memcmp(&ref.logits[s][i], &got.logits[s][i], sizeof(float)) != 0;
        worst = std::max(worst, std::abs(ref.logits[s][i] - got.logits[s][i]));
      }
      EXPECT_EQ(differ, 0u) << GetParam() << " " << v.what << ", step " << s << ": " << differ
                            << " logits differ from one token a pass, by up to " << worst;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(RealModels, BatchInvariantModel,
                         ::testing::Values("SmolLM2-135M-Instruct.Q4_1.gguf", "gemma-3-270m-q4_k_m.gguf"),
                         [](const auto& info) { return std::string(info.index == 0 ? "SmolLM2" : "Gemma3"); });

}  // namespace
}  // namespace strata
