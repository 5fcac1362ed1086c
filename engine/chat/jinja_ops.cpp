// engine/chat/jinja_ops.cpp — operators, attribute/item access, slicing and the methods of str, dict
// and list, with Python's semantics as Jinja exposes them. No parsing, no scopes, no filters.
#include <algorithm>
#include <cmath>

#include "engine/chat/jinja_builtins.h"

namespace strata::chat::jinja {
namespace {

constexpr size_t kMaxBuiltSize = size_t{1} << 26;  // string/list repetition cap: hostile templates stay bounded

bool is_py_space(char32_t c) {
  return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

char ascii_upper(char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c; }
char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }
bool ascii_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

std::string upper(std::string s) {
  for (char& c : s) c = ascii_upper(c);
  return s;
}
std::string lower(std::string s) {
  for (char& c : s) c = ascii_lower(c);
  return s;
}

std::string repeat(const std::string& s, int64_t n) {
  if (n <= 0) return {};
  if (s.size() * static_cast<size_t>(n) > kMaxBuiltSize) fail("string repetition of " + std::to_string(n) + " is too large");
  std::string out;
  out.reserve(s.size() * n);
  for (int64_t i = 0; i < n; ++i) out += s;
  return out;
}

std::string expect_string_arg(const Value& v, const char* what) {
  if (!v.is_string()) fail(std::string(what) + " must be str, not " + v.type_name());
  return v.str();
}

void check_overflow(bool overflow) {
  if (overflow) fail("integer overflow (templates get 64-bit integers)");
}

// printf-style `str % args` (the subset templates use: %s %d %i %r %f %%).
std::string percent_format(const std::string& fmt, const Value& args) {
  std::vector<Value> values = args.is_tuple() ? args.items() : std::vector<Value>{args};
  size_t next = 0;
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out.push_back(fmt[i]);
      continue;
    }
    if (++i >= fmt.size()) fail("incomplete format");
    char c = fmt[i];
    if (c == '%') {
      out.push_back('%');
      continue;
    }
    if (next >= values.size()) fail("not enough arguments for format string");
    const Value& v = values[next++];
    if (c == 's') out += to_str(v);
    else if (c == 'r') out += to_repr(v);
    else if (c == 'd' || c == 'i') {
      if (!v.is_number()) fail("%d format: a real number is required, not " + v.type_name());
      out += std::to_string(v.is_float() ? static_cast<int64_t>(v.as_double()) : v.as_int());
    } else if (c == 'f') {
      if (!v.is_number()) fail("%f format: a real number is required, not " + v.type_name());
      char buf[64];
      std::snprintf(buf, sizeof buf, "%f", v.as_double());
      out += buf;
    } else {
      fail(std::string("unsupported format character '") + c + "'");
    }
  }
  if (next < values.size() && !args.is_dict()) fail("not all arguments converted during string formatting");
  return out;
}

