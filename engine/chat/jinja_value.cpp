// engine/chat/jinja_value.cpp — Python semantics of template values: str/repr, equality, ordering,
// json.dumps and the JSON bridge. Knows nothing of templates, parsing or evaluation.
#include "engine/chat/jinja_value.h"

#include "engine/core/json_text.h"
#include "engine/core/utf8.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace strata::chat::jinja {

void fail(std::string message) { throw JinjaError{std::move(message)}; }

const Value* DictObject::find(std::string_view key) const {
  for (const auto& [k, v] : entries)
    if (k == key) return &v;
  return nullptr;
}

void DictObject::set(const std::string& key, Value value) {
  for (auto& [k, v] : entries) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  entries.emplace_back(key, std::move(value));
}

Value Value::undefined(std::string hint) {
  Value v;
  v.s_ = std::move(hint);
  return v;
}
Value Value::none() {
  Value v;
  v.kind_ = ValueKind::None;
  return v;
}
Value::Value(bool b) : kind_(ValueKind::Bool), b_(b) {}
Value::Value(int64_t i) : kind_(ValueKind::Int), i_(i) {}
Value::Value(double f) : kind_(ValueKind::Float), f_(f) {}
Value::Value(std::string s) : kind_(ValueKind::String), s_(std::move(s)) {}
Value Value::safe_string(std::string s) {
  Value v(std::move(s));
  v.safe_ = true;
  return v;
}
Value Value::list(std::vector<Value> items) {
  Value v;
  v.kind_ = ValueKind::List;
  v.list_ = std::make_shared<ListObject>();
  v.list_->items = std::move(items);
  return v;
}
Value Value::tuple(std::vector<Value> items) {
  Value v = list(std::move(items));
  v.list_->is_tuple = true;
  return v;
}
Value Value::iterator(std::vector<Value> items) {
  Value v = list(std::move(items));
  v.list_->is_iterator = true;
  return v;
}
Value Value::dict() {
  Value v;
  v.kind_ = ValueKind::Dict;
  v.dict_ = std::make_shared<DictObject>();
  return v;
}
Value Value::name_space() {
  Value v = dict();
  v.dict_->is_namespace = true;
  return v;
}
Value Value::function(std::string name, NativeFunction fn) {
  Value v;
  v.kind_ = ValueKind::Callable;
  v.fn_ = std::make_shared<CallableObject>(CallableObject{std::move(name), std::move(fn)});
  return v;
}

int64_t Value::as_int() const { return kind_ == ValueKind::Bool ? (b_ ? 1 : 0) : i_; }
double Value::as_double() const {
  if (kind_ == ValueKind::Float) return f_;
  return static_cast<double>(as_int());
}

const void* Value::identity() const {
  if (list_) return list_.get();
  if (dict_) return dict_.get();
  if (fn_) return fn_.get();
  return nullptr;
}

bool Value::truthy() const {
  switch (kind_) {
    case ValueKind::Undefined:
    case ValueKind::None: return false;
    case ValueKind::Bool: return b_;
    case ValueKind::Int: return i_ != 0;
    case ValueKind::Float: return f_ != 0.0;
    case ValueKind::String: return !s_.empty();
    case ValueKind::List: return list_->is_iterator || !list_->items.empty();
    case ValueKind::Dict: return dict_->is_namespace || !dict_->entries.empty();
    case ValueKind::Callable: return true;
  }
  return false;
}

std::string Value::type_name() const {
  switch (kind_) {
    case ValueKind::Undefined: return "Undefined";
    case ValueKind::None: return "NoneType";
    case ValueKind::Bool: return "bool";
    case ValueKind::Int: return "int";
    case ValueKind::Float: return "float";
    case ValueKind::String: return "str";
    case ValueKind::List: return list_->is_iterator ? "generator" : list_->is_tuple ? "tuple" : "list";
    case ValueKind::Dict: return dict_->is_namespace ? "Namespace" : "dict";
    case ValueKind::Callable: return "function";
  }
  return "object";
}

Value CallArgs::get(size_t index, std::string_view name, Value fallback) const {
  if (index < positional.size()) return positional[index];
  if (const Value* v = find_named(name)) return *v;
  return fallback;
}

const Value* CallArgs::find_named(std::string_view name) const {
  for (const auto& [k, v] : named)
    if (k == name) return &v;
  return nullptr;
}

// ---- UTF-8 ----

