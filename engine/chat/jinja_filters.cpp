// engine/chat/jinja_filters.cpp — Jinja's filters, tests and the globals chat templates call
// (range, namespace, raise_exception, strftime_now). tojson follows Hugging Face's override.
// Depends on values and ops only; no parsing, no scopes.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <memory>

#include "engine/chat/jinja_builtins.h"

namespace strata::chat::jinja {
namespace {

constexpr int64_t kMaxRange = 100000;  // the limit of Jinja's sandbox

const char* const kFilterNames[] = {
    "abs", "attr", "batch", "capitalize", "center", "count", "d", "default", "dictsort", "e", "escape",
    "filesizeformat", "first", "float", "forceescape", "format", "groupby", "indent", "int", "items", "join",
    "last", "length", "list", "lower", "map", "max", "min", "pprint", "random", "reject", "rejectattr",
    "replace", "reverse", "round", "safe", "select", "selectattr", "slice", "sort", "string", "striptags",
    "sum", "title", "tojson", "trim", "truncate", "unique", "upper", "urlencode", "urlize", "wordcount",
    "wordwrap", "xmlattr"};

const char* const kTestNames[] = {
    "boolean", "callable", "defined", "divisibleby", "eq", "equalto", "escaped", "even", "false", "filter",
    "float", "ge", "gt", "greaterthan", "in", "integer", "iterable", "le", "lower", "lessthan", "lt", "mapping",
    "ne", "none", "number", "odd", "sameas", "sequence", "string", "test", "true", "undefined", "upper",
    "==", "!=", "<", "<=", ">", ">="};

template <size_t N>
bool in_list(const char* const (&names)[N], std::string_view name) {
  return std::find_if(std::begin(names), std::end(names), [&](const char* n) { return name == n; }) != std::end(names);
}

std::string lower_ascii(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  return s;
}

// Jinja's attribute paths: "a.b.0" walks getitem per part.
Value lookup_path(const Value& item, const std::string& path) {
  Value v = item;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (v.is_undefined()) return v;
    v = get_item(v, numeric ? Value(static_cast<int64_t>(std::stoll(part))) : Value(part));
    if (dot == std::string::npos) return v;
    start = dot + 1;
  }
}

// The key sort/unique/min/max compare by: lowercased strings unless case_sensitive.
Value sort_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value(lower_ascii(v.str()));
  return v;
}

CallArgs rest_args(const CallArgs& args, size_t from) {
  CallArgs out;
  for (size_t i = from; i < args.positional.size(); ++i) out.positional.push_back(args.positional[i]);
  out.named = args.named;
  return out;
}

Value keep_safe(const Value& input, std::string s) {
  return input.is_safe() ? Value::safe_string(std::move(s)) : Value(std::move(s));
}

std::string indent_text(const std::string& text, const Value& width, bool first, bool blank) {
  std::string indention = width.is_string() ? width.str() : std::string(static_cast<size_t>(std::max<int64_t>(0, width.as_int())), ' ');
  std::vector<std::string> lines;
  std::string s = text + "\n";  // as Jinja does, so a trailing newline keeps its line
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\n' || s[i] == '\r') {
      lines.push_back(s.substr(start, i - start));
      if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
      start = i + 1;
    }
  }
  std::string out;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) out += (i ? "\n" + indention : "") + lines[i];
  } else if (!lines.empty()) {
    out = lines[0];
    for (size_t i = 1; i < lines.size(); ++i) out += "\n" + (lines[i].empty() ? "" : indention + lines[i]);
  }
  return first ? indention + out : out;
}

Value tojson(const Value& input, CallArgs& args) {
  // Hugging Face replaces Jinja's tojson: json.dumps(x, ensure_ascii=False, indent, separators, sort_keys).
  JsonStyle style;
  style.ensure_ascii = args.get(0, "ensure_ascii", Value(false)).truthy();
  Value indent = args.get(1, "indent", Value::none());
  Value separators = args.get(2, "separators", Value::none());
  style.sort_keys = args.get(3, "sort_keys", Value(false)).truthy();
  if (indent.is_string()) {
    style.pretty = true;
    style.indent = indent.str();
  } else if (indent.is_int()) {
    style.pretty = true;
    style.indent = std::string(static_cast<size_t>(std::max<int64_t>(0, indent.as_int())), ' ');
  }
  if (style.pretty) style.item_separator = ",";
  if (separators.is_list() && separators.items().size() == 2) {
    style.item_separator = to_str(separators.items()[0]);
    style.key_separator = to_str(separators.items()[1]);
  }
  return Value(to_json(input, style));
}

