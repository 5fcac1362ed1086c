// engine/tokenizer/stream_decoder.h — turns generated token ids into text as they arrive, emitting
// only complete, valid UTF-8. Depends on tokenizer.h.
#pragma once

#include <cstdint>
#include <string>

#include "engine/tokenizer/tokenizer.h"

namespace strata::tokenizer {

// One per generated sequence; not thread-safe. The tokenizer must outlive it.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, bool special = false)
      : tokenizer_(&tokenizer), special_(special) {}

  // The text that became complete with this token: valid UTF-8 (bytes that can never form a
  // character become U+FFFD); a multi-byte character split across tokens is held back until
  // its last byte arrives. Applies decode()'s SPM leading-space rule to the first piece.
  std::string push(int32_t id);

  // What is left at the end of the sequence (a truncated character becomes U+FFFD).
  std::string flush();

  void reset();

 private:
  const Tokenizer* tokenizer_;
  bool special_;
  bool strip_pending_ = true;  // the first non-empty piece has not been seen yet
  std::string pending_;        // bytes of an incomplete character
};

}  // namespace strata::tokenizer
