// engine/tokenizer/byte_level.cpp — the GPT-2 byte <-> character table, built once at first use.
// Depends on unicode.h for UTF-8 helpers only.
#include "engine/tokenizer/byte_level.h"

#include <array>

#include "engine/tokenizer/unicode.h"

namespace strata::tokenizer {
namespace {

// Printable Latin-1 bytes ('!'..'~', U+00A1..U+00AC, U+00AE..U+00FF) stand for themselves; the
// other 68 bytes take the code points 256, 257, ... in byte order. That keeps every byte visible
// and unambiguous in vocabulary files.
struct Tables {
  std::array<uint32_t, 256> cp_of_byte{};
  std::array<std::string, 256> utf8_of_byte;
  std::array<int16_t, 512> byte_of_cp{};  // all mapped code points are < 256 + 68
};

const Tables& tables() {
  static const Tables t = [] {
    Tables x;
    x.byte_of_cp.fill(-1);
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool self = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      x.cp_of_byte[b] = self ? b : next++;
    }
    for (uint32_t b = 0; b < 256; ++b) {
      append_utf8(x.utf8_of_byte[b], x.cp_of_byte[b]);
      x.byte_of_cp[x.cp_of_byte[b]] = static_cast<int16_t>(b);
    }
    return x;
  }();
  return t;
}

}  // namespace

const std::string& byte_to_unicode(uint8_t b) { return tables().utf8_of_byte[b]; }

int byte_from_unicode(uint32_t cp) {
  if (cp >= tables().byte_of_cp.size()) return -1;
  return tables().byte_of_cp[cp];
}

void bytes_to_byte_level(std::string_view bytes, std::string& out) {
  const Tables& t = tables();
  for (char ch : bytes) out += t.utf8_of_byte[static_cast<uint8_t>(ch)];
}

std::string byte_level_to_bytes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  const std::vector<Cpt> cps = decode_utf8(text);
  for (std::size_t i = 0; i < cps.size(); ++i) {
    const std::size_t begin = cps[i].offset;
    const std::size_t end = i + 1 < cps.size() ? cps[i + 1].offset : text.size();
    const int b = byte_from_unicode(cps[i].cp);
    if (b >= 0) {
      out.push_back(static_cast<char>(b));
    } else {
      out.append(text.substr(begin, end - begin));  // not a byte-level character: keep its bytes
    }
  }
  return out;
}

}  // namespace strata::tokenizer
