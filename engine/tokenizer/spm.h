// engine/tokenizer/spm.h — SentencePiece-style encoding of one text fragment: score-driven merges of
// adjacent symbols, then <0xNN> byte fallback. Depends on token_index.h only.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/tokenizer/token_index.h"

namespace strata::tokenizer {

struct SpmModel {
  const TokenIndex* index = nullptr;   // token text -> id
  const float* scores = nullptr;       // [n_tokens]
  const int32_t* byte_ids = nullptr;   // [256] <0xNN> token per byte, else the single-byte token, else unk/-1
};

// `text` is already escaped (spaces as U+2581, the prefix added). Appends the ids to out.
// O(n log n) in the fragment length: a priority queue of candidate merges with lazy invalidation.
void spm_encode(const SpmModel& model, std::string_view text, std::vector<int32_t>& out);

}  // namespace strata::tokenizer
