// engine/core/json_text.h — writing a JSON string literal by hand, for the writers that build
// JSON text directly (the trace writer's hot loop, the chat templates' tojson). The escaping is
// Python's json.dumps(ensure_ascii=False): \" \\ \n \r \t \b \f, other control characters as
// \u00XX, everything else (UTF-8 included) as is. Depends on nothing but the standard library.
#pragma once

#include <string>
#include <string_view>

namespace strata {

// Appends one ASCII byte (< 0x80) with JSON escaping.
inline void append_json_ascii(std::string& out, unsigned char c) {
  static const char kHex[] = "0123456789abcdef";
  switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    case '\b': out += "\\b"; break;
    case '\f': out += "\\f"; break;
    default:
      if (c < 0x20) {
        out += "\\u00";
        out.push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 15]);
      } else {
        out.push_back(static_cast<char>(c));
      }
  }
}

// Appends `text` as a JSON string literal, quotes included; bytes >= 0x80 pass through.
inline void append_json_string(std::string& out, std::string_view text) {
  out.push_back('"');
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x80) {
      out.push_back(ch);
    } else {
      append_json_ascii(out, c);
    }
  }
  out.push_back('"');
}

}  // namespace strata
