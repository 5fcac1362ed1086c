// engine/chat/jinja_eval.h — runs a parsed template against a context: scopes, loops, macros, set.
// Depends on the AST, values and builtins; knows nothing of chat messages or the public API.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "engine/chat/jinja_ast.h"
#include "engine/chat/jinja_builtins.h"

namespace strata::chat::jinja {

// Renders `program` with `context` variables over the built-in globals. Throws JinjaError.
std::string render_program(const Body& program, const std::vector<std::pair<std::string, Value>>& context,
                           const GlobalOptions& options);

}  // namespace strata::chat::jinja
