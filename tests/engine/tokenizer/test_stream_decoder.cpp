// tests/engine/tokenizer/test_stream_decoder.cpp — StreamDecoder: token-by-token output is always
// valid UTF-8, multi-byte characters split across byte tokens are held back, and the pieces add
// up to decode().
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/tokenizer/stream_decoder.h"
#include "engine/tokenizer/unicode.h"
#include "tests/engine/tokenizer/tokenizer_test_util.h"

namespace strata::tokenizer {
namespace {

namespace fs = std::filesystem;
using testing::load_tokenizer;
using testing::shared_models;

bool valid_utf8(const std::string& s) { return valid_utf8_prefix(s) == s.size(); }

// Streams ids one at a time; checks every chunk and returns the concatenation.
std::string stream_all(const Tokenizer& tok, const std::vector<int32_t>& ids, int* held_back = nullptr) {
  StreamDecoder dec(tok);
  std::string all;
  for (int32_t id : ids) {
    const std::string chunk = dec.push(id);
    EXPECT_TRUE(valid_utf8(chunk)) << "token " << id;
    if (held_back && chunk.empty() && !tok.token_to_piece(id).empty()) ++*held_back;
    all += chunk;
  }
  const std::string rest = dec.flush();
  EXPECT_TRUE(valid_utf8(rest));
  EXPECT_EQ(rest, "");  // nothing incomplete at the end of a valid text
  return all + rest;
}

const std::string kEmojiText = "Hello, w\xC3\xB6rld! \xF0\x9F\x98\x80 \xE2\x9C\x85 caf\xC3\xA9 \xF0\x9F\xA6\x99";

TEST(StreamDecoder, Stories260KByteTokensNeverSplitCharacters) {
  const fs::path path = shared_models() / "stories260K.gguf";
  std::string why;
  auto tok = load_tokenizer(path, &why);
  if (!tok) GTEST_FAIL() << why;
  const auto ids = tok->encode(kEmojiText, true, false);
  int held_back = 0;
  EXPECT_EQ(stream_all(*tok, ids, &held_back), tok->decode(ids));
  EXPECT_EQ(tok->decode(ids), kEmojiText);
  // 😀 is four byte tokens: at least three of them must have produced nothing on their own.
  EXPECT_GE(held_back, 3);
}

TEST(StreamDecoder, Llama31AndQwen3) {
  for (const char* name : {"vocab-llama3.1.gguf", "vocab-qwen3.gguf"}) {
    const fs::path path = shared_models() / "tokenizers" / name;
    std::string why;
    auto tok = load_tokenizer(path, &why);
    // Setup guarantees both vocabularies and the test strings: missing ones fail, not skip.
    ASSERT_TRUE(tok.has_value()) << name << ": " << why;
    std::vector<std::string> texts = testing::vocab_test_strings();
    ASSERT_FALSE(texts.empty()) << "no test strings (tokenizers/llama.cpp-vocab/ggml-vocab-gpt-2.gguf.inp)";
    texts.push_back(kEmojiText);
    for (const auto& s : texts) {
      const auto ids = tok->encode(s, true, false);
      EXPECT_EQ(stream_all(*tok, ids), tok->decode(ids)) << name << ": " << s;
    }
  }
}

TEST(StreamDecoder, SpmLeadingSpaceRuleMatchesDecode) {
  const fs::path path = shared_models() / "tokenizers" / "llama.cpp-vocab" / "ggml-vocab-llama-spm.gguf";
  std::string why;
  auto tok = load_tokenizer(path, &why);
  if (!tok) GTEST_FAIL() << why;
  for (const std::string s : {"Hello world", "  two spaces", "\xF0\x9F\xA6\x99 llama", ""}) {
    const auto ids = tok->encode(s, true, false);
    EXPECT_EQ(stream_all(*tok, ids), s);
  }
}

TEST(StreamDecoder, InvalidBytesBecomeReplacementCharacters) {
  // A hand-made SPM vocabulary with byte tokens only.
  Vocab v;
  v.kind = TokenizerKind::Spm;
  v.add_space_prefix = false;
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    v.tokens.push_back(name);
    v.types.push_back(static_cast<int32_t>(TokenAttr::Byte));
  }
  auto tok = Tokenizer::create(v);
  ASSERT_TRUE(tok.ok()) << tok.error().to_string();
  StreamDecoder dec(*tok);
  EXPECT_EQ(dec.push(0xF0), "");          // start of a 4-byte character
  EXPECT_EQ(dec.push(0x9F), "");
  EXPECT_EQ(dec.push(0x41), "\xEF\xBF\xBD\xEF\xBF\xBD" "A");  // broken by 'A': both bytes replaced
  EXPECT_EQ(dec.push(0xFF), "\xEF\xBF\xBD");                  // never valid
  EXPECT_EQ(dec.push(0xE2), "");
  EXPECT_EQ(dec.flush(), "\xEF\xBF\xBD");                     // truncated at the end
  dec.reset();
  EXPECT_EQ(dec.push(0xE2), "");
  EXPECT_EQ(dec.push(0x9C), "");
  EXPECT_EQ(dec.push(0x85), "\xE2\x9C\x85");
  EXPECT_EQ(dec.flush(), "");
}

}  // namespace
}  // namespace strata::tokenizer
