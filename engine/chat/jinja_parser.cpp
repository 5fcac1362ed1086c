// engine/chat/jinja_parser.cpp — recursive-descent parser for the Jinja subset chat templates use.
// Precedence follows Jinja: condexpr < or < and < not < compare < +- < ~ < */ // % < ** < unary < filters/tests.
#include "engine/chat/jinja_parser.h"

#include <algorithm>
#include <initializer_list>

#include "engine/chat/jinja_builtins.h"
#include "engine/chat/jinja_lexer.h"

namespace strata::chat::jinja {
namespace {

constexpr int kMaxNesting = 200;  // expression and block depth: keeps hostile input off the stack limit

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : toks_(std::move(tokens)) {}

  Body parse_all() {
    std::string found;
    Body body = parse_body({}, found, nullptr);
    return body;
  }

 private:
  // ---- token helpers ----
  const Token& peek(size_t ahead = 0) const { return toks_[std::min(pos_ + ahead, toks_.size() - 1)]; }
  const Token& next() {
    const Token& t = toks_[pos_];
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  bool is_op(const char* op, size_t ahead = 0) const {
    const Token& t = peek(ahead);
    return t.kind == TokenKind::Op && t.text == op;
  }
  bool is_name(const char* name, size_t ahead = 0) const {
    const Token& t = peek(ahead);
    return t.kind == TokenKind::Name && t.text == name;
  }
  bool accept_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool accept_name(const char* name) {
    if (!is_name(name)) return false;
    next();
    return true;
  }

  static std::string describe(const Token& t) {
    switch (t.kind) {
      case TokenKind::Text: return "template text";
      case TokenKind::VarBegin: return "'{{'";
      case TokenKind::VarEnd: return "'}}'";
      case TokenKind::BlockBegin: return "'{%'";
      case TokenKind::BlockEnd: return "'%}'";
      case TokenKind::Name: return "'" + t.text + "'";
      case TokenKind::String: return "string literal";
      case TokenKind::Int:
      case TokenKind::Float: return "number " + t.text;
      case TokenKind::Op: return "'" + t.text + "'";
      case TokenKind::End: return "end of template";
    }
    return "token";
  }

  [[noreturn]] void error(const Token& t, std::string message) const {
    throw JinjaError{std::move(message), t.line, t.column};
  }
  [[noreturn]] void unexpected(const std::string& expected) const {
    error(peek(), "expected " + expected + ", found " + describe(peek()));
  }
  void expect_op(const char* op) {
    if (!accept_op(op)) unexpected(std::string("'") + op + "'");
  }
  void expect_block_end() {
    if (peek().kind != TokenKind::BlockEnd) unexpected("'%}'");
    next();
  }
  std::string expect_identifier() {
    if (peek().kind != TokenKind::Name) unexpected("a name");
    return next().text;
  }

  template <typename T>
  std::unique_ptr<T> make(const Token& at) {
    auto n = std::make_unique<T>();
    n->line = at.line;
    n->column = at.column;
    return n;
  }

  struct DepthGuard {
    Parser& p;
    explicit DepthGuard(Parser& parser) : p(parser) {
      if (++p.depth_ > kMaxNesting) p.error(p.peek(), "template nests deeper than " + std::to_string(kMaxNesting) + " levels");
    }
    ~DepthGuard() { --p.depth_; }
  };

  // ---- statements ----

  // Parses until `{% <one of ends> ...`; leaves the parser after that keyword, sets `found`.
  // `opener` names the statement being closed, for the error at end of input.
  Body parse_body(std::initializer_list<const char*> ends, std::string& found, const Token* opener) {
    DepthGuard guard(*this);
    Body body;
    while (true) {
      const Token& t = peek();
      if (t.kind == TokenKind::End) {
        if (ends.size() == 0) return body;
        std::string list;
        for (const char* e : ends) list += std::string(list.empty() ? "'" : " or '") + e + "'";
        error(t, "expected " + list + " before the end of the template (the '" + opener->text + "' opened at line " +
                     std::to_string(opener->line) + " column " + std::to_string(opener->column) + ")");
      }
      if (t.kind == TokenKind::Text) {
        auto s = make<Stmt>(t);
        s->kind = StmtKind::Text;
        s->text = next().text;
        body.push_back(std::move(s));
      } else if (t.kind == TokenKind::VarBegin) {
        next();
        auto s = make<Stmt>(t);
        s->kind = StmtKind::Output;
        s->expr = parse_tuple(true);
        if (peek().kind != TokenKind::VarEnd) unexpected("'}}'");
        next();
        body.push_back(std::move(s));
      } else if (t.kind == TokenKind::BlockBegin) {
        const Token& kw = peek(1);
        if (kw.kind != TokenKind::Name) {
          next();
          unexpected("a statement name");
        }
        for (const char* e : ends) {
          if (kw.text == e) {
            next();
            next();
            found = kw.text;
            return body;
          }
        }
        next();
        body.push_back(parse_statement());
      } else {
        error(t, "unexpected " + describe(t));
      }
    }
  }

  StmtPtr parse_statement() {
    const Token& kw = next();
    const std::string& k = kw.text;
    if (k == "if") return parse_if(kw);
    if (k == "for") return parse_for(kw);
    if (k == "set") return parse_set(kw);
    if (k == "macro") return parse_macro(kw);
    if (k == "call") return parse_call_block(kw);
    if (k == "filter") return parse_filter_block(kw);
    if (k == "break" || k == "continue") {
      if (loop_depth_ == 0) error(kw, "'" + k + "' outside of a loop");
      auto s = make<Stmt>(kw);
      s->kind = k == "break" ? StmtKind::Break : StmtKind::Continue;
      expect_block_end();
      return s;
    }
    if (k == "generation") {
      auto s = make<Stmt>(kw);
      s->kind = StmtKind::Scope;
      expect_block_end();
      std::string found;
      s->body = parse_body({"endgeneration"}, found, &kw);
      expect_block_end();
      return s;
    }
    if (k == "include" || k == "extends" || k == "import" || k == "from" || k == "block")
      error(kw, "'" + k + "' is not supported in chat templates");
    error(kw, "unknown statement '" + k + "'");
  }

  StmtPtr parse_if(const Token& kw) {
    auto s = make<Stmt>(kw);
    s->kind = StmtKind::If;
    ExprPtr cond = parse_expression(true);
    expect_block_end();
    while (true) {
      std::string found;
      Body body = parse_body({"elif", "else", "endif"}, found, &kw);
      s->branches.emplace_back(std::move(cond), std::move(body));
      if (found == "elif") {
        cond = parse_expression(true);
        expect_block_end();
        continue;
      }
      if (found == "else") {
        expect_block_end();
        s->else_body = parse_body({"endif"}, found, &kw);
      }
      expect_block_end();
      return s;
    }
  }

  std::vector<std::string> parse_targets() {
    std::vector<std::string> names;
    bool paren = accept_op("(");
    do {
      if (paren && is_op(")")) break;
      names.push_back(expect_identifier());
    } while (accept_op(","));
    if (paren) expect_op(")");
    return names;
  }

  StmtPtr parse_for(const Token& kw) {
    auto s = make<Stmt>(kw);
    s->kind = StmtKind::For;
    s->targets = parse_targets();
    if (!accept_name("in")) unexpected("'in'");
    s->expr = parse_tuple(false);
    if (accept_name("if")) s->condition = parse_expression(true);
    if (accept_name("recursive")) error(kw, "recursive loops are not supported");
    expect_block_end();
    ++loop_depth_;
    std::string found;
    s->body = parse_body({"else", "endfor"}, found, &kw);
    --loop_depth_;
    if (found == "else") {
      expect_block_end();
      s->else_body = parse_body({"endfor"}, found, &kw);
    }
    expect_block_end();
    return s;
  }

  StmtPtr parse_set(const Token& kw) {
    auto s = make<Stmt>(kw);
    std::string first = expect_identifier();
    if (accept_op(".")) {
      s->attribute_target = true;
      s->targets = {first, expect_identifier()};
    } else {
      s->targets = {first};
      while (accept_op(",")) s->targets.push_back(expect_identifier());
    }
    if (accept_op("=")) {
      s->kind = StmtKind::Set;
      s->expr = parse_tuple(true);
      expect_block_end();
      return s;
    }
    if (s->attribute_target || s->targets.size() != 1) unexpected("'='");
    s->kind = StmtKind::SetBlock;
    s->text = first;
    if (is_op("|")) s->expr = parse_filter_chain(nullptr);
    expect_block_end();
    std::string found;
    s->body = parse_body({"endset"}, found, &kw);
    expect_block_end();
    return s;
  }

  std::vector<MacroParam> parse_params() {
    std::vector<MacroParam> params;
    expect_op("(");
    while (!is_op(")")) {
      MacroParam p;
      p.name = expect_identifier();
      if (accept_op("=")) p.default_value = parse_expression(true);
      params.push_back(std::move(p));
      if (!accept_op(",")) break;
    }
    expect_op(")");
    return params;
  }

  StmtPtr parse_macro(const Token& kw) {
    auto s = make<Stmt>(kw);
    s->kind = StmtKind::Macro;
    s->text = expect_identifier();
    s->params = parse_params();
    expect_block_end();
    int saved_loops = loop_depth_;
    loop_depth_ = 0;
    std::string found;
    s->body = parse_body({"endmacro"}, found, &kw);
    loop_depth_ = saved_loops;
    if (peek().kind == TokenKind::Name) next();  // {% endmacro name %}
    expect_block_end();
    return s;
  }

  StmtPtr parse_call_block(const Token& kw) {
    auto s = make<Stmt>(kw);
    s->kind = StmtKind::CallBlock;
    if (is_op("(")) s->params = parse_params();
    s->expr = parse_expression(true);
    if (s->expr->kind != ExprKind::Call) error(kw, "'call' needs a macro call");
    expect_block_end();
    std::string found;
    s->body = parse_body({"endcall"}, found, &kw);
    expect_block_end();
    return s;
  }

  StmtPtr parse_filter_block(const Token& kw) {
    auto s = make<Stmt>(kw);
    s->kind = StmtKind::FilterBlock;
    s->expr = parse_filter_chain(nullptr, /*leading_pipe=*/false);
    expect_block_end();
    std::string found;
    s->body = parse_body({"endfilter"}, found, &kw);
    expect_block_end();
    return s;
  }

  // ---- expressions ----

  // A bare tuple (`a, b`) is allowed in output, set values and for iterables.
  ExprPtr parse_tuple(bool with_condexpr) {
    const Token& at = peek();
    ExprPtr first = parse_expression(with_condexpr);
    if (!is_op(",")) return first;
    auto t = make<Expr>(at);
    t->kind = ExprKind::Tuple;
    t->args.push_back(std::move(first));
    while (accept_op(",")) {
      if (peek().kind == TokenKind::BlockEnd || peek().kind == TokenKind::VarEnd || is_name("if")) break;
      t->args.push_back(parse_expression(with_condexpr));
    }
    return t;
  }

  ExprPtr parse_expression(bool with_condexpr) {
    DepthGuard guard(*this);
    if (!with_condexpr) return parse_or();
    const Token& at = peek();
    ExprPtr e = parse_or();
    while (accept_name("if")) {
      auto c = make<Expr>(at);
      c->kind = ExprKind::Conditional;
      c->a = std::move(e);
      c->b = parse_or();
      if (accept_name("else")) c->c = parse_expression(true);
      e = std::move(c);
    }
    return e;
  }

  ExprPtr binary_node(ExprKind kind, const Token& at, ExprPtr l, ExprPtr r) {
    auto n = make<Expr>(at);
    n->kind = kind;
    n->a = std::move(l);
    n->b = std::move(r);
    return n;
  }

  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    while (is_name("or")) {
      const Token& at = next();
      e = binary_node(ExprKind::Or, at, std::move(e), parse_and());
    }
    return e;
  }

  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    while (is_name("and")) {
      const Token& at = next();
      e = binary_node(ExprKind::And, at, std::move(e), parse_not());
    }
    return e;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      DepthGuard guard(*this);
      const Token& at = next();
      auto n = make<Expr>(at);
      n->kind = ExprKind::Not;
      n->a = parse_not();
      return n;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const Token& at = peek();
    ExprPtr first = parse_math1();
    std::unique_ptr<Expr> cmp;
    while (true) {
      CompareOp op;
      if (is_op("==")) op = CompareOp::Eq;
      else if (is_op("!=")) op = CompareOp::Ne;
      else if (is_op("<")) op = CompareOp::Lt;
      else if (is_op("<=")) op = CompareOp::Le;
      else if (is_op(">")) op = CompareOp::Gt;
      else if (is_op(">=")) op = CompareOp::Ge;
      else if (is_name("in")) op = CompareOp::In;
      else if (is_name("not") && is_name("in", 1)) op = CompareOp::NotIn;
      else break;
      next();
      if (op == CompareOp::NotIn) next();
      if (!cmp) {
        cmp = make<Expr>(at);
        cmp->kind = ExprKind::Compare;
        cmp->args.push_back(std::move(first));
      }
      cmp->compare_ops.push_back(op);
      cmp->args.push_back(parse_math1());
    }
    return cmp ? std::move(cmp) : std::move(first);
  }

