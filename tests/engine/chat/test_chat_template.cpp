// tests/engine/chat/test_chat_template.cpp — renders every chat template (the shared Hugging Face ones and
// our built-ins) for the conversations in tests/data/chat/goldens.json and compares byte for byte with
// what Python's jinja2 rendered (tools/gen_chat_goldens.py). Also the public API's edges.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include "engine/chat/chat_template.h"

namespace strata::chat {
namespace {

using nlohmann::ordered_json;

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const ordered_json& goldens() {
  static const ordered_json doc = [] {
    std::string text = read_file(std::filesystem::path(STRATA_SOURCE_DIR) / "tests/data/chat/goldens.json");
    return text.empty() ? ordered_json() : ordered_json::parse(text);
  }();
  return doc;
}

std::tm golden_now() {
  std::tm tm{};
  std::string now = goldens().at("now").get<std::string>();  // 2024-09-03T14:05:09
  std::istringstream in(now);
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
  return tm;
}

ChatTemplateOptions options_of(const ordered_json& c) {
  ChatTemplateOptions o;
  const ordered_json& opt = c.at("options");
  o.add_generation_prompt = opt.at("add_generation_prompt").get<bool>();
  o.bos_token = opt.at("bos_token").get<std::string>();
  o.eos_token = opt.at("eos_token").get<std::string>();
  if (opt.contains("extra_context")) o.extra_context = opt.at("extra_context");
  o.now = golden_now();
  return o;
}

std::string first_difference(const std::string& got, const std::string& want) {
  size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  auto around = [&](const std::string& s) { return s.substr(i > 40 ? i - 40 : 0, 100); };
  return "first difference at byte " + std::to_string(i) + "\n--- got:  [" + around(got) + "]\n--- want: [" + around(want) + "]";
}

struct Tally {
  int checked = 0;
  int skipped = 0;
};

// Runs every golden case whose template name satisfies `select`.
Tally check_cases(bool builtin) {
  Tally tally;
  const ordered_json& doc = goldens();
  std::map<std::string, Expected<ChatTemplate>> parsed;
  for (const ordered_json& c : doc.at("cases")) {
    std::string name = c.at("template").get<std::string>();
    bool is_builtin = name.rfind("builtin:", 0) == 0;
    if (is_builtin != builtin) continue;
    std::string conversation = c.at("conversation").get<std::string>();
    SCOPED_TRACE(name + " / " + conversation + " / " + c.at("options").dump());
    auto it = parsed.find(name);
    if (it == parsed.end()) {
      std::string source;
      if (is_builtin) {
        auto s = builtin_template_source(name.substr(8));
        EXPECT_TRUE(s.ok()) << name;
        if (!s.ok()) continue;
        source = *s;
      } else {
        std::filesystem::path path = std::filesystem::path(STRATA_SHARED_MODELS_DIR) / "chat_templates" / name;
        if (!std::filesystem::exists(path)) {
          ++tally.skipped;
          continue;
        }
        source = read_file(path);
        EXPECT_EQ(source.size(), c.at("template_bytes").get<size_t>()) << "template changed since the goldens: rerun tools/gen_chat_goldens.py";
      }
      it = parsed.emplace(name, ChatTemplate::parse(source)).first;
    }
    const Expected<ChatTemplate>& tmpl = it->second;
    if (!tmpl.ok()) {
      ADD_FAILURE() << "parse failed: " << tmpl.error().message;
      continue;
    }
    ++tally.checked;
    Expected<std::string> out = tmpl->render_json(doc.at("conversations").at(conversation), options_of(c));
    if (c.contains("expected")) {
      std::string want = c.at("expected").get<std::string>();
      if (!out.ok()) {
        ADD_FAILURE() << "render failed: " << out.error().message;
      } else if (*out != want) {
        ADD_FAILURE() << first_difference(*out, want);
      }
    } else if (c.contains("raised")) {
      if (out.ok()) {
        ADD_FAILURE() << "expected raise_exception(" << c.at("raised") << "), rendered:\n" << *out;
      } else {
        EXPECT_EQ(out.error().code, Code::InvalidArgument);
        EXPECT_EQ(out.error().message, c.at("raised").get<std::string>());
      }
    } else {
      EXPECT_FALSE(out.ok()) << "jinja2 failed with " << c.at("error") << " but we rendered:\n" << (out.ok() ? *out : "");
      if (!out.ok()) {
        EXPECT_EQ(out.error().code, Code::InvalidArgument);
      }
    }
  }
  return tally;
}

TEST(ChatTemplateGoldens, GoldensFileIsThere) {
  ASSERT_TRUE(goldens().is_object()) << "tests/data/chat/goldens.json is missing";
  EXPECT_GT(goldens().at("cases").size(), 400u);
}

TEST(ChatTemplateGoldens, HuggingFaceTemplatesMatchJinja2) {
  if (!goldens().is_object()) GTEST_FAIL() << "no goldens";
  Tally t = check_cases(false);
  if (t.checked == 0) GTEST_FAIL() << "no templates under " << STRATA_SHARED_MODELS_DIR << "/chat_templates";
  EXPECT_GE(t.checked, 300);
  EXPECT_EQ(t.skipped, 0);
}

TEST(ChatTemplateGoldens, BuiltinTemplatesMatchJinja2) {
  ASSERT_TRUE(goldens().is_object());
  Tally t = check_cases(true);
  EXPECT_EQ(t.checked, 8 * 17);  // 8 built-ins x 17 conversation/option combinations
}

TEST(ChatTemplateGoldens, EveryTemplateInTheFolderHasGoldens) {
  std::filesystem::path dir = std::filesystem::path(STRATA_SHARED_MODELS_DIR) / "chat_templates";
  if (!std::filesystem::exists(dir)) GTEST_FAIL() << "no " << dir;
  std::set<std::string> covered;
  for (const ordered_json& c : goldens().at("cases")) covered.insert(c.at("template").get<std::string>());
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".jinja") continue;
    EXPECT_TRUE(covered.count(entry.path().filename().string())) << entry.path() << ": rerun tools/gen_chat_goldens.py";
    auto parsed = ChatTemplate::parse(read_file(entry.path()));
    EXPECT_TRUE(parsed.ok()) << entry.path() << ": " << (parsed.ok() ? "" : parsed.error().message);
  }
}

