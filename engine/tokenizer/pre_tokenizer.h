// engine/tokenizer/pre_tokenizer.h — splits text into words before byte-level BPE, one scheme per
// GGUF `tokenizer.ggml.pre` value. Depends on unicode.h and core/status.h only.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "engine/core/status.h"

namespace strata::tokenizer {

// The split schemes. Each mirrors the regex list of the model's HF tokenizer.json (llama.cpp's
// llama-vocab.cpp is the de-facto reference); several `pre` names share one scheme.
enum class PreTokenizerKind {
  Default,        // missing `pre` or "default"
  Llama3,         // llama-bpe, llama3, dbrx, smaug-bpe, chatglm-bpe, ... : \p{N}{1,3}
  Qwen2,          // qwen2, deepseek-r1-qwen, stablelm2, megrez, ... : single digits
  Gpt2,           // gpt-2, mpt, olmo, jais, phi-2, roberta-bpe, ...
  Starcoder,      // starcoder, refact, command-r, smollm, codeshell, exaone: digits split first
  Falcon,         // falcon
  DeepseekLlm,    // deepseek-llm
  DeepseekCoder,  // deepseek-coder
  Bloom,          // bloom, poro-chat, gpt3-finnish
  Viking,         // viking
  Gpt4o,          // gpt-4o (gpt-oss), llama4: cased letter runs, \p{N}{1,3}, contractions after words
};

struct PreTokenizerInfo {
  PreTokenizerKind kind = PreTokenizerKind::Default;
  bool ignore_merges = false;  // a word that is itself a token is emitted whole (Llama 3)
  bool add_bos_default = false;  // what add_bos is when the GGUF does not say
};

// Maps a `tokenizer.ggml.pre` value to its scheme; "" means the key is absent (Default).
// Unknown names give Unsupported, naming the value.
Expected<PreTokenizerInfo> pre_tokenizer_from_name(std::string_view pre);

// A piece of the input: byte range [begin, end) of the text passed to pre_tokenize.
struct Piece {
  std::size_t begin;
  std::size_t end;
};

// Splits `text` into pieces that cover it in order, without gaps. Linear in the text length for
// every scheme (each matcher looks at one run of similar code points).
std::vector<Piece> pre_tokenize(PreTokenizerKind kind, std::string_view text);

}  // namespace strata::tokenizer