int64_t parse_int(const Value& v, const Value& fallback, bool& ok) {
  ok = true;
  if (v.is_bool() || v.is_int()) return v.as_int();
  if (v.is_float()) return static_cast<int64_t>(v.as_double());
  if (v.is_string()) {
    std::string s = python_strip(v.str(), Value(), true, true);
    s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
    char* end = nullptr;
    errno = 0;
    long long i = std::strtoll(s.c_str(), &end, 10);
    if (!s.empty() && end && *end == '\0' && errno == 0) return i;
    double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && end && *end == '\0') return static_cast<int64_t>(d);
  }
  ok = false;
  return fallback.as_int();
}

std::vector<Value> select_items(const Value& input, CallArgs& args, bool by_attribute, bool keep_matching) {
  std::vector<Value> out;
  size_t next = 0;
  std::string attribute;
  if (by_attribute) attribute = to_str(args.get(next++, "attribute"));
  Value test_name = args.get(next++, "test");
  CallArgs test_args = rest_args(args, next);
  if (!input.truthy()) return out;  // as Jinja: a falsy input (none, empty) selects nothing
  for (const Value& item : iterate(input)) {
    Value subject = by_attribute ? lookup_path(item, attribute) : item;
    bool passed = test_name.is_undefined() ? subject.truthy() : apply_test(to_str(test_name), subject, test_args);
    if (passed == keep_matching) out.push_back(item);
  }
  return out;
}

}  // namespace

bool is_known_filter(std::string_view name) { return in_list(kFilterNames, name); }
bool is_known_test(std::string_view name) { return in_list(kTestNames, name); }

