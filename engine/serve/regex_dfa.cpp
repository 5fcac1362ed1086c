// engine/serve/regex_dfa.cpp — pattern -> syntax tree -> Thompson NFA over bytes -> DFA by subset
// construction, with states that cannot reach acceptance removed (see regex_dfa.h).
#include "engine/serve/regex_dfa.h"

#include <algorithm>
#include <bitset>
#include <chrono>
#include <cctype>
#include <map>
#include <memory>

namespace strata::serve {

namespace {

using ByteSet = std::bitset<256>;

struct Ast {
  enum class Kind { Byte, Seq, Alt, Repeat };
  Kind kind = Kind::Seq;
  ByteSet bytes;                            // Byte: one byte from this set
  std::vector<std::unique_ptr<Ast>> items;  // Seq, Alt; Repeat: items[0]
  int64_t min = 0, max = -1;                // Repeat; max -1: unbounded
};
using AstPtr = std::unique_ptr<Ast>;

AstPtr byte_node(const ByteSet& b) {
  auto n = std::make_unique<Ast>();
  n->kind = Ast::Kind::Byte;
  n->bytes = b;
  return n;
}
AstPtr seq_node() { return std::make_unique<Ast>(); }
AstPtr alt_node() {
  auto n = std::make_unique<Ast>();
  n->kind = Ast::Kind::Alt;
  return n;
}
AstPtr repeat_node(AstPtr child, int64_t min, int64_t max) {
  auto n = std::make_unique<Ast>();
  n->kind = Ast::Kind::Repeat;
  n->items.push_back(std::move(child));
  n->min = min;
  n->max = max;
  return n;
}
ByteSet range(unsigned lo, unsigned hi) {
  ByteSet b;
  for (unsigned c = lo; c <= hi; ++c) b.set(c);
  return b;
}
// The bytes of one UTF-8 character.
std::string utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    s.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    s.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    s.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    s.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    s.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
  return s;
}
AstPtr literal(const std::string& bytes) {
  if (bytes.size() == 1) return byte_node(ByteSet().set(static_cast<unsigned char>(bytes[0])));
  AstPtr s = seq_node();
  for (char c : bytes) s->items.push_back(byte_node(ByteSet().set(static_cast<unsigned char>(c))));
  return s;
}
// Any one non-ASCII UTF-8 character (well-formed lead byte and its continuation bytes).
AstPtr any_non_ascii() {
  AstPtr alt = alt_node();
  const ByteSet cont = range(0x80, 0xBF);
  const std::pair<unsigned, unsigned> leads[] = {{0xC2, 0xDF}, {0xE0, 0xEF}, {0xF0, 0xF4}};
  for (int k = 0; k < 3; ++k) {
    AstPtr s = seq_node();
    s->items.push_back(byte_node(range(leads[k].first, leads[k].second)));
    for (int j = 0; j <= k; ++j) s->items.push_back(byte_node(cont));
    alt->items.push_back(std::move(s));
  }
  return alt;
}

// One character of a class: ASCII bytes, whether any non-ASCII character matches, and the
// non-ASCII characters listed.
struct CharClass {
  ByteSet ascii;
  bool non_ascii = false;
  std::vector<std::string> extra;
  AstPtr node() const {
    AstPtr alt = alt_node();
    if (ascii.any()) alt->items.push_back(byte_node(ascii));
    if (non_ascii) alt->items.push_back(any_non_ascii());
    for (const std::string& e : extra) alt->items.push_back(literal(e));
    if (alt->items.size() == 1) return std::move(alt->items[0]);
    return alt;  // an empty alternation matches nothing: `[^\s\S]`
  }
};

// Any text at all: what an unanchored side of a pattern may hold.
AstPtr any_text() {
  CharClass all;
  all.ascii = range(0, 0x7F);
  all.non_ascii = true;
  return repeat_node(all.node(), 0, -1);
}

ByteSet ascii_of(char cls) {
  ByteSet b;
  switch (cls) {
    case 'd': b = range('0', '9'); break;
    case 'w': b = range('0', '9') | range('A', 'Z') | range('a', 'z'); b.set('_'); break;
    case 's': for (char c : {' ', '\t', '\n', '\r', '\f', '\v'}) b.set(static_cast<unsigned char>(c)); break;
    default: break;
  }
  return b;
}
const ByteSet kAscii = range(0, 0x7F);

class Parser {
 public:
  explicit Parser(const std::string& p) : p_(p) {}

