// engine/tokenizer/unicode.cpp — UTF-8 decoding and category lookup over the generated ranges.
// Depends only on unicode_tables; never throws, never aborts.
#include "engine/tokenizer/unicode.h"

#include <algorithm>
#include <array>

#include "engine/tokenizer/unicode_tables.h"

namespace strata::tokenizer {
namespace {

// A flat table for the first 64K code points keeps the common case to one load; the rest
// goes through a binary search over the ranges.
constexpr uint32_t kDirectLimit = 0x10000;

const std::array<uint8_t, kDirectLimit>& direct_table() {
  static const std::array<uint8_t, kDirectLimit> table = [] {
    std::array<uint8_t, kDirectLimit> t{};
    using unicode_data::kCategoryRangeCount;
    using unicode_data::kCategoryRanges;
    for (std::size_t i = 0; i < kCategoryRangeCount; ++i) {
      const uint32_t first = kCategoryRanges[i].first;
      if (first >= kDirectLimit) break;
      const uint32_t last = i + 1 < kCategoryRangeCount ? kCategoryRanges[i + 1].first : 0x110000;
      for (uint32_t cp = first; cp < std::min(last, kDirectLimit); ++cp) t[cp] = kCategoryRanges[i].flags;
    }
    return t;
  }();
  return table;
}

}  // namespace

uint8_t cpt_flags(uint32_t cp) {
  if (cp < kDirectLimit) return direct_table()[cp];
  if (cp > 0x10FFFF) return kOther;
  using unicode_data::kCategoryRangeCount;
  using unicode_data::kCategoryRanges;
  const auto* end = kCategoryRanges + kCategoryRangeCount;
  const auto* it = std::upper_bound(kCategoryRanges, end, cp,
                                    [](uint32_t v, const unicode_data::CategoryRange& r) { return v < r.first; });
  return (it == kCategoryRanges) ? static_cast<uint8_t>(kOther) : (it - 1)->flags;
}

const char* unicode_version() { return unicode_data::kUnicodeVersion; }

std::size_t utf8_sequence_length(uint8_t lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 1;
}

namespace {

// Decodes one code point at text[i]; returns its length, or 0 when the bytes are not valid
// UTF-8 (overlong forms, surrogates and values past U+10FFFF count as invalid).
std::size_t decode_one(std::string_view text, std::size_t i, uint32_t& cp) {
  const auto b0 = static_cast<uint8_t>(text[i]);
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  const std::size_t n = utf8_sequence_length(b0);
  if (n == 1 || i + n > text.size()) return 0;
  uint32_t v = b0 & (0x7F >> n);
  for (std::size_t k = 1; k < n; ++k) {
    const auto b = static_cast<uint8_t>(text[i + k]);
    if ((b & 0xC0) != 0x80) return 0;
    v = (v << 6) | (b & 0x3F);
  }
  static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (v < kMin[n] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
  cp = v;
  return n;
}

}  // namespace

std::vector<Cpt> decode_utf8(std::string_view text) {
  std::vector<Cpt> out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    uint32_t cp = 0;
    std::size_t n = decode_one(text, i, cp);
    if (n == 0) {
      cp = 0xFFFD;
      n = 1;
    }
    out.push_back(Cpt{cp, static_cast<uint32_t>(i), cpt_flags(cp)});
    i += n;
  }
  return out;
}

std::size_t valid_utf8_prefix(std::string_view bytes) {
  std::size_t i = 0;
  while (i < bytes.size()) {
    uint32_t cp = 0;
    const std::size_t n = decode_one(bytes, i, cp);
    if (n == 0) break;
    i += n;
  }
  return i;
}


}  // namespace strata::tokenizer
