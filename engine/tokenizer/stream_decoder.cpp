// engine/tokenizer/stream_decoder.cpp — incremental UTF-8 assembly over token pieces.
// Depends on stream_decoder.h and unicode.h.
#include "engine/tokenizer/stream_decoder.h"

#include "engine/tokenizer/unicode.h"

namespace strata::tokenizer {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Could bytes[0..n) be the start of a valid UTF-8 sequence that is only missing its tail?
bool is_truncated_sequence(std::string_view bytes) {
  const auto b0 = static_cast<uint8_t>(bytes[0]);
  const std::size_t need = utf8_sequence_length(b0);
  if (need == 1 || b0 < 0xC2 || b0 > 0xF4 || bytes.size() >= need) return false;
  for (std::size_t k = 1; k < bytes.size(); ++k) {
    const auto b = static_cast<uint8_t>(bytes[k]);
    uint8_t lo = 0x80, hi = 0xBF;
    if (k == 1) {  // the second byte's range excludes overlongs, surrogates and > U+10FFFF
      if (b0 == 0xE0) lo = 0xA0;
      if (b0 == 0xED) hi = 0x9F;
      if (b0 == 0xF0) lo = 0x90;
      if (b0 == 0xF4) hi = 0x8F;
    }
    if (b < lo || b > hi) return false;
  }
  return true;
}

// Moves the complete part of `pending` to the result: valid characters as they are, bytes that
// cannot start or continue a character as U+FFFD. Keeps a truncated tail unless `final`.
std::string drain(std::string& pending, bool final) {
  std::string out;
  std::size_t i = 0;
  while (i < pending.size()) {
    const std::string_view rest(pending.data() + i, pending.size() - i);
    const std::size_t ok = valid_utf8_prefix(rest);
    out.append(rest.substr(0, ok));
    i += ok;
    if (i == pending.size()) break;
    if (!final && is_truncated_sequence(std::string_view(pending.data() + i, pending.size() - i))) break;
    // Definitely invalid, or truncated at the end of the stream: one U+FFFD per byte that
    // cannot be part of a character, then resynchronise at the next byte.
    out.append(kReplacement);
    ++i;
  }
  pending.erase(0, i);
  return out;
}

}  // namespace

std::string StreamDecoder::push(int32_t id) {
  std::string piece = tokenizer_->token_to_piece(id, special_);
  if (strip_pending_ && !piece.empty()) {
    if (tokenizer_->strips_leading_space() && piece[0] == ' ') piece.erase(0, 1);
    strip_pending_ = false;
  }
  pending_ += piece;
  return drain(pending_, false);
}

std::string StreamDecoder::flush() {
  std::string out = drain(pending_, true);
  pending_.clear();
  return out;
}

void StreamDecoder::reset() {
  pending_.clear();
  strip_pending_ = true;
}

}  // namespace strata::tokenizer