  // The whole pattern: top-level alternatives, each anchored by a leading '^' / trailing '$' or
  // else open on that side (JSON Schema patterns match anywhere: `^a|b$` is (^a)|(b$)).
  Expected<AstPtr> parse() {
    end_ = p_.size();
    AstPtr alt = alt_node();
    while (true) {
      bool anchored_start = false, anchored_end = false;
      if (more() && peek() == '^') {
        anchored_start = true;
        ++pos_;
      }
      AstPtr s = seq_node();
      while (more() && peek() != '|' && peek() != ')') {
        if (peek() == '$' && (pos_ + 1 == end_ || p_[pos_ + 1] == '|')) {
          anchored_end = true;
          ++pos_;
          break;
        }
        STRATA_ASSIGN_OR_RETURN(AstPtr a, atom(0));
        STRATA_ASSIGN_OR_RETURN(AstPtr q, quantified(std::move(a)));
        s->items.push_back(std::move(q));
      }
      AstPtr branch = seq_node();
      if (!anchored_start) branch->items.push_back(any_text());
      branch->items.push_back(std::move(s));
      if (!anchored_end) branch->items.push_back(any_text());
      alt->items.push_back(std::move(branch));
      if (more() && peek() == '|') {
        ++pos_;
        continue;
      }
      break;
    }
    if (pos_ != end_) return unexpected();
    if (alt->items.size() == 1) return std::move(alt->items[0]);
    return alt;
  }

 private:
  Error unsupported(const std::string& what) const {
    return Error{Code::InvalidArgument, "pattern: " + what + " is not supported (at offset " + std::to_string(pos_) + ")"};
  }
  Error unexpected() const {
    if (pos_ < end_ && p_[pos_] == ')') return Error{Code::InvalidArgument, "pattern: unbalanced ')' at offset " + std::to_string(pos_)};
    return Error{Code::InvalidArgument, "pattern: unexpected end or character at offset " + std::to_string(pos_)};
  }
  bool more() const { return pos_ < end_; }
  char peek() const { return p_[pos_]; }

  Expected<AstPtr> alternation(int depth) {
    if (depth > 32) return unsupported("groups nested more than 32 deep");
    AstPtr alt = alt_node();
    while (true) {
      STRATA_ASSIGN_OR_RETURN(AstPtr s, sequence(depth));
      alt->items.push_back(std::move(s));
      if (more() && peek() == '|') {
        ++pos_;
        continue;
      }
      break;
    }
    if (alt->items.size() == 1) return std::move(alt->items[0]);
    return alt;
  }

  Expected<AstPtr> sequence(int depth) {
    AstPtr s = seq_node();
    while (more() && peek() != '|' && peek() != ')') {
      STRATA_ASSIGN_OR_RETURN(AstPtr a, atom(depth));
      STRATA_ASSIGN_OR_RETURN(AstPtr q, quantified(std::move(a)));
      s->items.push_back(std::move(q));
    }
    return s;
  }

  // {n}, {n,}, {n,m} at pos_ (on '{'); false when it is not one (then '{' is a literal, as
  // ECMAScript reads it outside unicode mode).
  bool braces(int64_t& lo, int64_t& hi) {
    size_t i = pos_ + 1;
    auto number = [&](int64_t& v) {
      const size_t from = i;
      v = 0;
      while (i < end_ && p_[i] >= '0' && p_[i] <= '9' && i - from < 6) v = v * 10 + (p_[i++] - '0');
      return i > from;
    };
    if (!number(lo)) return false;
    hi = lo;
    if (i < end_ && p_[i] == ',') {
      ++i;
      hi = -1;
      if (i < end_ && p_[i] != '}' && !number(hi)) return false;
    }
    if (i >= end_ || p_[i] != '}') return false;
    pos_ = i + 1;
    return true;
  }

