// engine/serve/json_constraint.h — constrained decoding for response_format: a byte-level
// pushdown recognizer of JSON (any object, or a JSON Schema subset) and a TokenConstraint that
// walks a trie of the vocabulary's token texts with it, so only tokens that keep the output a
// valid prefix can be sampled. Output is compact JSON (no whitespace outside strings).
// No HTTP, no model: a tokenizer's pieces in, a mask out.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/exec/scheduler.h"
#include "engine/serve/api_json.h"

namespace strata::serve {

// A JSON Schema, compiled to the subset this recognizer knows: object (its properties, written
// in schema order, all of them), array (items, minItems, maxItems), string (maxLength), number,
// integer, boolean, null, enum / const, "any JSON value" for an empty schema, anyOf / oneOf / a
// list of types whose alternatives start with different characters (the first byte picks one:
// Optional[X] is anyOf [X, null]), and $ref to "#/$defs/..." or "#/definitions/..." (recursion
// allowed: a node refers to others by index).
struct SchemaNode {
  enum class Kind { Any, AnyObject, Object, Array, String, Number, Integer, Literal, AnyOf };  // boolean, null: Literal
  std::vector<int> alternatives;                        // AnyOf: the nodes, disjoint in their first byte
  Kind kind = Kind::Any;
  std::vector<std::pair<std::string, int>> properties;  // Object: (name as a JSON string, node) in order
  int items = -1;                                       // Array: the item node
  int64_t min_items = 0, max_items = -1;                // Array; -1: no upper bound
  int64_t max_length = -1;                              // String: characters; -1: none
  std::vector<std::string> literals;                    // Literal: the compact JSON texts allowed
};

struct CompiledSchema {
  std::vector<SchemaNode> nodes;  // nodes[0] is the root
  size_t literals = 0;            // enum / const values in all nodes
  size_t literal_bytes = 0;       // their compact JSON texts together
};

// The compile budget. A token's mask walks the vocabulary trie through the recognizer, and a
// Literal step compares against every value of its enum, so the masking cost (on the scheduler
// thread, where it holds up every other stream) grows with these; over one, the schema is refused
// (OutOfRange naming the limit) before anything runs. A 90,000-string enum took 18.8 s.
constexpr size_t kMaxSchemaBytes = size_t{256} << 10;  // the schema's JSON text
constexpr size_t kMaxSchemaNodes = 2048;
constexpr size_t kMaxSchemaLiterals = 1024;            // enum / const values, all nodes together
constexpr size_t kMaxSchemaLiteralBytes = size_t{64} << 10;
// And time: the first token's mask is tried on the request's own thread; slower than this, the
// schema is refused too (the limits above keep real schemas far below it).
constexpr int kMaxMaskMs = 1000;

// {"type":"json_object"}: any JSON object.
CompiledSchema any_object_schema();
// A JSON Schema object (ordered: properties are written in the order the client gave them);
// InvalidArgument naming the first keyword or shape not supported; OutOfRange naming the limit
// of the compile budget it passes.
Expected<CompiledSchema> compile_schema(const nlohmann::ordered_json& schema);

// The recognizer: feed bytes, ask whether they were accepted and whether the value is complete.
// Cheap to copy (a small stack).
class JsonRecognizer {
 public:
  explicit JsonRecognizer(std::shared_ptr<const CompiledSchema> schema);
  bool feed(char c);          // false: c cannot come next (the state is then unspecified)
  bool feed(const std::string& s);
  bool complete() const { return done_; }

 private:
  struct Frame {
    enum class Type : uint8_t { Value, Object, AnyObject, Array, String, Number, Literal };
    Type type = Type::Value;
    int node = 0;
    int phase = 0;         // per type (see .cpp)
    int64_t count = 0;     // Object: property index; Array: items; String: characters; Literal: matched length
    int32_t aux = 0;       // String: escape / \u digits / UTF-8 continuation state; Number: digits in part
  };
  bool feed_frame(char c);
  bool child_done();       // the top frame completed: pop it and advance its parent
  bool start_value(Frame& f, char c);

  std::shared_ptr<const CompiledSchema> schema_;
  std::vector<Frame> stack_;
  std::string literal_;    // the literal being matched (Literal frames never nest)
  bool done_ = false;
};

// The vocabulary as a trie of token texts (shared by every request on a model).
class TokenTrie {
 public:
  // pieces[i]: the text token i adds to the output ("" for control tokens: never allowed).
  explicit TokenTrie(const std::vector<std::string>& pieces);
  struct Node {
    std::vector<std::pair<unsigned char, int32_t>> children;  // sorted by byte
    std::vector<int32_t> tokens;                              // tokens whose text ends here
  };
  const std::vector<Node>& nodes() const { return nodes_; }
  int32_t n_vocab() const { return n_vocab_; }

 private:
  std::vector<Node> nodes_;
  int32_t n_vocab_ = 0;
};

class JsonConstraint : public exec::TokenConstraint {
 public:
  JsonConstraint(std::shared_ptr<const CompiledSchema> schema, std::shared_ptr<const TokenTrie> trie,
                 std::shared_ptr<const std::vector<std::string>> pieces, int32_t fallback_token);
  void mask(float* logits) override;
  void accept(int32_t token) override;
  bool complete() const override { return state_.complete(); }

 private:
  void walk(int32_t node, const JsonRecognizer& state, std::vector<char>& allowed) const;
  JsonRecognizer state_;
  std::shared_ptr<const TokenTrie> trie_;
  std::shared_ptr<const std::vector<std::string>> pieces_;
  int32_t fallback_;  // allowed when nothing else is (end of generation), so sampling never fails
};

}  // namespace strata::serve
