// tests/engine/tokenizer/tokenizer_test_util.h — loading shared vocabularies for the tokenizer tests.
// Test-only; depends on the engine's gguf and tokenizer modules.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/vocab.h"

namespace strata::tokenizer::testing {

inline std::filesystem::path shared_models() { return STRATA_SHARED_MODELS_DIR; }

// Loads a vocabulary GGUF into a Tokenizer; nullopt (and a message) when the file is missing or
// does not load.
inline std::optional<Tokenizer> load_tokenizer(const std::filesystem::path& path, std::string* why = nullptr) {
  if (!std::filesystem::exists(path)) {
    if (why) *why = "missing " + path.string();
    return std::nullopt;
  }
  auto file = gguf::GgufFile::open(path);
  if (!file.ok()) {
    if (why) *why = file.error().to_string();
    return std::nullopt;
  }
  auto vocab = Vocab::from_gguf(*file);
  if (!vocab.ok()) {
    if (why) *why = vocab.error().to_string();
    return std::nullopt;
  }
  auto tok = Tokenizer::create(std::move(*vocab));
  if (!tok.ok()) {
    if (why) *why = tok.error().to_string();
    return std::nullopt;
  }
  return std::move(*tok);
}

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The 46 test strings of llama.cpp's ggml-vocab-*.gguf.inp files.
inline std::vector<std::string> split_vocab_inputs(const std::string& inp) {
  static const std::string kSep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (true) {
    const std::size_t next = inp.find(kSep, pos);
    if (next == std::string::npos) break;
    out.push_back(inp.substr(pos, next - pos));
    pos = next + kSep.size();
  }
  if (pos < inp.size()) out.push_back(inp.substr(pos));
  return out;
}

inline std::vector<std::vector<int32_t>> parse_vocab_outputs(const std::string& out) {
  std::vector<std::vector<int32_t>> rows;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream ids(line);
    std::vector<int32_t> row;
    long long id = 0;
    while (ids >> id) row.push_back(static_cast<int32_t>(id));
    rows.push_back(std::move(row));
  }
  return rows;
}

// The strings of ggml-vocab-gpt-2.gguf.inp (the same 46 in every .inp), or empty if missing.
inline std::vector<std::string> vocab_test_strings() {
  const auto path = shared_models() / "tokenizers" / "llama.cpp-vocab" / "ggml-vocab-gpt-2.gguf.inp";
  if (!std::filesystem::exists(path)) return {};
  return split_vocab_inputs(read_file(path));
}

inline std::string ids_to_string(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) {
    if (!s.empty()) s.push_back(' ');
    s.append(std::to_string(id));
  }
  return s;
}

}  // namespace strata::tokenizer::testing
