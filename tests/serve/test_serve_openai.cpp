// tests/serve/test_serve_openai.cpp — the OpenAI routes of the real `strata-engine serve` over
// HTTP: text parity with `run`, concurrency, client disconnects, errors, metrics.
//
// How chat messages map to the prompt: stories260K has no chat template, so the server uses the
// built-in "completion" template (message contents joined by blank lines) and tokenizes the
// result like `run` (BOS added). One user message "Once upon a time" is therefore the prompt
// `run -p "Once upon a time"`, and the streamed reply is run's --no-echo output.
#include <cstring>
#include <regex>
#include <sstream>

#include "serve/serve_test_util.h"

namespace strata::test {
namespace {

std::string run_text(const std::string& prompt, int n) {
  CliRun r = engine({"run", "-m", stories_model(), "-p", prompt, "--temp", "0", "-n", std::to_string(n), "--no-echo"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

TEST(ServeOpenAi, StreamingChatEqualsRunAndGolden) {
  ServerProcess server({"-m", stories_model()});
  ASSERT_NE(server.port(), 0) << server.stderr_text();
  // The golden file's "Once upon a time" case (greedy; its generated ids are the continuation).
  std::ifstream in(shared_model("stories260K.golden.json"));
  const Json golden = Json::parse(in);
  Json golden_case;
  for (const Json& c : golden["cases"]) {
    if (c["prompt"] == "Once upon a time") golden_case = c;
  }
  ASSERT_FALSE(golden_case.is_null());
  const int n = static_cast<int>(golden_case["generated_ids"].size());
  const std::string expected = run_text("Once upon a time", n);
  ASSERT_EQ("Once upon a time" + expected, golden_case["text"].get<std::string>());

  Json body = chat_body("Once upon a time", n);
  body["stream_options"] = {{"include_usage", true}};
  Streamed s = stream_completion(server.port(), "/v1/chat/completions", body);
  EXPECT_EQ(s.status, 200);
  EXPECT_TRUE(s.done);
  EXPECT_EQ(s.text, expected);
  EXPECT_EQ(s.finish, "length");
  // One chunk per token, however the writer and the scheduler interleave (no token of this
  // story ends inside a UTF-8 character).
  EXPECT_EQ(s.text_chunks, n);
  EXPECT_EQ(s.usage["prompt_tokens"], 5);
  EXPECT_EQ(s.usage["completion_tokens"], n);
  EXPECT_EQ(s.usage["total_tokens"], n + 5);

  // The same through the non-streaming chat route and /v1/completions.
  Reply r = post(server.port(), "/v1/chat/completions", chat_body("Once upon a time", n));
  ASSERT_EQ(r.status, 200) << r.body;
  const Json j = r.json();
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["model"], "stories260K");
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["message"]["content"], expected);
  EXPECT_EQ(j["usage"]["completion_tokens"], n);
  Reply c = post(server.port(), "/v1/completions",
                 {{"prompt", "Once upon a time"}, {"temperature", 0}, {"max_tokens", n}});
  ASSERT_EQ(c.status, 200) << c.body;
  EXPECT_EQ(c.json()["object"], "text_completion");
  EXPECT_EQ(c.json()["choices"][0]["text"], expected);
  Streamed sc = stream_completion(server.port(), "/v1/completions",
                                  {{"prompt", "Once upon a time"}, {"temperature", 0}, {"max_tokens", n}});
  EXPECT_EQ(sc.text, expected);

  // A stop string cuts the text before it; the reason is "stop".
  Json stop_body = chat_body("Once upon a time", n);
  stop_body["stop"] = "Lily";
  Reply st = post(server.port(), "/v1/chat/completions", stop_body);
  ASSERT_EQ(st.status, 200);
  EXPECT_EQ(st.json()["choices"][0]["message"]["content"], expected.substr(0, expected.find("Lily")));
  EXPECT_EQ(st.json()["choices"][0]["finish_reason"], "stop");

  Reply models = get(server.port(), "/v1/models");
  ASSERT_EQ(models.status, 200);
  EXPECT_EQ(models.json()["data"][0]["id"], "stories260K");
  EXPECT_EQ(server.stop(), 0) << server.stderr_text();
}

TEST(ServeOpenAi, TwentyConcurrentStreamsEachEqualTheirSingleText) {
  ServerProcess server({"-m", stories_model(), "--parallel", "4"});
  ASSERT_NE(server.port(), 0) << server.stderr_text();
  const std::vector<std::string> starts = {"Once upon a time", "The cat", "Lily and Ben", "One day", "The sun",
                                           "A little dog", "Tom had a", "The bird", "Mom said", "There was a",
                                           "Sue went to", "The big tree", "In the park", "Max was", "The girl",
                                           "A boy named", "The car", "Anna liked", "The fish", "At night"};
  std::vector<std::string> single(starts.size());
  for (size_t i = 0; i < starts.size(); ++i) {
    Reply r = post(server.port(), "/v1/chat/completions", chat_body(starts[i], 48));
    ASSERT_EQ(r.status, 200) << r.body;
    single[i] = r.json()["choices"][0]["message"]["content"].get<std::string>();
    ASSERT_FALSE(single[i].empty());
  }
  EXPECT_EQ(single[0], run_text(starts[0], 48));
  std::vector<Streamed> got(starts.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < starts.size(); ++i)
    threads.emplace_back([&, i] { got[i] = stream_completion(server.port(), "/v1/chat/completions", chat_body(starts[i], 48)); });
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < starts.size(); ++i) {
    EXPECT_EQ(got[i].status, 200) << i;
    EXPECT_TRUE(got[i].done) << i;
    EXPECT_EQ(got[i].text, single[i]) << "request " << i << " (" << starts[i] << ")";
  }
  const Json q = get(server.port(), "/strata/v1/status").json()["queue"];
  EXPECT_EQ(q["active"], 0);
  EXPECT_EQ(q["waiting"], 0);
  EXPECT_EQ(q["slots"], 4);
}

TEST(ServeOpenAi, KilledClientFreesItsSlot) {
  ServerProcess server({"-m", slow_model(), "--ctx", "4096", "--parallel", "1"});
  ASSERT_NE(server.port(), 0) << server.stderr_text();
  const int port = server.port();
  // ~3000 tokens at a few ms each: seconds of generation if nobody stops it.
  Json long_body = {{"prompt", "Once upon a time"}, {"max_tokens", 3000}, {"ignore_eos", true}, {"temperature", 0},
                   {"stream", true}};
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  if (child == 0) {
    close(ready[0]);
    int events = 0;
    post_stream(port, "/v1/completions", long_body, [&](const std::string&) {
      if (++events == 3) (void)!write(ready[1], "x", 1);
      return true;
    });
    _exit(0);
  }
  close(ready[1]);
  char byte = 0;
  ASSERT_EQ(read(ready[0], &byte, 1), 1) << "the streaming client got no events";
  close(ready[0]);
  EXPECT_EQ(get(port, "/strata/v1/status").json()["queue"]["active"], 1);
  // A second request waits behind the only slot.
  std::thread second_waiter;
  Reply second;
  second_waiter = std::thread([&] {
    second = post(port, "/v1/completions", {{"prompt", "The cat"}, {"max_tokens", 8}, {"ignore_eos", true}, {"temperature", 0}});
  });
  // Wait on the state (the request queued), not for a time: up to 60 s of polling.
  for (int i = 0; i < 6000 && get(port, "/strata/v1/status").json()["queue"]["waiting"] != 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(get(port, "/strata/v1/status").json()["queue"]["waiting"], 1);

  const auto killed_at = std::chrono::steady_clock::now();
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  second_waiter.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  EXPECT_EQ(second.status, 200) << second.body;
  EXPECT_EQ(second.json()["usage"]["completion_tokens"], 8);
  EXPECT_LT(seconds, 5.0) << "the killed client's generation kept the slot";
  const Json q = get(port, "/strata/v1/status").json()["queue"];
  EXPECT_EQ(q["active"], 0);
  EXPECT_EQ(q["waiting"], 0);
  // Fewer than the 3000 tokens asked were generated for the killed stream.
  Reply metrics = get(port, "/metrics");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(metrics.body, m, std::regex("strata_tokens_generated_total ([0-9]+)")));
  EXPECT_LT(std::stoll(m[1]), 3000 + 8);
}

void expect_error(const Reply& r, int status, const std::string& type, const std::string& code = "") {
  EXPECT_EQ(r.status, status) << r.body;
  const Json j = r.json();
  ASSERT_TRUE(j.is_object()) << r.body;
  ASSERT_TRUE(j.contains("error")) << r.body;
  EXPECT_EQ(j["error"]["type"], type) << r.body;
  EXPECT_TRUE(j["error"]["message"].is_string() && !j["error"]["message"].get<std::string>().empty());
  if (!code.empty()) {
    EXPECT_EQ(j["error"]["code"], code) << r.body;
  }
}

TEST(ServeOpenAi, BadRequestsGetOpenAiErrorsAndTheServerKeepsServing) {
  ServerProcess server({"-m", stories_model(), "--ctx", "64", "--api-key", "k3y", "--max-body", "4KiB"});
  ASSERT_NE(server.port(), 0) << server.stderr_text();
  const int port = server.port();
  const std::string key = "k3y";
  auto good = [&] {
    Reply r = post(port, "/v1/chat/completions", chat_body("Once upon a time", 8), key);
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.json()["usage"]["completion_tokens"], 8);
  };
  good();
  expect_error(request(port, "POST", "/v1/chat/completions", "{\"messages\": [", key), 400, "invalid_request_error",
               "invalid_json");
  good();
  Json unknown = chat_body("Once upon a time", 8);
  unknown["model"] = "gpt-4o";
  expect_error(post(port, "/v1/chat/completions", unknown, key), 404, "invalid_request_error", "model_not_found");
  good();
  std::string long_prompt;
  for (int i = 0; i < 40; ++i) long_prompt += "Once upon a time ";
  Reply too_long = post(port, "/v1/chat/completions", chat_body(long_prompt, 8), key);
  expect_error(too_long, 400, "invalid_request_error", "context_length_exceeded");
  EXPECT_NE(too_long.body.find("context length 64"), std::string::npos) << too_long.body;
  good();
  expect_error(post(port, "/v1/chat/completions", chat_body("Once upon a time", 8), "wrong"), 401,
               "authentication_error", "invalid_api_key");
  expect_error(post(port, "/v1/chat/completions", chat_body("Once upon a time", 8)), 401, "authentication_error");
  expect_error(get(port, "/metrics"), 401, "authentication_error");
  good();
  Json big = chat_body(std::string(8000, 'a'), 8);
  expect_error(post(port, "/v1/chat/completions", big, key), 413, "invalid_request_error", "request_too_large");
  good();
  Json bad_type = chat_body("Once upon a time", 8);
  bad_type["temperature"] = "hot";
  Reply bt = post(port, "/v1/chat/completions", bad_type, key);
  expect_error(bt, 400, "invalid_request_error");
  EXPECT_EQ(bt.json()["error"]["param"], "temperature");
  expect_error(post(port, "/v1/chat/completions", Json{{"messages", Json::array()}}, key), 400, "invalid_request_error");
  expect_error(get(port, "/v1/nothing-here", key), 404, "invalid_request_error");
  good();
  Reply streamed_too_long = request(port, "POST", "/v1/chat/completions",
                                    [&] { Json b = chat_body(long_prompt, 8); b["stream"] = true; return b.dump(); }(), key);
  expect_error(streamed_too_long, 400, "invalid_request_error", "context_length_exceeded");
  good();
}

// Issue 48: POST /v1/embeddings -- its shapes, refusals and errors (values: test_openai_client.py
// against the NumPy reference; exactness beside generation: test_scheduler.cpp).
TEST(ServeOpenAi, EmbeddingsShapesAndErrors) {
  ServerProcess server({"-m", stories_model(), "--ctx", "64"});
  ASSERT_NE(server.port(), 0) << server.stderr_text();
  const int port = server.port();
  Reply r = post(port, "/v1/embeddings", Json{{"input", Json::array({"Once upon a time", Json::array({1, 300, 301})})},
                                              {"model", "stories260K"}});
  ASSERT_EQ(r.status, 200) << r.body;
  const Json j = r.json();
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["model"], "stories260K");
  ASSERT_EQ(j["data"].size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(j["data"][k]["object"], "embedding");
    EXPECT_EQ(j["data"][k]["index"], k);
    ASSERT_EQ(j["data"][k]["embedding"].size(), 64u);  // stories260K's n_embd
    double norm = 0;
    for (const Json& v : j["data"][k]["embedding"]) norm += v.get<double>() * v.get<double>();
    EXPECT_NEAR(norm, 1.0, 1e-6);
  }
  EXPECT_EQ(j["usage"]["prompt_tokens"], 5 + 3);  // BOS + 4 tokens, and the 3 ids
  EXPECT_EQ(j["usage"]["total_tokens"], 8);
  // base64 carries the same float32 values, little-endian.
  Reply b = post(port, "/v1/embeddings", Json{{"input", Json::array({1, 300, 301})}, {"encoding_format", "base64"}});
  ASSERT_EQ(b.status, 200) << b.body;
  const std::string text = b.json()["data"][0]["embedding"].get<std::string>();
  EXPECT_EQ(text.size(), (64u * 4 + 2) / 3 * 4);
  auto value = [](char c) -> uint32_t {
    if (c >= 'A' && c <= 'Z') return static_cast<uint32_t>(c - 'A');
    if (c >= 'a' && c <= 'z') return static_cast<uint32_t>(c - 'a' + 26);
    if (c >= '0' && c <= '9') return static_cast<uint32_t>(c - '0' + 52);
    return c == '+' ? 62u : 63u;
  };
  std::vector<uint8_t> bytes;
  for (size_t i = 0; i + 3 < text.size(); i += 4) {
    const uint32_t v = value(text[i]) << 18 | value(text[i + 1]) << 12 |
                       (text[i + 2] == '=' ? 0 : value(text[i + 2]) << 6) | (text[i + 3] == '=' ? 0 : value(text[i + 3]));
    bytes.push_back(static_cast<uint8_t>(v >> 16));
    if (text[i + 2] != '=') bytes.push_back(static_cast<uint8_t>(v >> 8));
    if (text[i + 3] != '=') bytes.push_back(static_cast<uint8_t>(v));
  }
  ASSERT_EQ(bytes.size(), 256u);
  for (size_t i = 0; i < 64; ++i) {
    const uint32_t bits = bytes[4 * i] | bytes[4 * i + 1] << 8 | bytes[4 * i + 2] << 16 | static_cast<uint32_t>(bytes[4 * i + 3]) << 24;
    float f;
    std::memcpy(&f, &bits, 4);
    EXPECT_EQ(f, j["data"][1]["embedding"][i].get<float>()) << i;  // the same input as data[1] above
  }
  // Refusals and errors, OpenAI-style, with the param named.
  auto refused = [&](const Json& body, int status, const std::string& param, const std::string& code) {
    Reply e = post(port, "/v1/embeddings", body);
    EXPECT_EQ(e.status, status) << body.dump() << " -> " << e.body;
    EXPECT_EQ(e.json()["error"]["param"], param) << e.body;
    if (!code.empty()) {
      EXPECT_EQ(e.json()["error"]["code"], code) << e.body;
    }
  };
  refused(Json::object(), 400, "input", "");
  refused(Json{{"input", ""}}, 400, "input", "");
  refused(Json{{"input", Json::array()}}, 400, "input", "");
  refused(Json{{"input", Json::array({1, 99999})}}, 400, "input", "");
  refused(Json{{"input", Json::array({"a", 3})}}, 400, "input", "");
  refused(Json{{"input", std::vector<int>(65, 1)}}, 400, "input", "context_length_exceeded");
  refused(Json{{"input", "x"}, {"dimensions", 32}}, 400, "dimensions", "unsupported_parameter");
  refused(Json{{"input", "x"}, {"encoding_format", "int8"}}, 400, "encoding_format", "");
  refused(Json{{"input", "x"}, {"pooling", "cls"}}, 400, "pooling", "");
  refused(Json{{"input", "x"}, {"model", "gpt-4o"}}, 404, "model", "model_not_found");
  refused(Json{{"input", std::vector<std::string>(257, "a")}}, 400, "input", "");
  EXPECT_EQ(post(port, "/v1/embeddings", Json{{"input", "x"}, {"dimensions", 64}}).status, 200);
  Reply wrong_method = get(port, "/v1/embeddings");
  EXPECT_EQ(wrong_method.status, 405) << wrong_method.body;
  // No model: 503.
  ASSERT_EQ(post(port, "/strata/v1/model/unload", Json::object()).status, 200);
  Reply none = post(port, "/v1/embeddings", Json{{"input", "x"}});
  EXPECT_EQ(none.status, 503) << none.body;
  EXPECT_EQ(none.json()["error"]["code"], "model_not_loaded");
}

