// engine/tokenizer/bpe.h — byte-level BPE encoding: pre-tokenize, map bytes to characters, apply
// ranked merges, map to ids. Depends on vocab.h, pre_tokenizer.h, token_index.h.
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/core/status.h"
#include "engine/tokenizer/pre_tokenizer.h"
#include "engine/tokenizer/token_index.h"
#include "engine/tokenizer/vocab.h"

namespace strata::tokenizer {

class BpeModel {
 public:
  // Resolves every merge line "left right" to token ids; lines whose parts are not tokens are
  // skipped (they could never fire). Unsupported for an unknown `pre`.
  static Expected<BpeModel> build(const Vocab& vocab, const TokenIndex& index);

  // Encodes one text fragment (no special tokens in it) and appends the ids.
  void encode(std::string_view text, const TokenIndex& index, int32_t unk_id, std::vector<int32_t>& out) const;

 private:
  struct Merge {
    int32_t rank;    // line number in tokenizer.ggml.merges: lower merges first
    int32_t result;  // id of the merged token
  };
  static uint64_t pair_key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }
  void encode_word(std::string_view word, const TokenIndex& index, int32_t unk_id, std::vector<int32_t>& out) const;

  PreTokenizerInfo pre_;
  std::unordered_map<uint64_t, Merge> merges_;  // (left id, right id) -> merge
  int32_t byte_ids_[256] = {};                  // token of each byte's character, -1 if none
};

}  // namespace strata::tokenizer
