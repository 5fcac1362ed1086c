// tests/serve/test_serve_features.cpp — the OpenAI request fields of issue 15 over HTTP against
// the real `strata-engine serve` (logprobs, n, logit_bias, echo/suffix, GET /v1/models/{id},
// tools), and the tool-call parser and template hand-off on their own with real chat templates
// (../shared/models/chat_templates).
#include <cmath>
#include <fstream>
#include <sstream>

#include "engine/chat/chat_template.h"
#include "engine/serve/json_constraint.h"
#include "engine/serve/tool_calls.h"
#include "serve/serve_test_util.h"

namespace strata::test {
namespace {

Json completion(int port, Json body) {
  Reply r = post(port, "/v1/completions", body);
  EXPECT_EQ(r.status, 200) << r.body;
  return r.json();
}

TEST(ServeFeatures, ChatLogprobsAreConsistentWithGreedyChoice) {
  ServerProcess server({"-m", stories_model()});
  ASSERT_NE(server.port(), 0) << server.stderr_text();
  Json body = chat_body("Once upon a time", 8);
  body["logprobs"] = true;
  body["top_logprobs"] = 3;
  Reply r = post(server.port(), "/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const Json choice = r.json()["choices"][0];
  const Json& content = choice["logprobs"]["content"];
  ASSERT_EQ(content.size(), 8u) << r.body;
  std::string joined;
  for (const Json& e : content) {
    joined += e["token"].get<std::string>();
    const double lp = e["logprob"].get<double>();
    EXPECT_LE(lp, 0.0);
    ASSERT_EQ(e["top_logprobs"].size(), 3u);
    // Greedy: the sampled token is the most likely one, and the list is sorted.
    EXPECT_EQ(e["top_logprobs"][0]["token"], e["token"]);
    EXPECT_NEAR(e["top_logprobs"][0]["logprob"].get<double>(), lp, 1e-5);
    EXPECT_GE(e["top_logprobs"][0]["logprob"].get<double>(), e["top_logprobs"][1]["logprob"].get<double>());
    EXPECT_EQ(e["bytes"].size(), e["token"].get<std::string>().size());
  }
  // The pieces spell the text (up to the SPM leading space of the first piece).
  const std::string text = choice["message"]["content"];
  EXPECT_NE(joined.find(text.substr(1)), std::string::npos) << joined << " | " << text;
  // Without logprobs the field is null; top_logprobs without logprobs is a 400.
  EXPECT_TRUE(post(server.port(), "/v1/chat/completions", chat_body("Once upon a time", 2)).json()["choices"][0]["logprobs"].is_null());
  Json bad = chat_body("Once upon a time", 2);
  bad["top_logprobs"] = 2;
  EXPECT_EQ(post(server.port(), "/v1/chat/completions", bad).status, 400);
  bad["logprobs"] = true;
  bad["top_logprobs"] = 21;
  EXPECT_EQ(post(server.port(), "/v1/chat/completions", bad).status, 400);
}

TEST(ServeFeatures, CompletionLogprobsAndStreamedLogprobs) {
  ServerProcess server({"-m", stories_model()});
  ASSERT_NE(server.port(), 0) << server.stderr_text();
  const int port = server.port();
  Json j = completion(port, Json{{"prompt", "Once upon a time"}, {"max_tokens", 6}, {"temperature", 0}, {"logprobs", 2}});
  const Json& lp = j["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), 6u) << j.dump();
  ASSERT_EQ(lp["token_logprobs"].size(), 6u);
  ASSERT_EQ(lp["top_logprobs"].size(), 6u);
  EXPECT_EQ(lp["top_logprobs"][0].size(), 2u);
  EXPECT_EQ(lp["text_offset"][0], 0);
  EXPECT_EQ(lp["text_offset"][1], lp["tokens"][0].get<std::string>().size());
  // Streamed: every token's entry arrives, in the same order and with the same values.
  Json body = chat_body("Once upon a time", 6);
  body["logprobs"] = true;
  body["stream"] = true;
  std::vector<Json> streamed;
  post_stream(port, "/v1/chat/completions", body, [&](const std::string& data) {
    if (data == "[DONE]") return true;
    Json c = Json::parse(data, nullptr, false);
    if (c.contains("choices") && !c["choices"].empty() && c["choices"][0]["logprobs"].is_object())
      for (const Json& e : c["choices"][0]["logprobs"]["content"]) streamed.push_back(e);
    return true;
  });
  Json blocking = chat_body("Once upon a time", 6);
  blocking["logprobs"] = true;
  const Json whole = post(port, "/v1/chat/completions", blocking).json()["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(streamed.size(), whole.size());
  for (size_t i = 0; i < streamed.size(); ++i) {
    EXPECT_EQ(streamed[i]["token"], whole[i]["token"]);
    EXPECT_NEAR(streamed[i]["logprob"].get<double>(), whole[i]["logprob"].get<double>(), 1e-5);
  }
}

TEST(ServeFeatures, SeveralChoicesInOneRequest) {
  ServerProcess server({"-m", stories_model(), "--parallel", "2"});
  ASSERT_NE(server.port(), 0) << server.stderr_text();
  const int port = server.port();
  Json body = chat_body("Once upon a time", 10);
  body["n"] = 3;
  Reply r = post(port, "/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const Json j = r.json();
  ASSERT_EQ(j["choices"].size(), 3u);
  const std::string single = post(port, "/v1/chat/completions", chat_body("Once upon a time", 10)).json()["choices"][0]["message"]["content"];
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(j["choices"][i]["index"], i);
    EXPECT_EQ(j["choices"][i]["message"]["content"], single);  // greedy: all the same
  }
  EXPECT_EQ(j["usage"]["completion_tokens"], 30);
  EXPECT_EQ(j["usage"]["prompt_tokens"], 5);
  // The choices read the prompt once: the others copy all of it but the last token (whose logits
  // each needs), so 5 + 2 prompt tokens were evaluated.
  EXPECT_EQ(j["usage"]["prompt_tokens_evaluated"], 7);
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  // Streamed, each choice's chunks carry its index and end with its own finish_reason.
  body["stream"] = true;
  std::map<int, std::string> text;
  std::map<int, std::string> finish;
  bool done = false;
  post_stream(port, "/v1/chat/completions", body, [&](const std::string& data) {
    if (data == "[DONE]") return done = true;
    Json c = Json::parse(data, nullptr, false);
    for (const Json& ch : c["choices"]) {
      const int i = ch["index"];
      if (ch["delta"].contains("content")) text[i] += ch["delta"]["content"].get<std::string>();
      if (!ch["finish_reason"].is_null()) finish[i] = ch["finish_reason"];
    }
    return true;
  });
  EXPECT_TRUE(done);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(text[i], single);
    EXPECT_EQ(finish[i], "length");
  }
  Json too_many = chat_body("Once upon a time", 2);
  too_many["n"] = 17;
  EXPECT_EQ(post(port, "/v1/chat/completions", too_many).status, 400);
}

TEST(ServeFeatures, LogitBiasIsAppliedAndValidated) {
  ServerProcess server({"-m", stories_model()});
  ASSERT_NE(server.port(), 0) << server.stderr_text();
  const int port = server.port();
  // Push one token to the top: greedy decoding then produces only it.
  Json j = completion(port, Json{{"prompt", "Once upon a time"}, {"max_tokens", 4}, {"temperature", 0},
                                 {"logprobs", 0}, {"logit_bias", {{"300", 100}}}});
  for (const Json& t : j["choices"][0]["logprobs"]["tokens"]) EXPECT_EQ(t, j["choices"][0]["logprobs"]["tokens"][0]);
  Json lp = completion(port, Json{{"prompt", "Once upon a time"}, {"max_tokens", 1}, {"temperature", 0}, {"logprobs", 0},
                                  {"logit_bias", {{"300", 100}}}});
  EXPECT_GT(lp["choices"][0]["logprobs"]["token_logprobs"][0].get<double>(), -0.01);
  for (const Json& bad : {Json{{"abc", 1}}, Json{{"999999", 1}}, Json{{"5", 101}}, Json{{"5", "x"}}, Json(5)}) {
    Reply r = post(port, "/v1/completions", Json{{"prompt", "Once"}, {"max_tokens", 1}, {"logit_bias", bad}});
    EXPECT_EQ(r.status, 400) << bad.dump();
    EXPECT_EQ(r.json()["error"]["param"], "logit_bias");
  }
}

TEST(ServeFeatures, EchoSuffixAreRefusedAndModelsById) {
  ServerProcess server({"-m", stories_model()});
  ASSERT_NE(server.port(), 0) << server.stderr_text();
  const int port = server.port();
  Reply echo = post(port, "/v1/completions", Json{{"prompt", "Once"}, {"max_tokens", 1}, {"echo", true}});
  EXPECT_EQ(echo.status, 400);
  EXPECT_EQ(echo.json()["error"]["param"], "echo");
  EXPECT_EQ(post(port, "/v1/completions", Json{{"prompt", "Once"}, {"max_tokens", 1}, {"echo", false}}).status, 200);
  Reply suffix = post(port, "/v1/completions", Json{{"prompt", "Once"}, {"max_tokens", 1}, {"suffix", "end"}});
  EXPECT_EQ(suffix.status, 400);
  EXPECT_EQ(suffix.json()["error"]["param"], "suffix");
  Reply model = get(port, "/v1/models/stories260K");
  ASSERT_EQ(model.status, 200) << model.body;
  EXPECT_EQ(model.json()["id"], "stories260K");
  EXPECT_EQ(model.json()["object"], "model");
  Reply missing = get(port, "/v1/models/gpt-4o");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.json()["error"]["code"], "model_not_found");
  // A template that never mentions tools (stories260K has none at all) gets them in a generic
  // system message (issue 48; it was a 400 tools_unsupported): the prompt grows by their text.
  Json tools = chat_body("Once upon a time", 2);
  tools["tools"] = Json::array({Json{{"type", "function"}, {"function", {{"name", "get_time"}, {"parameters", Json::object()}}}}});
  Reply t = post(port, "/v1/chat/completions", tools);
  ASSERT_EQ(t.status, 200) << t.body;
  Reply plain = post(port, "/v1/chat/completions", chat_body("Once upon a time", 2));
  EXPECT_GT(t.json()["usage"]["prompt_tokens"].get<int>(), plain.json()["usage"]["prompt_tokens"].get<int>() + 20);
  tools["tool_choice"] = "none";
  Reply none = post(port, "/v1/chat/completions", tools);
  EXPECT_EQ(none.status, 200);
  EXPECT_EQ(none.json()["usage"]["prompt_tokens"], plain.json()["usage"]["prompt_tokens"]);
}

// The tool-call parser: Qwen / Hermes and Llama 3.x output.
serve::ToolMode weather_tools(serve::ToolFormat format) {
  serve::ToolMode m;
  Json body = {{"tools", Json::array({Json{{"type", "function"},
                                           {"function", {{"name", "get_weather"},
                                                         {"parameters", {{"type", "object"},
                                                                         {"properties", {{"city", {{"type", "string"}}}}}}}}}}})}};
  EXPECT_FALSE(serve::parse_tools(body, m).has_value());
  m.format = format;
  return m;
}

TEST(ToolCalls, ParsesHermesQwenCalls) {
  const serve::ToolMode m = weather_tools(serve::ToolFormat::Hermes);
  auto p = serve::parse_tool_calls(
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n</tool_call>",
      m);
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.content, "Let me check.");
  EXPECT_EQ(p.calls[0]["type"], "function");
  EXPECT_EQ(p.calls[0]["function"]["name"], "get_weather");
  EXPECT_EQ(Json::parse(p.calls[1]["function"]["arguments"].get<std::string>())["city"], "Rome");
  EXPECT_EQ(p.calls[0]["id"].get<std::string>().rfind("call_", 0), 0u);
  // Unknown names and broken JSON stay text; a missing closing tag at the end is tolerated.
  EXPECT_TRUE(serve::parse_tool_calls("<tool_call>{\"name\": \"rm_rf\", \"arguments\": {}}</tool_call>", m).calls.empty());
  EXPECT_TRUE(serve::parse_tool_calls("<tool_call>{\"name\": \"get_weather\", </tool_call>", m).calls.empty());
  EXPECT_EQ(serve::parse_tool_calls("<tool_call>{\"name\": \"get_weather\", \"arguments\": {}}", m).calls.size(), 1u);
  EXPECT_EQ(serve::parse_tool_calls("just text", m).content, "just text");
}

TEST(ToolCalls, ParsesLlama3Calls) {
  const serve::ToolMode m = weather_tools(serve::ToolFormat::Llama3);
  auto p = serve::parse_tool_calls("{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}", m);
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(Json::parse(p.calls[0]["function"]["arguments"].get<std::string>())["city"], "Oslo");
  EXPECT_TRUE(p.content.empty());
  auto tagged = serve::parse_tool_calls("<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"A\"}}; "
                                        "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"B\"}}",
                                        m);
  EXPECT_EQ(tagged.calls.size(), 2u);
  EXPECT_TRUE(serve::parse_tool_calls("The weather is fine.", m).calls.empty());
}

// A Qwen 3 vocabulary (and its chat template, which renders tools) on random weights: the tools
// reach the prompt, and a reply shaped as a call (forced here with response_format) comes back
// as tool_calls, streamed or not.
TEST(ServeFeatures, ToolsEndToEndWithAQwenTemplate) {
  const auto dir = temp_dir("tools");
  const std::string model = (dir / "qwen-tools.gguf").string();
  if (!std::filesystem::exists(model)) {
    CliRun r = engine({"make-model", "--vocab-from", shared_model("tokenizers/vocab-qwen3.gguf").string(), "--dim", "64",
                       "--layers", "1", "--heads", "2", "--ffn", "128", "--ctx", "2048", "--type", "q8_0", "--seed", "5",
                       "-o", model});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  ServerProcess server({"-m", model, "--ctx", "2048"});
  ASSERT_NE(server.port(), 0) << server.stderr_text();
  const int port = server.port();
  const Json tools = Json::array({Json{{"type", "function"},
                                       {"function", {{"name", "get_weather"},
                                                     {"description", "Weather of a city"},
                                                     {"parameters", {{"type", "object"},
                                                                     {"properties", {{"city", {{"type", "string"}, {"maxLength", 8}}}}}}}}}}});
  Json plain = {{"messages", Json::array({Json{{"role", "user"}, {"content", "Weather in Paris?"}}})},
                {"max_tokens", 1}, {"temperature", 0}};
  Reply without = post(port, "/v1/chat/completions", plain);
  ASSERT_EQ(without.status, 200) << without.body;
  Json with_tools = plain;
  with_tools["tools"] = tools;
  Reply with = post(port, "/v1/chat/completions", with_tools);
  ASSERT_EQ(with.status, 200) << with.body;
  // The template wrote the tool list into the prompt.
  EXPECT_GT(with.json()["usage"]["prompt_tokens"].get<int>(), without.json()["usage"]["prompt_tokens"].get<int>() + 20);
  // A tool turn and a tool result render.
  Json turns = with_tools;
  turns["messages"].push_back(Json{{"role", "assistant"}, {"content", nullptr},
                                   {"tool_calls", Json::array({Json{{"id", "call_1"}, {"type", "function"},
                                                                    {"function", {{"name", "get_weather"}, {"arguments", "{\"city\":\"Paris\"}"}}}}})}});
  turns["messages"].push_back(Json{{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "sunny"}});
  EXPECT_EQ(post(port, "/v1/chat/completions", turns).status, 200);
  // A reply that is a call: forced into the call shape by a schema.
  Json call = with_tools;
  call["max_tokens"] = 60;
  call["response_format"] = {{"type", "json_schema"},
                             {"json_schema", {{"name", "call"}, {"schema", Json::parse(R"({"type":"object","properties":{
      "name":{"enum":["get_weather"]},"arguments":{"type":"object","properties":{"city":{"type":"string","maxLength":8}}}}})")}}}};
  Reply r = post(port, "/v1/chat/completions", call);
  ASSERT_EQ(r.status, 200) << r.body;
  const Json choice = r.json()["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls") << r.body;
  ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u) << r.body;
  EXPECT_EQ(choice["message"]["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_TRUE(Json::parse(choice["message"]["tool_calls"][0]["function"]["arguments"].get<std::string>())["city"].is_string());
  EXPECT_TRUE(choice["message"]["content"].is_null());
  // Streamed: one tool_calls delta, then finish_reason tool_calls.
  call["stream"] = true;
  Json streamed_calls = Json::array();
  std::string finish;
  post_stream(port, "/v1/chat/completions", call, [&](const std::string& data) {
    if (data == "[DONE]") return true;
    Json c = Json::parse(data, nullptr, false);
    if (!c.contains("choices") || c["choices"].empty()) return true;
    const Json& ch = c["choices"][0];
    if (ch.contains("delta") && ch["delta"].contains("tool_calls"))
      for (const Json& t : ch["delta"]["tool_calls"]) streamed_calls.push_back(t);
    if (!ch["finish_reason"].is_null()) finish = ch["finish_reason"];
    return true;
  });
  EXPECT_EQ(finish, "tool_calls");
  ASSERT_EQ(streamed_calls.size(), 1u);
  EXPECT_EQ(streamed_calls[0]["index"], 0);
  EXPECT_EQ(streamed_calls[0]["function"]["name"], "get_weather");
  // tool_choice "required" (one tool: its parameters) and a named function (no parameters: {})
  // force a call without any response_format.
  Json one_tool = with_tools;
  one_tool["max_tokens"] = 80;
  one_tool["tool_choice"] = "required";
  Json two_tools = one_tool;
  two_tools["tools"].push_back(Json{{"type", "function"}, {"function", {{"name", "get_time"}}}});
  two_tools["tool_choice"] = {{"type", "function"}, {"function", {{"name", "get_time"}}}};
  for (const Json& forced : {one_tool, two_tools}) {
    Reply f = post(port, "/v1/chat/completions", forced);
    ASSERT_EQ(f.status, 200) << f.body;
    const Json fc = f.json()["choices"][0];
    EXPECT_EQ(fc["finish_reason"], "tool_calls") << f.body;
    ASSERT_TRUE(fc["message"]["tool_calls"].is_array()) << f.body;
    ASSERT_EQ(fc["message"]["tool_calls"].size(), 1u) << f.body;
    const Json fn = fc["message"]["tool_calls"][0]["function"];
    if (forced["tools"].size() == 2) {
      EXPECT_EQ(fn["name"], "get_time");
      EXPECT_EQ(fn["arguments"], "{}");
    } else {
      EXPECT_EQ(fn["name"], "get_weather");
      EXPECT_TRUE(Json::parse(fn["arguments"].get<std::string>())["city"].is_string()) << fn;
    }
  }
  Json both = call;
  both["stream"] = false;
  both["tool_choice"] = "required";
  EXPECT_EQ(post(port, "/v1/chat/completions", both).status, 400);
}

TEST(ToolCalls, RequestValidation) {
  serve::ToolMode m;
  EXPECT_TRUE(serve::parse_tools(Json{{"tools", "x"}}, m).has_value());
  EXPECT_TRUE(serve::parse_tools(Json{{"tools", Json::array({Json{{"type", "function"}}})}}, m).has_value());
  EXPECT_TRUE(serve::parse_tools(Json{{"functions", Json::array()}}, m).has_value());
  Json ok = {{"tools", Json::array({Json{{"type", "function"}, {"function", {{"name", "f"}}}}})}};
  Json required = ok;
  required["tool_choice"] = "required";
  EXPECT_FALSE(serve::parse_tools(required, m).has_value());
  EXPECT_TRUE(m.forced);
  EXPECT_TRUE(m.forced_name.empty());
  Json named = ok;
  named["tool_choice"] = {{"type", "function"}, {"function", {{"name", "f"}}}};
  EXPECT_FALSE(serve::parse_tools(named, m).has_value());
  EXPECT_EQ(m.forced_name, "f");
  named["tool_choice"]["function"]["name"] = "g";
  EXPECT_TRUE(serve::parse_tools(named, m).has_value());
  named["tool_choice"] = "sometimes";
  EXPECT_TRUE(serve::parse_tools(named, m).has_value());
  EXPECT_FALSE(serve::parse_tools(ok, m).has_value());
  EXPECT_TRUE(m.enabled);
  EXPECT_FALSE(m.forced);
}

std::string read_template(const std::string& name) {
  std::ifstream in(shared_model("chat_templates/" + name));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The tools reach the template as its `tools` variable and the tool turns render: Qwen 2.5 and
// Llama 3.1 templates, as the server renders them (assistant arguments as objects).
TEST(ToolCalls, TemplatesRenderToolsAndToolTurns) {
  for (const std::string name : {"Qwen-Qwen2.5-7B-Instruct.jinja", "meta-llama-Llama-3.1-8B-Instruct.jinja"}) {
    const std::string src = read_template(name);
    ASSERT_FALSE(src.empty()) << name;
    auto tmpl = chat::ChatTemplate::parse(src);
    ASSERT_TRUE(tmpl.ok()) << tmpl.error().message;
    nlohmann::ordered_json messages = nlohmann::ordered_json::parse(R"([
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "sunny"}])");
    chat::ChatTemplateOptions opts;
    opts.bos_token = "<s>";
    opts.extra_context["tools"] = nlohmann::ordered_json::parse(
        R"([{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}])");
    auto text = tmpl->render_json(messages, opts);
    ASSERT_TRUE(text.ok()) << name << ": " << text.error().message;
    EXPECT_NE(text->find("Weather of a city"), std::string::npos) << name << "\n" << *text;
    EXPECT_NE(text->find("sunny"), std::string::npos) << name;
    EXPECT_NE(text->find("Paris"), std::string::npos) << name;
  }
  EXPECT_EQ(serve::tool_format_of_template(read_template("Qwen-Qwen2.5-7B-Instruct.jinja")), serve::ToolFormat::Hermes);
  EXPECT_EQ(serve::tool_format_of_template(read_template("meta-llama-Llama-3.1-8B-Instruct.jinja")), serve::ToolFormat::Llama3);
}

// The recognizer accepts exactly the JSON of its schema, byte by byte.
bool recognizes(const serve::CompiledSchema& schema, const std::string& text) {
  serve::JsonRecognizer r(std::make_shared<const serve::CompiledSchema>(schema));
  return r.feed(text) && r.complete();
}

TEST(JsonConstraint, RecognizerAcceptsItsSchemaOnly) {
  const serve::CompiledSchema any = serve::any_object_schema();
  for (const char* ok : {"{}", R"({"a":1})", R"({"a":[1,-2.5e+3,"x",true,null,{"b":{}}],"c":"\u00e9\n"})",
                         "{\"k\":\"\xc3\xa9\"}"})
    EXPECT_TRUE(recognizes(any, ok)) << ok;
  for (const char* bad : {"[]", "{", R"({"a":})", R"({"a":01})", R"({"a":tru})", R"({a:1})", "{} ",
                          "{\"k\":\"\xc3\"}", R"({"a":1,})"})
    EXPECT_FALSE(recognizes(any, bad)) << bad;
  auto schema = serve::compile_schema(nlohmann::ordered_json::parse(R"({"type":"object","properties":{
      "name":{"type":"string","maxLength":3},"n":{"type":"integer"},"e":{"enum":["x",1,12,null]},
      "l":{"type":"array","items":{"type":"boolean"},"minItems":1,"maxItems":2}},"required":["name"]})"));
  ASSERT_TRUE(schema.ok()) << schema.error().message;
  EXPECT_TRUE(recognizes(*schema, R"({"name":"abc","n":-7,"e":12,"l":[true]})"));
  EXPECT_TRUE(recognizes(*schema, R"({"name":"","n":0,"e":1,"l":[false,true]})"));
  EXPECT_TRUE(recognizes(*schema, R"({"name":"","n":0,"e":null,"l":[false]})"));
  EXPECT_FALSE(recognizes(*schema, R"({"name":"abcd","n":1,"e":1,"l":[true]})"));   // maxLength
  EXPECT_FALSE(recognizes(*schema, R"({"name":"a","n":1.5,"e":1,"l":[true]})"));    // integer
  EXPECT_FALSE(recognizes(*schema, R"({"name":"a","n":1,"e":2,"l":[true]})"));      // enum
  EXPECT_FALSE(recognizes(*schema, R"({"name":"a","n":1,"e":1,"l":[]})"));          // minItems
  EXPECT_FALSE(recognizes(*schema, R"({"name":"a","n":1,"e":1,"l":[true,true,true]})"));
  EXPECT_FALSE(recognizes(*schema, R"({"n":1,"name":"a","e":1,"l":[true]})"));      // schema order
  for (const char* bad : {R"({"anyOf":[]})", R"({"type":"string","pattern":"x"})", R"({"$ref":"#/x"})",
                          R"({"anyOf":[{"type":"string"},{"type":"string","maxLength":2}]})",
                          R"({"anyOf":[{"type":"integer"},{"type":"number"}]})", R"({"anyOf":[{},{"type":"null"}]})"})
    EXPECT_FALSE(serve::compile_schema(nlohmann::ordered_json::parse(bad)).ok()) << bad;
}

// Issue 48: anyOf / oneOf / type lists whose alternatives start differently, and local $refs
// (recursive ones too) -- what Pydantic writes for Optional fields and nested models.
TEST(JsonConstraint, AnyOfTypeListsAndRefs) {
  auto optional = serve::compile_schema(nlohmann::ordered_json::parse(R"({"type":"object","properties":{
      "a":{"anyOf":[{"type":"string","maxLength":2},{"type":"null"}]},
      "b":{"type":["integer","null"]},
      "c":{"oneOf":[{"const":"x"},{"const":"y"},{"type":"array","items":{"type":"integer"}}]}}})"));
  ASSERT_TRUE(optional.ok()) << optional.error().message;
  EXPECT_TRUE(recognizes(*optional, R"({"a":"hi","b":3,"c":"y"})"));
  EXPECT_TRUE(recognizes(*optional, R"({"a":null,"b":null,"c":[1,2]})"));
  EXPECT_FALSE(recognizes(*optional, R"({"a":"abc","b":3,"c":"x"})"));  // maxLength of the string branch
  EXPECT_FALSE(recognizes(*optional, R"({"a":1,"b":3,"c":"x"})"));
  EXPECT_FALSE(recognizes(*optional, R"({"a":null,"b":"3","c":"x"})"));
  EXPECT_FALSE(recognizes(*optional, R"({"a":null,"b":3,"c":"z"})"));
  auto refs = serve::compile_schema(nlohmann::ordered_json::parse(R"({"$defs":{
      "Pet":{"type":"object","properties":{"kind":{"enum":["cat","dog"]}}},
      "Node":{"type":"object","properties":{"v":{"type":"integer"},"next":{"anyOf":[{"$ref":"#/$defs/Node"},{"type":"null"}]}}}},
      "type":"object","properties":{"pet":{"$ref":"#/$defs/Pet"},"list":{"$ref":"#/$defs/Node"}}})"));
  ASSERT_TRUE(refs.ok()) << refs.error().message;
  EXPECT_TRUE(recognizes(*refs, R"({"pet":{"kind":"cat"},"list":{"v":1,"next":{"v":2,"next":null}}})"));
  EXPECT_FALSE(recognizes(*refs, R"({"pet":{"kind":"cow"},"list":{"v":1,"next":null}})"));
  EXPECT_FALSE(recognizes(*refs, R"({"pet":{"kind":"cat"},"list":{"v":1,"next":{"v":"2","next":null}}})"));
}

TEST(JsonConstraint, MaskAllowsOnlyTokensThatKeepAValidPrefix) {
  auto pieces = std::make_shared<const std::vector<std::string>>(
      std::vector<std::string>{"", "{", "}", "{\"", "a", "\":", "1", "}x", " ", "\"", "\"a\":1}", "tr"});
  auto trie = std::make_shared<const serve::TokenTrie>(*pieces);
  serve::JsonConstraint c(std::make_shared<const serve::CompiledSchema>(serve::any_object_schema()), trie, pieces, 0);
  auto allowed = [&] {
    std::vector<float> logits(pieces->size(), 0.0f);
    c.mask(logits.data());
    std::vector<int> out;
    for (size_t i = 0; i < logits.size(); ++i)
      if (std::isfinite(logits[i])) out.push_back(static_cast<int>(i));
    return out;
  };
  EXPECT_EQ(allowed(), (std::vector<int>{1, 3}));  // "{" and "{\""
  c.accept(1);
  EXPECT_EQ(allowed(), (std::vector<int>{2, 5, 9, 10}));  // "}", "\":" (a key with a colon), "\"", "\"a\":1}"
  c.accept(10);
  EXPECT_TRUE(c.complete());
  EXPECT_EQ(allowed(), (std::vector<int>{0}));  // nothing fits: the fallback (end of generation)
}

TEST(ServeFeatures, ResponseFormatJsonSchemaOutputValidates) {
  ServerProcess server({"-m", stories_model()});
  ASSERT_NE(server.port(), 0) << server.stderr_text();
  const int port = server.port();
  const Json schema = Json::parse(R"({"type":"object","properties":{"name":{"type":"string","maxLength":10},
      "age":{"type":"integer"},"pet":{"enum":["cat","dog"]},"tags":{"type":"array","items":{"type":"string","maxLength":5},
      "maxItems":2}},"required":["name","age","pet","tags"]})");
  for (int seed = 0; seed < 3; ++seed) {
    Json body = chat_body("Once upon a time", 150);
    body["temperature"] = 1.0;
    body["seed"] = seed;
    body["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"name", "p"}, {"schema", schema}}}};
    Reply r = post(port, "/v1/chat/completions", body);
    ASSERT_EQ(r.status, 200) << r.body;
    const Json choice = r.json()["choices"][0];
    EXPECT_EQ(choice["finish_reason"], "stop") << r.body;
    const Json value = Json::parse(choice["message"]["content"].get<std::string>(), nullptr, false);
    ASSERT_TRUE(value.is_object()) << r.body;
    EXPECT_TRUE(value["name"].is_string() && value["name"].get<std::string>().size() <= 10) << value;
    EXPECT_TRUE(value["age"].is_number_integer()) << value;
    EXPECT_TRUE(value["pet"] == "cat" || value["pet"] == "dog") << value;
    EXPECT_TRUE(value["tags"].is_array() && value["tags"].size() <= 2) << value;
  }
  Json bad = chat_body("Once upon a time", 10);
  bad["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"name", "p"}, {"schema", {{"anyOf", Json::array()}}}}}};
  Reply r = post(port, "/v1/chat/completions", bad);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.json()["error"]["code"], "unsupported_schema");
  bad["response_format"] = {{"type", "yaml"}};
  EXPECT_EQ(post(port, "/v1/chat/completions", bad).status, 400);
  Json obj = chat_body("Once upon a time", 100);
  obj["response_format"] = {{"type", "json_object"}};
  Reply o = post(port, "/v1/chat/completions", obj);
  ASSERT_EQ(o.status, 200) << o.body;
  const std::string text = o.json()["choices"][0]["message"]["content"];
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text[0], '{') << text;
  if (o.json()["choices"][0]["finish_reason"] == "stop") EXPECT_TRUE(Json::parse(text, nullptr, false).is_object()) << text;
}

}  // namespace
}  // namespace strata::test
