// tests/serve/test_serve_batch_invariance.cpp — the server's text does not depend on what else
// runs (issue 45: batch-invariant numerics): temperature-0 streams run 8 and 32 at once equal their
// single-request text; a repeated request equals the first whether the prefix cache holds its
// prompt or not; a seeded temperature-1 request gives the same text five times; a simulated GPU
// lost mid-stream and a placement applied mid-stream (their KV rebuilt by a batched prefill) give
// the no-fault text, on a quantized (Q8_0) model.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "serve/serve_test_util.h"

namespace strata::test {
namespace {

const std::string kKey = "bi-key";


Json completion(const std::string& prompt, int max_tokens) {
  return Json{{"prompt", prompt}, {"temperature", 0}, {"max_tokens", max_tokens}, {"ignore_eos", true}};
}

std::string text_of(const Reply& r) { return r.json()["choices"][0]["text"].get<std::string>(); }

std::vector<std::string> prompts(int n) {
  const char* subjects[] = {"the sea", "a small robot", "the moon", "bread", "an old castle", "rain", "a violin",
                            "winter"};
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i)
    out.push_back("Story " + std::to_string(i + 1) + ". Once there was " + subjects[i % 8] + " that wanted to see " +
                  std::to_string(3 * i + 2) + " friends, so");
  return out;
}

// n streams at once against their texts one at a time, on a server with n slots.
void concurrent_streams_equal_single(int n) {
  ServerProcess server({"-m", smollm2(), "--parallel", std::to_string(n), "--ctx", "128", "-t", "2"});
  ASSERT_NE(server.port(), 0) << server.stderr_text();
  const int port = server.port();
  const std::vector<std::string> ps = prompts(n);
  constexpr int kTokens = 10;
  std::vector<std::string> alone;
  for (const std::string& p : ps) {
    const Reply r = post(port, "/v1/completions", completion(p, kTokens));
    ASSERT_EQ(r.status, 200) << r.body;
    alone.push_back(text_of(r));
  }
  std::vector<Streamed> together(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      together[static_cast<size_t>(i)] = stream_completion(port, "/v1/completions", completion(ps[static_cast<size_t>(i)], kTokens));
    });
  for (std::thread& t : threads) t.join();
  int equal = 0;
  for (int i = 0; i < n; ++i) {
    const Streamed& s = together[static_cast<size_t>(i)];
    EXPECT_EQ(s.status, 200);
    EXPECT_EQ(s.text, alone[static_cast<size_t>(i)]) << "stream " << i << " of " << n;
    equal += s.text == alone[static_cast<size_t>(i)];
  }
  EXPECT_EQ(equal, n) << equal << " of " << n << " concurrent streams equal their single-request text";
}

TEST(ServeBatchInvariance, EightConcurrentGreedyStreamsEqualTheirSingleRequestText) { concurrent_streams_equal_single(8); }
TEST(ServeBatchInvariance, ThirtyTwoConcurrentGreedyStreamsEqualTheirSingleRequestText) {
  concurrent_streams_equal_single(32);
}

// One slot: the second request finds its whole prompt cached (hit); a different request then takes
// the slot, so the third finds only the common start of the two prompts (miss); a fourth shares a
// longer prompt's prefix. Every time the same text.
TEST(ServeBatchInvariance, ARepeatedRequestEqualsTheFirstWithThePrefixCacheHitAndMissed) {
  ServerProcess server({"-m", smollm2(), "--parallel", "1", "--ctx", "256", "-t", "2"});
  ASSERT_NE(server.port(), 0) << server.stderr_text();
  const int port = server.port();
  // The text and every token's logprob (the floats as the server prints them: equal only when the
  // logits were bit for bit the same).
  auto ask = [&](const std::string& prompt, int n) {
    Json b = completion(prompt, n);
    b["logprobs"] = 1;
    const Reply r = post(port, "/v1/completions", b);
    EXPECT_EQ(r.status, 200) << r.body;
    const Json c = r.json()["choices"][0];
    return c["text"].get<std::string>() + "\n" + c["logprobs"]["token_logprobs"].dump();
  };
  const char* kPrompts[] = {
      "The history of the printing press begins in the fifteenth century, when a goldsmith in Mainz built a machine that",
      "Photosynthesis is the process by which green plants turn sunlight, water and carbon dioxide into",
      "In the year 1969 three astronauts flew to the moon. The first one to step onto its surface said"};
  for (const char* p : kPrompts) {
    const std::string first = ask(p, 12);
    EXPECT_EQ(ask(p, 12), first) << "prefix cache hit: " << p;
    ask(std::string("A completely different request about cooking rice, number ") + p[4], 4);  // takes the slot
    EXPECT_EQ(ask(p, 12), first) << "prefix cache miss: " << p;
  }
  // A prompt that extends an earlier one: its start from the cache, then the rest, against the
  // same prompt on a slot that holds something else.
  const std::string longer = std::string(kPrompts[0]) + " could print a page";
  ask(kPrompts[0], 4);
  const std::string warm = ask(longer, 8);
  ask("Something else entirely, about trains", 4);
  EXPECT_EQ(ask(longer, 8), warm) << "an extended prompt, warm vs cold cache";
}