  ExprPtr arith(const Token& at, BinaryOp op, ExprPtr l, ExprPtr r) {
    auto n = binary_node(ExprKind::Binary, at, std::move(l), std::move(r));
    n->op = op;
    return n;
  }

  ExprPtr parse_math1() {
    ExprPtr e = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token& at = next();
      BinaryOp op = at.text == "+" ? BinaryOp::Add : BinaryOp::Sub;
      e = arith(at, op, std::move(e), parse_concat());
    }
    return e;
  }

  ExprPtr parse_concat() {
    ExprPtr e = parse_math2();
    while (is_op("~")) {
      const Token& at = next();
      e = arith(at, BinaryOp::Concat, std::move(e), parse_math2());
    }
    return e;
  }

  ExprPtr parse_math2() {
    ExprPtr e = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& at = next();
      BinaryOp op = at.text == "*" ? BinaryOp::Mul : at.text == "/" ? BinaryOp::Div : at.text == "//" ? BinaryOp::FloorDiv : BinaryOp::Mod;
      e = arith(at, op, std::move(e), parse_pow());
    }
    return e;
  }

  ExprPtr parse_pow() {
    ExprPtr e = parse_unary(true);
    while (is_op("**")) {
      const Token& at = next();
      e = arith(at, BinaryOp::Pow, std::move(e), parse_unary(true));
    }
    return e;
  }

  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(*this);
    const Token& at = peek();
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      next();
      e = make<Expr>(at);
      e->kind = at.text == "-" ? ExprKind::Negate : ExprKind::Plus;
      e->a = parse_unary(false);
    } else {
      e = parse_postfix(parse_primary());
    }
    if (with_filter) e = parse_filter_expr(std::move(e));
    return e;
  }

  ExprPtr parse_primary() {
    const Token& t = peek();
    auto lit = [&](Value v) {
      auto e = make<Expr>(t);
      e->kind = ExprKind::Literal;
      e->value = std::move(v);
      return e;
    };
    switch (t.kind) {
      case TokenKind::Name: {
        next();
        if (t.text == "true" || t.text == "True") return lit(Value(true));
        if (t.text == "false" || t.text == "False") return lit(Value(false));
        if (t.text == "none" || t.text == "None") return lit(Value::none());
        auto e = make<Expr>(t);
        e->kind = ExprKind::Name;
        e->name = t.text;
        return e;
      }
      case TokenKind::String: {
        std::string s = next().text;
        while (peek().kind == TokenKind::String) s += next().text;  // adjacent literals join
        return lit(Value(std::move(s)));
      }
      case TokenKind::Int: next(); return lit(Value(t.int_value));
      case TokenKind::Float: next(); return lit(Value(t.float_value));
      case TokenKind::Op: {
        if (t.text == "(") {
          next();
          if (accept_op(")")) {
            auto e = make<Expr>(t);
            e->kind = ExprKind::Tuple;
            return e;
          }
          ExprPtr inner = parse_expression(true);
          if (is_op(",")) {
            auto tup = make<Expr>(t);
            tup->kind = ExprKind::Tuple;
            tup->args.push_back(std::move(inner));
            while (accept_op(",")) {
              if (is_op(")")) break;
              tup->args.push_back(parse_expression(true));
            }
            inner = std::move(tup);
          }
          expect_op(")");
          return inner;
        }
        if (t.text == "[") {
          next();
          auto e = make<Expr>(t);
          e->kind = ExprKind::List;
          while (!is_op("]")) {
            e->args.push_back(parse_expression(true));
            if (!accept_op(",")) break;
          }
          expect_op("]");
          return e;
        }
        if (t.text == "{") {
          next();
          auto e = make<Expr>(t);
          e->kind = ExprKind::Dict;
          while (!is_op("}")) {
            e->args.push_back(parse_expression(true));
            expect_op(":");
            e->args.push_back(parse_expression(true));
            if (!accept_op(",")) break;
          }
          expect_op("}");
          return e;
        }
        break;
      }
      default: break;
    }
    unexpected("an expression");
  }

  void parse_call_args(Expr& call) {
    expect_op("(");
    while (!is_op(")")) {
      if (peek().kind == TokenKind::Name && is_op("=", 1)) {
        std::string key = next().text;
        next();
        call.kwargs.emplace_back(key, parse_expression(true));
      } else {
        if (!call.kwargs.empty()) unexpected("a keyword argument after keyword arguments");
        call.args.push_back(parse_expression(true));
      }
      if (!accept_op(",")) break;
    }
    expect_op(")");
  }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      const Token& at = peek();
      if (is_op(".")) {
        next();
        if (peek().kind == TokenKind::Int) {
          auto n = make<Expr>(at);
          n->kind = ExprKind::Index;
          n->a = std::move(e);
          n->b = make<Expr>(peek());
          n->b->kind = ExprKind::Literal;
          n->b->value = Value(next().int_value);
          e = std::move(n);
          continue;
        }
        auto n = make<Expr>(at);
        n->kind = ExprKind::Attribute;
        n->a = std::move(e);
        n->name = expect_identifier();
        e = std::move(n);
      } else if (is_op("[")) {
        next();
        auto n = make<Expr>(at);
        n->a = std::move(e);
        ExprPtr start;
        if (!is_op(":")) start = parse_expression(true);
        if (accept_op(":")) {
          n->kind = ExprKind::Slice;
          n->b = std::move(start);
          if (!is_op(":") && !is_op("]")) n->c = parse_expression(true);
          if (accept_op(":") && !is_op("]")) n->d = parse_expression(true);
        } else {
          n->kind = ExprKind::Index;
          n->b = std::move(start);
        }
        expect_op("]");
        e = std::move(n);
      } else if (is_op("(")) {
        auto n = make<Expr>(at);
        n->kind = ExprKind::Call;
        n->a = std::move(e);
        parse_call_args(*n);
        e = std::move(n);
      } else {
        return e;
      }
    }
  }

  std::string parse_dotted_name() {
    std::string name = expect_identifier();
    while (is_op(".") && peek(1).kind == TokenKind::Name) {
      next();
      name += "." + next().text;
    }
    return name;
  }

  // `| f(args) | g` applied to `input` (null for filter blocks and `set x | f` blocks).
  ExprPtr parse_filter_chain(ExprPtr input, bool leading_pipe = true) {
    bool first = true;
    while ((first && !leading_pipe) || accept_op("|")) {
      first = false;
      const Token& at = peek();
      auto f = make<Expr>(at);
      f->kind = ExprKind::Filter;
      f->name = parse_dotted_name();
      if (!is_known_filter(f->name)) error(at, "no filter named '" + f->name + "'");
      f->a = std::move(input);
      if (is_op("(")) parse_call_args(*f);
      input = std::move(f);
    }
    return input;
  }

  ExprPtr parse_filter_expr(ExprPtr e) {
    while (true) {
      if (is_op("|")) {
        e = parse_filter_chain(std::move(e));
      } else if (is_name("is")) {
        const Token& at = next();
        auto t = make<Expr>(at);
        t->kind = ExprKind::Test;
        t->negated = accept_name("not");
        t->name = parse_dotted_name();
        if (!is_known_test(t->name)) error(at, "no test named '" + t->name + "'");
        t->a = std::move(e);
        if (is_op("(")) {
          parse_call_args(*t);
        } else {
          const Token& p = peek();
          bool starts_primary = p.kind == TokenKind::Name || p.kind == TokenKind::String || p.kind == TokenKind::Int ||
                                p.kind == TokenKind::Float || is_op("(") || is_op("[") || is_op("{");
          if (starts_primary && !is_name("else") && !is_name("or") && !is_name("and")) {
            if (is_name("is")) error(peek(), "tests cannot be chained with 'is' here: `" + t->name + " is`");
            t->args.push_back(parse_postfix(parse_primary()));
          }
        }
        e = std::move(t);
      } else if (is_op("(")) {
        e = parse_postfix(std::move(e));
      } else {
        return e;
      }
    }
  }

  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Body parse_template(std::string_view source) { return Parser(tokenize(source)).parse_all(); }

}  // namespace strata::chat::jinja
