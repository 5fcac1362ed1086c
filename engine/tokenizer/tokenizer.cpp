// engine/tokenizer/tokenizer.cpp — special-token splitting, SPM/BPE dispatch, and detokenization.
// Depends on vocab.h, spm.h, bpe.h, byte_level.h; never throws across the API.
#include "engine/tokenizer/tokenizer.h"

#include <algorithm>
#include <cstdio>

#include "engine/tokenizer/byte_level.h"
#include "engine/tokenizer/spm.h"

namespace strata::tokenizer {
namespace {

constexpr std::string_view kSpmSpace = "\xE2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK

bool is_special_attr(TokenAttr a) {
  return a == TokenAttr::Control || a == TokenAttr::UserDefined || a == TokenAttr::Unknown;
}

// "<0xNN>" -> NN, or -1.
int parse_byte_token(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  const int hi = hex(text[3]);
  const int lo = hex(text[4]);
  return (hi < 0 || lo < 0) ? -1 : hi * 16 + lo;
}

}  // namespace

Expected<Tokenizer> Tokenizer::create(Vocab vocab) {
  const std::size_t n = vocab.tokens.size();
  if (n == 0) return make_error(Code::InvalidArgument, "tokenizer: vocabulary has no tokens");
  if (n > static_cast<std::size_t>(INT32_MAX)) {
    return make_error(Code::InvalidArgument, "tokenizer: " + std::to_string(n) + " tokens exceed int32 ids");
  }
  if (vocab.scores.empty()) vocab.scores.assign(n, 0.0f);
  if (vocab.types.empty()) vocab.types.assign(n, static_cast<int32_t>(TokenAttr::Normal));
  if (vocab.scores.size() != n || vocab.types.size() != n) {
    return make_error(Code::InvalidArgument, "tokenizer: " + std::to_string(n) + " tokens but " +
                                                 std::to_string(vocab.scores.size()) + " scores and " +
                                                 std::to_string(vocab.types.size()) + " types");
  }
  const auto n_tokens = static_cast<int32_t>(n);
  const std::pair<const char*, int32_t*> ids[] = {{"bos", &vocab.bos_id}, {"eos", &vocab.eos_id},
                                                  {"eot", &vocab.eot_id}, {"unk", &vocab.unk_id},
                                                  {"pad", &vocab.pad_id}};
  for (const auto& [name, id] : ids) {
    if (*id < -1 || *id >= n_tokens) {
      return make_error(Code::InvalidArgument, std::string("tokenizer: ") + name + " id " + std::to_string(*id) +
                                                   " outside [0, " + std::to_string(n_tokens) + ")");
    }
  }
  for (int32_t id : vocab.eog_ids) {
    if (id < 0 || id >= n_tokens) {
      return make_error(Code::InvalidArgument, "tokenizer: end-of-generation id " + std::to_string(id) +
                                                   " outside [0, " + std::to_string(n_tokens) + ")");
    }
  }
  std::sort(vocab.eog_ids.begin(), vocab.eog_ids.end());
  vocab.eog_ids.erase(std::unique(vocab.eog_ids.begin(), vocab.eog_ids.end()), vocab.eog_ids.end());
  if (vocab.add_bos && vocab.bos_id < 0) vocab.add_bos = false;
  if (vocab.add_eos && vocab.eos_id < 0) vocab.add_eos = false;

  Tokenizer t;
  t.index_.reserve(n);
  for (int32_t i = 0; i < n_tokens; ++i) {
    const std::string& text = vocab.tokens[i];
    t.index_.add(text, i);
    if (!text.empty() && is_special_attr(static_cast<TokenAttr>(vocab.types[i]))) {
      t.special_index_.add(text, i);
      auto& lengths = t.special_lengths_[static_cast<uint8_t>(text[0])];
      if (std::find(lengths.begin(), lengths.end(), text.size()) == lengths.end()) {
        lengths.push_back(static_cast<uint32_t>(text.size()));
      }
      if (static_cast<TokenAttr>(vocab.types[i]) == TokenAttr::UserDefined) t.has_user_defined_ = true;
    }
  }
  for (auto& lengths : t.special_lengths_) std::sort(lengths.begin(), lengths.end(), std::greater<>());

  if (vocab.kind == TokenizerKind::Spm) {
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof(name), "<0x%02X>", b);
      int32_t id = t.index_.find(name);
      if (id < 0) id = t.index_.find(std::string(1, static_cast<char>(b)));
      t.spm_byte_ids_[b] = id >= 0 ? id : vocab.unk_id;
    }
  } else {
    STRATA_ASSIGN_OR_RETURN(BpeModel bpe, BpeModel::build(vocab, t.index_));
    t.bpe_ = std::move(bpe);
  }
  t.vocab_ = std::move(vocab);
  return t;
}