std::u32string decode_utf8(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    int extra = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
    if (extra < 0 || i + extra >= s.size() + (extra == 0 ? 1 : 0)) {  // invalid or truncated: keep the byte
      out.push_back(c);
      ++i;
      continue;
    }
    char32_t cp = extra == 0 ? c : extra == 1 ? (c & 0x1F) : extra == 2 ? (c & 0x0F) : (c & 0x07);
    bool ok = true;
    for (int k = 1; k <= extra; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc >> 6) != 2) ok = false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (!ok) {
      out.push_back(c);
      ++i;
      continue;
    }
    out.push_back(cp);
    i += extra + 1;
  }
  return out;
}

std::string encode_utf8(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t cp : s) append_utf8(out, static_cast<uint32_t>(cp));
  return out;
}

bool is_ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

size_t utf8_length(std::string_view s) { return is_ascii(s) ? s.size() : decode_utf8(s).size(); }

// ---- str / repr ----

std::string python_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);  // "-1.2345e+17": shortest round-trip digits
  bool negative = sci[0] == '-';
  if (negative) sci.erase(0, 1);
  size_t e = sci.find('e');
  int exponent = std::stoi(sci.substr(e + 1));
  std::string digits;
  for (size_t i = 0; i < e; ++i)
    if (sci[i] != '.') digits.push_back(sci[i]);
  std::string out;
  if (exponent >= -4 && exponent < 16) {  // Python's repr: fixed notation for 1e-4 <= |d| < 1e16
    if (exponent >= 0) {
      if (digits.size() <= static_cast<size_t>(exponent) + 1) {
        out = digits;
        out.append(static_cast<size_t>(exponent) + 1 - digits.size(), '0');
        out += ".0";
      } else {
        out = digits.substr(0, exponent + 1) + "." + digits.substr(exponent + 1);
      }
    } else {
      out = "0.";
      out.append(static_cast<size_t>(-exponent - 1), '0');
      out += digits;
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char exp_buf[16];
    std::snprintf(exp_buf, sizeof exp_buf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    out += exp_buf;
  }
  return negative ? "-" + out : out;
}

static std::string repr_string(const std::string& s) {
  bool has_single = s.find('\'') != std::string::npos;
  bool has_double = s.find('"') != std::string::npos;
  char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (char32_t c : decode_utf8(s)) {
    if (c == static_cast<char32_t>(quote) || c == U'\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == U'\n') {
      out += "\\n";
    } else if (c == U'\r') {
      out += "\\r";
    } else if (c == U'\t') {
      out += "\\t";
    } else if (c < 0x20 || (c >= 0x7F && c < 0xA0)) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
      out += buf;
    } else {
      out += encode_utf8(std::u32string_view(&c, 1));
    }
  }
  out.push_back(quote);
  return out;
}

std::string to_repr(const Value& v) {
  switch (v.kind()) {
    case ValueKind::String: return repr_string(v.str());
    case ValueKind::Undefined: return "Undefined";
    case ValueKind::List: {
      if (v.is_iterator()) return "<generator object>";
      const auto& items = v.items();
      std::string out = v.is_tuple() ? "(" : "[";
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += ", ";
        out += to_repr(items[i]);
      }
      if (v.is_tuple() && items.size() == 1) out += ",";
      return out + (v.is_tuple() ? ")" : "]");
    }
    case ValueKind::Dict: {
      std::string out = v.is_namespace() ? "<Namespace {" : "{";
      bool first = true;
      for (const auto& [k, val] : v.dict_object().entries) {
        if (!first) out += ", ";
        first = false;
        out += repr_string(k) + ": " + to_repr(val);
      }
      return out + (v.is_namespace() ? "}>" : "}");
    }
    default: return to_str(v);
  }
}

std::string to_str(const Value& v) {
  switch (v.kind()) {
    case ValueKind::Undefined: return "";
    case ValueKind::None: return "None";
    case ValueKind::Bool: return v.as_bool() ? "True" : "False";
    case ValueKind::Int: return std::to_string(v.as_int());
    case ValueKind::Float: return python_float_repr(v.as_double());
    case ValueKind::String: return v.str();
    case ValueKind::List:
    case ValueKind::Dict: return to_repr(v);
    case ValueKind::Callable: return "<function " + v.callable().name + ">";
  }
  return "";
}

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '\'': out += "&#39;"; break;
      case '"': out += "&#34;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