TEST(ServeBatchInvariance, ASeededTemperatureOneRequestGivesTheSameTextFiveTimes) {
  ServerProcess server({"-m", smollm2(), "--parallel", "2", "--ctx", "256", "-t", "2"});
  ASSERT_NE(server.port(), 0) << server.stderr_text();
  const int port = server.port();
  Json body = completion("My favourite thing about autumn is", 24);
  body["temperature"] = 1.0;
  body["seed"] = 42;
  std::vector<std::string> texts;
  for (int i = 0; i < 5; ++i) {
    const Reply r = post(port, "/v1/completions", body);
    ASSERT_EQ(r.status, 200) << r.body;
    texts.push_back(text_of(r));
  }
  for (int i = 1; i < 5; ++i) EXPECT_EQ(texts[static_cast<size_t>(i)], texts[0]) << "request " << i + 1;
  // Streamed, and with another seeded request running beside it: still the same text.
  Json other = body;
  other["prompt"] = "The best way to learn a language is";
  other["seed"] = 7;
  std::thread beside([&] { post(port, "/v1/completions", other); });
  const Streamed s = stream_completion(port, "/v1/completions", body);
  beside.join();
  EXPECT_EQ(s.text, texts[0]) << "streamed beside another request";
}

// A random-weight Q4_K model (8 layers of 256): there a batched prefill and one-token decode took
// kernels that sum in different orders before (the Q8_0 and Q4_0 random models of this shape
// happened to give the same bits either way: their float steps were exact), on the CPU and two
// simulated GPUs, with an f32 KV cache (an f16 one rounds most last-bit differences away).
std::string q4k_model() {
  static const std::string path = [] {
    const auto p = temp_dir("serve_bi") / "q4k.gguf";
    if (!std::filesystem::exists(p)) {
      CliRun r = engine({"make-model", "--vocab-from", stories_model(), "--dim", "256", "--layers", "8", "--heads", "8",
                         "--ffn", "768", "--ctx", "4096", "--type", "q4_k", "--seed", "7", "-o", p.string()});
      EXPECT_EQ(r.exit_code, 0) << r.err;
    }
    return p.string();
  }();
  return path;
}

