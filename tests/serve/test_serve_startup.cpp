// tests/serve/test_serve_startup.cpp — how `strata-engine serve` places the command line's model:
// without placement options the default layer split, or the auto plan when that does not fit (and
// the status says which); when nothing fits it stays up with no model and says why. And the
// prompt-processing progress a streaming client asks for with "return_progress".
#include "serve/serve_test_util.h"

namespace strata::test {
namespace {

TEST(ServeStartup, FallsBackToTheAutoPlanWhenTheDefaultSplitDoesNotFit) {
  // Two accelerators with room for about one stories260K block each, and the CPU.
  ServerProcess server({"-m", stories_model(), "--threads", "1", "--devices", "cpu,sim:gpu0:256KiB,sim:gpu1:256KiB"});
  ASSERT_NE(server.port(), 0) << server.stderr_text();
  const Json status = get(server.port(), "/strata/v1/status").json();
  ASSERT_EQ(status["state"], "ready") << status.dump();
  ASSERT_TRUE(status["startup"]["error"].is_null()) << status.dump();
  const Json& lines = status["startup"]["explanation"];
  ASSERT_FALSE(lines.empty()) << status.dump();
  EXPECT_EQ(lines[0].get<std::string>().rfind("the default layer split does not fit (", 0), 0u) << lines[0];
  EXPECT_NE(server.stderr_text().find("using the auto plan"), std::string::npos) << server.stderr_text();
  // It serves.
  Reply reply = post(server.port(), "/v1/completions", Json{{"prompt", "Once"}, {"max_tokens", 2}, {"temperature", 0}});
  EXPECT_EQ(reply.status, 200) << reply.body;
}

TEST(ServeStartup, StaysUpWithNoModelAndSaysWhyWhenNothingFits) {
  ServerProcess server({"-m", stories_model(), "--threads", "1", "--devices", "sim:gpu0:64KiB,sim:gpu1:64KiB"});
  ASSERT_NE(server.port(), 0) << "the engine must stay up: " << server.stderr_text();
  const Json status = get(server.port(), "/strata/v1/status").json();
  EXPECT_EQ(status["state"], "empty") << status.dump();
  EXPECT_TRUE(status["model"].is_null());
  ASSERT_TRUE(status["startup"]["error"].is_string()) << status.dump();
  const std::string why = status["startup"]["error"];
  EXPECT_EQ(why.rfind("stories260K is not loaded: ", 0), 0u) << why;
  EXPECT_NE(why.find("gpu0"), std::string::npos) << why;
  EXPECT_EQ(why.find('\n'), std::string::npos) << "one line";
  EXPECT_NE(server.stderr_text().find("no model loaded: stories260K is not loaded"), std::string::npos)
      << server.stderr_text();
  EXPECT_EQ(get(server.port(), "/strata/v1/devices").status, 200);
  Reply chat = post(server.port(), "/v1/chat/completions",
                    Json{{"messages", Json::array({Json{{"role", "user"}, {"content", "hi"}}})}, {"max_tokens", 2}});
  EXPECT_EQ(chat.status, 503) << chat.body;
  EXPECT_EQ(server.stop(), 0);
}

TEST(ServeStartup, StreamsPromptProgressWhenAsked) {
  ServerProcess server({"-m", stories_model(), "--threads", "1", "--batch", "16"});
  ASSERT_NE(server.port(), 0) << server.stderr_text();
  std::string prompt;
  for (int i = 0; i < 6; ++i) prompt += "Once upon a time there was a little girl named Lily. ";
  for (bool asked : {true, false}) {
    std::vector<std::pair<int64_t, int64_t>> progress;
    bool text_seen = false, progress_after_text = false;
    int64_t prompt_tokens = -1;
    const Json body = {{"prompt", prompt}, {"max_tokens", 4}, {"temperature", 0}, {"stream", true},
                       {"stream_options", {{"include_usage", true}}}, {"return_progress", asked}};
    post_stream(server.port(), "/v1/completions", body, [&](const std::string& data) {
      if (data == "[DONE]") return true;
      const Json c = Json::parse(data, nullptr, false);
      if (c.contains("prompt_progress")) {
        progress.emplace_back(c["prompt_progress"]["processed"], c["prompt_progress"]["total"]);
        if (text_seen) progress_after_text = true;
      }
      if (c.contains("usage") && c["usage"].is_object()) prompt_tokens = c["usage"]["prompt_tokens"];
      if (!c["choices"].empty() && !c["choices"][0].value("text", "").empty()) text_seen = true;
      return true;
    });
    if (!asked) {
      EXPECT_TRUE(progress.empty());
      continue;
    }
    ASSERT_GT(prompt_tokens, 32);
    ASSERT_FALSE(progress.empty());
    EXPECT_FALSE(progress_after_text);
    EXPECT_EQ(progress.back(), std::make_pair(prompt_tokens, prompt_tokens));
    for (size_t i = 0; i < progress.size(); ++i) {
      EXPECT_EQ(progress[i].second, prompt_tokens);
      if (i > 0) EXPECT_GT(progress[i].first, progress[i - 1].first);
    }
  }
}

}  // namespace
}  // namespace strata::test