// ---- public API ----

TEST(ChatTemplateApi, MessagesStructMatchesJsonMessages) {
  auto t = ChatTemplate::parse(*builtin_template_source("chatml"));
  ASSERT_TRUE(t.ok());
  std::vector<ChatMessage> msgs = {{"system", "Be brief."}, {"user", "Hi"}};
  ChatTemplateOptions o;
  auto out = t->render(msgs, o);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(*out, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  o.add_generation_prompt = false;
  EXPECT_EQ(*t->render(msgs, o), "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
}

TEST(ChatTemplateApi, ExtraFieldsReachTheTemplate) {
  auto t = ChatTemplate::parse(
      "{% for m in messages %}{{ m.role }}:{{ m.content is none }}:{% if m.tool_calls %}{{ m.tool_calls[0].function.name }}{% endif %};{% endfor %}"
      "{{ tools | length }}");
  ASSERT_TRUE(t.ok());
  ChatMessage call{"assistant", ""};
  call.extra = {{"content", nullptr}, {"tool_calls", {{{"function", {{"name", "f"}}}}}}};
  ChatTemplateOptions o;
  o.extra_context = nlohmann::json{{"tools", {1, 2, 3}}};  // a plain nlohmann::json converts
  auto out = t->render({{"user", "hi"}, call}, o);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(*out, "user:False:;assistant:True:f;3");
}

TEST(ChatTemplateApi, ExtraContextKeepsKeyOrderInToJson) {
  auto t = ChatTemplate::parse("{{ tools | tojson }}");
  ASSERT_TRUE(t.ok());
  ChatTemplateOptions o;
  o.extra_context = ordered_json::parse(R"({"tools": {"zeta": 1, "alpha": [true, null, 1.5]}})");
  EXPECT_EQ(*t->render({}, o), R"({"zeta": 1, "alpha": [true, null, 1.5]})");
}

TEST(ChatTemplateApi, BuiltinNames) {
  std::vector<std::string> names = builtin_template_names();
  for (const char* want : {"chatml", "llama2", "llama3", "mistral", "gemma", "phi3", "deepseek-r1", "completion"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
    auto src = builtin_template_source(want);
    ASSERT_TRUE(src.ok()) << want;
    EXPECT_TRUE(ChatTemplate::parse(*src).ok()) << want;
  }
  auto missing = builtin_template_source("vicuna");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, Code::NotFound);
  EXPECT_NE(missing.error().message.find("'vicuna'"), std::string::npos) << missing.error().message;
  EXPECT_NE(missing.error().message.find("chatml"), std::string::npos) << missing.error().message;
}

TEST(ChatTemplateApi, ModelWithoutTemplateFallsBackToCompletion) {
  auto t = template_for_model("");
  ASSERT_TRUE(t.ok());
  ChatTemplateOptions o;
  EXPECT_EQ(*t->render({{"user", "Once upon a time"}}, o), "Once upon a time");
  EXPECT_EQ(*t->render({{"system", "A story."}, {"user", "Once"}}, o), "A story.\n\nOnce");
  auto own = template_for_model("{{ messages[0].content | upper }}");
  ASSERT_TRUE(own.ok());
  EXPECT_EQ(*own->render({{"user", "abc"}}, o), "ABC");
}

TEST(ChatTemplateApi, RaiseExceptionBecomesTheMessage) {
  auto t = ChatTemplate::parse(*builtin_template_source("llama2"));
  ASSERT_TRUE(t.ok());
  auto out = t->render({{"user", "a"}, {"user", "b"}}, ChatTemplateOptions{});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().code, Code::InvalidArgument);
  EXPECT_EQ(out.error().message,
            "llama2 chat format: roles must alternate user/assistant after an optional system message");
}

TEST(ChatTemplateApi, StrftimeNowUsesTheGivenTime) {
  auto t = ChatTemplate::parse("{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%Y-%m-%d %H:%M') }}");
  ASSERT_TRUE(t.ok());
  ChatTemplateOptions o;
  std::tm tm{};
  tm.tm_year = 2025 - 1900;
  tm.tm_mon = 0;
  tm.tm_mday = 7;
  tm.tm_hour = 9;
  tm.tm_min = 30;
  o.now = tm;
  EXPECT_EQ(*t->render({}, o), "07 Jan 2025|2025-01-07 09:30");
  o.now.reset();
  auto live = t->render({}, o);
  ASSERT_TRUE(live.ok());
  EXPECT_EQ(live->size(), std::string("07 Jan 2025|2025-01-07 09:30").size());
}

TEST(ChatTemplateApi, DefaultConstructedRendersAnError) {
  ChatTemplate empty;
  EXPECT_EQ(empty.source(), "");
  auto out = empty.render({{"user", "hi"}}, ChatTemplateOptions{});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().code, Code::InvalidArgument);
}

TEST(ChatTemplateApi, BadArgumentsAreErrors) {
  auto t = ChatTemplate::parse("x");
  ASSERT_TRUE(t.ok());
  auto bad = t->render_json(ordered_json::object(), ChatTemplateOptions{});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, Code::InvalidArgument);
  ChatTemplateOptions o;
  o.extra_context = ordered_json::array();
  EXPECT_FALSE(t->render({}, o).ok());
}

}  // namespace
}  // namespace strata::chat
