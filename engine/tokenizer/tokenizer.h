// engine/tokenizer/tokenizer.h — text <-> token ids for SentencePiece-style and byte-level BPE
// vocabularies read from GGUF. Depends on vocab.h, spm.h, bpe.h; no model or execution types.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/core/status.h"
#include "engine/tokenizer/bpe.h"
#include "engine/tokenizer/token_index.h"
#include "engine/tokenizer/vocab.h"

namespace strata::tokenizer {

// Immutable after create(); every const method is safe to call from several threads at once.
class Tokenizer {
 public:
  // InvalidArgument when the vocab's arrays disagree or an id is out of range; Unsupported for
  // an unknown BPE pre-tokenizer.
  static Expected<Tokenizer> create(Vocab vocab);

  // add_special: BOS/EOS as the vocab's add_bos/add_eos say.
  // parse_special: text such as "<|im_start|>" becomes its control token. User-defined tokens
  // are always split out first, as in the HF and llama.cpp tokenizers.
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;

  // Raw bytes of one token: SPM "▁" -> ' ' and <0xNN> -> that byte; BPE byte-level characters
  // -> their bytes. Control/unknown tokens give "" unless `special`; unused ones always "".
  // An id out of range gives "".
  std::string token_to_piece(int32_t id, bool special = false) const;

  // Concatenated pieces. SPM with add_space_prefix: the leading space of the first piece is
  // removed, undoing the prefix encode() adds (so decode(encode(s)) == s).
  std::string decode(const std::vector<int32_t>& ids, bool special = false) const;

  const Vocab& vocab() const { return vocab_; }
  int32_t n_tokens() const { return vocab_.n_tokens(); }
  bool is_eog(int32_t id) const;
  bool is_control(int32_t id) const;
  TokenAttr attr(int32_t id) const;
  // Whether decode() strips the first piece's leading space (the SPM prefix rule).
  bool strips_leading_space() const { return vocab_.kind == TokenizerKind::Spm && vocab_.add_space_prefix; }
  std::optional<int32_t> find_token(std::string_view text) const;

 private:
  struct Fragment {
    bool is_token;
    int32_t token;
    std::size_t begin;  // byte range in the input when !is_token
    std::size_t end;
  };
  std::vector<Fragment> partition(std::string_view text, bool parse_special) const;
  void encode_text(std::string_view text, bool first_or_after_special, std::vector<int32_t>& out) const;

  Vocab vocab_;
  TokenIndex index_;
  // Special-token matching: by first byte, the distinct lengths of control/user-defined/unknown
  // token texts starting with it, longest first.
  std::array<std::vector<uint32_t>, 256> special_lengths_;
  TokenIndex special_index_;
  bool has_user_defined_ = false;
  std::array<int32_t, 256> spm_byte_ids_{};
  std::optional<BpeModel> bpe_;
};

}  // namespace strata::tokenizer
