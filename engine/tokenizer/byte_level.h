// engine/tokenizer/byte_level.h — GPT-2's reversible byte <-> printable-character mapping used by
// byte-level BPE vocabularies (space -> U+0120 'Ġ', newline -> U+010A 'Ċ', ...). Standard library only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace strata::tokenizer {

// UTF-8 of the character that stands for byte b in a byte-level vocabulary.
const std::string& byte_to_unicode(uint8_t b);

// The byte a character stands for, or -1 if the code point is not part of the mapping.
int byte_from_unicode(uint32_t cp);

// Maps raw bytes to their byte-level text (appends to out).
void bytes_to_byte_level(std::string_view bytes, std::string& out);

// Unmaps byte-level text to raw bytes; characters outside the mapping are copied as UTF-8.
std::string byte_level_to_bytes(std::string_view text);

}  // namespace strata::tokenizer