// str.format with {} / {0} / {name} fields (no format specs beyond ignoring them).
std::string brace_format(const std::string& fmt, CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    char c = fmt[i];
    if (c == '{' && i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out.push_back('{');
      ++i;
    } else if (c == '}' && i + 1 < fmt.size() && fmt[i + 1] == '}') {
      out.push_back('}');
      ++i;
    } else if (c == '{') {
      size_t close = fmt.find('}', i);
      if (close == std::string::npos) fail("Single '{' encountered in format string");
      std::string field = fmt.substr(i + 1, close - i - 1);
      field = field.substr(0, field.find(':'));
      Value v;
      if (field.empty()) {
        if (auto_index >= args.positional.size()) fail("Replacement index " + std::to_string(auto_index) + " out of range");
        v = args.positional[auto_index++];
      } else if (std::all_of(field.begin(), field.end(), [](char d) { return d >= '0' && d <= '9'; })) {
        size_t idx = std::stoul(field);
        if (idx >= args.positional.size()) fail("Replacement index " + field + " out of range");
        v = args.positional[idx];
      } else {
        const Value* named = args.find_named(field);
        if (!named) fail("format: no argument named '" + field + "'");
        v = *named;
      }
      out += to_str(v);
      i = close;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::vector<Value> split(const std::string& s, const Value& sep_value, int64_t maxsplit) {
  std::vector<Value> parts;
  if (sep_value.is_undefined() || sep_value.is_none()) {
    // Runs of Unicode whitespace separate; decoded first so UTF-8 continuation bytes are never spaces.
    std::u32string u = decode_utf8(s);
    size_t i = 0;
    while (true) {
      while (i < u.size() && is_py_space(u[i])) ++i;
      if (i >= u.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
        parts.emplace_back(encode_utf8(std::u32string_view(u).substr(i)));  // the rest, as is
        break;
      }
      size_t j = i;
      while (j < u.size() && !is_py_space(u[j])) ++j;
      parts.emplace_back(encode_utf8(std::u32string_view(u).substr(i, j - i)));
      i = j;
    }
    return parts;
  }
  std::string sep = expect_string_arg(sep_value, "separator");
  if (sep.empty()) fail("empty separator");
  size_t start = 0;
  while (true) {
    size_t hit = s.find(sep, start);
    if (hit == std::string::npos || (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit)) {
      parts.emplace_back(s.substr(start));
      break;
    }
    parts.emplace_back(s.substr(start, hit - start));
    start = hit + sep.size();
  }
  return parts;
}

bool affix_match(const std::string& s, const Value& affix, bool prefix) {
  auto one = [&](const Value& a) {
    std::string x = expect_string_arg(a, prefix ? "startswith first arg" : "endswith first arg");
    if (x.size() > s.size()) return false;
    return prefix ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  if (affix.is_list()) {
    for (const Value& a : affix.items())
      if (one(a)) return true;
    return false;
  }
  return one(affix);
}

std::string py_title(const std::string& s) {
  std::string out = s;
  bool prev_cased = false;
  for (char& c : out) {
    if (ascii_alpha(c)) {
      c = prev_cased ? ascii_lower(c) : ascii_upper(c);
      prev_cased = true;
    } else {
      prev_cased = false;
    }
  }
  return out;
}

Value string_method(const Value& self, const std::string& name) {
  static const char* const kMethods[] = {"strip", "lstrip", "rstrip", "split", "rsplit", "startswith", "endswith",
                                         "upper", "lower", "title", "capitalize", "replace", "find", "rfind", "count",
                                         "join", "splitlines", "isdigit", "isalpha", "isalnum", "isspace", "islower",
                                         "isupper", "format", "index"};
  if (std::find_if(std::begin(kMethods), std::end(kMethods), [&](const char* m) { return name == m; }) == std::end(kMethods))
    return Value::undefined("'str object' has no attribute '" + name + "'");
  std::string s = self.str();
  bool safe = self.is_safe();
  return Value::function(name, [s, safe, name](CallArgs& args) -> Value {
    auto keep = [&](std::string r) { return safe ? Value::safe_string(std::move(r)) : Value(std::move(r)); };
    if (name == "strip") return keep(python_strip(s, args.get(0, "chars"), true, true));
    if (name == "lstrip") return keep(python_strip(s, args.get(0, "chars"), true, false));
    if (name == "rstrip") return keep(python_strip(s, args.get(0, "chars"), false, true));
    if (name == "split" || name == "rsplit") {
      Value maxsplit = args.get(1, "maxsplit", Value(int64_t{-1}));
      if (name == "rsplit" && maxsplit.as_int() >= 0) {
        // Split from the right: reverse, split by the reversed separator, reverse back.
        Value sep = args.get(0, "sep");
        std::string rs(s.rbegin(), s.rend());
        Value rsep = sep.is_string() ? Value(std::string(sep.str().rbegin(), sep.str().rend())) : sep;
        auto parts = split(rs, rsep, maxsplit.as_int());
        std::reverse(parts.begin(), parts.end());
        for (Value& p : parts) p = Value(std::string(p.str().rbegin(), p.str().rend()));
        return Value::list(std::move(parts));
      }
      return Value::list(split(s, args.get(0, "sep"), maxsplit.as_int()));
    }
    if (name == "startswith") return Value(affix_match(s, args.get(0, "prefix"), true));
    if (name == "endswith") return Value(affix_match(s, args.get(0, "suffix"), false));
    if (name == "upper") return keep(upper(s));
    if (name == "lower") return keep(lower(s));
    if (name == "title") return keep(py_title(s));
    if (name == "capitalize") {
      std::string r = lower(s);
      if (!r.empty()) r[0] = ascii_upper(r[0]);
      return keep(r);
    }
    if (name == "replace") {
      std::string from = expect_string_arg(args.get(0, "old"), "replace() argument 1");
      std::string to = expect_string_arg(args.get(1, "new"), "replace() argument 2");
      int64_t count = args.get(2, "count", Value(int64_t{-1})).as_int();
      std::string out;
      size_t pos = 0;
      int64_t done = 0;
      if (from.empty()) return Value(s);  // Python inserts between characters; no template relies on it
      while (count < 0 || done < count) {
        size_t hit = s.find(from, pos);
        if (hit == std::string::npos) break;
        out.append(s, pos, hit - pos);
        out += to;
        pos = hit + from.size();
        ++done;
      }
      out.append(s, pos);
      return keep(out);
    }
    if (name == "find" || name == "rfind" || name == "index") {
      std::string sub = expect_string_arg(args.get(0, "sub"), "find() argument");
      size_t hit = name == "rfind" ? s.rfind(sub) : s.find(sub);
      if (hit == std::string::npos) {
        if (name == "index") fail("substring not found");
        return Value(int64_t{-1});
      }
      return Value(static_cast<int64_t>(utf8_length(std::string_view(s).substr(0, hit))));
    }
    if (name == "count") {
      std::string sub = expect_string_arg(args.get(0, "sub"), "count() argument");
      if (sub.empty()) return Value(static_cast<int64_t>(utf8_length(s) + 1));
      int64_t n = 0;
      for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
      return Value(n);
    }
    if (name == "join") {
      std::string out;
      bool first = true;
      for (const Value& v : iterate(args.get(0, "iterable"))) {
        if (!first) out += s;
        first = false;
        out += expect_string_arg(v, "sequence item");
      }
      return Value(out);
    }
    if (name == "splitlines") {
      std::vector<Value> lines;
      size_t start = 0;
      for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\n' || s[i] == '\r') {
          lines.emplace_back(s.substr(start, i - start));
          if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
          start = i + 1;
        }
      }
      if (start < s.size()) lines.emplace_back(s.substr(start));
      return Value::list(std::move(lines));
    }
    if (name == "format") return Value(brace_format(s, args));
    auto all = [&](auto pred) { return !s.empty() && std::all_of(s.begin(), s.end(), pred); };
    if (name == "isdigit") return Value(all([](char c) { return c >= '0' && c <= '9'; }));
    if (name == "isalpha") return Value(all([](char c) { return ascii_alpha(c); }));
    if (name == "isalnum") return Value(all([](char c) { return ascii_alpha(c) || (c >= '0' && c <= '9'); }));
    if (name == "isspace") return Value(all([](char c) { return c == ' ' || (c >= 0x09 && c <= 0x0D); }));
    bool has_cased = std::any_of(s.begin(), s.end(), ascii_alpha);
    if (name == "islower") return Value(has_cased && lower(s) == s);
    return Value(has_cased && upper(s) == s);  // isupper
  });
}

Value dict_method(const Value& self, const std::string& name) {
  if (name != "get" && name != "items" && name != "keys" && name != "values" && name != "copy") return Value();
  return Value::function(name, [self, name](CallArgs& args) -> Value {
    const DictObject& d = self.dict_object();
    if (name == "get") {
      Value key = args.get(0, "key");
      const Value* v = key.is_string() ? d.find(key.str()) : nullptr;
      return v ? *v : args.get(1, "default", Value::none());
    }
    if (name == "copy") {
      Value out = Value::dict();
      out.dict_object().entries = d.entries;
      return out;
    }
    std::vector<Value> out;
    for (const auto& [k, v] : d.entries) {
      if (name == "items") out.push_back(Value::tuple({Value(k), v}));
      else if (name == "keys") out.emplace_back(k);
      else out.push_back(v);
    }
    return Value::list(std::move(out));
  });
}

Value list_method(const Value& self, const std::string& name) {
  if (name != "append" && name != "index" && name != "count") return Value();
  return Value::function(name, [self, name](CallArgs& args) -> Value {
    Value x = args.get(0, "value");
    auto& items = self.items();
    if (name == "append") {
      // Hugging Face's sandbox forbids mutation; llama.cpp-style engines allow it, so we do too.
      if (self.is_tuple()) fail("'tuple' object has no attribute 'append'");
      items.push_back(x);
      return Value::none();
    }
    int64_t n = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!equals(items[i], x)) continue;
      if (name == "index") return Value(static_cast<int64_t>(i));
      ++n;
    }
    if (name == "index") fail(to_repr(x) + " is not in list");
    return Value(n);
  });
}

}  // namespace

