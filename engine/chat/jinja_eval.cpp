// engine/chat/jinja_eval.cpp — the tree-walking evaluator. Scoping follows Jinja: a for-loop body gets
// a fresh scope per iteration, `if` does not, macros see their arguments over the template's top level.
#include "engine/chat/jinja_eval.h"

#include <memory>
#include <unordered_map>

namespace strata::chat::jinja {
namespace {

constexpr int kMaxCallDepth = 128;                // macro recursion (json schema walkers recurse a few levels)
constexpr int64_t kMaxLoopIterations = 1000000;  // a template from a model file must not hang the engine

struct Scope {
  std::unordered_map<std::string, Value> vars;
  std::shared_ptr<Scope> parent;
};

class Evaluator {
 public:
  explicit Evaluator(std::shared_ptr<Scope> root) : root_(root), scope_(std::move(root)) {}

  void run(const Body& body, std::string& out) { exec_body(body, out); }

 private:
  enum class Flow { Normal, Break, Continue };

  // Swaps the current scope for the lifetime of the guard (exception-safe).
  struct ScopeGuard {
    Evaluator& ev;
    std::shared_ptr<Scope> saved;
    ScopeGuard(Evaluator& e, std::shared_ptr<Scope> next) : ev(e), saved(std::move(e.scope_)) { ev.scope_ = std::move(next); }
    ~ScopeGuard() { ev.scope_ = std::move(saved); }
  };

  std::shared_ptr<Scope> child_of(std::shared_ptr<Scope> parent) {
    auto s = std::make_shared<Scope>();
    s->parent = std::move(parent);
    return s;
  }

  Value lookup(const std::string& name) const {
    for (const Scope* s = scope_.get(); s; s = s->parent.get()) {
      auto it = s->vars.find(name);
      if (it != s->vars.end()) return it->second;
    }
    return Value::undefined("'" + name + "' is undefined");
  }

  static void locate(JinjaError& err, int line, int column) {
    if (err.line == 0) {
      err.line = line;
      err.column = column;
    }
  }

  // ---- statements ----

  Flow exec_body(const Body& body, std::string& out) {
    for (const StmtPtr& s : body) {
      Flow f = exec(*s, out);
      if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
  }

  Flow exec(const Stmt& s, std::string& out) {
    try {
      return exec_inner(s, out);
    } catch (JinjaError& err) {
      locate(err, s.line, s.column);
      throw;
    }
  }

  Flow exec_inner(const Stmt& s, std::string& out) {
    switch (s.kind) {
      case StmtKind::Text: out += s.text; return Flow::Normal;
      case StmtKind::Output: out += to_str(eval(*s.expr)); return Flow::Normal;
      case StmtKind::If:
        for (const auto& [cond, body] : s.branches)
          if (eval(*cond).truthy()) return exec_body(body, out);
        return exec_body(s.else_body, out);
      case StmtKind::For: return exec_for(s, out);
      case StmtKind::Set: {
        Value v = eval(*s.expr);
        if (s.attribute_target) {
          Value target = lookup(s.targets[0]);
          if (!target.is_namespace()) fail("cannot assign attribute on non-namespace object '" + s.targets[0] + "'");
          target.dict_object().set(s.targets[1], std::move(v));
        } else {
          assign(s.targets, v);
        }
        return Flow::Normal;
      }
      case StmtKind::SetBlock: {
        std::string text;
        exec_body(s.body, text);
        Value v(std::move(text));
        if (s.expr) v = eval_filter_chain(*s.expr, v);
        scope_->vars[s.text] = std::move(v);
        return Flow::Normal;
      }
      case StmtKind::Macro: {
        const Stmt* macro = &s;
        scope_->vars[s.text] = Value::function(s.text, [this, macro](CallArgs& args) { return call_macro(*macro, args); });
        return Flow::Normal;
      }
      case StmtKind::CallBlock: {
        const Stmt* block = &s;
        std::shared_ptr<Scope> defining = scope_;
        Value caller = Value::function("caller", [this, block, defining](CallArgs& args) -> Value {
          auto frame = child_of(defining);
          bind_params(block->params, args, frame, "caller");
          ScopeGuard guard(*this, frame);
          std::string text;
          exec_body(block->body, text);
          return Value(std::move(text));
        });
        const Expr& call = *s.expr;
        Value callee = eval(*call.a);
        CallArgs args = eval_args(call);
        args.named.emplace_back("caller", caller);
        out += to_str(invoke(callee, args));
        return Flow::Normal;
      }
      case StmtKind::FilterBlock: {
        std::string text;
        exec_body(s.body, text);
        out += to_str(eval_filter_chain(*s.expr, Value(std::move(text))));
        return Flow::Normal;
      }
      case StmtKind::Break: return Flow::Break;
      case StmtKind::Continue: return Flow::Continue;
      case StmtKind::Scope: return exec_body(s.body, out);
    }
    return Flow::Normal;
  }

  void assign(const std::vector<std::string>& targets, const Value& v) { assign_into(*scope_, targets, v); }

  static void assign_into(Scope& scope, const std::vector<std::string>& targets, const Value& v) {
    if (targets.size() == 1) {
      scope.vars[targets[0]] = v;
      return;
    }
    std::vector<Value> items = iterate(v);
    if (items.size() != targets.size())
      fail("cannot unpack " + std::to_string(items.size()) + " values into " + std::to_string(targets.size()) + " names");
    for (size_t i = 0; i < targets.size(); ++i) scope.vars[targets[i]] = items[i];
  }

  Flow exec_for(const Stmt& s, std::string& out) {
    Value iterable = eval(*s.expr);
    if (iterable.is_none()) fail("'NoneType' object is not iterable");
    std::vector<Value> items = iterate(iterable);
    if (s.condition) {
      std::vector<Value> kept;
      for (const Value& item : items) {
        auto frame = child_of(scope_);
        assign_into(*frame, s.targets, item);
        ScopeGuard guard(*this, frame);
        if (eval(*s.condition).truthy()) kept.push_back(item);
      }
      items = std::move(kept);
    }
    if (items.empty()) return exec_body(s.else_body, out);
    const int64_t n = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < n; ++i) {
      if (++iterations_ > kMaxLoopIterations)
        fail("template ran more than " + std::to_string(kMaxLoopIterations) + " loop iterations");
      auto frame = child_of(scope_);
      assign_into(*frame, s.targets, items[i]);
      Value loop = Value::dict();
      DictObject& d = loop.dict_object();
      d.set("index", Value(i + 1));
      d.set("index0", Value(i));
      d.set("revindex", Value(n - i));
      d.set("revindex0", Value(n - i - 1));
      d.set("first", Value(i == 0));
      d.set("last", Value(i == n - 1));
      d.set("length", Value(n));
      d.set("depth", Value(int64_t{1}));
      d.set("depth0", Value(int64_t{0}));
      if (i > 0) d.set("previtem", items[i - 1]);
      if (i + 1 < n) d.set("nextitem", items[i + 1]);
      d.set("cycle", Value::function("cycle", [i](CallArgs& args) -> Value {
        if (args.positional.empty()) fail("no items for cycling given");
        return args.positional[static_cast<size_t>(i) % args.positional.size()];
      }));
      frame->vars["loop"] = loop;
      ScopeGuard guard(*this, frame);
      if (exec_body(s.body, out) == Flow::Break) break;
    }
    return Flow::Normal;
  }

