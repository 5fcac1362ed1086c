// tests/engine/tokenizer/test_tokenizer_vectors.cpp — llama.cpp's vocabulary test vectors: every
// ggml-vocab-*.gguf.inp string must encode (add_special=false, parse_special=false) to the .out ids.
// The vector folder can be overridden with STRATA_TOKENIZER_VECTORS_DIR.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/vocab.h"
#include "tests/engine/tokenizer/tokenizer_test_util.h"

namespace strata::tokenizer {
namespace {

namespace fs = std::filesystem;
using testing::load_tokenizer;
using testing::shared_models;

struct VectorCase {
  const char* name;   // the NAME of ggml-vocab-NAME.gguf.inp/.out
  const char* vocab;  // vocabulary GGUF, relative to shared/models/tokenizers (empty: ggml-vocab-NAME.gguf)
};

// llama-bpe, qwen2 and deepseek-r1-qwen use our own vocabulary GGUFs made from the HF files
// (see PROVENANCE.md): llama.cpp's are over 4 MiB and were not copied. Every case listed here has
// its vectors and vocabulary in the shared models folder, and a missing file fails the case. Not
// listed, because the shared folder lacks a file: baichuan and gpt-neox (no .inp/.out vectors),
// command-r, roberta-bpe and chameleon (no vocabulary GGUF).
const VectorCase kCases[] = {
    {"llama-spm", ""},        {"phi-3", ""},       {"llama-bpe", "vocab-llama3.1.gguf"},
    {"qwen2", "vocab-qwen3.gguf"}, {"deepseek-r1-qwen", "vocab-qwen3.gguf"},
    {"gpt-2", ""},            {"deepseek-llm", ""}, {"deepseek-coder", ""}, {"falcon", ""},
    {"mpt", ""},              {"starcoder", ""},   {"refact", ""},
};

void PrintTo(const VectorCase& c, std::ostream* os) { *os << c.name; }

fs::path vectors_dir() {
  if (const char* env = std::getenv("STRATA_TOKENIZER_VECTORS_DIR"); env && *env) return env;
  return shared_models() / "tokenizers" / "llama.cpp-vocab";
}

class VocabVectors : public ::testing::TestWithParam<VectorCase> {};

TEST_P(VocabVectors, AllStringsGiveExpectedIds) {
  const VectorCase& c = GetParam();
  const fs::path dir = vectors_dir();
  const fs::path inp = dir / (std::string("ggml-vocab-") + c.name + ".gguf.inp");
  const fs::path out = dir / (std::string("ggml-vocab-") + c.name + ".gguf.out");
  if (!fs::exists(inp) || !fs::exists(out)) GTEST_FAIL() << "no test vectors " << inp;
  fs::path vocab_path = *c.vocab ? shared_models() / "tokenizers" / c.vocab
                                 : dir / (std::string("ggml-vocab-") + c.name + ".gguf");
  if (!*c.vocab && !fs::exists(vocab_path)) {
    vocab_path = shared_models() / "tokenizers" / "llama.cpp-vocab" / vocab_path.filename();
  }
  if (!fs::exists(vocab_path)) GTEST_FAIL() << "no vocabulary " << vocab_path;
  std::string why;
  auto tok = load_tokenizer(vocab_path, &why);
  ASSERT_TRUE(tok.has_value()) << why;

  const auto strings = testing::split_vocab_inputs(testing::read_file(inp));
  const auto expected = testing::parse_vocab_outputs(testing::read_file(out));
  ASSERT_EQ(strings.size(), 46u) << inp;
  ASSERT_EQ(expected.size(), strings.size()) << out;

  int passed = 0;
  int first_bad = -1;
  for (std::size_t i = 0; i < strings.size(); ++i) {
    const auto ids = tok->encode(strings[i], /*add_special=*/false, /*parse_special=*/false);
    if (ids == expected[i]) {
      ++passed;
    } else if (first_bad < 0) {
      first_bad = static_cast<int>(i);
    }
  }
  std::cout << "[ vectors  ] " << c.name << ": " << passed << "/" << strings.size() << " strings\n";
  RecordProperty("passed", passed);
  if (first_bad >= 0) {
    const auto ids = tok->encode(strings[first_bad], false, false);
    ADD_FAILURE() << c.name << ": " << passed << "/" << strings.size() << " pass; first mismatch, string #"
                  << first_bad << " '" << strings[first_bad] << "'\n  expected: "
                  << testing::ids_to_string(expected[first_bad]) << "\n  got:      " << testing::ids_to_string(ids);
  }
}

INSTANTIATE_TEST_SUITE_P(LlamaCppVocabs, VocabVectors, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<VectorCase>& info) {
                           std::string n = info.param.name;
                           for (char& ch : n) {
                             if (ch == '-') ch = '_';
                           }
                           return n;
                         });

TEST(VocabFromGguf, BertWordPieceIsUnsupportedAndNamed) {
  const fs::path path = shared_models() / "tokenizers" / "llama.cpp-vocab" / "ggml-vocab-bert-bge.gguf";
  if (!fs::exists(path)) GTEST_FAIL() << "missing " << path;
  auto file = gguf::GgufFile::open(path);
  ASSERT_TRUE(file.ok()) << file.error().to_string();
  auto vocab = Vocab::from_gguf(*file);
  ASSERT_FALSE(vocab.ok());
  EXPECT_EQ(vocab.error().code, Code::Unsupported);
  EXPECT_NE(vocab.error().message.find("'bert'"), std::string::npos) << vocab.error().message;
}

}  // namespace
}  // namespace strata::tokenizer