void undefined_error(const Value& v) { fail(v.str().empty() ? "value is undefined" : v.str()); }

std::string python_strip(const std::string& s, const Value& chars, bool left, bool right) {
  bool whitespace = chars.is_undefined() || chars.is_none();
  std::u32string set = whitespace ? std::u32string() : decode_utf8(expect_string_arg(chars, "strip arg"));
  auto strip_it = [&](char32_t c) { return whitespace ? is_py_space(c) : set.find(c) != std::u32string::npos; };
  if (is_ascii(s) && (whitespace || is_ascii(chars.str()))) {
    size_t b = 0, e = s.size();
    if (left)
      while (b < e && strip_it(static_cast<unsigned char>(s[b]))) ++b;
    if (right)
      while (e > b && strip_it(static_cast<unsigned char>(s[e - 1]))) --e;
    return s.substr(b, e - b);
  }
  std::u32string u = decode_utf8(s);
  size_t b = 0, e = u.size();
  if (left)
    while (b < e && strip_it(u[b])) ++b;
  if (right)
    while (e > b && strip_it(u[e - 1])) --e;
  return encode_utf8(std::u32string_view(u).substr(b, e - b));
}

Value binary_op(BinaryOp op, const Value& a, const Value& b) {
  if (op == BinaryOp::Concat) return Value(to_str(a) + to_str(b));
  if (a.is_undefined()) undefined_error(a);
  if (b.is_undefined()) undefined_error(b);
  const char* symbol = op == BinaryOp::Add ? "+" : op == BinaryOp::Sub ? "-" : op == BinaryOp::Mul ? "*" : op == BinaryOp::Div ? "/"
                       : op == BinaryOp::FloorDiv ? "//" : op == BinaryOp::Mod ? "%" : "**";
  auto unsupported = [&]() -> Value {
    fail(std::string("unsupported operand type(s) for ") + symbol + ": '" + a.type_name() + "' and '" + b.type_name() + "'");
  };
  if (a.is_number() && b.is_number()) {
    bool floating = a.is_float() || b.is_float();
    if (op == BinaryOp::Div) {
      if (b.as_double() == 0) fail("division by zero");
      return Value(a.as_double() / b.as_double());
    }
    if (floating) {
      double x = a.as_double(), y = b.as_double();
      switch (op) {
        case BinaryOp::Add: return Value(x + y);
        case BinaryOp::Sub: return Value(x - y);
        case BinaryOp::Mul: return Value(x * y);
        case BinaryOp::FloorDiv:
          if (y == 0) fail("float floor division by zero");
          return Value(std::floor(x / y));
        case BinaryOp::Mod: {
          if (y == 0) fail("float modulo");
          double r = std::fmod(x, y);
          if (r != 0 && ((r < 0) != (y < 0))) r += y;
          return Value(r);
        }
        case BinaryOp::Pow: return Value(std::pow(x, y));
        default: break;
      }
    }
    int64_t x = a.as_int(), y = b.as_int(), r = 0;
    switch (op) {
      case BinaryOp::Add: check_overflow(__builtin_add_overflow(x, y, &r)); return Value(r);
      case BinaryOp::Sub: check_overflow(__builtin_sub_overflow(x, y, &r)); return Value(r);
      case BinaryOp::Mul: check_overflow(__builtin_mul_overflow(x, y, &r)); return Value(r);
      case BinaryOp::FloorDiv:
      case BinaryOp::Mod: {
        if (y == 0) fail("integer division or modulo by zero");
        int64_t q = x / y, m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) {
          --q;
          m += y;
        }
        return Value(op == BinaryOp::FloorDiv ? q : m);
      }
      case BinaryOp::Pow: {
        if (y < 0) return Value(std::pow(static_cast<double>(x), static_cast<double>(y)));
        int64_t result = 1;
        for (int64_t i = 0; i < y && result != 0; ++i) check_overflow(__builtin_mul_overflow(result, x, &result));
        return Value(result);
      }
      default: break;
    }
  }
  switch (op) {
    case BinaryOp::Add:
      if (a.is_string() && b.is_string()) {
        if (a.is_safe() || b.is_safe()) {  // jinja Markup: the plain side is HTML-escaped
          return Value::safe_string((a.is_safe() ? a.str() : html_escape(a.str())) +
                                    (b.is_safe() ? b.str() : html_escape(b.str())));
        }
        return Value(a.str() + b.str());
      }
      if (a.is_list() && b.is_list() && !a.is_iterator() && !b.is_iterator()) {
        std::vector<Value> items = a.items();
        items.insert(items.end(), b.items().begin(), b.items().end());
        return a.is_tuple() ? Value::tuple(std::move(items)) : Value::list(std::move(items));
      }
      return unsupported();
    case BinaryOp::Mul: {
      const Value* seq = a.is_string() || a.is_list() ? &a : &b;
      const Value* count = seq == &a ? &b : &a;
      if (!(count->is_int() || count->is_bool())) return unsupported();
      if (seq->is_string()) return seq->is_safe() ? Value::safe_string(repeat(seq->str(), count->as_int())) : Value(repeat(seq->str(), count->as_int()));
      if (seq->is_list()) {
        int64_t n = std::max<int64_t>(0, count->as_int());
        if (seq->items().size() * static_cast<size_t>(n) > kMaxBuiltSize) fail("list repetition is too large");
        std::vector<Value> items;
        for (int64_t i = 0; i < n; ++i) items.insert(items.end(), seq->items().begin(), seq->items().end());
        return seq->is_tuple() ? Value::tuple(std::move(items)) : Value::list(std::move(items));
      }
      return unsupported();
    }
    case BinaryOp::Mod:
      if (a.is_string()) return Value(percent_format(a.str(), b));
      return unsupported();
    default: return unsupported();
  }
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case ValueKind::String:
      if (!item.is_string()) fail("'in <string>' requires string as left operand, not " + item.type_name());
      return container.str().find(item.str()) != std::string::npos;
    case ValueKind::List:  // a generator is searched without being consumed; no template relies on either
      return std::any_of(container.items().begin(), container.items().end(), [&](const Value& v) { return equals(v, item); });
    case ValueKind::Dict:
      if (item.is_list() || item.is_dict()) fail("unhashable type: '" + item.type_name() + "'");
      return item.is_string() && container.dict_object().find(item.str()) != nullptr;
    case ValueKind::Undefined: return false;
    default: fail("argument of type '" + container.type_name() + "' is not iterable");
  }
}