std::vector<Tokenizer::Fragment> Tokenizer::partition(std::string_view text, bool parse_special) const {
  std::vector<Fragment> frags;
  if (!parse_special && !has_user_defined_) {
    frags.push_back(Fragment{false, -1, 0, text.size()});
    return frags;
  }
  std::size_t text_begin = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    int32_t match = -1;
    std::size_t match_len = 0;
    for (uint32_t len : special_lengths_[static_cast<uint8_t>(text[i])]) {
      if (i + len > text.size()) continue;
      const int32_t id = special_index_.find(text.substr(i, len));
      if (id < 0) continue;
      // Without parse_special only user-defined tokens are split out; control text stays text.
      if (!parse_special && attr(id) != TokenAttr::UserDefined) continue;
      match = id;
      match_len = len;
      break;
    }
    if (match < 0) {
      ++i;
      continue;
    }
    if (text_begin < i) frags.push_back(Fragment{false, -1, text_begin, i});
    frags.push_back(Fragment{true, match, i, i + match_len});
    i += match_len;
    text_begin = i;
  }
  if (text_begin < text.size()) frags.push_back(Fragment{false, -1, text_begin, text.size()});
  return frags;
}

void Tokenizer::encode_text(std::string_view text, bool first_or_after_special, std::vector<int32_t>& out) const {
  if (vocab_.kind == TokenizerKind::Bpe) {
    bpe_->encode(text, index_, vocab_.unk_id, out);
    return;
  }
  std::string escaped;
  escaped.reserve(text.size() + text.size() / 2 + 3);
  if (vocab_.add_space_prefix && first_or_after_special) escaped.append(kSpmSpace);
  for (char ch : text) {
    if (ch == ' ') {
      escaped.append(kSpmSpace);
    } else {
      escaped.push_back(ch);
    }
  }
  const SpmModel model{&index_, vocab_.scores.data(), spm_byte_ids_.data()};
  spm_encode(model, escaped, out);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  if (add_special && vocab_.add_bos) out.push_back(vocab_.bos_id);
  bool after_special = true;  // the SPM space prefix goes on text that starts the input or follows a special
  if (!text.empty()) {
    for (const Fragment& f : partition(text, parse_special)) {
      if (f.is_token) {
        out.push_back(f.token);
        after_special = true;
      } else {
        encode_text(text.substr(f.begin, f.end - f.begin), after_special, out);
        after_special = false;
      }
    }
  }
  if (add_special && vocab_.add_eos) out.push_back(vocab_.eos_id);
  return out;
}

TokenAttr Tokenizer::attr(int32_t id) const {
  if (id < 0 || id >= n_tokens()) return TokenAttr::Unused;
  return static_cast<TokenAttr>(vocab_.types[id]);
}

std::string Tokenizer::token_to_piece(int32_t id, bool special) const {
  if (id < 0 || id >= n_tokens()) return {};
  const std::string& text = vocab_.tokens[id];
  switch (attr(id)) {
    case TokenAttr::Control:
    case TokenAttr::Unknown:
      return special ? text : std::string();
    case TokenAttr::Unused:
      return {};
    case TokenAttr::UserDefined:
      return text;  // stored as plain text in both vocabulary kinds
    case TokenAttr::Byte:
      if (vocab_.kind == TokenizerKind::Spm) {
        const int b = parse_byte_token(text);
        return b >= 0 ? std::string(1, static_cast<char>(b)) : text;
      }
      break;
    case TokenAttr::Normal:
      break;
  }
  if (vocab_.kind == TokenizerKind::Bpe) return byte_level_to_bytes(text);
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    if (text.compare(i, kSpmSpace.size(), kSpmSpace) == 0) {
      out.push_back(' ');
      i += kSpmSpace.size();
    } else {
      out.push_back(text[i++]);
    }
  }
  return out;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool special) const {
  std::string out;
  bool strip = strips_leading_space();
  for (int32_t id : ids) {
    std::string piece = token_to_piece(id, special);
    if (strip && !piece.empty()) {
      if (piece[0] == ' ') piece.erase(0, 1);
      strip = false;
    }
    out += piece;
  }
  return out;
}

bool Tokenizer::is_eog(int32_t id) const {
  return std::binary_search(vocab_.eog_ids.begin(), vocab_.eog_ids.end(), id);
}

bool Tokenizer::is_control(int32_t id) const { return attr(id) == TokenAttr::Control; }

std::optional<int32_t> Tokenizer::find_token(std::string_view text) const {
  const int32_t id = index_.find(text);
  if (id < 0) return std::nullopt;
  return id;
}

}  // namespace strata::tokenizer
