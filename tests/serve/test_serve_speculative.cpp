// tests/serve/test_serve_speculative.cpp — speculative decoding through the server: a request's
// "speculative" (prompt lookup, the --draft model) gives the text it gives without, greedy and
// seeded; usage counts the accepted and rejected guesses; /metrics, /strata/v1/status and the trace
// show the draft; bad values are 400s naming the parameter.
#include <gtest/gtest.h>

#include <cstdlib>

#include "serve/serve_test_util.h"

namespace strata::test {
namespace {


// An edit task: the answer copies most of the prompt, which prompt lookup guesses.
Json edit_request(const Json& speculative, float temperature = 0) {
  Json body{{"messages", Json::array({Json{{"role", "user"},
                                           {"content",
                                            "Rewrite this paragraph, changing only \"cat\" to \"dog\": The cat sat on the "
                                            "warm windowsill every morning, watching the birds in the garden below. When "
                                            "the sun rose higher, the cat would stretch, yawn, and walk slowly to the "
                                            "kitchen, where breakfast was always waiting in a small blue bowl."}}})},
            {"temperature", temperature},
            {"max_tokens", 48},
            {"seed", 5}};
  if (!speculative.is_null()) body["speculative"] = speculative;
  return body;
}

std::string content(const Reply& r) { return r.json()["choices"][0]["message"]["content"].get<std::string>(); }
int64_t accepted(const Reply& r) {
  return r.json()["usage"]["completion_tokens_details"]["accepted_prediction_tokens"].get<int64_t>();
}
int64_t rejected(const Reply& r) {
  return r.json()["usage"]["completion_tokens_details"]["rejected_prediction_tokens"].get<int64_t>();
}

// The number after `name ` on its own line of a Prometheus text.
double metric(const std::string& text, const std::string& name) {
  const std::string key = "\n" + name + " ";
  const size_t at = text.find(key);
  if (at == std::string::npos) return -1;
  return std::strtod(text.c_str() + at + key.size(), nullptr);
}

TEST(ServeSpeculative, LookupAndDraftModelGiveThePlainTextAndAreCounted) {
  // The draft is the model itself: the mechanics with guesses the target mostly takes.
  ServerProcess server({"-m", smollm2(), "--draft", smollm2(), "--parallel", "2", "--ctx", "256", "-t", "2"});
  ASSERT_NE(server.port(), 0) << server.stderr_text();
  const int port = server.port();

  const Reply plain = post(port, "/v1/chat/completions", edit_request(false));
  ASSERT_EQ(plain.status, 200) << plain.body;
  EXPECT_EQ(accepted(plain), 0);
  EXPECT_EQ(rejected(plain), 0);
  const std::string text = content(plain);
  ASSERT_GT(text.size(), 40u);

  const Reply lookup = post(port, "/v1/chat/completions", edit_request("lookup"));
  ASSERT_EQ(lookup.status, 200) << lookup.body;
  EXPECT_EQ(content(lookup), text);
  EXPECT_GT(accepted(lookup), 0) << lookup.body;

  const Reply model = post(port, "/v1/chat/completions", edit_request(Json{{"mode", "model"}, {"max_draft", 6}}));
  ASSERT_EQ(model.status, 200) << model.body;
  EXPECT_EQ(content(model), text);
  EXPECT_GT(accepted(model), 0) << model.body;

  // With --draft the default is the draft model: a request that says nothing speculates too.
  const Reply by_default = post(port, "/v1/chat/completions", edit_request(nullptr));
  ASSERT_EQ(by_default.status, 200);
  EXPECT_EQ(content(by_default), text);
  EXPECT_GT(accepted(by_default) + rejected(by_default), 0);

  // Seeded sampling: the same draws whatever guesses ride along.
  const Reply seeded_plain = post(port, "/v1/chat/completions", edit_request(false, 0.9f));
  const Reply seeded_model = post(port, "/v1/chat/completions", edit_request("model", 0.9f));
  const Reply seeded_lookup = post(port, "/v1/chat/completions", edit_request("lookup", 0.9f));
  ASSERT_EQ(seeded_plain.status, 200);
  EXPECT_EQ(content(seeded_model), content(seeded_plain));
  EXPECT_EQ(content(seeded_lookup), content(seeded_plain));

  // The counters: everything guessed so far, and what was taken.
  const Reply metrics = get(port, "/metrics");
  ASSERT_EQ(metrics.status, 200);
  int64_t guessed = 0, taken = 0;
  for (const Reply* r : {&lookup, &model, &by_default, &seeded_model, &seeded_lookup}) {
    guessed += accepted(*r) + rejected(*r);
    taken += accepted(*r);
  }
  EXPECT_EQ(metric(metrics.body, "strata_draft_tokens_total"), static_cast<double>(guessed)) << metrics.body;
  EXPECT_EQ(metric(metrics.body, "strata_draft_accepted_tokens_total"), static_cast<double>(taken));
  EXPECT_NEAR(metric(metrics.body, "strata_draft_acceptance_ratio"), static_cast<double>(taken) / guessed, 1e-6);

  const Reply status = get(port, "/strata/v1/status");
  ASSERT_EQ(status.status, 200);
  const Json sp = status.json()["speculative"];
  EXPECT_EQ(sp["default"]["mode"], "model");
  EXPECT_EQ(sp["draft"]["id"], "SmolLM2-135M-Instruct.Q4_1");
  EXPECT_EQ(sp["draft"]["device"], "cpu");
  EXPECT_GT(sp["draft"]["weight_bytes"].get<int64_t>(), 50'000'000);
  EXPECT_EQ(sp["drafted"].get<int64_t>(), guessed);
  EXPECT_EQ(sp["accepted"].get<int64_t>(), taken);

  // The trace's draft lane holds the guessing and the verdicts.
  const Reply trace = get(port, "/strata/v1/trace.json?seconds=600");
  ASSERT_EQ(trace.status, 200);
  EXPECT_NE(trace.body.find("\"draft\""), std::string::npos);
  EXPECT_NE(trace.body.find("draft-accepted"), std::string::npos);

  // Bad values name the parameter.
  for (const Json& bad : {Json("medusa"), Json(""), Json(3), Json{{"max_draft", 99}}, Json{{"mode", "lookup"}, {"depth", 2}},
                          Json{{"adaptive", "yes"}}}) {
    const Reply r = post(port, "/v1/chat/completions", edit_request(bad));
    EXPECT_EQ(r.status, 400) << bad.dump() << " " << r.body;
    EXPECT_EQ(r.json()["error"]["param"], "speculative") << r.body;
  }
}

TEST(ServeSpeculative, AServerWithoutADraftRefusesModelButLooksUp) {
  ServerProcess server({"-m", smollm2(), "--parallel", "1", "--ctx", "256", "-t", "2"});
  ASSERT_NE(server.port(), 0) << server.stderr_text();
  const Reply refused = post(server.port(), "/v1/chat/completions", edit_request("model"));
  EXPECT_EQ(refused.status, 400);
  EXPECT_NE(refused.body.find("--draft"), std::string::npos) << refused.body;
  // true: the best this server has, prompt lookup.
  const Reply plain = post(server.port(), "/v1/chat/completions", edit_request(nullptr));
  const Reply on = post(server.port(), "/v1/chat/completions", edit_request(true));
  ASSERT_EQ(on.status, 200) << on.body;
  EXPECT_EQ(content(on), content(plain));
  EXPECT_EQ(accepted(plain) + rejected(plain), 0);  // the default here is off
  EXPECT_GT(accepted(on), 0);
  const Reply status = get(server.port(), "/strata/v1/status");
  EXPECT_TRUE(status.json()["speculative"]["draft"].is_null());
  EXPECT_EQ(status.json()["speculative"]["default"]["mode"], "off");
}

// A GPU lost in the middle of a speculating stream: the engine re-plans, rebuilds the caches from the
// tokens so far (the guesses it dropped are not among them) and goes on; the text is the text of a
// plain request without the fault.
// (Fault injection needs an API key.)
TEST(ServeSpeculative, ALostGpuMidStreamGivesThePlainText) {
  ServerProcess server({"-m", smollm2(), "--devices", "cpu,sim:gpu0:4GiB,sim:gpu1:4GiB", "--parallel", "1", "--ctx",
                        "256", "-t", "2", "--api-key", "spec-key"});
  ASSERT_NE(server.port(), 0) << server.stderr_text();
  const int port = server.port();
  const Reply plain = post(port, "/v1/chat/completions", edit_request(false), "spec-key");
  ASSERT_EQ(plain.status, 200) << plain.body;
  Json body = edit_request(Json{{"mode", "lookup"}, {"adaptive", false}});
  ASSERT_EQ(post(port, "/strata/v1/devices/gpu1/fault", Json{{"kind", "lost"}, {"after_ops", 1200}}, "spec-key").status, 200);
  const Streamed lost = stream_completion(port, "/v1/chat/completions", body, "spec-key");
  ASSERT_EQ(lost.status, 200);
  ASSERT_EQ(lost.replans.size(), 1u) << "the fault did not land mid-stream";
  EXPECT_GE(lost.replans[0]["at_token"].get<int>(), 2) << "the fault must come after some decode steps";
  EXPECT_EQ(lost.text, content(plain)) << "after gpu1 was lost at token " << lost.replans[0]["at_token"];
  // Guesses were verified on the way (the stream's usage is not asked for: the counters say it).
  const Reply metrics = get(port, "/metrics", "spec-key");
  EXPECT_GT(metric(metrics.body, "strata_draft_accepted_tokens_total"), 0) << metrics.body;
}

}  // namespace
}  // namespace strata::test
