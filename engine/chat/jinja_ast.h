// engine/chat/jinja_ast.h — the syntax tree of a parsed template (expressions and statements).
// Plain data; built by jinja_parser, walked by jinja_eval. Depends on jinja_value.h for literals.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/chat/jinja_value.h"

namespace strata::chat::jinja {

enum class ExprKind {
  Literal,      // value
  Name,         // name
  List,         // args
  Tuple,        // args
  Dict,         // args: key0, value0, key1, value1, ...
  Attribute,    // a.name
  Index,        // a[b]
  Slice,        // a[b:c:d], any of b c d may be null
  Call,         // a(args, kwargs)
  Filter,       // a | name(args, kwargs); a is null inside {% filter %} blocks
  Test,         // a is [not] name(args)
  Not,          // not a
  Negate,       // -a
  Plus,         // +a
  Binary,       // a op b
  And,          // a and b (short circuit, returns an operand)
  Or,           // a or b
  Compare,      // args[0] ops[0] args[1] ops[1] args[2] ... (chained like Python)
  Conditional,  // a if b else c (c may be null)
};

enum class BinaryOp { Add, Sub, Mul, Div, FloorDiv, Mod, Pow, Concat };
enum class CompareOp { Eq, Ne, Lt, Le, Gt, Ge, In, NotIn };

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  ExprKind kind = ExprKind::Literal;
  int line = 0;
  int column = 0;
  Value value;
  std::string name;
  ExprPtr a, b, c, d;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  BinaryOp op = BinaryOp::Add;
  std::vector<CompareOp> compare_ops;
  bool negated = false;  // Test: `is not`
};

enum class StmtKind {
  Text,         // text
  Output,       // {{ expr }}
  If,           // branches (cond, body); else_body
  For,          // targets in expr [if cond]; body; else_body
  Set,          // target = expr
  SetBlock,     // {% set name | filters %}body{% endset %}
  Macro,        // name(params) body
  CallBlock,    // {% call(params) expr %}body{% endcall %}
  FilterBlock,  // {% filter f %}body{% endfilter %}
  Break,
  Continue,
  Scope,        // body run in place ({% generation %})
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null: required
};

struct Stmt {
  StmtKind kind = StmtKind::Text;
  int line = 0;
  int column = 0;
  std::string text;                  // Text; Macro name; SetBlock target
  ExprPtr expr;                      // Output, For iterable, Set value, CallBlock call, filter chain
  ExprPtr condition;                 // For `if` filter
  std::vector<std::string> targets;  // For / Set names; Set `ns.attr` => {"ns", "attr"} with attribute_target
  bool attribute_target = false;
  std::vector<std::pair<ExprPtr, Body>> branches;  // If
  Body body;
  Body else_body;
  std::vector<MacroParam> params;  // Macro, CallBlock
};

}  // namespace strata::chat::jinja
