// engine/tokenizer/vocab.h — a tokenizer vocabulary as read from GGUF `tokenizer.ggml.*` metadata.
// Depends on engine/gguf (reading only) and core/status.h; knows nothing of encoding.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace strata::gguf {
class GgufFile;
}

namespace strata::tokenizer {

enum class TokenizerKind {
  Spm,  // tokenizer.ggml.model "llama": SentencePiece-style, score-driven merges, <0xNN> byte fallback
  Bpe,  // tokenizer.ggml.model "gpt2": byte-level BPE with ranked merges and a regex pre-tokenizer
};

// GGUF token_type values.
enum class TokenAttr : int32_t { Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

struct Vocab {
  TokenizerKind kind = TokenizerKind::Spm;
  std::string pre = "default";  // tokenizer.ggml.pre ("llama-bpe", "qwen2", "gpt-2", "default", ...)

  std::vector<std::string> tokens;  // [n_tokens] token text as stored (SPM: U+2581 for space; BPE: byte-level)
  std::vector<float> scores;        // [n_tokens] SPM merge scores (higher merges first); 0 when absent
  std::vector<int32_t> types;       // [n_tokens] TokenAttr values; Normal when absent
  std::vector<std::string> merges;  // BPE only: "left right", index = rank (lower merges first)

  int32_t bos_id = -1, eos_id = -1, eot_id = -1, unk_id = -1, pad_id = -1;  // -1: none
  bool add_bos = false;
  bool add_eos = false;
  bool add_space_prefix = false;  // SPM: prepend U+2581 to text that starts a fragment

  // Every end-of-generation token present: eos, eot, eom and tokens such as <|im_end|>,
  // <|eot_id|>, <|end|>, <end_of_turn>, <|endoftext|>. Sorted, unique. These are marked Control.
  std::vector<int32_t> eog_ids;

  int32_t n_tokens() const { return static_cast<int32_t>(tokens.size()); }

  // Unsupported (naming the model) for tokenizer models other than "llama" and "gpt2" (e.g.
  // "bert") and for unknown BPE pre-tokenizers; Corrupt when arrays disagree in length.
  static Expected<Vocab> from_gguf(const gguf::GgufFile& file);
};

}  // namespace strata::tokenizer
