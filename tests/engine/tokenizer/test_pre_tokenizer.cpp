// tests/engine/tokenizer/test_pre_tokenizer.cpp — the hand-written pre-tokenizer regexes, the
// generated Unicode categories and the byte-level mapping, without any vocabulary file.
#include <gtest/gtest.h>

#include "engine/tokenizer/byte_level.h"
#include "engine/tokenizer/pre_tokenizer.h"
#include "engine/tokenizer/unicode.h"

namespace strata::tokenizer {
namespace {

std::vector<std::string> split(PreTokenizerKind kind, std::string_view text) {
  std::vector<std::string> out;
  std::size_t covered = 0;
  for (const Piece& p : pre_tokenize(kind, text)) {
    EXPECT_EQ(p.begin, covered);  // pieces cover the text in order, without gaps
    EXPECT_LT(p.begin, p.end);
    covered = p.end;
    out.emplace_back(text.substr(p.begin, p.end - p.begin));
  }
  EXPECT_EQ(covered, text.size());
  return out;
}

using V = std::vector<std::string>;

TEST(UnicodeCategories, FromGeneratedTable) {
  EXPECT_TRUE(is_letter('a'));
  EXPECT_TRUE(is_letter(0x00FC));   // ü
  EXPECT_TRUE(is_letter(0x6211));   // 我
  EXPECT_TRUE(is_letter(0x1E900));  // Adlam, beyond the BMP
  EXPECT_TRUE(is_number('7'));
  EXPECT_TRUE(is_number(0x00BD));  // ½ is No
  EXPECT_TRUE(is_number(0x2167));  // Roman numeral eight is Nl
  EXPECT_FALSE(is_letter(0x17B6));  // Khmer vowel sign AA is a mark
  EXPECT_TRUE(cpt_flags(0x17B6) & kMark);
  EXPECT_TRUE(cpt_flags('!') & kPunct);
  EXPECT_TRUE(cpt_flags('$') & kSymbol);
  EXPECT_TRUE(cpt_flags(0x1F600) & kSymbol);  // 😀
  for (uint32_t ws : {0x09u, 0x0Au, 0x0Du, 0x20u, 0x85u, 0xA0u, 0x2009u, 0x3000u}) EXPECT_TRUE(is_whitespace(ws)) << ws;
  EXPECT_FALSE(is_whitespace(0x200B));  // zero-width space is Cf, not White_Space
  EXPECT_FALSE(is_whitespace('x'));
  EXPECT_STREQ(unicode_version(), "14.0.0");
}

TEST(Utf8, LenientDecoding) {
  const auto cps = decode_utf8("a\xC3\xB6\xFF\xF0\x9F\x98\x80\xE2\x82");
  ASSERT_EQ(cps.size(), 6u);
  EXPECT_EQ(cps[1].cp, 0xF6u);
  EXPECT_EQ(cps[2].cp, 0xFFFDu);  // invalid byte
  EXPECT_EQ(cps[3].cp, 0x1F600u);
  EXPECT_EQ(cps[3].offset, 4u);
  EXPECT_EQ(cps[4].cp, 0xFFFDu);  // truncated sequence: each byte on its own
  EXPECT_EQ(cps[5].offset, 9u);
  EXPECT_EQ(valid_utf8_prefix("ab\xC3\xB6\xE2\x82"), 4u);
  EXPECT_EQ(valid_utf8_prefix("\xC0\x80"), 0u);      // overlong
  EXPECT_EQ(valid_utf8_prefix("\xED\xA0\x80"), 0u);  // surrogate
}

TEST(ByteLevel, MappingIsGpt2s) {
  EXPECT_EQ(byte_to_unicode(' '), "\xC4\xA0");   // Ġ
  EXPECT_EQ(byte_to_unicode('\n'), "\xC4\x8A");  // Ċ
  EXPECT_EQ(byte_to_unicode('a'), "a");
  EXPECT_EQ(byte_to_unicode(0xAD), "\xC5\x83");  // soft hyphen -> U+0143
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  std::string mapped;
  bytes_to_byte_level(all, mapped);
  EXPECT_EQ(byte_level_to_bytes(mapped), all);
}

TEST(PreTokenizer, Gpt2) {
  EXPECT_EQ(split(PreTokenizerKind::Gpt2, "Hello world's 123 fine!!  x   "),
            (V{"Hello", " world", "'s", " 123", " fine", "!!", " ", " x", "   "}));
  EXPECT_EQ(split(PreTokenizerKind::Gpt2, "I'M"), (V{"I", "'", "M"}));  // case-sensitive contractions
}

TEST(PreTokenizer, Llama3) {
  EXPECT_EQ(split(PreTokenizerKind::Llama3, "I'M 12345 ok\n\n  hi"),
            (V{"I", "'M", " ", "123", "45", " ok", "\n\n", " ", " hi"}));
  EXPECT_EQ(split(PreTokenizerKind::Llama3, " (x)...\n"), (V{" (", "x", ")...\n"}));
  EXPECT_EQ(split(PreTokenizerKind::Llama3, "ied 4 \xC2\xBD months"), (V{"ied", " ", "4", " ", "\xC2\xBD", " months"}));
}

TEST(PreTokenizer, Qwen2SingleDigits) {
  EXPECT_EQ(split(PreTokenizerKind::Qwen2, "x=2024"), (V{"x", "=", "2", "0", "2", "4"}));
}

TEST(PreTokenizer, StarcoderAndFalconAndDefault) {
  EXPECT_EQ(split(PreTokenizerKind::Starcoder, "a 123"), (V{"a", " ", "1", "2", "3"}));
  EXPECT_EQ(split(PreTokenizerKind::Falcon, "a+=b 12345"), (V{"a", "+=", "b", " ", "123", "45"}));
  EXPECT_EQ(split(PreTokenizerKind::Default, "x, 1234"), (V{"x", ",", " ", "123", "4"}));
}

TEST(PreTokenizer, Deepseek) {
  EXPECT_EQ(split(PreTokenizerKind::DeepseekCoder, "int x1;\n"), (V{"int", " x", "1", ";", "\n"}));
  EXPECT_EQ(split(PreTokenizerKind::DeepseekLlm, "Hi, 123\xE4\xBD\xA0\xE5\xA5\xBD  "),
            (V{"Hi", ",", " ", "123", "\xE4\xBD\xA0\xE5\xA5\xBD", "  "}));
}

// gpt-4o (gpt-oss): llama.cpp's form of the o200k regex, expectations from Python's `regex` module
// running that regex: cased runs split camelCase and acronyms, contractions stay on their word,
// a non-ASCII letter counts as upper and lower (É starts its own word before an upper run).
TEST(PreTokenizer, Gpt4o) {
  const auto k = PreTokenizerKind::Gpt4o;
  EXPECT_EQ(split(k, "Hello World's HTTPServer isOK I'M 12345 ok\n\n  hi"),
            (V{"Hello", " World's", " HTTPServer", " is", "OK", " I'M", " ", "123", "45", " ok", "\n\n", " ", " hi"}));
  EXPECT_EQ(split(k, "camelCaseJSONParser x/y/\n"), (V{"camel", "Case", "JSONParser", " x", "/y", "/\n"}));
  EXPECT_EQ(split(k, " (x)...\n"), (V{" (", "x", ")...\n"}));
  EXPECT_EQ(split(k, "\xC3\x89" "COLE \xC3\x9C" "berm\xC3\xA4\xC3\x9F" "ig na\xC3\xAFve \xE4\xB8\xAD\xE6\x96\x87"),
            (V{"\xC3\x89", "COLE", " \xC3\x9C" "berm\xC3\xA4\xC3\x9F" "ig", " na\xC3\xAFve", " \xE4\xB8\xAD\xE6\x96\x87"}));
  EXPECT_EQ(split(k, "  \t\nA'LL done's"), (V{"  \t\n", "A'LL", " done's"}));
  EXPECT_EQ(pre_tokenizer_from_name("gpt-4o")->kind, PreTokenizerKind::Gpt4o);
  EXPECT_EQ(pre_tokenizer_from_name("llama4")->kind, PreTokenizerKind::Gpt4o);
}

TEST(PreTokenizer, Names) {
  auto l3 = pre_tokenizer_from_name("llama-bpe");
  ASSERT_TRUE(l3.ok());
  EXPECT_EQ(l3->kind, PreTokenizerKind::Llama3);
  EXPECT_TRUE(l3->ignore_merges);
  EXPECT_TRUE(l3->add_bos_default);
  EXPECT_EQ(pre_tokenizer_from_name("deepseek-r1-qwen")->kind, PreTokenizerKind::Qwen2);
  EXPECT_EQ(pre_tokenizer_from_name("")->kind, PreTokenizerKind::Default);
  auto bad = pre_tokenizer_from_name("tekken");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, Code::Unsupported);
  EXPECT_NE(bad.error().message.find("'tekken'"), std::string::npos);
}

TEST(PreTokenizer, LongInputsAreLinear) {
  // 1 MB of mixed text through the most complex scheme: pieces must still cover it exactly.
  std::string text;
  while (text.size() < (1u << 20)) text += "Hello, y'all! 3.14159 \xE4\xBD\xA0\xE5\xA5\xBD   \n\t";
  const auto pieces = pre_tokenize(PreTokenizerKind::DeepseekLlm, text);
  ASSERT_FALSE(pieces.empty());
  EXPECT_EQ(pieces.back().end, text.size());
  const std::string spaces(1u << 18, ' ');
  EXPECT_EQ(pre_tokenize(PreTokenizerKind::Llama3, spaces).size(), 1u);
}

}  // namespace
}  // namespace strata::tokenizer
