// engine/tokenizer/unicode.h — UTF-8 decoding/encoding and code point categories for the tokenizers.
// Depends only on the generated tables; no engine types.
#pragma once

#include "engine/core/utf8.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::tokenizer {

// Flag bits of a code point: its general-category class, plus White_Space (orthogonal).
enum CategoryFlag : uint8_t {
  kLetter = 0x01,      // \p{L}
  kNumber = 0x02,      // \p{N}
  kPunct = 0x04,       // \p{P}
  kSymbol = 0x08,      // \p{S}
  kMark = 0x10,        // \p{M}
  kSeparator = 0x20,   // \p{Z}
  kOther = 0x40,       // \p{C}: controls, format, unassigned, private use, surrogates
  kWhitespace = 0x80,  // \s (the White_Space property)
};

uint8_t cpt_flags(uint32_t cp);
inline bool is_letter(uint32_t cp) { return cpt_flags(cp) & kLetter; }
inline bool is_number(uint32_t cp) { return cpt_flags(cp) & kNumber; }
inline bool is_whitespace(uint32_t cp) { return cpt_flags(cp) & kWhitespace; }
const char* unicode_version();

// One decoded code point and where it sits in the source bytes.
struct Cpt {
  uint32_t cp;      // U+FFFD for a byte that does not start a valid UTF-8 sequence
  uint32_t offset;  // byte offset in the source text
  uint8_t flags;    // cpt_flags(cp)
};

// Decodes text leniently: each invalid byte becomes one U+FFFD of length 1, so byte offsets
// always cover the input exactly and pieces cut at code point boundaries keep the raw bytes.
std::vector<Cpt> decode_utf8(std::string_view text);

// Length of the UTF-8 sequence that starts with `lead` (1 for continuation/invalid bytes).
std::size_t utf8_sequence_length(uint8_t lead);

// Number of bytes at the start of `bytes` that form complete, valid UTF-8 (stops before the
// first invalid or truncated sequence).
std::size_t valid_utf8_prefix(std::string_view bytes);

using strata::append_utf8;  // engine/core/utf8.h

}  // namespace strata::tokenizer
