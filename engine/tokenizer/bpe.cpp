// engine/tokenizer/bpe.cpp — ranked-merge byte-level BPE over pre-tokenized words.
// Depends on bpe.h, byte_level.h, unicode.h.
//
// Per word: one symbol per byte (as its byte-level character's token); repeatedly merge the
// adjacent pair with the lowest merge rank (ties: leftmost) until no pair has a merge.
#include "engine/tokenizer/bpe.h"

#include <queue>
#include <string>

#include "engine/tokenizer/byte_level.h"

namespace strata::tokenizer {
namespace {

struct Symbol {
  int32_t prev;
  int32_t next;
  int32_t id;      // token id of the symbol's text; -1 if none
  uint32_t begin;  // byte range in the raw word
  uint32_t len;    // 0 once merged into its left neighbour
};

struct Bigram {
  int32_t rank;
  int32_t left;
  int32_t right;
  int32_t left_id;  // ids when queued; the bigram is stale if either symbol changed since
  int32_t right_id;
  int32_t result;
};

struct BigramOrder {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

}  // namespace

Expected<BpeModel> BpeModel::build(const Vocab& vocab, const TokenIndex& index) {
  BpeModel m;
  STRATA_ASSIGN_OR_RETURN(m.pre_, pre_tokenizer_from_name(vocab.pre == "default" ? "" : vocab.pre));
  for (int b = 0; b < 256; ++b) m.byte_ids_[b] = index.find(byte_to_unicode(static_cast<uint8_t>(b)));
  m.merges_.reserve(vocab.merges.size());
  std::string joined;
  for (std::size_t rank = 0; rank < vocab.merges.size(); ++rank) {
    const std::string& line = vocab.merges[rank];
    // Split at the first space after the first character: a part may not be empty.
    const std::size_t sp = line.find(' ', 1);
    if (sp == std::string::npos) {
      return make_error(Code::Corrupt, "tokenizer.ggml.merges[" + std::to_string(rank) + "] '" + line +
                                           "': expected two tokens separated by a space");
    }
    const std::string_view left(line.data(), sp);
    const std::string_view right(line.data() + sp + 1, line.size() - sp - 1);
    const int32_t l = index.find(left);
    const int32_t r = index.find(right);
    joined.assign(left);
    joined.append(right);
    const int32_t result = index.find(joined);
    if (l < 0 || r < 0 || result < 0) continue;
    m.merges_.emplace(pair_key(l, r), Merge{static_cast<int32_t>(rank), result});
  }
  return m;
}

void BpeModel::encode(std::string_view text, const TokenIndex& index, int32_t unk_id,
                      std::vector<int32_t>& out) const {
  for (const Piece& p : pre_tokenize(pre_.kind, text)) {
    encode_word(text.substr(p.begin, p.end - p.begin), index, unk_id, out);
  }
}

void BpeModel::encode_word(std::string_view word, const TokenIndex& index, int32_t unk_id,
                           std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (pre_.ignore_merges) {
    // Llama 3: a word that is a token as a whole is taken as is, even where merges would not
    // reach it.
    std::string mapped;
    bytes_to_byte_level(word, mapped);
    if (const int32_t id = index.find(mapped); id >= 0) {
      out.push_back(id);
      return;
    }
  }
  if (word.size() == 1) {
    const int32_t id = byte_ids_[static_cast<uint8_t>(word[0])];
    if (id >= 0) {
      out.push_back(id);
    } else if (unk_id >= 0) {
      out.push_back(unk_id);
    }
    return;
  }

  std::vector<Symbol> symbols(word.size());
  for (std::size_t i = 0; i < word.size(); ++i) {
    const auto idx = static_cast<int32_t>(i);
    symbols[i] = Symbol{idx - 1, idx + 1, byte_ids_[static_cast<uint8_t>(word[i])], static_cast<uint32_t>(i), 1};
  }
  symbols.back().next = -1;

  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
  auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const int32_t lid = symbols[left].id;
    const int32_t rid = symbols[right].id;
    if (lid < 0 || rid < 0) return;
    auto it = merges_.find(pair_key(lid, rid));
    if (it == merges_.end()) return;
    queue.push(Bigram{it->second.rank, left, right, lid, rid, it->second.result});
  };
  for (std::size_t i = 1; i < symbols.size(); ++i) try_add(static_cast<int32_t>(i - 1), static_cast<int32_t>(i));

  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& l = symbols[b.left];
    Symbol& r = symbols[b.right];
    if (l.len == 0 || r.len == 0 || l.next != b.right || l.id != b.left_id || r.id != b.right_id) continue;
    l.len += r.len;
    l.id = b.result;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[r.next].prev = b.left;
    try_add(l.prev, b.left);
    try_add(b.left, l.next);
  }

  for (int32_t i = 0; i >= 0; i = symbols[i].next) {
    const Symbol& s = symbols[i];
    if (s.id >= 0) {
      out.push_back(s.id);
    } else if (unk_id >= 0) {
      out.push_back(unk_id);  // a byte with no token in this vocabulary
    }
  }
}

}  // namespace strata::tokenizer