  // Binds arguments into `frame_ptr`; defaults are evaluated inside it, so they see earlier parameters.
  void bind_params(const std::vector<MacroParam>& params, CallArgs& args, const std::shared_ptr<Scope>& frame_ptr,
                   const std::string& name) {
    ScopeGuard guard(*this, frame_ptr);
    Scope& frame = *frame_ptr;
    size_t positional = 0;
    std::vector<bool> used(args.named.size(), false);
    for (const MacroParam& p : params) {
      Value v;
      bool bound = false;
      if (positional < args.positional.size()) {
        v = args.positional[positional++];
        bound = true;
      } else {
        for (size_t k = 0; k < args.named.size(); ++k) {
          if (args.named[k].first == p.name) {
            v = args.named[k].second;
            used[k] = true;
            bound = true;
          }
        }
      }
      if (!bound) v = p.default_value ? eval(*p.default_value) : Value::undefined("parameter '" + p.name + "' was not provided");
      frame.vars[p.name] = v;
    }
    std::vector<Value> extra(args.positional.begin() + static_cast<long>(positional), args.positional.end());
    frame.vars["varargs"] = Value::tuple(std::move(extra));
    Value kwargs = Value::dict();
    for (size_t k = 0; k < args.named.size(); ++k) {
      if (used[k]) continue;
      if (args.named[k].first == "caller" && name != "caller") {
        frame.vars["caller"] = args.named[k].second;
        continue;
      }
      kwargs.dict_object().set(args.named[k].first, args.named[k].second);
    }
    frame.vars["kwargs"] = kwargs;
  }

  Value call_macro(const Stmt& macro, CallArgs& args) {
    if (depth_ >= kMaxCallDepth) fail("macro '" + macro.text + "' recursed deeper than " + std::to_string(kMaxCallDepth) + " calls");
    ++depth_;
    struct DepthRelease {
      int& d;
      ~DepthRelease() { --d; }
    } release{depth_};
    auto frame = child_of(root_);
    bind_params(macro.params, args, frame, macro.text);
    ScopeGuard guard(*this, frame);
    std::string text;
    exec_body(macro.body, text);
    return Value(std::move(text));
  }

  // ---- expressions ----

  Value eval(const Expr& e) {
    try {
      return eval_inner(e);
    } catch (JinjaError& err) {
      locate(err, e.line, e.column);
      throw;
    }
  }

  CallArgs eval_args(const Expr& e) {
    CallArgs args;
    for (const ExprPtr& a : e.args) args.positional.push_back(eval(*a));
    for (const auto& [k, v] : e.kwargs) args.named.emplace_back(k, eval(*v));
    return args;
  }

