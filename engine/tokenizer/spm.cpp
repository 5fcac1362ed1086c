// engine/tokenizer/spm.cpp — the SentencePiece (BPE-with-scores) merge loop used for "llama" vocabularies.
// Depends on spm.h / unicode.h only.
//
// Start from one symbol per UTF-8 character; repeatedly merge the adjacent pair whose concatenation
// is a token with the highest score (ties: leftmost); symbols that never became a token come out
// as byte tokens.
#include "engine/tokenizer/spm.h"

#include <queue>

#include "engine/tokenizer/unicode.h"

namespace strata::tokenizer {
namespace {

struct Symbol {
  int32_t prev;
  int32_t next;
  uint32_t begin;  // byte offset in the fragment
  uint32_t len;    // bytes; 0 once merged into its left neighbour
};

struct Bigram {
  float score;
  int32_t left;
  int32_t right;
  uint32_t len;  // bytes of the merged text when queued; stale if the symbols changed since
};

struct BigramOrder {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

}  // namespace

void spm_encode(const SpmModel& model, std::string_view text, std::vector<int32_t>& out) {
  if (text.empty()) return;
  std::vector<Symbol> symbols;
  symbols.reserve(text.size());
  for (std::size_t off = 0; off < text.size();) {
    std::size_t len = utf8_sequence_length(static_cast<uint8_t>(text[off]));
    if (off + len > text.size()) len = text.size() - off;
    const auto idx = static_cast<int32_t>(symbols.size());
    symbols.push_back(Symbol{idx - 1, idx + 1, static_cast<uint32_t>(off), static_cast<uint32_t>(len)});
    off += len;
  }
  symbols.back().next = -1;

  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
  auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const uint32_t len = symbols[left].len + symbols[right].len;
    const int32_t id = model.index->find(text.substr(symbols[left].begin, len));
    if (id < 0) return;
    queue.push(Bigram{model.scores[id], left, right, len});
  };
  for (std::size_t i = 1; i < symbols.size(); ++i) try_add(static_cast<int32_t>(i - 1), static_cast<int32_t>(i));

  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& l = symbols[b.left];
    Symbol& r = symbols[b.right];
    if (l.len == 0 || r.len == 0 || l.len + r.len != b.len) continue;
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[r.next].prev = b.left;
    try_add(l.prev, b.left);
    try_add(b.left, l.next);
  }

  for (int32_t i = 0; i >= 0; i = symbols[i].next) {
    const Symbol& s = symbols[i];
    const std::string_view piece = text.substr(s.begin, s.len);
    const int32_t id = model.index->find(piece);
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    for (char ch : piece) {
      const int32_t byte_id = model.byte_ids[static_cast<uint8_t>(ch)];
      if (byte_id >= 0) out.push_back(byte_id);
    }
  }
}

}  // namespace strata::tokenizer
