// engine/chat/jinja_builtins.h — what templates can do to values: operators, attributes and methods
// (jinja_ops.cpp), filters, tests and global functions (jinja_filters.cpp). No parsing, no scopes.
#pragma once

#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/chat/jinja_ast.h"
#include "engine/chat/jinja_value.h"

namespace strata::chat::jinja {

// ---- operators and access (jinja_ops.cpp); all throw JinjaError ----
Value binary_op(BinaryOp op, const Value& a, const Value& b);
bool contains(const Value& container, const Value& item);  // `item in container`
Value negate(const Value& v);
// `obj.name`: Python attributes first (str/dict/list methods), then dict keys; undefined if absent.
Value get_attribute(const Value& obj, const std::string& name);
// `obj[key]`: dict keys, list/str indices (negative from the end); undefined if absent.
Value get_item(const Value& obj, const Value& key);
Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step);
std::vector<Value> iterate(const Value& v);  // list items, dict keys, string characters
size_t length_of(const Value& v);
// Raises the error jinja gives when an undefined value is used (attribute, call, arithmetic).
[[noreturn]] void undefined_error(const Value& v);
std::string python_strip(const std::string& s, const Value& chars, bool left, bool right);

// ---- filters, tests, globals (jinja_filters.cpp) ----
bool is_known_filter(std::string_view name);
bool is_known_test(std::string_view name);
Value apply_filter(const std::string& name, const Value& input, CallArgs& args);
bool apply_test(const std::string& name, const Value& v, CallArgs& args);

struct GlobalOptions {
  std::optional<std::tm> fixed_time;  // strftime_now's clock; nullopt: the local time now
};
// range, namespace, dict, raise_exception, strftime_now, joiner, cycler.
std::vector<std::pair<std::string, Value>> global_functions(const GlobalOptions& options);

}  // namespace strata::chat::jinja
