// engine/chat/jinja_lexer.cpp — template source to tokens; owns Jinja's whitespace rules
// (trim_blocks, lstrip_blocks, -/+ markers, one trailing newline dropped). Depends on jinja_value.h for errors.
#include "engine/chat/jinja_lexer.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "engine/chat/jinja_value.h"

namespace strata::chat::jinja {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

// Python string-literal escapes, as Jinja decodes them ("unicode-escape"); unknown escapes stay verbatim.
void append_escape(std::string& out, std::string_view s, size_t& i) {
  char c = s[i];
  auto hex = [&](int digits) -> bool {
    if (i + digits >= s.size()) return false;
    char32_t cp = 0;
    for (int k = 1; k <= digits; ++k) {
      char h = s[i + k];
      int d = is_digit(h) ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10 : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
      if (d < 0) return false;
      cp = cp * 16 + d;
    }
    out += encode_utf8(std::u32string(1, cp));
    i += digits;
    return true;
  };
  switch (c) {
    case 'n': out.push_back('\n'); return;
    case 't': out.push_back('\t'); return;
    case 'r': out.push_back('\r'); return;
    case '\\': out.push_back('\\'); return;
    case '\'': out.push_back('\''); return;
    case '"': out.push_back('"'); return;
    case 'a': out.push_back('\a'); return;
    case 'b': out.push_back('\b'); return;
    case 'f': out.push_back('\f'); return;
    case 'v': out.push_back('\v'); return;
    case '\n': return;  // line continuation
    case 'x': if (hex(2)) return; break;
    case 'u': if (hex(4)) return; break;
    case 'U': if (hex(8)) return; break;
    default:
      if (c >= '0' && c <= '7') {
        int v = 0, n = 0;
        while (n < 3 && i < s.size() && s[i] >= '0' && s[i] <= '7') {
          v = v * 8 + (s[i] - '0');
          ++i;
          ++n;
        }
        --i;
        out += encode_utf8(std::u32string(1, static_cast<char32_t>(v)));
        return;
      }
  }
  out.push_back('\\');
  out.push_back(c);
}

class Lexer {
 public:
  explicit Lexer(std::string_view source) {
    // Jinja normalizes newlines to "\n" and drops one trailing newline (keep_trailing_newline=False).
    src_.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
      if (source[i] == '\r') {
        src_.push_back('\n');
        if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
      } else {
        src_.push_back(source[i]);
      }
    }
    if (!src_.empty() && src_.back() == '\n') src_.pop_back();
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i)
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
  }

  std::vector<Token> run() {
    size_t pos = 0;
    while (pos < src_.size()) {
      size_t tag = find_tag(pos);
      if (tag == std::string::npos) {
        emit_text(pos, src_.size(), false, false);
        break;
      }
      char kind = src_[tag + 1];
      char marker = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
      bool strip_before = marker == '-';
      bool keep_before = marker == '+';
      bool lstrip = (kind == '%' || kind == '#') && !keep_before && !strip_before;
      emit_text(pos, tag, strip_before, lstrip);
      size_t inner = tag + 2 + ((marker == '-' || marker == '+') ? 1 : 0);
      if (kind == '#') {
        pos = lex_comment(tag, inner);
      } else if (kind == '%' && is_raw(inner)) {
        pos = lex_raw(tag, inner);
      } else {
        pos = lex_tag(tag, inner, kind == '{');
      }
    }
    Token end;
    end.kind = TokenKind::End;
    locate(end, src_.size());
    tokens_.push_back(end);
    return std::move(tokens_);
  }

 private:
  size_t find_tag(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); ++i) {
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return std::string::npos;
  }

  void locate(Token& t, size_t pos) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), pos);
    size_t line_index = static_cast<size_t>(it - line_starts_.begin()) - 1;
    t.line = static_cast<int>(line_index + 1);
    t.column = static_cast<int>(pos - line_starts_[line_index] + 1);
  }

  [[noreturn]] void error_at(size_t pos, std::string message) const {
    Token t;
    locate(t, pos);
    throw JinjaError{std::move(message), t.line, t.column};
  }

  // Text [begin, end) before a tag; strip_all: `{%-`; lstrip: lstrip_blocks before `{%`/`{#`.
  void emit_text(size_t begin, size_t end, bool strip_all, bool lstrip) {
    std::string_view text(src_.data() + begin, end - begin);
    if (strip_all) {
      while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
    } else if (lstrip) {
      size_t nl = text.rfind('\n');
      bool line_start = nl != std::string_view::npos || begin == 0 || src_[begin - 1] == '\n';
      size_t from = nl == std::string_view::npos ? 0 : nl + 1;
      if (line_start && std::all_of(text.begin() + from, text.end(), [](char c) { return c != '\n' && is_space(c); }))
        text = text.substr(0, from);
    }
    if (text.empty()) return;
    Token t;
    t.kind = TokenKind::Text;
    t.text = std::string(text);
    locate(t, begin);
    tokens_.push_back(std::move(t));
  }

  // After a closing `%}`/`#}`/`}}` at `after`: `-` strips all whitespace, trim_blocks one newline.
  size_t skip_after_close(size_t after, char marker, bool block_like) const {
    if (marker == '-') {
      while (after < src_.size() && is_space(src_[after])) ++after;
    } else if (block_like && marker != '+' && after < src_.size() && src_[after] == '\n') {
      ++after;
    }
    return after;
  }

  size_t lex_comment(size_t tag, size_t inner) {
    size_t close = src_.find("#}", inner);
    if (close == std::string::npos) error_at(tag, "unterminated comment (missing '#}')");
    char marker = close > inner ? src_[close - 1] : '\0';
    return skip_after_close(close + 2, marker == '-' || marker == '+' ? marker : '\0', true);
  }

  size_t skip_spaces(size_t p) const {
    while (p < src_.size() && is_space(src_[p])) ++p;
    return p;
  }

  bool word_at(size_t p, std::string_view word) const {
    return src_.compare(p, word.size(), word) == 0 && (p + word.size() >= src_.size() || !is_name_char(src_[p + word.size()]));
  }

  bool is_raw(size_t inner) const { return word_at(skip_spaces(inner), "raw"); }

  size_t lex_raw(size_t tag, size_t inner) {
    size_t p = skip_spaces(skip_spaces(inner) + 3);
    char open_marker = '\0';
    if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) open_marker = src_[p++];
    if (src_.compare(p, 2, "%}") != 0) error_at(p, "expected '%}' after 'raw'");
    size_t body = skip_after_close(p + 2, open_marker, true);
    for (size_t q = src_.find("{%", body); q != std::string::npos; q = src_.find("{%", q + 2)) {
      size_t r = q + 2;
      char marker = r < src_.size() && (src_[r] == '-' || src_[r] == '+') ? src_[r] : '\0';
      if (marker) ++r;
      r = skip_spaces(r);
      if (!word_at(r, "endraw")) continue;
      r = skip_spaces(r + 6);
      char close_marker = '\0';
      if (r < src_.size() && (src_[r] == '-' || src_[r] == '+')) close_marker = src_[r++];
      if (src_.compare(r, 2, "%}") != 0) error_at(r, "expected '%}' after 'endraw'");
      emit_text(body, q, marker == '-', marker != '+');
      return skip_after_close(r + 2, close_marker, true);
    }
    error_at(tag, "unterminated 'raw' block (missing 'endraw')");
  }

  size_t lex_tag(size_t tag, size_t inner, bool is_var) {
    Token begin;
    begin.kind = is_var ? TokenKind::VarBegin : TokenKind::BlockBegin;
    locate(begin, tag);
    tokens_.push_back(begin);
    int depth = 0;
    size_t p = inner;
    const char close = is_var ? '}' : '%';
    while (true) {
      p = skip_spaces(p);
      if (p >= src_.size()) error_at(tag, is_var ? "unterminated '{{' (missing '}}')" : "unterminated '{%' (missing '%}')");
      if (depth == 0) {
        char marker = '\0';
        size_t q = p;
        if (src_[q] == '-' || (src_[q] == '+' && !is_var)) marker = src_[q++];
        if (q + 1 < src_.size() && src_[q] == close && src_[q + 1] == '}') {
          Token end;
          end.kind = is_var ? TokenKind::VarEnd : TokenKind::BlockEnd;
          locate(end, p);
          tokens_.push_back(end);
          return skip_after_close(q + 2, marker, !is_var);
        }
      }
      Token t;
      locate(t, p);
      char c = src_[p];
      if (is_name_start(c)) {
        size_t e = p;
        while (e < src_.size() && is_name_char(src_[e])) ++e;
        t.kind = TokenKind::Name;
        t.text = src_.substr(p, e - p);
        p = e;
      } else if (is_digit(c)) {
        p = lex_number(p, t);
      } else if (c == '\'' || c == '"') {
        p = lex_string(p, t);
      } else {
        static const char* const kTwo[] = {"//", "**", "==", "!=", "<=", ">="};
        t.kind = TokenKind::Op;
        for (const char* op : kTwo) {
          if (src_.compare(p, 2, op) == 0) t.text = op;
        }
        if (t.text.empty()) {
          if (std::string_view("+-*/%~|.,:()[]{}<>=").find(c) == std::string_view::npos)
            error_at(p, std::string("unexpected character '") + c + "'");
          t.text = std::string(1, c);
          if (c == '(' || c == '[' || c == '{') ++depth;
          if (c == ')' || c == ']' || c == '}') {
            if (depth == 0) error_at(p, std::string("unexpected '") + c + "'");
            --depth;
          }
        }
        p += t.text.size();
      }
      tokens_.push_back(std::move(t));
    }
  }

  size_t lex_number(size_t p, Token& t) {
    size_t e = p;
    auto digits = [&] {
      while (e < src_.size() && (is_digit(src_[e]) || (src_[e] == '_' && e + 1 < src_.size() && is_digit(src_[e + 1])))) ++e;
    };
    digits();
    bool is_float = false;
    if (e + 1 < src_.size() && src_[e] == '.' && is_digit(src_[e + 1])) {
      is_float = true;
      ++e;
      digits();
    }
    if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
      size_t f = e + 1;
      if (f < src_.size() && (src_[f] == '+' || src_[f] == '-')) ++f;
      if (f < src_.size() && is_digit(src_[f])) {
        is_float = true;
        e = f;
        digits();
      }
    }
    std::string text;
    for (size_t i = p; i < e; ++i)
      if (src_[i] != '_') text.push_back(src_[i]);
    if (is_float) {
      t.kind = TokenKind::Float;
      t.float_value = std::strtod(text.c_str(), nullptr);
    } else {
      t.kind = TokenKind::Int;
      errno = 0;
      t.int_value = std::strtoll(text.c_str(), nullptr, 10);
      if (errno == ERANGE) error_at(p, "integer literal " + text + " is out of range");
    }
    t.text = text;
    return e;
  }

  size_t lex_string(size_t p, Token& t) {
    char quote = src_[p];
    std::string value;
    size_t i = p + 1;
    for (; i < src_.size() && src_[i] != quote; ++i) {
      if (src_[i] == '\\' && i + 1 < src_.size()) {
        ++i;
        append_escape(value, src_, i);
      } else {
        value.push_back(src_[i]);
      }
    }
    if (i >= src_.size()) error_at(p, "unterminated string literal");
    t.kind = TokenKind::String;
    t.text = std::move(value);
    return i + 1;
  }

  std::string src_;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) { return Lexer(source).run(); }

}  // namespace strata::chat::jinja
