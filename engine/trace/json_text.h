// engine/trace/json_text.h — small appenders that write JSON text by hand (strings escaped,
// integers, ns as fractional µs) for the trace exporters. Standard library only; no allocation
// beyond the output string's growth.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/core/json_text.h"

namespace strata::trace::json {

// Appends `text` as a JSON string literal, quotes included (engine/core/json_text.h).
inline void append_string(std::string& out, std::string_view text) { append_json_string(out, text); }

template <typename Int>
inline void append_int(std::string& out, Int value) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof(buf), value);
  out.append(buf, static_cast<size_t>(r.ptr - buf));
}

// Appends ns as microseconds with exactly three decimals: 1234567 -> 1234.567, -5 -> -0.005.
// The text is exact, so a parser yields the double nearest to ns / 1000.
inline void append_us(std::string& out, int64_t ns) {
  uint64_t magnitude = ns < 0 ? uint64_t{0} - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  if (ns < 0) out.push_back('-');
  append_int(out, magnitude / 1000);
  const auto frac = static_cast<unsigned>(magnitude % 1000);
  out.push_back('.');
  out.push_back(static_cast<char>('0' + frac / 100));
  out.push_back(static_cast<char>('0' + frac / 10 % 10));
  out.push_back(static_cast<char>('0' + frac % 10));
}

}  // namespace strata::trace::json