Value apply_filter(const std::string& name, const Value& input, CallArgs& args) {
  const std::string& f = name;
  if (f == "default" || f == "d") {
    Value fallback = args.get(0, "default_value", Value(std::string()));
    bool boolean = args.get(1, "boolean", Value(false)).truthy();
    if (input.is_undefined() || (boolean && !input.truthy())) return fallback;
    return input;
  }
  if (f == "length" || f == "count") return Value(static_cast<int64_t>(length_of(input)));
  if (f == "trim") return keep_safe(input, python_strip(to_str(input), args.get(0, "chars"), true, true));
  if (f == "upper" || f == "lower" || f == "capitalize") {
    CallArgs none;
    Value method = get_attribute(Value(to_str(input)), f);
    return keep_safe(input, method.callable().fn(none).str());
  }
  if (f == "title") {
    // Jinja's title: words start after '-', whitespace and opening brackets.
    std::string s = to_str(input), out;
    bool word_start = true;
    for (char c : s) {
      bool boundary = c == '-' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '(' || c == '{' || c == '[' || c == '<';
      if (boundary) {
        out.push_back(c);
        word_start = true;
      } else {
        out.push_back(word_start ? ((c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c)
                                 : ((c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c));
        word_start = false;
      }
    }
    return keep_safe(input, out);
  }
  if (f == "tojson") return tojson(input, args);
  if (f == "string") return input.is_safe() ? input : Value(to_str(input));
  if (f == "safe") return Value::safe_string(to_str(input));
  if (f == "e" || f == "escape" || f == "forceescape") {
    if (input.is_safe() && f != "forceescape") return input;
    return Value::safe_string(html_escape(to_str(input)));
  }
  if ((f == "int" || f == "float") && input.is_undefined()) undefined_error(input);  // int(Undefined) raises
  if (f == "int") {
    bool ok = false;
    int64_t i = parse_int(input, args.get(0, "default", Value(int64_t{0})), ok);
    return ok ? Value(i) : args.get(0, "default", Value(int64_t{0}));
  }
  if (f == "float") {
    if (input.is_number()) return Value(input.as_double());
    if (input.is_string()) {
      std::string s = python_strip(input.str(), Value(), true, true);
      char* end = nullptr;
      double d = std::strtod(s.c_str(), &end);
      if (!s.empty() && end && *end == '\0') return Value(d);
    }
    return args.get(0, "default", Value(0.0));
  }
  if (f == "abs") {
    if (input.is_float()) return Value(std::fabs(input.as_double()));
    if (input.is_number()) return Value(static_cast<int64_t>(std::llabs(input.as_int())));
    fail("bad operand type for abs(): '" + input.type_name() + "'");
  }
  if (f == "round") {
    if (!input.is_number()) fail("type " + input.type_name() + " doesn't define __round__ method");
    int64_t precision = args.get(0, "precision", Value(int64_t{0})).as_int();
    std::string method = to_str(args.get(1, "method", Value("common")));
    double scale = std::pow(10.0, static_cast<double>(precision));
    double x = input.as_double() * scale;
    // "common" is Python's round(): halves go to the even neighbour, as nearbyint does by default.
    double r = method == "ceil" ? std::ceil(x) : method == "floor" ? std::floor(x) : std::nearbyint(x);
    return Value(r / scale);
  }
  if (f == "list") return Value::list(iterate(input));
  if (f == "first" || f == "last") {
    std::vector<Value> items = iterate(input);
    if (items.empty()) return Value::undefined(std::string("No ") + f + " item, sequence was empty.");
    return f == "first" ? items.front() : items.back();
  }
  if (f == "join") {
    std::string sep = to_str(args.get(0, "d", Value(std::string())));
    Value attribute = args.get(1, "attribute");
    std::string out;
    bool first = true;
    for (const Value& item : iterate(input)) {
      if (!first) out += sep;
      first = false;
      out += to_str(attribute.is_undefined() ? item : lookup_path(item, to_str(attribute)));
    }
    return Value(out);
  }
  if (f == "replace") {
    CallArgs call;
    call.positional = {Value(to_str(args.get(0, "old"))), Value(to_str(args.get(1, "new")))};
    Value count = args.get(2, "count");
    if (!count.is_undefined() && !count.is_none()) call.positional.push_back(count);
    return get_attribute(Value(to_str(input)), "replace").callable().fn(call);
  }
  if (f == "items") {
    if (input.is_undefined()) return Value::iterator({});
    if (!input.is_dict()) fail("Can only get item pairs from a mapping.");
    std::vector<Value> pairs;
    for (const auto& [k, v] : input.dict_object().entries) pairs.push_back(Value::tuple({Value(k), v}));
    return Value::iterator(std::move(pairs));
  }
  if (f == "dictsort") {
    if (!input.is_dict()) fail("You can only sort by either \"key\" or \"value\" of a mapping.");
    bool case_sensitive = args.get(0, "case_sensitive", Value(false)).truthy();
    bool by_value = to_str(args.get(1, "by", Value("key"))) == "value";
    bool reverse = args.get(2, "reverse", Value(false)).truthy();
    std::vector<Value> pairs;
    for (const auto& [k, v] : input.dict_object().entries) pairs.push_back(Value::tuple({Value(k), v}));
    std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& a, const Value& b) {
      int c = compare(sort_key(a.items()[by_value], case_sensitive), sort_key(b.items()[by_value], case_sensitive));
      return reverse ? c > 0 : c < 0;
    });
    return Value::list(std::move(pairs));
  }
  if (f == "selectattr" || f == "rejectattr") return Value::iterator(select_items(input, args, true, f == "selectattr"));
  if (f == "select" || f == "reject") return Value::iterator(select_items(input, args, false, f == "select"));
  if (f == "map") {
    std::vector<Value> out;
    if (!input.truthy()) return Value::iterator({});  // as Jinja: a falsy input maps to nothing
    if (const Value* attribute = args.find_named("attribute")) {
      Value fallback = args.get(99, "default");
      for (const Value& item : iterate(input)) {
        Value v = lookup_path(item, to_str(*attribute));
        out.push_back(v.is_undefined() && !fallback.is_undefined() ? fallback : v);
      }
    } else {
      std::string filter = to_str(args.get(0, "name"));
      if (!is_known_filter(filter)) fail("no filter named '" + filter + "'");
      CallArgs filter_args = rest_args(args, 1);
      for (const Value& item : iterate(input)) out.push_back(apply_filter(filter, item, filter_args));
    }
    return Value::iterator(std::move(out));
  }
  if (f == "unique") {
    bool case_sensitive = args.get(0, "case_sensitive", Value(false)).truthy();
    Value attribute = args.get(1, "attribute");
    std::vector<Value> out, seen;
    for (const Value& item : iterate(input)) {
      Value key = sort_key(attribute.is_undefined() ? item : lookup_path(item, to_str(attribute)), case_sensitive);
      if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, key); })) continue;
      seen.push_back(key);
      out.push_back(item);
    }
    return Value::iterator(std::move(out));
  }
  if (f == "sort" || f == "min" || f == "max") {
    bool reverse = f == "sort" && args.get(0, "reverse", Value(false)).truthy();
    bool case_sensitive = args.get(f == "sort" ? 1 : 0, "case_sensitive", Value(false)).truthy();
    Value attribute = args.get(f == "sort" ? 2 : 1, "attribute");
    std::vector<Value> items = iterate(input);
    auto key = [&](const Value& v) {
      return sort_key(attribute.is_undefined() ? v : lookup_path(v, to_str(attribute)), case_sensitive);
    };
    std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
      int c = compare(key(a), key(b));
      return reverse ? c > 0 : c < 0;
    });
    if (f == "sort") return Value::list(std::move(items));
    if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
    return f == "min" ? items.front() : items.back();
  }
  if (f == "sum") {
    Value attribute = args.get(0, "attribute");
    Value total = args.get(1, "start", Value(int64_t{0}));
    for (const Value& item : iterate(input))
      total = binary_op(BinaryOp::Add, total, attribute.is_undefined() ? item : lookup_path(item, to_str(attribute)));
    return total;
  }
  if (f == "reverse") {
    if (input.is_string()) {
      std::u32string u = decode_utf8(input.str());
      std::reverse(u.begin(), u.end());
      return Value(encode_utf8(u));
    }
    std::vector<Value> items = iterate(input);
    std::reverse(items.begin(), items.end());
    return Value::iterator(std::move(items));
  }
  if (f == "indent") {
    if (!input.is_string()) fail("indent needs a string, not " + input.type_name());
    Value width = args.get(0, "width", Value(int64_t{4}));
    bool first = args.get(1, "first", Value(false)).truthy();
    bool blank = args.get(2, "blank", Value(false)).truthy();
    return Value(indent_text(to_str(input), width, first, blank));
  }
  if (f == "center") {
    int64_t width = args.get(0, "width", Value(int64_t{80})).as_int();
    std::string s = to_str(input);
    int64_t len = static_cast<int64_t>(utf8_length(s));
    if (width <= len) return Value(s);
    int64_t total = width - len;
    int64_t left = total / 2 + (total & width & 1);  // Python's str.center rounding
    return Value(std::string(static_cast<size_t>(left), ' ') + s + std::string(static_cast<size_t>(total - left), ' '));
  }
  if (f == "wordcount") {
    int64_t words = 0;
    bool in_word = false;
    for (char c : to_str(input)) {
      bool w = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || (c & 0x80);
      if (w && !in_word) ++words;
      in_word = w;
    }
    return Value(words);
  }
  if (f == "pprint") return Value(to_repr(input));
  if (f == "attr") return get_attribute(input, to_str(args.get(0, "name")));
  if (f == "format") {
    return binary_op(BinaryOp::Mod, Value(to_str(input)), Value::tuple(args.positional));
  }
  if (f == "batch") {
    int64_t size = args.get(0, "linecount").as_int();
    if (size <= 0) fail("batch size must be positive");
    Value fill = args.get(1, "fill_with", Value::none());
    std::vector<Value> batches, current;
    for (const Value& item : iterate(input)) {
      current.push_back(item);
      if (static_cast<int64_t>(current.size()) == size) {
        batches.push_back(Value::list(std::move(current)));
        current.clear();
      }
    }
    if (!current.empty()) {
      if (!fill.is_none())
        while (static_cast<int64_t>(current.size()) < size) current.push_back(fill);
      batches.push_back(Value::list(std::move(current)));
    }
    return Value::iterator(std::move(batches));
  }
  fail("filter '" + f + "' is not supported");
}

