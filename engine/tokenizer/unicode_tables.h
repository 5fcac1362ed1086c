// engine/tokenizer/unicode_tables.h — declarations of the generated Unicode category ranges.
// Depends on nothing; the data is written by tools/gen_unicode_tables.py.
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata::tokenizer::unicode_data {

struct CategoryRange {
  uint32_t first;  // first code point of the range; it ends where the next range starts
  uint8_t flags;   // CategoryFlag bits (see unicode.h)
};

extern const char kUnicodeVersion[];
extern const CategoryRange kCategoryRanges[];
extern const std::size_t kCategoryRangeCount;

}  // namespace strata::tokenizer::unicode_data