  Value invoke(const Value& callee, CallArgs& args) {
    if (callee.is_undefined()) undefined_error(callee);
    if (!callee.is_callable()) fail("'" + callee.type_name() + "' object is not callable");
    return callee.callable().fn(args);
  }

  Value eval_filter_chain(const Expr& e, const Value& input) {
    Value in = e.a ? eval_filter_chain(*e.a, input) : input;
    CallArgs args = eval_args(e);
    return apply_filter(e.name, in, args);
  }

  Value eval_inner(const Expr& e) {
    switch (e.kind) {
      case ExprKind::Literal: return e.value;
      case ExprKind::Name: return lookup(e.name);
      case ExprKind::List:
      case ExprKind::Tuple: {
        std::vector<Value> items;
        for (const ExprPtr& a : e.args) items.push_back(eval(*a));
        return e.kind == ExprKind::List ? Value::list(std::move(items)) : Value::tuple(std::move(items));
      }
      case ExprKind::Dict: {
        Value d = Value::dict();
        for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
          Value key = eval(*e.args[i]);
          d.dict_object().set(to_str(key), eval(*e.args[i + 1]));
        }
        return d;
      }
      case ExprKind::Attribute: return get_attribute(eval(*e.a), e.name);
      case ExprKind::Index: {
        Value obj = eval(*e.a);
        return get_item(obj, eval(*e.b));
      }
      case ExprKind::Slice: {
        Value obj = eval(*e.a);
        Value start = e.b ? eval(*e.b) : Value();
        Value stop = e.c ? eval(*e.c) : Value();
        Value step = e.d ? eval(*e.d) : Value();
        return slice(obj, start, stop, step);
      }
      case ExprKind::Call: {
        Value callee = eval(*e.a);
        CallArgs args = eval_args(e);
        return invoke(callee, args);
      }
      case ExprKind::Filter: {
        if (!e.a) fail("filter '" + e.name + "' has no input");
        Value input = eval(*e.a);
        CallArgs args = eval_args(e);
        return apply_filter(e.name, input, args);
      }
      case ExprKind::Test: {
        Value v = eval(*e.a);
        CallArgs args = eval_args(e);
        return Value(apply_test(e.name, v, args) != e.negated);
      }
      case ExprKind::Not: return Value(!eval(*e.a).truthy());
      case ExprKind::Negate: return negate(eval(*e.a));
      case ExprKind::Plus: {
        Value v = eval(*e.a);
        if (!v.is_number()) fail("bad operand type for unary +: '" + v.type_name() + "'");
        return v;
      }
      case ExprKind::Binary: {
        Value a = eval(*e.a);
        Value b = eval(*e.b);
        return binary_op(e.op, a, b);
      }
      case ExprKind::And: {
        Value a = eval(*e.a);
        return a.truthy() ? eval(*e.b) : a;
      }
      case ExprKind::Or: {
        Value a = eval(*e.a);
        return a.truthy() ? a : eval(*e.b);
      }
      case ExprKind::Compare: {
        Value left = eval(*e.args[0]);
        for (size_t i = 0; i < e.compare_ops.size(); ++i) {
          Value right = eval(*e.args[i + 1]);
          bool ok = false;
          switch (e.compare_ops[i]) {
            case CompareOp::Eq: ok = equals(left, right); break;
            case CompareOp::Ne: ok = !equals(left, right); break;
            case CompareOp::Lt: ok = compare(left, right) < 0; break;
            case CompareOp::Le: ok = compare(left, right) <= 0; break;
            case CompareOp::Gt: ok = compare(left, right) > 0; break;
            case CompareOp::Ge: ok = compare(left, right) >= 0; break;
            case CompareOp::In: ok = contains(right, left); break;
            case CompareOp::NotIn: ok = !contains(right, left); break;
          }
          if (!ok) return Value(false);
          left = std::move(right);
        }
        return Value(true);
      }
      case ExprKind::Conditional:
        if (eval(*e.b).truthy()) return eval(*e.a);
        return e.c ? eval(*e.c) : Value::undefined("the inline if-expression evaluated to false and no else section was defined");
    }
    return Value();
  }

  std::shared_ptr<Scope> root_;
  std::shared_ptr<Scope> scope_;
  int depth_ = 0;
  int64_t iterations_ = 0;
};

}  // namespace

std::string render_program(const Body& program, const std::vector<std::pair<std::string, Value>>& context,
                           const GlobalOptions& options) {
  auto globals = std::make_shared<Scope>();
  for (auto& [name, fn] : global_functions(options)) globals->vars[name] = fn;
  auto root = std::make_shared<Scope>();
  root->parent = globals;
  for (const auto& [name, value] : context) root->vars[name] = value;
  Evaluator evaluator(root);
  std::string out;
  evaluator.run(program, out);
  return out;
}

}  // namespace strata::chat::jinja