TEST(ServeOpenAi, MetricsAreValidPrometheusTextWithTheCounters) {
  ServerProcess server({"-m", stories_model()});
  ASSERT_NE(server.port(), 0) << server.stderr_text();
  ASSERT_EQ(post(server.port(), "/v1/chat/completions", chat_body("Once upon a time", 16)).status, 200);
  ASSERT_EQ(post(server.port(), "/v1/chat/completions", Json{{"bad", 1}}).status, 400);
  Reply r = get(server.port(), "/metrics");
  ASSERT_EQ(r.status, 200);
  const std::regex sample(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\])*",?)*\})? (-?[0-9.eE+-]+|NaN|\+Inf|-Inf)$)");
  const std::regex meta(R"(^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .+$)");
  std::map<std::string, double> values;
  std::istringstream lines(r.body);
  std::string line;
  int samples = 0;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    if (line[0] == '#') {
      EXPECT_TRUE(std::regex_match(line, meta)) << line;
      continue;
    }
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, sample)) << "not Prometheus text: " << line;
    values[line.substr(0, line.rfind(' '))] = std::stod(line.substr(line.rfind(' ') + 1));
    ++samples;
  }
  EXPECT_GT(samples, 8);
  EXPECT_EQ(values["strata_tokens_generated_total"], 16);
  EXPECT_EQ(values["strata_prompt_tokens_total"], 5);
  EXPECT_EQ((values["strata_requests_total{route=\"/v1/chat/completions\",status=\"200\"}"]), 1);
  EXPECT_EQ((values["strata_requests_total{route=\"/v1/chat/completions\",status=\"400\"}"]), 1);
  EXPECT_EQ(values["strata_requests_active"], 0);
  EXPECT_EQ(values["strata_requests_waiting"], 0);
  EXPECT_GT((values["strata_device_memory_bytes{device=\"cpu\",use=\"weights\"}"]), 1e6);
  EXPECT_GT((values["strata_device_capacity_bytes{device=\"cpu\"}"]), 1e8);
  EXPECT_TRUE(values.count("strata_decode_tokens_per_second"));
}

}  // namespace
}  // namespace strata::test
