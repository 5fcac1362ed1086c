// engine/chat/jinja_value.h — the values a chat template computes with, with Python's semantics
// (str(), repr(), ==, truthiness, json.dumps). Depends on the standard library and nlohmann-json only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::chat::jinja {

// Thrown inside the interpreter only; ChatTemplate turns it into an Error at its API.
// line == 0 means "not located yet": the evaluator adds the position of the innermost node.
struct JinjaError {
  std::string message;
  int line = 0;
  int column = 0;
  bool raised_by_template = false;  // raise_exception(...) in the template itself
};

[[noreturn]] void fail(std::string message);

enum class ValueKind { Undefined, None, Bool, Int, Float, String, List, Dict, Callable };

class Value;
struct CallArgs;
using NativeFunction = std::function<Value(CallArgs&)>;  // throws JinjaError

struct ListObject {
  std::vector<Value> items;
  bool is_tuple = false;
  // A Python generator (what map/select/selectattr/items/unique return): always true, no len(),
  // not JSON, consumed by the first iteration. Kept so templates fail or pass exactly as under transformers.
  bool is_iterator = false;
};

// Insertion-ordered like a Python dict; namespace() objects are dicts that accept `set ns.x = ...`.
struct DictObject {
  std::vector<std::pair<std::string, Value>> entries;
  bool is_namespace = false;

  const Value* find(std::string_view key) const;
  void set(const std::string& key, Value value);
};

struct CallableObject {
  std::string name;
  NativeFunction fn;
};

class Value {
 public:
  Value() = default;  // undefined
  static Value undefined(std::string hint = {});
  static Value none();
  Value(bool b);                 // NOLINT
  Value(int64_t i);              // NOLINT
  Value(int i) : Value(static_cast<int64_t>(i)) {}  // NOLINT
  Value(double f);               // NOLINT
  Value(std::string s);          // NOLINT
  Value(const char* s) : Value(std::string(s)) {}  // NOLINT
  static Value safe_string(std::string s);  // jinja Markup: `+` escapes plain strings joined to it
  static Value list(std::vector<Value> items = {});
  static Value tuple(std::vector<Value> items);
  static Value iterator(std::vector<Value> items);
  static Value dict();
  static Value name_space();
  static Value function(std::string name, NativeFunction fn);

  ValueKind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == ValueKind::Undefined; }
  bool is_none() const { return kind_ == ValueKind::None; }
  bool is_bool() const { return kind_ == ValueKind::Bool; }
  bool is_int() const { return kind_ == ValueKind::Int; }
  bool is_float() const { return kind_ == ValueKind::Float; }
  bool is_number() const { return kind_ == ValueKind::Int || kind_ == ValueKind::Float || kind_ == ValueKind::Bool; }
  bool is_string() const { return kind_ == ValueKind::String; }
  bool is_list() const { return kind_ == ValueKind::List; }  // list or tuple
  bool is_tuple() const { return kind_ == ValueKind::List && list_->is_tuple; }
  bool is_iterator() const { return kind_ == ValueKind::List && list_->is_iterator; }
  bool is_dict() const { return kind_ == ValueKind::Dict; }
  bool is_namespace() const { return kind_ == ValueKind::Dict && dict_->is_namespace; }
  bool is_callable() const { return kind_ == ValueKind::Callable; }
  bool is_safe() const { return safe_; }

  bool as_bool() const { return b_; }
  int64_t as_int() const;      // Int or Bool
  double as_double() const;    // any number
  const std::string& str() const { return s_; }  // String; for Undefined, the hint
  std::vector<Value>& items() const { return list_->items; }
  DictObject& dict_object() const { return *dict_; }
  const CallableObject& callable() const { return *fn_; }
  const void* identity() const;  // for `is sameas` on containers

  bool truthy() const;
  std::string type_name() const;  // Python's: 'str', 'int', 'dict', ...

 private:
  ValueKind kind_ = ValueKind::Undefined;
  bool b_ = false;
  bool safe_ = false;
  int64_t i_ = 0;
  double f_ = 0;
  std::string s_;
  std::shared_ptr<ListObject> list_;
  std::shared_ptr<DictObject> dict_;
  std::shared_ptr<CallableObject> fn_;
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> named;

  // The argument at `index` or named `name`, else `fallback`.
  Value get(size_t index, std::string_view name, Value fallback = Value()) const;
  const Value* find_named(std::string_view name) const;
};

std::string to_str(const Value& v);   // Python str(); undefined -> ""
std::string to_repr(const Value& v);  // Python repr()
bool equals(const Value& a, const Value& b);
int compare(const Value& a, const Value& b);  // -1/0/1; throws for unorderable types
std::string python_float_repr(double d);
std::string html_escape(std::string_view s);

struct JsonStyle {
  std::string indent;  // per level
  bool pretty = false;  // indent given (even if empty): newlines between items
  bool sort_keys = false;
  bool ensure_ascii = false;  // non-ASCII as \uXXXX (surrogate pairs above the BMP)
  std::string item_separator = ", ";
  std::string key_separator = ": ";
};
std::string to_json(const Value& v, const JsonStyle& style);  // json.dumps(ensure_ascii=False)
Value from_json(const nlohmann::ordered_json& j);

// UTF-8 <-> code points, for len(), indexing and slicing of strings by character.
std::u32string decode_utf8(std::string_view s);
std::string encode_utf8(std::u32string_view s);
bool is_ascii(std::string_view s);
size_t utf8_length(std::string_view s);

}  // namespace strata::chat::jinja