bool apply_test(const std::string& name, const Value& v, CallArgs& args) {
  const std::string& t = name;
  Value arg = args.get(0, "other");
  if (t == "defined") return !v.is_undefined();
  if (t == "undefined") return v.is_undefined();
  if (t == "none") return v.is_none();
  if (t == "boolean") return v.is_bool();
  if (t == "true") return v.is_bool() && v.as_bool();
  if (t == "false") return v.is_bool() && !v.as_bool();
  if (t == "integer") return v.is_int();
  if (t == "float") return v.is_float();
  if (t == "number") return v.is_number();
  if (t == "string") return v.is_string();
  if (t == "mapping") return v.is_dict();
  if (t == "iterable" || t == "sequence") return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined();
  if (t == "callable") return v.is_callable();
  if (t == "escaped") return v.is_safe();
  if (t == "lower" || t == "upper") {  // Python's str.islower()/isupper(): needs a cased character
    std::string s = to_str(v);
    bool has_lower = std::any_of(s.begin(), s.end(), [](char c) { return c >= 'a' && c <= 'z'; });
    bool has_upper = std::any_of(s.begin(), s.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
    return t == "lower" ? has_lower && !has_upper : has_upper && !has_lower;
  }
  if (t == "odd" || t == "even" || t == "divisibleby") {
    if (!v.is_number() || v.is_float()) fail("test '" + t + "' needs an integer, not " + v.type_name());
    int64_t i = v.as_int();
    if (t == "odd") return i % 2 != 0;
    if (t == "even") return i % 2 == 0;
    int64_t d = arg.as_int();
    if (d == 0) fail("integer division or modulo by zero");
    return i % d == 0;
  }
  if (t == "eq" || t == "equalto" || t == "==") return equals(v, arg);
  if (t == "ne" || t == "!=") return !equals(v, arg);
  if (t == "lt" || t == "lessthan" || t == "<") return compare(v, arg) < 0;
  if (t == "le" || t == "<=") return compare(v, arg) <= 0;
  if (t == "gt" || t == "greaterthan" || t == ">") return compare(v, arg) > 0;
  if (t == "ge" || t == ">=") return compare(v, arg) >= 0;
  if (t == "in") return contains(args.get(0, "seq"), v);
  if (t == "sameas") {
    if (v.identity() || arg.identity()) return v.identity() == arg.identity();
    return v.kind() == arg.kind() && equals(v, arg);
  }
  if (t == "filter") return v.is_string() && is_known_filter(v.str());
  if (t == "test") return v.is_string() && is_known_test(v.str());
  fail("test '" + t + "' is not supported");
}

std::vector<std::pair<std::string, Value>> global_functions(const GlobalOptions& options) {
  std::vector<std::pair<std::string, Value>> g;
  g.emplace_back("range", Value::function("range", [](CallArgs& args) -> Value {
    std::vector<int64_t> n;
    for (const Value& v : args.positional) {
      if (!(v.is_int() || v.is_bool())) fail("range() needs integers, not " + v.type_name());
      n.push_back(v.as_int());
    }
    if (n.empty() || n.size() > 3) fail("range expected 1 to 3 arguments, got " + std::to_string(n.size()));
    int64_t start = n.size() == 1 ? 0 : n[0], stop = n.size() == 1 ? n[0] : n[1], step = n.size() == 3 ? n[2] : 1;
    if (step == 0) fail("range() arg 3 must not be zero");
    std::vector<Value> out;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
      if (static_cast<int64_t>(out.size()) >= kMaxRange)
        fail("range too big, maximum size for range is " + std::to_string(kMaxRange));
      out.emplace_back(i);
    }
    return Value::list(std::move(out));
  }));
  auto make_mapping = [](CallArgs& args, Value target) {
    for (const Value& p : args.positional) {
      if (!p.is_dict()) fail("expected a mapping argument, got " + p.type_name());
      for (const auto& [k, v] : p.dict_object().entries) target.dict_object().set(k, v);
    }
    for (const auto& [k, v] : args.named) target.dict_object().set(k, v);
    return target;
  };
  g.emplace_back("namespace", Value::function("namespace", [make_mapping](CallArgs& args) { return make_mapping(args, Value::name_space()); }));
  g.emplace_back("dict", Value::function("dict", [make_mapping](CallArgs& args) { return make_mapping(args, Value::dict()); }));
  g.emplace_back("raise_exception", Value::function("raise_exception", [](CallArgs& args) -> Value {
    throw JinjaError{to_str(args.get(0, "message")), 0, 0, true};
  }));
  std::optional<std::tm> fixed = options.fixed_time;
  g.emplace_back("strftime_now", Value::function("strftime_now", [fixed](CallArgs& args) -> Value {
    std::string format = to_str(args.get(0, "format"));
    std::tm tm{};
    if (fixed) {
      tm = *fixed;
    } else {
      std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
      localtime_r(&now, &tm);
    }
    if (format.empty()) return Value(std::string());
    std::string buf(256 + format.size() * 8, '\0');
    size_t n = std::strftime(buf.data(), buf.size(), format.c_str(), &tm);
    buf.resize(n);
    return Value(buf);
  }));
  g.emplace_back("joiner", Value::function("joiner", [](CallArgs& args) -> Value {
    std::string sep = to_str(args.get(0, "sep", Value(", ")));
    auto used = std::make_shared<bool>(false);
    return Value::function("joiner", [sep, used](CallArgs&) -> Value {
      if (!*used) {
        *used = true;
        return Value(std::string());
      }
      return Value(sep);
    });
  }));
  return g;
}

}  // namespace strata::chat::jinja