Value negate(const Value& v) {
  if (v.is_undefined()) undefined_error(v);
  if (v.is_float()) return Value(-v.as_double());
  if (v.is_number()) return Value(-v.as_int());
  fail("bad operand type for unary -: '" + v.type_name() + "'");
}

Value get_attribute(const Value& obj, const std::string& name) {
  switch (obj.kind()) {
    case ValueKind::Undefined: undefined_error(obj);
    case ValueKind::Dict: {
      if (!obj.is_namespace()) {
        Value method = dict_method(obj, name);
        if (!method.is_undefined()) return method;
      }
      if (const Value* v = obj.dict_object().find(name)) return *v;
      return Value::undefined("'" + std::string(obj.is_namespace() ? "Namespace" : "dict") + " object' has no attribute '" + name + "'");
    }
    case ValueKind::String: return string_method(obj, name);
    case ValueKind::List: {
      Value method = list_method(obj, name);
      if (!method.is_undefined()) return method;
      break;
    }
    default: break;
  }
  return Value::undefined("'" + obj.type_name() + " object' has no attribute '" + name + "'");
}

Value get_item(const Value& obj, const Value& key) {
  auto index_of = [&](size_t size) -> int64_t {
    int64_t i = key.as_int();
    if (i < 0) i += static_cast<int64_t>(size);
    return i >= 0 && i < static_cast<int64_t>(size) ? i : -1;
  };
  bool int_key = key.is_int() || key.is_bool();
  switch (obj.kind()) {
    case ValueKind::Undefined: undefined_error(obj);
    case ValueKind::Dict: {
      if (key.is_string() || int_key) {
        std::string k = to_str(key);
        if (const Value* v = obj.dict_object().find(k)) return *v;
        if (key.is_string()) {
          Value method = get_attribute(obj, k);
          if (!method.is_undefined()) return method;
        }
        return Value::undefined("'dict object' has no attribute '" + k + "'");
      }
      return Value::undefined("'dict object' has no attribute " + to_repr(key));
    }
    case ValueKind::List:
      if (int_key && !obj.is_iterator()) {
        int64_t i = index_of(obj.items().size());
        if (i >= 0) return obj.items()[i];
        return Value::undefined("'" + obj.type_name() + " object' has no attribute " + to_str(key));
      }
      break;
    case ValueKind::String:
      if (int_key) {
        std::u32string u = decode_utf8(obj.str());
        int64_t i = index_of(u.size());
        if (i >= 0) return Value(encode_utf8(std::u32string_view(u).substr(i, 1)));
        return Value::undefined("'str object' has no attribute " + to_str(key));
      }
      break;
    default: break;
  }
  if (key.is_string()) return get_attribute(obj, key.str());
  return Value::undefined("'" + obj.type_name() + " object' has no attribute " + to_repr(key));
}

Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step_value) {
  if (obj.is_undefined()) undefined_error(obj);
  auto given = [](const Value& v) { return !(v.is_undefined() || v.is_none()); };
  int64_t step = given(step_value) ? step_value.as_int() : 1;
  if (step == 0) fail("slice step cannot be zero");
  std::u32string text;
  size_t size = 0;
  if (obj.is_string()) {
    text = decode_utf8(obj.str());
    size = text.size();
  } else if (obj.is_list() && !obj.is_iterator()) {
    size = obj.items().size();
  } else {
    fail("'" + obj.type_name() + "' object is not subscriptable");  // Jinja compiles slices as plain subscripts
  }
  const int64_t n = static_cast<int64_t>(size);
  auto adjust = [&](const Value& v, int64_t fallback) {
    if (!given(v)) return fallback;
    if (!(v.is_int() || v.is_bool())) fail("slice indices must be integers or None");
    int64_t i = v.as_int();
    if (i < 0) {
      i += n;
      if (i < 0) i = step < 0 ? -1 : 0;
    } else if (i >= n) {
      i = step < 0 ? n - 1 : n;
    }
    return i;
  };
  int64_t lo = adjust(start, step < 0 ? n - 1 : 0);
  int64_t hi = adjust(stop, step < 0 ? -1 : n);
  std::vector<size_t> picks;
  for (int64_t i = lo; step > 0 ? i < hi : i > hi; i += step) picks.push_back(static_cast<size_t>(i));
  if (obj.is_string()) {
    std::u32string out;
    for (size_t i : picks) out.push_back(text[i]);
    return Value(encode_utf8(out));
  }
  std::vector<Value> items;
  for (size_t i : picks) items.push_back(obj.items()[i]);
  return obj.is_tuple() ? Value::tuple(std::move(items)) : Value::list(std::move(items));
}

std::vector<Value> iterate(const Value& v) {
  switch (v.kind()) {
    case ValueKind::List:
      if (v.is_iterator()) return std::move(v.items());  // a generator runs once; it is empty afterwards
      return v.items();
    case ValueKind::Dict: {
      std::vector<Value> keys;
      for (const auto& [k, val] : v.dict_object().entries) keys.emplace_back(k);
      return keys;
    }
    case ValueKind::String: {
      std::vector<Value> chars;
      for (char32_t c : decode_utf8(v.str())) chars.emplace_back(encode_utf8(std::u32string_view(&c, 1)));
      return chars;
    }
    case ValueKind::Undefined: return {};
    default: fail("'" + v.type_name() + "' object is not iterable");
  }
}

size_t length_of(const Value& v) {
  switch (v.kind()) {
    case ValueKind::String: return utf8_length(v.str());
    case ValueKind::List:
      if (v.is_iterator()) fail("object of type 'generator' has no len()");
      return v.items().size();
    case ValueKind::Dict: return v.dict_object().entries.size();
    case ValueKind::Undefined: return 0;
    default: fail("object of type '" + v.type_name() + "' has no len()");
  }
}

}  // namespace strata::chat::jinja
