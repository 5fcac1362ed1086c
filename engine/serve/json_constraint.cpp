// engine/serve/json_constraint.cpp — the JSON recognizer, schema compiler, vocabulary trie and
// the TokenConstraint built from them (see json_constraint.h).
#include "engine/serve/json_constraint.h"

#include <algorithm>
#include <bitset>
#include <map>
#include <cmath>
#include <limits>
#include <set>

namespace strata::serve {

namespace {

constexpr int kAny = -1;          // node index meaning "any JSON value" (and any-literal)
constexpr int32_t kMaxDigits = 15;  // digits per part of a number (keeps numbers finite)
const std::vector<std::string>& any_literals() {
  static const std::vector<std::string> l = {"true", "false", "null"};
  return l;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

std::string compact(const nlohmann::ordered_json& v) { return v.dump(-1, ' ', false, Json::error_handler_t::strict); }

// The whole schema ($ref targets are looked up in it) and the refs compiled so far.
struct CompileContext {
  const nlohmann::ordered_json* root = nullptr;
  std::map<std::string, int> refs;  // "#/$defs/X" -> its node
};
thread_local CompileContext* t_compile = nullptr;  // set by compile_schema for its call

Status compile_node(const nlohmann::ordered_json& s, CompiledSchema& out, int index, int depth);

// The subschema a local $ref names ("#/$defs/X", "#/definitions/X", any JSON pointer into the
// schema), or null.
const nlohmann::ordered_json* resolve_ref(const std::string& ref) {
  if (!t_compile || ref.rfind("#", 0) != 0) return nullptr;
  try {
    const nlohmann::ordered_json::json_pointer ptr(ref.substr(1));
    if (!t_compile->root->contains(ptr)) return nullptr;
    return &t_compile->root->at(ptr);
  } catch (const nlohmann::ordered_json::exception&) {
    return nullptr;
  }
}

Expected<int> add_node(const nlohmann::ordered_json& s, CompiledSchema& out, int depth) {
  if (s.is_object() && s.contains("$ref")) {
    if (!s["$ref"].is_string()) return Error{Code::InvalidArgument, "'$ref' must be a string"};
    const std::string ref = s["$ref"].get<std::string>();
    if (t_compile) {
      auto it = t_compile->refs.find(ref);
      if (it != t_compile->refs.end()) return it->second;  // compiled (or being compiled: recursion)
    }
    const nlohmann::ordered_json* target = resolve_ref(ref);
    if (!target) return Error{Code::InvalidArgument, "'$ref' '" + ref + "' does not name a part of this schema"};
    if (out.nodes.size() >= kMaxSchemaNodes)
      return Error{Code::OutOfRange, "the schema has more than " + std::to_string(kMaxSchemaNodes) + " subschemas (the limit)"};
    const int index = static_cast<int>(out.nodes.size());
    out.nodes.emplace_back();
    t_compile->refs[ref] = index;
    STRATA_RETURN_IF_ERROR(compile_node(*target, out, index, depth + 1));
    return index;
  }
  if (out.nodes.size() >= kMaxSchemaNodes)
    return Error{Code::OutOfRange, "the schema has more than " + std::to_string(kMaxSchemaNodes) + " subschemas (the limit)"};
  const int index = static_cast<int>(out.nodes.size());
  out.nodes.emplace_back();
  STRATA_RETURN_IF_ERROR(compile_node(s, out, index, depth));
  return index;
}

// The bytes a value of `node` can start with (for telling anyOf alternatives apart).
std::bitset<256> first_bytes(const CompiledSchema& schema, int node, int depth) {
  std::bitset<256> b;
  if (node < 0 || depth > 64) return b.set();
  const SchemaNode& n = schema.nodes[static_cast<size_t>(node)];
  using K = SchemaNode::Kind;
  switch (n.kind) {
    case K::Any: return b.set();
    case K::AnyObject:
    case K::Object: b.set('{'); break;
    case K::Array: b.set('['); break;
    case K::String: b.set('"'); break;
    case K::Number:
    case K::Integer:
      b.set('-');
      for (char c = '0'; c <= '9'; ++c) b.set(static_cast<unsigned char>(c));
      break;
    case K::Literal:
      for (const std::string& l : n.literals)
        if (!l.empty()) b.set(static_cast<unsigned char>(l[0]));
      break;
    case K::AnyOf:
      for (int alt : n.alternatives) b |= first_bytes(schema, alt, depth + 1);
      break;
  }
  return b;
}

// anyOf / oneOf / a list of types: the alternatives as nodes.
Status compile_alternatives(const std::vector<nlohmann::ordered_json>& alts, CompiledSchema& out, int index, int depth) {
  SchemaNode node;
  node.kind = SchemaNode::Kind::AnyOf;
  std::vector<std::string> literals;  // const / enum alternatives join into one Literal node
  for (const auto& a : alts) {
    STRATA_ASSIGN_OR_RETURN(int child, add_node(a, out, depth + 1));
    const SchemaNode& c = out.nodes[static_cast<size_t>(child)];
    if (c.kind == SchemaNode::Kind::Literal) {
      literals.insert(literals.end(), c.literals.begin(), c.literals.end());
    } else {
      node.alternatives.push_back(child);
    }
  }
  if (!literals.empty()) {
    if (out.nodes.size() >= kMaxSchemaNodes)
      return Error{Code::OutOfRange, "the schema has more than " + std::to_string(kMaxSchemaNodes) + " subschemas (the limit)"};
    SchemaNode lit;
    lit.kind = SchemaNode::Kind::Literal;
    lit.literals = std::move(literals);
    out.nodes.push_back(std::move(lit));
    node.alternatives.push_back(static_cast<int>(out.nodes.size()) - 1);
  }
  out.nodes[static_cast<size_t>(index)] = std::move(node);
  return {};
}

Status compile_node(const nlohmann::ordered_json& s, CompiledSchema& out, int index, int depth) {
  auto bad = [](std::string m) { return Error{Code::InvalidArgument, std::move(m)}; };
  if (depth > 32) return bad("the schema nests deeper than 32 levels");
  if (s.is_boolean() && s.get<bool>()) {
    out.nodes[static_cast<size_t>(index)].kind = SchemaNode::Kind::Any;
    return {};
  }
  if (!s.is_object()) return bad("a schema must be an object");
  static const std::set<std::string> annotations = {"title", "description", "default", "examples", "$schema", "$id",
                                                    "$comment", "required", "additionalProperties", "strict",
                                                    "$defs", "definitions"};
  static const std::set<std::string> known = {"type", "properties", "items", "minItems", "maxItems", "maxLength",
                                              "enum", "const", "anyOf", "oneOf"};
  for (auto it = s.begin(); it != s.end(); ++it) {
    if (!annotations.count(it.key()) && !known.count(it.key()))
      return bad("schema keyword '" + it.key() + "' is not supported");
  }
  for (const char* key : {"anyOf", "oneOf"}) {
    if (!s.contains(key)) continue;
    // Alternatives whose first bytes differ are mutually exclusive: oneOf reads as anyOf.
    if (!s[key].is_array() || s[key].empty()) return bad(std::string("'") + key + "' must be a non-empty array");
    if (s.contains("type") || s.contains("enum") || s.contains("const") || s.contains("properties") ||
        s.contains(key[0] == 'a' ? "oneOf" : "anyOf"))
      return bad(std::string("'") + key + "' together with other type keywords is not supported");
    return compile_alternatives(std::vector<nlohmann::ordered_json>(s[key].begin(), s[key].end()), out, index, depth);
  }
  if (s.contains("type") && s["type"].is_array()) {
    // A list of types: one alternative per type, each with this schema's other keywords.
    if (s["type"].empty()) return bad("'type' must not be an empty list");
    std::vector<nlohmann::ordered_json> alts;
    for (const auto& t : s["type"]) {
      if (!t.is_string()) return bad("'type' lists must hold type names");
      nlohmann::ordered_json one = nlohmann::ordered_json::object();
      one["type"] = t;
      const std::string name = t.get<std::string>();
      for (auto it = s.begin(); it != s.end(); ++it) {
        const std::string& k = it.key();
        if (k == "type" || annotations.count(k)) continue;
        const bool fits = (name == "array" && (k == "items" || k == "minItems" || k == "maxItems")) ||
                          (name == "string" && k == "maxLength") || (name == "object" && k == "properties");
        if (fits) one[k] = it.value();
      }
      alts.push_back(std::move(one));
    }
    return compile_alternatives(alts, out, index, depth);
  }
  SchemaNode node;
  if (s.contains("enum") || s.contains("const")) {
    node.kind = SchemaNode::Kind::Literal;
    if (s.contains("const")) node.literals.push_back(compact(s["const"]));
    if (s.contains("enum")) {
      if (!s["enum"].is_array() || s["enum"].empty()) return bad("'enum' must be a non-empty array");
      if (out.literals + s["enum"].size() > kMaxSchemaLiterals)
        return Error{Code::OutOfRange, "the schema has more than " + std::to_string(kMaxSchemaLiterals) +
                                           " enum / const values (the limit)"};
      for (const auto& v : s["enum"]) node.literals.push_back(compact(v));
    }
    out.literals += node.literals.size();
    for (const std::string& l : node.literals) out.literal_bytes += l.size();
    if (out.literals > kMaxSchemaLiterals)
      return Error{Code::OutOfRange, "the schema has more than " + std::to_string(kMaxSchemaLiterals) +
                                         " enum / const values (the limit)"};
    if (out.literal_bytes > kMaxSchemaLiteralBytes)
      return Error{Code::OutOfRange, "the schema's enum / const values are longer than " +
                                         std::to_string(kMaxSchemaLiteralBytes) + " bytes together (the limit)"};
    out.nodes[static_cast<size_t>(index)] = std::move(node);
    return {};
  }
  if (!s.contains("type")) {
    if (s.contains("properties")) {
      node.kind = SchemaNode::Kind::Object;
    } else {
      node.kind = SchemaNode::Kind::Any;
      out.nodes[static_cast<size_t>(index)] = std::move(node);
      return {};
    }
  } else {
    if (!s["type"].is_string()) return bad("'type' must be one type name (a list of types is not supported)");
    const std::string t = s["type"].get<std::string>();
    if (t == "object") {
      node.kind = s.contains("properties") ? SchemaNode::Kind::Object : SchemaNode::Kind::AnyObject;
    } else if (t == "array") {
      node.kind = SchemaNode::Kind::Array;
    } else if (t == "string") {
      node.kind = SchemaNode::Kind::String;
    } else if (t == "number") {
      node.kind = SchemaNode::Kind::Number;
    } else if (t == "integer") {
      node.kind = SchemaNode::Kind::Integer;
    } else if (t == "boolean") {
      node.kind = SchemaNode::Kind::Literal;
      node.literals = {"true", "false"};
    } else if (t == "null") {
      node.kind = SchemaNode::Kind::Literal;
      node.literals = {"null"};
    } else {
      return bad("schema type '" + t + "' is not a JSON Schema type");
    }
  }
  if (node.kind == SchemaNode::Kind::Object) {
    const auto& props = s["properties"];
    if (!props.is_object()) return bad("'properties' must be an object");
    for (auto it = props.begin(); it != props.end(); ++it) {
      STRATA_ASSIGN_OR_RETURN(int child, add_node(it.value(), out, depth + 1));
      node.properties.emplace_back(nlohmann::ordered_json(it.key()).dump(), child);  // the key as written
    }
  }
  if (node.kind == SchemaNode::Kind::Array) {
    node.items = kAny;
    if (s.contains("items")) {
      STRATA_ASSIGN_OR_RETURN(int child, add_node(s["items"], out, depth + 1));
      node.items = child;
    }
    if (s.contains("minItems")) {
      if (!s["minItems"].is_number_unsigned()) return bad("'minItems' must be a non-negative integer");
      node.min_items = s["minItems"].get<int64_t>();
    }
    if (s.contains("maxItems")) {
      if (!s["maxItems"].is_number_unsigned()) return bad("'maxItems' must be a non-negative integer");
      node.max_items = s["maxItems"].get<int64_t>();
      if (node.max_items < node.min_items) return bad("'maxItems' is below 'minItems'");
    }
  } else if (s.contains("items") || s.contains("minItems") || s.contains("maxItems")) {
    return bad("'items', 'minItems' and 'maxItems' need \"type\": \"array\"");
  }
  if (s.contains("maxLength")) {
    if (node.kind != SchemaNode::Kind::String || !s["maxLength"].is_number_unsigned())
      return bad("'maxLength' needs \"type\": \"string\" and a non-negative integer");
    node.max_length = s["maxLength"].get<int64_t>();
  }
  out.nodes[static_cast<size_t>(index)] = std::move(node);
  return {};
}

}  // namespace

CompiledSchema any_object_schema() {
  CompiledSchema s;
  s.nodes.emplace_back();
  s.nodes[0].kind = SchemaNode::Kind::AnyObject;
  return s;
}

Expected<CompiledSchema> compile_schema(const nlohmann::ordered_json& schema) {
  CompiledSchema out;
  CompileContext context;
  context.root = &schema;
  t_compile = &context;
  struct Reset {
    ~Reset() { t_compile = nullptr; }
  } reset;
  try {
    const size_t bytes = schema.dump(-1, ' ', false, Json::error_handler_t::replace).size();
    if (bytes > kMaxSchemaBytes)
      return Error{Code::OutOfRange, "the schema is " + std::to_string(bytes) + " bytes of JSON, over the limit of " +
                                         std::to_string(kMaxSchemaBytes)};
    STRATA_ASSIGN_OR_RETURN(int root, add_node(schema, out, 0));
    if (root != 0) {
      // The root was a $ref: nodes[0] must be the root, so it becomes an anyOf of that one node.
      out.nodes[0].kind = SchemaNode::Kind::AnyOf;
      out.nodes[0].alternatives = {root};
    }
  } catch (const nlohmann::ordered_json::exception& e) {
    return Error{Code::InvalidArgument, std::string("the schema cannot be used: ") + e.what()};
  }
  // anyOf alternatives must be told apart by their first byte (the recognizer is deterministic).
  for (const SchemaNode& n : out.nodes) {
    if (n.kind != SchemaNode::Kind::AnyOf) continue;
    std::bitset<256> seen;
    for (int alt : n.alternatives) {
      const std::bitset<256> b = first_bytes(out, alt, 0);
      if ((seen & b).any())
        return Error{Code::InvalidArgument, "anyOf / oneOf / type-list alternatives that can start with the same "
                                            "character (two objects, two strings, number and integer, an empty schema) "
                                            "are not supported"};
      seen |= b;
    }
  }
  return out;
}

// ---- the recognizer ---------------------------------------------------------------------------
// Phases. Object: 0 '{', 1 first key or '}', 2 in key text (aux = position), 3 ':', 4 value,
// 5 ',' or '}'. AnyObject: 0 '{', 1 '"' or '}', 2 key string, 3 ':', 4 value, 5 ',' or '}',
// 6 '"' (key after a comma). Array: 0 '[', 1 first item or ']', 2 item, 3 ',' or ']'.
// String: 0 '"', 1 inside. Number: see feed_frame.

JsonRecognizer::JsonRecognizer(std::shared_ptr<const CompiledSchema> schema) : schema_(std::move(schema)) {
  stack_.push_back(Frame{Frame::Type::Value, 0, 0, 0, 0});
}

bool JsonRecognizer::feed(const std::string& s) {
  for (char c : s) {
    if (!feed(c)) return false;
  }
  return true;
}

bool JsonRecognizer::feed(char c) {
  if (done_ || stack_.empty()) return false;
  return feed_frame(c);
}

bool JsonRecognizer::start_value(Frame& f, char c) {
  using K = SchemaNode::Kind;
  // anyOf: the alternative this first byte can start (compile_schema made them disjoint).
  for (int hops = 0; f.node != kAny && schema_->nodes[static_cast<size_t>(f.node)].kind == K::AnyOf; ++hops) {
    if (hops > 64) return false;
    const SchemaNode& n = schema_->nodes[static_cast<size_t>(f.node)];
    int pick = -2;
    for (int alt : n.alternatives) {
      if (first_bytes(*schema_, alt, 0).test(static_cast<unsigned char>(c))) {
        pick = alt;
        break;
      }
    }
    if (pick == -2) return false;
    f.node = pick;
  }
  const K kind = f.node == kAny ? K::Any : schema_->nodes[static_cast<size_t>(f.node)].kind;
  f.phase = 0;
  f.count = 0;
  f.aux = 0;
  switch (kind) {
    case K::Any:
      if (c == '{') {
        f.type = Frame::Type::AnyObject;
      } else if (c == '[') {
        f.type = Frame::Type::Array;
      } else if (c == '"') {
        f.type = Frame::Type::String;
      } else if (c == '-' || is_digit(c)) {
        f.type = Frame::Type::Number;
      } else if (c == 't' || c == 'f' || c == 'n') {
        f.type = Frame::Type::Literal;
        literal_.clear();
      } else {
        return false;
      }
      f.node = kAny;
      break;
    case K::AnyObject: f.type = Frame::Type::AnyObject; break;
    case K::Object: f.type = Frame::Type::Object; break;
    case K::Array: f.type = Frame::Type::Array; break;
    case K::String: f.type = Frame::Type::String; break;
    case K::Number:
    case K::Integer: f.type = Frame::Type::Number; break;
    case K::Literal:
      f.type = Frame::Type::Literal;
      literal_.clear();
      break;
    case K::AnyOf: return false;  // resolved above
  }
  return feed_frame(c);
}

bool JsonRecognizer::child_done() {
  stack_.pop_back();
  if (stack_.empty()) {
    done_ = true;
    return true;
  }
  Frame& p = stack_.back();
  switch (p.type) {
    case Frame::Type::Object: p.phase = 5; break;
    case Frame::Type::AnyObject: p.phase = p.phase == 2 ? 3 : 5; break;
    case Frame::Type::Array:
      ++p.count;
      p.phase = 3;
      break;
    default: return false;
  }
  return true;
}

bool JsonRecognizer::feed_frame(char c) {
  Frame& f = stack_.back();
  const SchemaNode* node = f.node == kAny ? nullptr : &schema_->nodes[static_cast<size_t>(f.node)];
  switch (f.type) {
    case Frame::Type::Value: return start_value(f, c);
    case Frame::Type::Object: {
      const auto& props = node->properties;
      switch (f.phase) {
        case 0:
          if (c != '{') return false;
          f.phase = props.empty() ? 5 : 2;
          f.count = 0;
          f.aux = 0;
          if (!props.empty()) f.phase = 2;
          if (props.empty()) f.phase = 1;
          return true;
        case 1:  // an object without properties: only '}'
          if (c != '}') return false;
          return child_done();
        case 2: {
          const std::string& key = props[static_cast<size_t>(f.count)].first;
          if (static_cast<size_t>(f.aux) >= key.size() || key[static_cast<size_t>(f.aux)] != c) return false;
          if (static_cast<size_t>(++f.aux) == key.size()) f.phase = 3;
          return true;
        }
        case 3: {
          if (c != ':') return false;
          f.phase = 4;
          const int child = props[static_cast<size_t>(f.count)].second;
          stack_.push_back(Frame{Frame::Type::Value, child, 0, 0, 0});
          return true;
        }
        case 5:
          if (static_cast<size_t>(f.count) + 1 < props.size()) {
            if (c != ',') return false;
            ++f.count;
            f.aux = 0;
            f.phase = 2;
            return true;
          }
          if (c != '}') return false;
          return child_done();
        default: return false;
      }
    }
    case Frame::Type::AnyObject:
      switch (f.phase) {
        case 0:
          if (c != '{') return false;
          f.phase = 1;
          return true;
        case 1:
        case 6:
          if (c == '}' && f.phase == 1) return child_done();
          if (c != '"') return false;
          f.phase = 2;
          stack_.push_back(Frame{Frame::Type::String, kAny, 1, 0, 0});
          return true;
        case 3:
          if (c != ':') return false;
          f.phase = 4;
          stack_.push_back(Frame{Frame::Type::Value, kAny, 0, 0, 0});
          return true;
        case 5:
          if (c == ',') {
            f.phase = 6;
            return true;
          }
          if (c != '}') return false;
          return child_done();
        default: return false;
      }
    case Frame::Type::Array: {
      const int items = node ? node->items : kAny;
      const int64_t min_items = node ? node->min_items : 0;
      const int64_t max_items = node ? node->max_items : -1;
      switch (f.phase) {
        case 0:
          if (c != '[') return false;
          f.phase = 1;
          return true;
        case 1: {
          if (c == ']') return min_items == 0 ? child_done() : false;
          if (max_items == 0) return false;
          f.phase = 2;
          stack_.push_back(Frame{Frame::Type::Value, items, 0, 0, 0});
          return feed_frame(c);
        }
        case 3:
          if (c == ',') {
            if (max_items >= 0 && f.count >= max_items) return false;
            f.phase = 2;
            stack_.push_back(Frame{Frame::Type::Value, items, 0, 0, 0});
            return true;
          }
          if (c == ']') return f.count >= min_items ? child_done() : false;
          return false;
        default: return false;
      }
    }
    case Frame::Type::String: {
      const unsigned char u = static_cast<unsigned char>(c);
      const int64_t max_length = node ? node->max_length : -1;
      if (f.phase == 0) {
        if (c != '"') return false;
        f.phase = 1;
        return true;
      }
      if (f.aux >= 10) {  // inside a UTF-8 sequence: continuation bytes
        if ((u & 0xC0) != 0x80) return false;
        f.aux = f.aux == 10 ? 0 : f.aux - 1;
        return true;
      }
      if (f.aux == 1) {  // after a backslash
        if (c == 'u') {
          f.aux = 2;
          return true;
        }
        if (c != '"' && c != '\\' && c != '/' && c != 'b' && c != 'f' && c != 'n' && c != 'r' && c != 't') return false;
        f.aux = 0;
        return true;
      }
      if (f.aux >= 2) {  // \u and (aux - 2) hex digits so far
        if (!is_hex(c)) return false;
        f.aux = f.aux == 5 ? 0 : f.aux + 1;
        return true;
      }
      if (c == '"') return child_done();
      if (u < 0x20) return false;
      if (max_length >= 0 && f.count >= max_length) return false;  // only the closing quote is left
      ++f.count;
      if (c == '\\') {
        f.aux = 1;
      } else if (u >= 0x80) {
        if ((u & 0xE0) == 0xC0 && u >= 0xC2) {
          f.aux = 10;        // one continuation byte
        } else if ((u & 0xF0) == 0xE0) {
          f.aux = 11;        // two
        } else if ((u & 0xF8) == 0xF0 && u <= 0xF4) {
          f.aux = 12;        // three
        } else {
          return false;
        }
      }
      return true;
    }
    case Frame::Type::Number: {
      const bool integer = node && node->kind == SchemaNode::Kind::Integer;
      // Phases: 0 start, 1 after '-', 2 after a leading 0, 3 integer digits, 4 after '.',
      // 5 fraction digits, 6 after 'e', 7 after the exponent sign, 8 exponent digits.
      const bool accepting = f.phase == 2 || f.phase == 3 || f.phase == 5 || f.phase == 8;
      auto digit = [&](int next) {
        f.aux = f.phase == next ? f.aux + 1 : 1;
        if (f.aux > (next == 8 ? 3 : kMaxDigits)) return false;
        f.phase = next;
        return true;
      };
      switch (f.phase) {
        case 0:
          if (c == '-') return f.phase = 1, true;
          if (c == '0') return f.phase = 2, true;
          if (is_digit(c)) return digit(3);
          return false;
        case 1:
          if (c == '0') return f.phase = 2, true;
          if (is_digit(c)) return digit(3);
          return false;
        case 2:
        case 3:
          if (f.phase == 3 && is_digit(c)) return digit(3);
          if (c == '.' && !integer) return f.phase = 4, true;
          if ((c == 'e' || c == 'E') && !integer) return f.phase = 6, true;
          break;
        case 4:
          return is_digit(c) ? digit(5) : false;
        case 5:
          if (is_digit(c)) return digit(5);
          if (c == 'e' || c == 'E') return f.phase = 6, true;
          break;
        case 6:
          if (c == '+' || c == '-') return f.phase = 7, true;
          return is_digit(c) ? digit(8) : false;
        case 7:
          return is_digit(c) ? digit(8) : false;
        case 8:
          if (is_digit(c)) return digit(8);
          break;
        default: return false;
      }
      // c ends the number: it belongs to the parent.
      if (!accepting || !child_done() || done_) return false;
      return feed_frame(c);
    }
    case Frame::Type::Literal: {
      const std::vector<std::string>& cands = node ? node->literals : any_literals();
      const std::string next = literal_ + c;
      bool extends = false, longer = false;
      for (const std::string& s : cands) {
        if (s.compare(0, next.size(), next) == 0 && s.size() >= next.size()) {
          extends = true;
          if (s.size() > next.size()) longer = true;
        }
      }
      if (extends) {
        literal_ = next;
        if (!longer) {
          literal_.clear();
          return child_done();
        }
        return true;
      }
      // c does not extend: the literal may be complete already (numbers in an enum: 1 vs 12).
      const bool whole = std::find(cands.begin(), cands.end(), literal_) != cands.end();
      if (!whole) return false;
      literal_.clear();
      if (!child_done() || done_) return false;
      return feed_frame(c);
    }
  }
  return false;
}

// ---- the trie and the constraint --------------------------------------------------------------

TokenTrie::TokenTrie(const std::vector<std::string>& pieces) : n_vocab_(static_cast<int32_t>(pieces.size())) {
  nodes_.emplace_back();
  for (size_t id = 0; id < pieces.size(); ++id) {
    const std::string& p = pieces[id];
    if (p.empty()) continue;
    int32_t at = 0;
    for (char ch : p) {
      const unsigned char b = static_cast<unsigned char>(ch);
      auto& kids = nodes_[static_cast<size_t>(at)].children;
      auto it = std::lower_bound(kids.begin(), kids.end(), std::make_pair(b, int32_t{-1}));
      if (it != kids.end() && it->first == b) {
        at = it->second;
      } else {
        const int32_t fresh = static_cast<int32_t>(nodes_.size());
        kids.insert(it, {b, fresh});
        nodes_.emplace_back();  // may move `kids`: not used after this
        at = fresh;
      }
    }
    nodes_[static_cast<size_t>(at)].tokens.push_back(static_cast<int32_t>(id));
  }
}

JsonConstraint::JsonConstraint(std::shared_ptr<const CompiledSchema> schema, std::shared_ptr<const TokenTrie> trie,
                               std::shared_ptr<const std::vector<std::string>> pieces, int32_t fallback_token)
    : state_(std::move(schema)), trie_(std::move(trie)), pieces_(std::move(pieces)), fallback_(fallback_token) {}

void JsonConstraint::walk(int32_t at, const JsonRecognizer& state, std::vector<char>& allowed) const {
  for (const auto& [byte, child] : trie_->nodes()[static_cast<size_t>(at)].children) {
    JsonRecognizer next = state;
    if (!next.feed(static_cast<char>(byte))) continue;
    for (int32_t t : trie_->nodes()[static_cast<size_t>(child)].tokens) allowed[static_cast<size_t>(t)] = 1;
    if (!next.complete()) walk(child, next, allowed);
  }
}

void JsonConstraint::mask(float* logits) {
  std::vector<char> allowed(static_cast<size_t>(trie_->n_vocab()), 0);
  walk(0, state_, allowed);
  bool any = false;
  for (char a : allowed) any = any || a;
  if (!any && fallback_ >= 0 && fallback_ < trie_->n_vocab()) allowed[static_cast<size_t>(fallback_)] = 1;
  const float ninf = -std::numeric_limits<float>::infinity();
  for (size_t t = 0; t < allowed.size(); ++t) {
    if (!allowed[t]) logits[t] = ninf;
  }
}

void JsonConstraint::accept(int32_t token) {
  if (token >= 0 && static_cast<size_t>(token) < pieces_->size()) (void)state_.feed((*pieces_)[static_cast<size_t>(token)]);
}

}  // namespace strata::serve
