// tests/engine/tokenizer/test_tokenizer.cpp — Tokenizer on real vocabularies: stories260K (SPM,
// byte fallback), Llama 3.1 and Qwen3 (BPE) round trips, special-token parsing, end-of-generation
// ids, linear cost on a long text and a long word (no wall-clock bound: see whole_over_pieces), and
// Vocab::from_gguf errors on hand-made GGUFs.
#include <gtest/gtest.h>

#include <time.h>

#include <algorithm>
#include <random>
#include <filesystem>
#include <iostream>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/vocab.h"
#include "tests/engine/tokenizer/tokenizer_test_util.h"

namespace strata::tokenizer {
namespace {

namespace fs = std::filesystem;
using testing::load_tokenizer;
using testing::shared_models;

#define LOAD_OR_FAIL(var, path)                                  \
  std::string var##_why;                                         \
  auto var = load_tokenizer(path, &var##_why);                   \
  if (!var && !fs::exists(path)) GTEST_FAIL() << var##_why;      \
  ASSERT_TRUE(var.has_value()) << var##_why

// CPU time of this thread in seconds: the work itself, however busy the machine is.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// CPU time of encoding `text` whole over that of encoding it in 1 KiB pieces, best of 3 each. A
// tokenizer linear in the length takes about as long both ways (ratio ~1); one quadratic in the
// length of the text or of one word takes ~100x longer whole (100 KiB vs 100 x 1 KiB). Both run in
// this process, under the same build (Release, Debug, ASan) and load, so no absolute time is
// assumed; callers check the ratio against 10.
double whole_over_pieces(const Tokenizer& tok, const std::string& text, bool parse_special) {
  double whole = 1e30, pieces = 1e30;
  for (int round = 0; round < 3; ++round) {
    double t0 = thread_cpu_seconds();
    const auto ids = tok.encode(text, false, parse_special);
    whole = std::min(whole, thread_cpu_seconds() - t0);
    t0 = thread_cpu_seconds();
    size_t n = 0;
    for (size_t at = 0; at < text.size(); at += 1024) n += tok.encode(text.substr(at, 1024), false, parse_special).size();
    pieces = std::min(pieces, thread_cpu_seconds() - t0);
    EXPECT_GT(ids.size() + n, 0u);
  }
  std::cout << "[ cost     ] " << text.size() << " bytes: whole " << whole * 1e3 << " ms CPU, in 1 KiB pieces "
            << pieces * 1e3 << " ms CPU\n";
  return whole / std::max(pieces, 1e-9);
}

const fs::path kStories = shared_models() / "stories260K.gguf";
const fs::path kLlama31 = shared_models() / "tokenizers" / "vocab-llama3.1.gguf";
const fs::path kQwen3 = shared_models() / "tokenizers" / "vocab-qwen3.gguf";
const fs::path kLlamaSpm = shared_models() / "tokenizers" / "llama.cpp-vocab" / "ggml-vocab-llama-spm.gguf";

TEST(Stories260K, OnceUponATimeWithBos) {
  LOAD_OR_FAIL(tok, kStories);
  EXPECT_EQ(tok->vocab().kind, TokenizerKind::Spm);
  EXPECT_EQ(tok->n_tokens(), 512);
  EXPECT_EQ(tok->encode("Once upon a time", true, false), (std::vector<int32_t>{1, 403, 407, 261, 378}));
  EXPECT_EQ(tok->encode("Once upon a time", false, false), (std::vector<int32_t>{403, 407, 261, 378}));
  EXPECT_EQ(tok->decode({1, 403, 407, 261, 378}), "Once upon a time");
  EXPECT_EQ(tok->token_to_piece(403), " Once");
  EXPECT_EQ(tok->token_to_piece(1), "");  // <s> is control
  EXPECT_EQ(tok->token_to_piece(1, true), "<s>");
  EXPECT_TRUE(tok->is_eog(2));
  EXPECT_FALSE(tok->is_eog(1));
  EXPECT_TRUE(tok->is_control(1));
}

TEST(Stories260K, ByteFallbackRoundTrip) {
  LOAD_OR_FAIL(tok, kStories);
  const std::string text = "Hello, w\xC3\xB6rld! \xF0\x9F\x98\x80";  // "Hello, wörld! 😀"
  const auto ids = tok->encode(text, true, false);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids[0], 1);
  // ö and 😀 are not in the 512-token vocabulary: they must come out as <0xNN> byte tokens.
  const auto byte_token = [&](int b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    return *tok->find_token(name);
  };
  for (int b : {0xC3, 0xB6, 0xF0, 0x9F, 0x98, 0x80}) {
    EXPECT_NE(std::find(ids.begin(), ids.end(), byte_token(b)), ids.end()) << "byte " << b;
  }
  EXPECT_EQ(tok->decode(ids), text);
}

TEST(LlamaSpm, RoundTripModuloLeadingSpaceRule) {
  LOAD_OR_FAIL(tok, kLlamaSpm);
  const auto strings = testing::vocab_test_strings();
  if (strings.empty()) GTEST_FAIL() << "no test strings";
  for (const auto& s : strings) {
    // encode() prefixes U+2581 and decode() strips one leading space, so the text comes back
    // exactly — including texts that start with spaces of their own.
    EXPECT_EQ(tok->decode(tok->encode(s, false, false)), s);
    EXPECT_EQ(tok->decode(tok->encode(s, true, false)), s);
  }
  EXPECT_EQ(tok->encode(" Hello", false, false), (std::vector<int32_t>{29871, 15043}));
  EXPECT_EQ(tok->encode("Hello", false, false), (std::vector<int32_t>{15043}));
}

TEST(Llama31, RoundTripAndSpecials) {
  LOAD_OR_FAIL(tok, kLlama31);
  const auto strings = testing::vocab_test_strings();
  if (strings.empty()) GTEST_FAIL() << "no test strings";
  for (const auto& s : strings) EXPECT_EQ(tok->decode(tok->encode(s, false, false)), s);
  EXPECT_EQ(tok->vocab().bos_id, 128000);
  EXPECT_TRUE(tok->vocab().add_bos);
  EXPECT_EQ(tok->encode("Hello world", true, false), (std::vector<int32_t>{128000, 9906, 1917}));
  EXPECT_EQ(tok->encode("<|start_header_id|>user<|end_header_id|>", false, true),
            (std::vector<int32_t>{128006, 882, 128007}));
  // Without parse_special the same text is plain text.
  const auto plain = tok->encode("<|eot_id|>", false, false);
  EXPECT_GT(plain.size(), 1u);
  EXPECT_EQ(tok->decode(plain), "<|eot_id|>");
  for (int32_t id : {128001, 128009}) EXPECT_TRUE(tok->is_eog(id)) << id;  // <|end_of_text|>, <|eot_id|>
  EXPECT_FALSE(tok->is_eog(128000));
  EXPECT_EQ(tok->decode({128000, 9906, 128009}), "Hello");
  EXPECT_EQ(tok->decode({128000, 9906, 128009}, true), "<|begin_of_text|>Hello<|eot_id|>");
}

TEST(Qwen3, RoundTripAndChatMarkup) {
  LOAD_OR_FAIL(tok, kQwen3);
  const auto strings = testing::vocab_test_strings();
  if (strings.empty()) GTEST_FAIL() << "no test strings";
  for (const auto& s : strings) EXPECT_EQ(tok->decode(tok->encode(s, false, false)), s);

  const auto ids = tok->encode("<|im_start|>user\nhi<|im_end|>", true, true);
  ASSERT_GE(ids.size(), 4u);
  EXPECT_EQ(ids.front(), 151644);  // <|im_start|>; add_bos is false for Qwen
  EXPECT_EQ(ids.back(), 151645);   // <|im_end|>
  EXPECT_EQ(ids, (std::vector<int32_t>{151644, 872, 198, 6023, 151645}));
  EXPECT_EQ(tok->decode(ids, true), "<|im_start|>user\nhi<|im_end|>");
  EXPECT_EQ(tok->decode(ids), "user\nhi");
  // User-defined tokens such as <think> are split out even without parse_special.
  EXPECT_EQ(tok->encode("<think>", false, false), (std::vector<int32_t>{151667}));
  EXPECT_EQ(tok->token_to_piece(151667), "<think>");

  EXPECT_FALSE(tok->vocab().add_bos);
  EXPECT_EQ(tok->vocab().eos_id, 151645);
  EXPECT_TRUE(tok->is_eog(151645));  // <|im_end|>
  EXPECT_TRUE(tok->is_eog(151643));  // <|endoftext|>
  EXPECT_FALSE(tok->is_eog(151644));
  EXPECT_EQ(tok->find_token("<|im_start|>"), std::optional<int32_t>(151644));
  EXPECT_EQ(tok->find_token("no such token here"), std::nullopt);
}

TEST(Llama31, LongTextIsFast) {
  LOAD_OR_FAIL(tok, kLlama31);
  const auto strings = testing::vocab_test_strings();
  if (strings.empty()) GTEST_FAIL() << "no test strings";  // (the loop below would never end)
  std::string text;
  while (text.size() < 100 * 1024) {
    for (const auto& s : strings) text += s + "\n";
  }
  const auto ids = tok->encode(text, false, true);
  EXPECT_EQ(tok->decode(ids), text);
  EXPECT_LT(whole_over_pieces(*tok, text, true), 10.0) << ids.size() << " tokens";
  // One 100 KB "word" (no spaces) must not be quadratic either.
  const std::string word(100 * 1024, 'x');
  const auto word_ids = tok->encode(word, false, false);
  EXPECT_EQ(tok->decode(word_ids), word);
  EXPECT_LT(whole_over_pieces(*tok, word, false), 10.0);
}

TEST(LlamaSpm, LongTextIsFast) {
  LOAD_OR_FAIL(tok, kLlamaSpm);
  const auto strings = testing::vocab_test_strings();
  if (strings.empty()) GTEST_FAIL() << "no test strings";  // (the loop below would never end)
  std::string text;
  for (const auto& s : strings) text += s + " ";
  while (text.size() < 100 * 1024) text += text;
  const auto ids = tok->encode(text, false, false);
  EXPECT_EQ(tok->decode(ids), text);
  EXPECT_LT(whole_over_pieces(*tok, text, false), 10.0);
}

// Arbitrary bytes (invalid UTF-8 included) survive encode/decode: byte-level BPE and SPM byte
// fallback are lossless, and nothing crashes on malformed input.
TEST(AllKinds, RandomBytesRoundTrip) {
  std::mt19937 rng(1234);
  for (const fs::path& path : {kStories, kLlama31, kQwen3}) {
    std::string why;
    auto tok = load_tokenizer(path, &why);
    ASSERT_TRUE(tok.has_value()) << why;  // setup guarantees the three vocabularies
    for (int round = 0; round < 50; ++round) {
      std::string text(1 + rng() % 64, '\0');
      for (char& ch : text) ch = static_cast<char>(rng() % 256);
      if (text[0] == ' ') text[0] = 'x';  // SPM: a leading space is kept by the prefix rule anyway
      const auto ids = tok->encode(text, true, round % 2 == 0);
      for (int32_t id : ids) ASSERT_TRUE(id >= 0 && id < tok->n_tokens());
      EXPECT_EQ(tok->decode(ids), text) << path << " round " << round;
    }
  }
}

// A minimal vocabulary GGUF in memory; tests change keys to provoke errors.
gguf::GgufWriter tiny_bpe_writer() {
  gguf::GgufWriter w;
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", "gpt-2");
  w.set_string_array("tokenizer.ggml.tokens", {"a", "b", "ab", "\xC4\xA0", "<|endoftext|>"});  // Ġ = space
  w.set_i32_array("tokenizer.ggml.token_type", {1, 1, 1, 1, 3});
  w.set_string_array("tokenizer.ggml.merges", {"a b"});
  w.set_u32("tokenizer.ggml.eos_token_id", 4);
  return w;
}

Expected<Vocab> vocab_of(const gguf::GgufWriter& w) {
  auto bytes = w.to_bytes();
  if (!bytes.ok()) return bytes.error();
  auto file = gguf::GgufFile::from_bytes(std::move(*bytes));
  if (!file.ok()) return file.error();
  return Vocab::from_gguf(*file);
}

TEST(VocabFromGguf, TinyBpeWorks) {
  auto vocab = vocab_of(tiny_bpe_writer());
  ASSERT_TRUE(vocab.ok()) << vocab.error().to_string();
  EXPECT_EQ(vocab->kind, TokenizerKind::Bpe);
  EXPECT_EQ(vocab->eog_ids, (std::vector<int32_t>{4}));
  EXPECT_FALSE(vocab->add_bos);
  auto tok = Tokenizer::create(std::move(*vocab));
  ASSERT_TRUE(tok.ok()) << tok.error().to_string();
  EXPECT_EQ(tok->encode("ab ab", false, false), (std::vector<int32_t>{2, 3, 2}));
  EXPECT_EQ(tok->encode("ab<|endoftext|>", false, true), (std::vector<int32_t>{2, 4}));
  EXPECT_EQ(tok->decode({2, 3, 0, 4}), "ab a");
}

// The harmony format (gpt-oss): with <|return|> and <|call|> in the vocabulary, <|end|> closes the
// analysis message, not the reply: it is no end of generation (nor the eot fallback), and it and
// the channel markers decode as text; without them (a ChatML-style vocabulary) <|end|> stays one.
TEST(VocabFromGguf, HarmonyEndIsNotTheEndOfGeneration) {
  const std::vector<std::string> tokens = {"a", "b", "<|start|>", "<|channel|>", "<|message|>", "<|end|>",
                                           "<|return|>", "<|call|>", "<|constrain|>"};
  gguf::GgufWriter w = tiny_bpe_writer();
  w.set_string("tokenizer.ggml.pre", "gpt-4o");
  w.set_string_array("tokenizer.ggml.tokens", tokens);
  w.set_i32_array("tokenizer.ggml.token_type", {1, 1, 3, 3, 3, 3, 3, 3, 3});
  w.set_string_array("tokenizer.ggml.merges", {});
  w.set_u32("tokenizer.ggml.eos_token_id", 6);
  auto vocab = vocab_of(w);
  ASSERT_TRUE(vocab.ok()) << vocab.error().to_string();
  EXPECT_EQ(vocab->eog_ids, (std::vector<int32_t>{6, 7}));  // <|return|>, <|call|>
  EXPECT_EQ(vocab->eot_id, 6);
  auto tok = Tokenizer::create(std::move(*vocab));
  ASSERT_TRUE(tok.ok()) << tok.error().to_string();
  EXPECT_EQ(tok->decode({3, 0, 4, 1, 5, 2, 6}), "<|channel|>a<|message|>b<|end|><|start|>");

  // Without <|return|> / <|call|>, <|end|> ends generation (Phi-3's chat format).
  gguf::GgufWriter phi = tiny_bpe_writer();
  phi.set_string_array("tokenizer.ggml.tokens", {"a", "b", "<|end|>"});
  phi.set_i32_array("tokenizer.ggml.token_type", {1, 1, 3});
  phi.set_string_array("tokenizer.ggml.merges", {});
  phi.set_u32("tokenizer.ggml.eos_token_id", 0);
  auto plain = vocab_of(phi);
  ASSERT_TRUE(plain.ok()) << plain.error().to_string();
  EXPECT_NE(std::find(plain->eog_ids.begin(), plain->eog_ids.end(), 2), plain->eog_ids.end());
}

TEST(VocabFromGguf, Errors) {
  {
    auto w = tiny_bpe_writer();
    w.set_string("tokenizer.ggml.model", "t5");
    auto v = vocab_of(w);
    ASSERT_FALSE(v.ok());
    EXPECT_EQ(v.error().code, Code::Unsupported);
    EXPECT_NE(v.error().message.find("'t5'"), std::string::npos);
  }
  {
    auto w = tiny_bpe_writer();
    w.set_string("tokenizer.ggml.pre", "made-up-pre");
    auto v = vocab_of(w);
    ASSERT_FALSE(v.ok());
    EXPECT_EQ(v.error().code, Code::Unsupported);
    EXPECT_NE(v.error().message.find("made-up-pre"), std::string::npos);
  }
  {
    auto w = tiny_bpe_writer();
    w.set_i32_array("tokenizer.ggml.token_type", {1, 1, 1});
    auto v = vocab_of(w);
    ASSERT_FALSE(v.ok());
    EXPECT_EQ(v.error().code, Code::Corrupt);
    EXPECT_NE(v.error().message.find("3 types for 5 tokens"), std::string::npos) << v.error().message;
  }
  {
    auto w = tiny_bpe_writer();
    w.remove("tokenizer.ggml.merges");
    auto v = vocab_of(w);
    ASSERT_FALSE(v.ok());
    EXPECT_EQ(v.error().code, Code::Corrupt);
  }
  {
    auto w = tiny_bpe_writer();
    w.remove("tokenizer.ggml.tokens");
    auto v = vocab_of(w);
    ASSERT_FALSE(v.ok());
    EXPECT_EQ(v.error().code, Code::NotFound);
  }
  {
    auto w = tiny_bpe_writer();
    w.set_string_array("tokenizer.ggml.merges", {"ab"});
    auto v = vocab_of(w);
    ASSERT_TRUE(v.ok());
    auto tok = Tokenizer::create(std::move(*v));
    ASSERT_FALSE(tok.ok());
    EXPECT_EQ(tok.error().code, Code::Corrupt);
    EXPECT_NE(tok.error().message.find("merges[0]"), std::string::npos);
  }
}

TEST(TokenizerCreate, RejectsInconsistentVocab) {
  Vocab v;
  v.kind = TokenizerKind::Spm;
  v.tokens = {"<unk>", "a"};
  v.scores = {0.0f};
  auto t = Tokenizer::create(v);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code, Code::InvalidArgument);

  v.scores = {0.0f, 0.0f};
  v.bos_id = 7;
  t = Tokenizer::create(v);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("bos id 7"), std::string::npos) << t.error().message;

  v.bos_id = -1;
  t = Tokenizer::create(v);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->token_to_piece(99), "");
  EXPECT_EQ(t->token_to_piece(-3), "");
}

}  // namespace
}  // namespace strata::tokenizer
