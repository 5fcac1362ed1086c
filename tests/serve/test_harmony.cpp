// tests/serve/test_harmony.cpp — the harmony splitter (engine/serve/harmony.h): gpt-oss's analysis
// channel becomes reasoning, its final channel content, the markers go; the same parts whether
// the text comes whole, a byte at a time, or cut at every position.
#include <gtest/gtest.h>

#include <string>

#include "engine/serve/harmony.h"

namespace strata::serve {
namespace {

const std::string kReply =
    "<|channel|>analysis<|message|>The user greets; answer briefly.<|end|>"
    "<|start|>assistant<|channel|>final<|message|>Hello! <b>Hi</b> a<|b c.<|return|>";

TEST(Harmony, AnalysisIsReasoningFinalIsContent) {
  const HarmonyParts p = split_harmony(kReply);
  EXPECT_EQ(p.reasoning, "The user greets; answer briefly.");
  EXPECT_EQ(p.content, "Hello! <b>Hi</b> a<|b c.");  // "<|" that starts no marker stays text
}

TEST(Harmony, StreamedInAnyCutsGivesTheSameParts) {
  const HarmonyParts whole = split_harmony(kReply);
  for (size_t cut = 0; cut <= kReply.size(); ++cut) {
    HarmonySplitter s;
    HarmonyParts a = s.feed(std::string_view(kReply).substr(0, cut));
    const HarmonyParts b = s.feed(std::string_view(kReply).substr(cut));
    const HarmonyParts c = s.finish();
    EXPECT_EQ(a.reasoning + b.reasoning + c.reasoning, whole.reasoning) << "cut at " << cut;
    EXPECT_EQ(a.content + b.content + c.content, whole.content) << "cut at " << cut;
  }
  HarmonySplitter bytes;
  std::string reasoning, content;
  for (char ch : kReply) {
    const HarmonyParts p = bytes.feed(std::string_view(&ch, 1));
    reasoning += p.reasoning, content += p.content;
    // No marker text ever leaks out, even half of one.
    EXPECT_EQ(content.find("<|ret"), std::string::npos);
    EXPECT_EQ(reasoning.find("<|e"), std::string::npos);
  }
  const HarmonyParts end = bytes.finish();
  EXPECT_EQ(reasoning + end.reasoning, whole.reasoning);
  EXPECT_EQ(content + end.content, whole.content);
}

TEST(Harmony, CallsCommentaryAndPlainText) {
  // A commentary message to a function, with a constraint: a call (name from the header, its text
  // the arguments), not content.
  const HarmonyParts p = split_harmony(
      "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary "
      "to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>");
  EXPECT_EQ(p.reasoning, "Need the weather.");
  EXPECT_EQ(p.content, "");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].arguments, "{\"city\":\"Paris\"}");
  // The recipient in the role header instead, then a commentary preamble to the user (content).
  const HarmonyParts q = split_harmony(
      "<|channel|>commentary<|message|>Checking.<|end|><|start|>assistant to=functions.search"
      "<|channel|>commentary json<|message|>{\"q\":1}<|call|>");
  EXPECT_EQ(q.content, "Checking.");
  ASSERT_EQ(q.calls.size(), 1u);
  EXPECT_EQ(q.calls[0].name, "search");
  EXPECT_EQ(q.calls[0].arguments, "{\"q\":1}");
  // Streamed byte by byte: the call comes out once, when its message ends.
  HarmonySplitter s1;
  size_t calls = 0;
  const std::string text = "<|channel|>commentary to=functions.f<|message|>{}<|call|>";
  for (char ch : text) calls += s1.feed(std::string_view(&ch, 1)).calls.size();
  calls += s1.finish().calls.size();
  EXPECT_EQ(calls, 1u);
  // A model that writes no markers: everything is content.
  EXPECT_EQ(split_harmony("just text < and <| more").content, "just text < and <| more");
  // A reply cut inside its analysis (max_tokens): the text so far is reasoning, the cut marker text.
  HarmonySplitter s;
  const HarmonyParts a = s.feed("<|channel|>analysis<|message|>thinking<|en");
  const HarmonyParts b = s.finish();
  EXPECT_EQ(a.reasoning, "thinking");
  EXPECT_EQ(b.reasoning, "<|en");
}

TEST(Harmony, TemplateDetection) {
  EXPECT_TRUE(is_harmony_template("{{ '<|start|>assistant<|channel|>final<|message|>' }}"));
  EXPECT_FALSE(is_harmony_template("{{ '<|im_start|>assistant\\n' }}"));
}

}  // namespace
}  // namespace strata::serve