TEST(ServeBatchInvariance, ALostGpuMidStreamGivesTheNoFaultText) {
  ServerProcess server({"-m", q4k_model(), "--devices", "cpu,sim:gpu0:4GiB,sim:gpu1:4GiB", "--api-key", kKey,
                        "--parallel", "2", "--ctx", "512", "--kv-type", "f32"});
  ASSERT_NE(server.port(), 0) << server.stderr_text();
  const int port = server.port();
  Json body = chat_body("Once upon a time there was a little girl who", 64);
  body.erase("model");
  body["ignore_eos"] = true;
  const Reply before = post(port, "/v1/chat/completions", body, kKey);
  ASSERT_EQ(before.status, 200) << before.body;
  const std::string want = before.json()["choices"][0]["message"]["content"];
  // The logprobs too (equal floats only where the logits were bit for bit the same): a lost device
  // whose blocks move, without the fault landing mid-stream, after a request.
  Json with_lp = body;
  with_lp["logprobs"] = true;
  const Reply lp_before = post(port, "/v1/chat/completions", with_lp, kKey);
  ASSERT_EQ(lp_before.status, 200) << lp_before.body;
  ASSERT_EQ(post(port, "/strata/v1/devices/gpu0/fault", Json{{"kind", "lost"}, {"after_ops", 800}}, kKey).status, 200);
  const Reply lp_lost = post(port, "/v1/chat/completions", with_lp, kKey);
  ASSERT_EQ(lp_lost.status, 200) << lp_lost.body;
  const Json notes = lp_lost.json()["choices"][0].value("replans", Json::array());
  ASSERT_EQ(notes.size(), 1u) << lp_lost.body;
  EXPECT_GE(notes[0]["at_token"].get<int>(), 4) << "the fault must come after some decode steps, whose KV it rebuilds";
  EXPECT_EQ(lp_lost.json()["choices"][0]["logprobs"], lp_before.json()["choices"][0]["logprobs"])
      << "logprobs after gpu0 was lost mid-request";

  // gpu1 lost in the middle of the stream: its layers re-planned onto the devices left, their KV
  // rebuilt by re-running the tokens so far in one batch.
  ASSERT_EQ(post(port, "/strata/v1/devices/gpu1/fault", Json{{"kind", "lost"}, {"after_ops", 1500}}, kKey).status, 200);
  const Streamed lost = stream_completion(port, "/v1/chat/completions", body, kKey);
  ASSERT_EQ(lost.status, 200);
  ASSERT_EQ(lost.replans.size(), 1u) << "the fault did not land mid-stream";
  EXPECT_GE(lost.replans[0]["at_token"].get<int>(), 4) << "the fault must come after some decode steps, whose KV it rebuilds";
  std::printf("gpu1 lost at token %d\n", lost.replans[0]["at_token"].get<int>());
  EXPECT_EQ(lost.text, want) << "after gpu1 was lost at token " << lost.replans[0]["at_token"];

}

// A placement applied while a stream runs (every layer moves to the CPU after the stream has sent
// some text; the moved blocks' KV rebuilt by a batched prefill): the text and the logprobs of the
// run without it.
TEST(ServeBatchInvariance, APlacementAppliedMidStreamGivesTheUndisturbedText) {
  ServerProcess server({"-m", q4k_model(), "--devices", "cpu,sim:gpu0:4GiB,sim:gpu1:4GiB", "--api-key", kKey,
                        "--parallel", "2", "--ctx", "512", "--kv-type", "f32"});
  ASSERT_NE(server.port(), 0) << server.stderr_text();
  const int port = server.port();
  Json body = chat_body("Once upon a time there was a little girl who", 64);
  body.erase("model");
  body["ignore_eos"] = true;
  body["logprobs"] = true;
  const Reply before = post(port, "/v1/chat/completions", body, kKey);
  ASSERT_EQ(before.status, 200) << before.body;
  const std::string want = before.json()["choices"][0]["message"]["content"];
  const Json want_lp = before.json()["choices"][0]["logprobs"]["content"];

  Json placement = get(port, "/strata/v1/placement", kKey).json();
  ASSERT_TRUE(placement.contains("layers")) << placement.dump();
  placement["layers"] = Json::array({Json{{"layers", "0-7"}, {"device", "cpu"}}});
  std::atomic<int> chunks{0};
  std::atomic<bool> finished{false};
  std::string streamed;
  Json streamed_lp = Json::array();
  int status = 0;
  std::thread reader([&] {
    Json b = body;
    b["stream"] = true;
    status = post_stream(port, "/v1/chat/completions", b, [&](const std::string& data) {
      if (data == "[DONE]") return true;
      Json j = Json::parse(data, nullptr, false);
      if (j.is_discarded()) return false;
      if (j.contains("choices") && !j["choices"].empty()) {
        const Json& c = j["choices"][0];
        streamed += c["delta"].value("content", std::string());
        if (c.contains("logprobs") && c["logprobs"].is_object())
          for (const Json& e : c["logprobs"]["content"]) streamed_lp.push_back(e);
        ++chunks;
      }
      return true;
    }, kKey);
    finished = true;
  });
  while (chunks.load() < 8 && !finished.load()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const bool mid_stream = !finished.load();
  const Reply put = request(port, "PUT", "/strata/v1/placement", placement.dump(), kKey);
  reader.join();
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_GT(put.json()["moved_layers"].get<int>(), 0) << put.body;
  EXPECT_TRUE(mid_stream) << "the stream ended before the placement was applied";
  ASSERT_EQ(status, 200);
  EXPECT_EQ(streamed, want) << "a placement applied mid-stream changed the text";
  EXPECT_EQ(streamed_lp, want_lp) << "a placement applied mid-stream changed the logprobs";
}

}  // namespace
}  // namespace strata::test
