// engine/chat/jinja_lexer.h — splits a template into text and tag tokens, applying whitespace control
// the way Hugging Face renders (trim_blocks, lstrip_blocks, `-`/`+` markers). No parsing, no values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::chat::jinja {

enum class TokenKind {
  Text,        // literal output, whitespace control already applied
  VarBegin,    // {{
  VarEnd,      // }}
  BlockBegin,  // {%
  BlockEnd,    // %}
  Name,
  String,      // text holds the unescaped value
  Int,
  Float,
  Op,          // text holds the operator: "+", "//", "==", "(", ...
  End,
};

struct Token {
  TokenKind kind = TokenKind::End;
  std::string text;
  int64_t int_value = 0;
  double float_value = 0;
  int line = 1;
  int column = 1;
};

// Throws JinjaError (with line and column) on an unterminated tag, comment or string.
std::vector<Token> tokenize(std::string_view source);

}  // namespace strata::chat::jinja
