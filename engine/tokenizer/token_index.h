// engine/tokenizer/token_index.h — token text -> id lookup by string_view (no allocation per lookup).
// Header-only, standard library only.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace strata::tokenizer {

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

class TokenIndex {
 public:
  void reserve(std::size_t n) { map_.reserve(n); }
  // The first id wins when a text occurs twice (duplicate texts exist in some converted vocabs).
  void add(const std::string& text, int32_t id) { map_.emplace(text, id); }
  int32_t find(std::string_view text) const {
    auto it = map_.find(text);
    return it == map_.end() ? -1 : it->second;
  }

 private:
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> map_;
};

}  // namespace strata::tokenizer