// ---- equality and ordering ----

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case ValueKind::Undefined:
    case ValueKind::None: return true;
    case ValueKind::String: return a.str() == b.str();
    case ValueKind::List: {
      if (a.is_iterator() || b.is_iterator()) return a.identity() == b.identity();
      if (a.is_tuple() != b.is_tuple()) return false;
      const auto& x = a.items();
      const auto& y = b.items();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i)
        if (!equals(x[i], y[i])) return false;
      return true;
    }
    case ValueKind::Dict: {
      if (a.is_namespace() || b.is_namespace()) return a.identity() == b.identity();
      const auto& x = a.dict_object().entries;
      if (x.size() != b.dict_object().entries.size()) return false;
      for (const auto& [k, v] : x) {
        const Value* other = b.dict_object().find(k);
        if (!other || !equals(v, *other)) return false;
      }
      return true;
    }
    case ValueKind::Callable: return a.identity() == b.identity();
    default: return false;
  }
}

int compare(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      double x = a.as_double(), y = b.as_double();
      return x < y ? -1 : x > y ? 1 : 0;
    }
    int64_t x = a.as_int(), y = b.as_int();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {
    int c = a.str().compare(b.str());  // UTF-8 byte order is code point order
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.is_list() && b.is_list()) {
    const auto& x = a.items();
    const auto& y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (equals(x[i], y[i])) continue;
      return compare(x[i], y[i]);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  fail("'<' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() + "'");
}

// ---- JSON ----

static void json_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out.push_back('"');
  auto escape_unit = [&](unsigned unit) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "\\u%04x", unit);
    out += buf;
  };
  auto ascii_char = [&](unsigned char c) { append_json_ascii(out, c); };
  if (ensure_ascii && !is_ascii(s)) {
    for (char32_t c : decode_utf8(s)) {
      if (c < 0x80) {
        ascii_char(static_cast<unsigned char>(c));
      } else if (c < 0x10000) {
        escape_unit(static_cast<unsigned>(c));
      } else {
        char32_t v = c - 0x10000;
        escape_unit(static_cast<unsigned>(0xD800 + (v >> 10)));
        escape_unit(static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
      }
    }
  } else {
    for (char ch : s) {
      unsigned char c = static_cast<unsigned char>(ch);
      if (c >= 0x80) out.push_back(ch);
      else ascii_char(c);
    }
  }
  out.push_back('"');
}

static void json_dump(std::string& out, const Value& v, const JsonStyle& style, int level) {
  auto newline = [&](int lvl) {
    out.push_back('\n');
    for (int i = 0; i < lvl; ++i) out += style.indent;
  };
  switch (v.kind()) {
    case ValueKind::None: out += "null"; return;
    case ValueKind::Bool: out += v.as_bool() ? "true" : "false"; return;
    case ValueKind::Int: out += std::to_string(v.as_int()); return;
    case ValueKind::Float: {
      double d = v.as_double();
      if (std::isnan(d)) out += "NaN";
      else if (std::isinf(d)) out += d > 0 ? "Infinity" : "-Infinity";
      else out += python_float_repr(d);
      return;
    }
    case ValueKind::String: json_string(out, v.str(), style.ensure_ascii); return;
    case ValueKind::List: {
      if (v.is_iterator()) fail("Object of type generator is not JSON serializable");
      const auto& items = v.items();
      if (items.empty()) {
        out += "[]";
        return;
      }
      out.push_back('[');
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += style.item_separator;
        if (style.pretty) newline(level + 1);
        json_dump(out, items[i], style, level + 1);
      }
      if (style.pretty) newline(level);
      out.push_back(']');
      return;
    }
    case ValueKind::Dict: {
      if (v.is_namespace()) fail("Object of type Namespace is not JSON serializable");
      std::vector<const std::pair<std::string, Value>*> entries;
      for (const auto& e : v.dict_object().entries) entries.push_back(&e);
      if (style.sort_keys)
        std::stable_sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return a->first < b->first; });
      if (entries.empty()) {
        out += "{}";
        return;
      }
      out.push_back('{');
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i) out += style.item_separator;
        if (style.pretty) newline(level + 1);
        json_string(out, entries[i]->first, style.ensure_ascii);
        out += style.key_separator;
        json_dump(out, entries[i]->second, style, level + 1);
      }
      if (style.pretty) newline(level);
      out.push_back('}');
      return;
    }
    case ValueKind::Undefined: fail("Object of type Undefined is not JSON serializable");
    case ValueKind::Callable: fail("Object of type function is not JSON serializable");
  }
}

std::string to_json(const Value& v, const JsonStyle& style) {
  std::string out;
  json_dump(out, v, style, 0);
  return out;
}

Value from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::none();
    case nlohmann::ordered_json::value_t::boolean: return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<double>(u));
      return Value(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(from_json(e));
      return Value::list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Value d = Value::dict();
      for (const auto& [k, e] : j.items()) d.dict_object().set(k, from_json(e));
      return d;
    }
    default: return Value::none();  // binary / discarded: nothing a template can use
  }
}

}  // namespace strata::chat::jinja