  Expected<AstPtr> quantified(AstPtr a) {
    bool any = false;
    while (more()) {
      int64_t lo = 0, hi = -1;
      const char c = peek();
      if (c == '*') {
        ++pos_;
      } else if (c == '+') {
        lo = 1;
        ++pos_;
      } else if (c == '?') {
        hi = 1;
        ++pos_;
      } else if (c == '{' && braces(lo, hi)) {
        if (hi >= 0 && hi < lo) return Error{Code::InvalidArgument, "pattern: {n,m} with m below n"};
        if (lo > 1000 || hi > 1000) return unsupported("a repeat count over 1000");
      } else {
        break;
      }
      if (any) return unsupported("a quantifier after a quantifier (possessive or nested without a group)");
      any = true;
      a = repeat_node(std::move(a), lo, hi);
      if (more() && peek() == '?') ++pos_;  // lazy: the same strings match
    }
    return a;
  }

  // One escape after '\' (pos_ on the character after it). In a class, cls is filled; else the
  // escape's node is returned through out.
  Status escape(CharClass& cls, bool in_class) {
    if (!more()) return Error{Code::InvalidArgument, "pattern: a trailing backslash"};
    const char c = p_[pos_++];
    auto hex = [&](size_t n, uint32_t& v) -> bool {
      v = 0;
      for (size_t k = 0; k < n; ++k) {
        if (pos_ >= end_ || !std::isxdigit(static_cast<unsigned char>(p_[pos_]))) return false;
        const char h = p_[pos_++];
        v = v * 16 + static_cast<uint32_t>(h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
      }
      return true;
    };
    switch (c) {
      case 'd': case 'w': case 's': cls.ascii |= ascii_of(c); return {};
      case 'D': case 'W': case 'S':
        cls.ascii |= kAscii & ~ascii_of(static_cast<char>(c | 0x20));
        cls.non_ascii = true;
        return {};
      case 'n': cls.ascii.set('\n'); return {};
      case 't': cls.ascii.set('\t'); return {};
      case 'r': cls.ascii.set('\r'); return {};
      case 'f': cls.ascii.set('\f'); return {};
      case 'v': cls.ascii.set('\v'); return {};
      case '0': cls.ascii.set(0); return {};
      case 'x':
      case 'u': {
        uint32_t v = 0;
        if (c == 'u' && more() && peek() == '{') return unsupported("'\\u{…}' (unicode mode)");
        if (!hex(c == 'x' ? 2 : 4, v)) return Error{Code::InvalidArgument, std::string("pattern: '\\") + c + "' needs hex digits"};
        if (v >= 0xD800 && v <= 0xDFFF) return unsupported("a surrogate '\\u' escape");
        if (v < 0x80) cls.ascii.set(v);
        else cls.extra.push_back(utf8(v));
        return {};
      }
      case 'b': return in_class ? (cls.ascii.set('\b'), Status{}) : unsupported("a word boundary '\\b'");
      case 'B': return unsupported("a word boundary '\\B'");
      case 'p': case 'P': return unsupported("a Unicode property escape '\\p{…}'");
      case 'k': return unsupported("a named backreference '\\k<…>'");
      case 'c': return unsupported("a control escape '\\c'");
      default: break;
    }
    if (c >= '1' && c <= '9') return unsupported("a backreference '\\" + std::string(1, c) + "'");
    if (std::isalnum(static_cast<unsigned char>(c))) return unsupported("the escape '\\" + std::string(1, c) + "'");
    const unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x80) {
      --pos_;
      cls.extra.push_back(next_char());
      return {};
    }
    cls.ascii.set(u);  // an escaped punctuation character stands for itself
    return {};
  }

  // The bytes of the UTF-8 character at pos_ (advances past it).
  std::string next_char() {
    const unsigned char u = static_cast<unsigned char>(p_[pos_]);
    const size_t n = u < 0x80 ? 1 : (u & 0xE0) == 0xC0 ? 2 : (u & 0xF0) == 0xE0 ? 3 : 4;
    std::string s = p_.substr(pos_, std::min(n, end_ - pos_));
    pos_ += s.size();
    return s;
  }

