// engine/chat/jinja_parser.h — tokens to a statement tree, with Jinja's operator precedence.
// Depends on the lexer and the AST; knows nothing of evaluation except which filter/test names exist.
#pragma once

#include <string_view>

#include "engine/chat/jinja_ast.h"

namespace strata::chat::jinja {

// Throws JinjaError with line and column on any syntax error, an unknown tag, filter or test.
Body parse_template(std::string_view source);

}  // namespace strata::chat::jinja