  Expected<AstPtr> klass() {
    // pos_ after '['.
    CharClass cls;
    bool negated = false;
    if (more() && peek() == '^') {
      negated = true;
      ++pos_;
    }
    bool first = true;
    while (true) {
      if (!more()) return Error{Code::InvalidArgument, "pattern: an unclosed '['"};
      if (peek() == ']' && !first) break;
      if (peek() == ']' && first) break;  // ECMAScript: "[]" matches nothing, "[^]" anything
      first = false;
      // One class atom: a character or an escape; then maybe '-' and another.
      auto one = [&](CharClass& into, int& code) -> Status {
        code = -1;
        if (peek() == '\\') {
          ++pos_;
          CharClass e;
          STRATA_RETURN_IF_ERROR(escape(e, true));
          if (e.ascii.count() == 1 && !e.non_ascii && e.extra.empty()) {
            for (unsigned b = 0; b < 128; ++b)
              if (e.ascii.test(b)) code = static_cast<int>(b);
          } else if (e.extra.size() == 1 && e.ascii.none()) {
            code = 0x80;  // a non-ASCII single character: not a range end
          }
          into.ascii |= e.ascii;
          into.non_ascii = into.non_ascii || e.non_ascii;
          into.extra.insert(into.extra.end(), e.extra.begin(), e.extra.end());
          return {};
        }
        if (peek() == '[' && pos_ + 1 < end_ && (p_[pos_ + 1] == ':' || p_[pos_ + 1] == '=' || p_[pos_ + 1] == '.'))
          return unsupported("a POSIX class '[:…:]'");
        const std::string ch = next_char();
        if (ch.size() == 1) {
          into.ascii.set(static_cast<unsigned char>(ch[0]));
          code = static_cast<unsigned char>(ch[0]);
        } else {
          into.extra.push_back(ch);
          code = 0x80;
        }
        return {};
      };
      CharClass lo_cls;
      int lo = -1;
      STRATA_RETURN_IF_ERROR(one(lo_cls, lo));
      if (more() && peek() == '-' && pos_ + 1 < end_ && p_[pos_ + 1] != ']') {
        ++pos_;
        CharClass hi_cls;
        int hi = -1;
        STRATA_RETURN_IF_ERROR(one(hi_cls, hi));
        if (lo < 0 || hi < 0) return unsupported("a class range with a class escape ('\\d', '\\w', …) as an end");
        if (lo >= 0x80 || hi >= 0x80) return unsupported("a class range with a non-ASCII end");
        if (hi < lo) return Error{Code::InvalidArgument, "pattern: a class range out of order"};
        cls.ascii |= range(static_cast<unsigned>(lo), static_cast<unsigned>(hi));
      } else {
        cls.ascii |= lo_cls.ascii;
        cls.non_ascii = cls.non_ascii || lo_cls.non_ascii;
        cls.extra.insert(cls.extra.end(), lo_cls.extra.begin(), lo_cls.extra.end());
      }
    }
    ++pos_;  // ']'
    if (negated) {
      if (!cls.extra.empty()) return unsupported("a negated class listing non-ASCII characters");
      CharClass n;
      n.ascii = kAscii & ~cls.ascii;
      n.non_ascii = !cls.non_ascii;
      return n.node();
    }
    return cls.node();
  }

  Expected<AstPtr> atom(int depth) {
    const char c = peek();
    switch (c) {
      case '(': {
        ++pos_;
        if (more() && peek() == '?') {
          ++pos_;
          if (more() && peek() == ':') {
            ++pos_;
          } else if (more() && (peek() == '=' || peek() == '!')) {
            return unsupported("a lookahead '(?" + std::string(1, peek()) + "'");
          } else if (more() && peek() == '<' && pos_ + 1 < end_ && (p_[pos_ + 1] == '=' || p_[pos_ + 1] == '!')) {
            return unsupported("a lookbehind '(?<" + std::string(1, p_[pos_ + 1]) + "'");
          } else if (more() && peek() == '<') {
            const size_t close = p_.find('>', pos_);
            if (close == std::string::npos || close >= end_) return Error{Code::InvalidArgument, "pattern: an unclosed group name"};
            pos_ = close + 1;  // a named group matches as a plain one
          } else {
            return unsupported("inline flags or the group syntax '(?" + (more() ? std::string(1, peek()) : std::string()) + "'");
          }
        }
        STRATA_ASSIGN_OR_RETURN(AstPtr inner, alternation(depth + 1));
        if (!more() || peek() != ')') return Error{Code::InvalidArgument, "pattern: an unclosed '('"};
        ++pos_;
        return inner;
      }
      case '[': ++pos_; return klass();
      case '.': {
        ++pos_;
        CharClass any;
        any.ascii = kAscii;
        any.ascii.reset('\n');
        any.ascii.reset('\r');
        any.non_ascii = true;
        return any.node();
      }
      case '\\': {
        ++pos_;
        CharClass e;
        STRATA_RETURN_IF_ERROR(escape(e, false));
        return e.node();
      }
      case '^': return unsupported("an anchor '^' that is not the first character");
      case '$': return unsupported("an anchor '$' that is not the last character");
      case '*': case '+': case '?': return Error{Code::InvalidArgument, "pattern: nothing to repeat at offset " + std::to_string(pos_)};
      case ')': return unexpected();
      default: return literal(next_char());
    }
  }

  const std::string& p_;
  size_t pos_ = 0;
  size_t end_ = 0;
};

struct Nfa {
  struct State {
    std::vector<int32_t> eps;
    ByteSet bytes;
    int32_t next = -1;  // on a byte of `bytes`
  };
  std::vector<State> states;
  bool over = false;
  int32_t add() {
    if (states.size() >= kMaxPatternNfaStates) {
      over = true;
      return 0;
    }
    states.emplace_back();
    return static_cast<int32_t>(states.size() - 1);
  }
};

struct Frag {
  int32_t start, end;
};

Frag build(const Ast& a, Nfa& nfa) {
  if (nfa.over) return {0, 0};
  switch (a.kind) {
    case Ast::Kind::Byte: {
      const int32_t s = nfa.add(), e = nfa.add();
      if (nfa.over) return {0, 0};
      nfa.states[static_cast<size_t>(s)].bytes = a.bytes;
      nfa.states[static_cast<size_t>(s)].next = e;
      return {s, e};
    }
    case Ast::Kind::Seq: {
      const int32_t s = nfa.add();
      int32_t cur = s;
      for (const AstPtr& item : a.items) {
        const Frag f = build(*item, nfa);
        if (nfa.over) return {0, 0};
        nfa.states[static_cast<size_t>(cur)].eps.push_back(f.start);
        cur = f.end;
      }
      return {s, cur};
    }
    case Ast::Kind::Alt: {
      const int32_t s = nfa.add(), e = nfa.add();
      for (const AstPtr& item : a.items) {
        const Frag f = build(*item, nfa);
        if (nfa.over) return {0, 0};
        nfa.states[static_cast<size_t>(s)].eps.push_back(f.start);
        nfa.states[static_cast<size_t>(f.end)].eps.push_back(e);
      }
      return {s, e};
    }
    case Ast::Kind::Repeat: {
      const int32_t s = nfa.add();
      int32_t cur = s;
      for (int64_t k = 0; k < a.min; ++k) {
        const Frag f = build(*a.items[0], nfa);
        if (nfa.over) return {0, 0};
        nfa.states[static_cast<size_t>(cur)].eps.push_back(f.start);
        cur = f.end;
      }
      if (a.max < 0) {
        const Frag f = build(*a.items[0], nfa);
        const int32_t e = nfa.add();
        if (nfa.over) return {0, 0};
        nfa.states[static_cast<size_t>(cur)].eps.push_back(f.start);
        nfa.states[static_cast<size_t>(cur)].eps.push_back(e);
        nfa.states[static_cast<size_t>(f.end)].eps.push_back(f.start);
        nfa.states[static_cast<size_t>(f.end)].eps.push_back(e);
        return {s, e};
      }
      const int32_t e = nfa.add();
      for (int64_t k = a.min; k < a.max; ++k) {  // optional copies: each may end the repeat
        const Frag f = build(*a.items[0], nfa);
        if (nfa.over) return {0, 0};
        nfa.states[static_cast<size_t>(cur)].eps.push_back(f.start);
        nfa.states[static_cast<size_t>(cur)].eps.push_back(e);
        cur = f.end;
      }
      nfa.states[static_cast<size_t>(cur)].eps.push_back(e);
      return {s, e};
    }
  }
  return {0, 0};
}

void closure(const Nfa& nfa, std::vector<int32_t>& set) {
  std::vector<char> in(nfa.states.size(), 0);
  std::vector<int32_t> stack = set;
  for (int32_t s : set) in[static_cast<size_t>(s)] = 1;
  while (!stack.empty()) {
    const int32_t s = stack.back();
    stack.pop_back();
    for (int32_t t : nfa.states[static_cast<size_t>(s)].eps) {
      if (in[static_cast<size_t>(t)]) continue;
      in[static_cast<size_t>(t)] = 1;
      set.push_back(t);
      stack.push_back(t);
    }
  }
  std::sort(set.begin(), set.end());
}

}  // namespace

Expected<RegexDfa> compile_pattern(const std::string& pattern, size_t dfa_states_left) {
  if (pattern.size() > kMaxPatternBytes)
    return Error{Code::OutOfRange, "a pattern of " + std::to_string(pattern.size()) + " bytes is over the limit of " +
                                       std::to_string(kMaxPatternBytes)};
  Parser parser(pattern);
  STRATA_ASSIGN_OR_RETURN(AstPtr whole, parser.parse());
  Nfa nfa;
  const Frag f = build(*whole, nfa);
  if (nfa.over)
    return Error{Code::OutOfRange, "pattern '" + pattern.substr(0, 64) + "' needs more than " +
                                       std::to_string(kMaxPatternNfaStates) + " automaton states (the limit)"};

  RegexDfa dfa;
  std::map<std::vector<int32_t>, int32_t> ids;
  std::vector<std::vector<int32_t>> sets;
  std::vector<int32_t> start = {f.start};
  closure(nfa, start);
  ids[start] = 0;
  sets.push_back(start);
  const size_t limit = std::min(dfa_states_left, kMaxPatternDfaStates);
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < sets.size(); ++i) {
    if (std::chrono::steady_clock::now() - t0 > std::chrono::milliseconds(kMaxPatternCompileMs))
      return Error{Code::OutOfRange, "pattern '" + pattern.substr(0, 64) + "' took over " +
                                         std::to_string(kMaxPatternCompileMs) + " ms to compile (the limit)"};
    std::array<int32_t, 256> row;
    row.fill(RegexDfa::kDead);
    // Bytes with the same NFA moves share a target: one closure per distinct move set.
    std::map<std::vector<int32_t>, int32_t> moves;
    std::array<std::vector<int32_t>, 256> by_byte;
    for (int32_t s : sets[i]) {
      const Nfa::State& st = nfa.states[static_cast<size_t>(s)];
      if (st.next < 0) continue;
      for (size_t b = 0; b < 256; ++b) {
        if (st.bytes.test(b)) by_byte[b].push_back(st.next);
      }
    }
    for (unsigned b = 0; b < 256; ++b) {
      std::vector<int32_t> to = std::move(by_byte[b]);
      if (to.empty()) continue;
      if (auto m = moves.find(to); m != moves.end()) {
        row[b] = m->second;
        continue;
      }
      std::vector<int32_t> key = to;
      closure(nfa, to);
      auto it = ids.find(to);
      if (it == ids.end()) {
        if (sets.size() >= limit)
          return Error{Code::OutOfRange, "pattern '" + pattern.substr(0, 64) + "' needs more than " + std::to_string(limit) +
                                             " automaton states (the limit of a schema's patterns)"};
        it = ids.emplace(to, static_cast<int32_t>(sets.size())).first;
        sets.push_back(std::move(to));
      }
      row[b] = it->second;
      moves.emplace(std::move(key), it->second);
    }
    dfa.next.push_back(row);
    dfa.accepting.push_back(std::binary_search(sets[i].begin(), sets[i].end(), f.end) ? 1 : 0);
  }
  // Keep only states that can still reach acceptance; the others become dead.
  const size_t n = dfa.next.size();
  std::vector<char> live(n, 0);
  for (size_t s = 0; s < n; ++s) live[s] = dfa.accepting[s];
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t s = 0; s < n; ++s) {
      if (live[s]) continue;
      for (int32_t t : dfa.next[s]) {
        if (t >= 0 && live[static_cast<size_t>(t)]) {
          live[s] = 1;
          changed = true;
          break;
        }
      }
    }
  }
  if (!live[0]) return Error{Code::InvalidArgument, "pattern '" + pattern.substr(0, 64) + "' matches no string"};
  for (auto& row : dfa.next) {
    for (int32_t& t : row) {
      if (t >= 0 && !live[static_cast<size_t>(t)]) t = RegexDfa::kDead;
    }
  }
  dfa.start = 0;
  return dfa;
}

bool pattern_matches(const RegexDfa& dfa, const std::string& text) {
  int32_t s = dfa.start;
  for (char c : text) {
    s = dfa.next[static_cast<size_t>(s)][static_cast<unsigned char>(c)];
    if (s < 0) return false;
  }
  return dfa.accepting[static_cast<size_t>(s)] != 0;
}

}  // namespace strata::serve
