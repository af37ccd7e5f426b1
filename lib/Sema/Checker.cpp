// The static checker: binds dims across a function, infers every op's shape,
// and reports each mismatch at its source location.
#include "ein/Sema/Checker.h"
#include "ein/Shape/DTypeRules.h"

#include <tuple>
#include <cmath>
#include <functional>
#include <set>

namespace ein {

namespace {

const char *kDTypeList = "f64, f32, f16, bf16, f8e4m3, f8e5m2, i64, i32";

/// Collects the names used in a shape string (for --dim validation).
void collectShapeNames(const std::string &shape, std::set<std::string> &out) {
  std::string cur;
  for (char c : shape + " ") {
    // Bytes >= 0x80 only occur inside (Unicode) names: the shape has parsed.
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
        static_cast<unsigned char>(c) >= 0x80) {
      cur += c;
      continue;
    }
    if (!cur.empty() && !std::isdigit(static_cast<unsigned char>(cur[0])))
      out.insert(cur);
    cur.clear();
  }
}

/// Columns from `e`'s start to the end of a negated literal (`-465`), so
/// that the caret spans it; other expressions keep their own length.
unsigned literalSpan(const Expr &e) {
  if (e.kind == Expr::Kind::Neg && !e.args.empty() &&
      e.args[0]->loc.line == e.loc.line && e.args[0]->loc.col > e.loc.col)
    return e.args[0]->loc.col - e.loc.col + literalSpan(*e.args[0]);
  return e.length;
}

/// The result of evaluating an expression: tensor values, or a scalar
/// literal not yet given a dtype (it takes its partner's dtype).
struct Operand {
  std::vector<unsigned> values;
  bool isLiteral = false;
  NumberLiteral literal;
};

class FunctionChecker {
public:
  FunctionChecker(const Function &fn, const Bindings &dims,
                  const std::set<std::string> &knownNames,
                  DiagnosticEngine &diags,
                  const std::map<std::string, std::set<size_t>> *unitDims,
                  const std::map<std::string, size_t> &packRanks)
      : fn(fn), knownNames(knownNames), diags(diags), unitDims(unitDims),
        packRanks(packRanks) {
    out.name = fn.name;
    out.loc = fn.loc;
    out.ctx.env = dims;
  }

  CheckedFunction run() {
    for (auto &p : fn.params) {
      if (vars.count(p.name)) {
        diags.error(p.loc, "duplicate parameter '" + p.name + "'",
                    static_cast<unsigned>(p.name.size()));
        continue;
      }
      auto type = checkType(p.type);
      if (!type)
        return std::move(out);
      for (auto &d : type->shape)
        if (d.isPack())
          fixPackRank(d.pack, packRankKey(p.name, d.pack));
      if (unitDims)
        if (auto it = unitDims->find(p.name); it != unitDims->end())
          for (size_t pos : it->second)
            specialiseUnitDim(type->shape, pos);
      unsigned id = addValue(*type, p.name);
      out.params.push_back(id);
      vars[p.name] = id;
      for (auto &d : type->shape) {
        if (d.isPack())
          paramNames.insert(d.pack);
        for (auto &s : d.size.symbols())
          paramNames.insert(s);
      }
    }
    for (auto &r : fn.results) {
      auto type = checkType(r);
      if (!type)
        return std::move(out);
      // A result-only variadic of given rank: its dims are result-only
      // names, bound to the returned value's (the rank is compared).
      for (auto &d : type->shape)
        if (d.isPack() && !isAnonymousName(d.pack))
          fixPackRank(d.pack, d.pack);
      out.results.push_back(*type);
    }
    bool returned = false;
    for (auto &stmt : fn.body) {
      if (returned) {
        diags.error(stmt.loc, "statement after 'return' is never executed");
        return std::move(out);
      }
      if (!checkStmt(stmt))
        return std::move(out);
      returned = stmt.kind == Stmt::Kind::Return;
    }
    if (!returned)
      diags.error(fn.loc, "function '" + fn.name + "' has no 'return'",
                  static_cast<unsigned>(fn.name.size()));
    return std::move(out);
  }

private:
  const Function &fn;
  const std::set<std::string> &knownNames;
  DiagnosticEngine &diags;
  /// `#` and anonymous dims that the actual inputs give size 1
  /// (CheckOptions::entryUnitDims).
  const std::map<std::string, std::set<size_t>> *unitDims;
  /// CheckOptions::packRanks.
  const std::map<std::string, size_t> &packRanks;

  /// Expands `pack` to fresh dims when its rank is given under `key`.
  void fixPackRank(const std::string &pack, const std::string &key) {
    auto it = packRanks.find(key);
    if (it != packRanks.end() && !out.ctx.packBindings.count(pack))
      out.ctx.packBindings[pack] = packDims(pack, it->second);
  }

  /// Types the dim at position `pos` of `shape` (counted with its variadic
  /// expanded) as the constant 1 if it is `#` or anonymous.
  void specialiseUnitDim(Shape &shape, size_t pos) {
    const Dim unit = Dim::ofSize(SizeExpr::constant(1));
    for (size_t i = 0; i < shape.size(); ++i) {
      Dim &d = shape[i];
      auto bound = d.isPack() ? out.ctx.packBindings.find(d.pack)
                              : out.ctx.packBindings.end();
      size_t width =
          bound != out.ctx.packBindings.end() ? bound->second.size() : 1;
      if (pos >= width) {
        pos -= width;
        continue;
      }
      if (bound != out.ctx.packBindings.end()) {
        // A dim of an anonymous `...` (named variadics are shared between
        // parameters, so their dims stay).
        if (isAnonymousName(d.pack))
          bound->second[pos] = unit;
      } else if (!d.isPack() &&
                 (d.broadcastable ||
                  (d.size.asSymbol() && isAnonymousName(*d.size.asSymbol()))))
        d = unit;
      return;
    }
  }
  CheckedFunction out;
  std::map<std::string, unsigned> vars;
  std::set<std::string> packNames, dimNames;
  /// Names bound by the parameters; others in a result type (and `_`,
  /// `...` there) take whatever the returned value has, as in jaxtyping.
  std::set<std::string> paramNames;
  /// What result-only names stand for, shared by all results.
  std::map<std::string, SizeExpr> resultAliases;

  /// The declared result shape with its result-only names and packs bound
  /// to the returned value's dims.
  Shape bindResultNames(const Shape &declaredIn, const Shape &actualIn) {
    Shape declared = out.ctx.expand(declaredIn);
    Shape actual = out.ctx.expand(actualIn);
    std::vector<size_t> packs;
    for (size_t i = 0; i < declared.size(); ++i)
      if (declared[i].isPack() && !paramNames.count(declared[i].pack))
        packs.push_back(i);
    if (packs.size() == 1 && actual.size() + 1 >= declared.size()) {
      size_t p = packs[0], covered = actual.size() + 1 - declared.size();
      out.ctx.packBindings[declared[p].pack] =
          Shape(actual.begin() + p, actual.begin() + p + covered);
      declared = out.ctx.expand(declared);
    }
    if (declared.size() != actual.size())
      return declared;
    // The dims a parameter's variadic stands for, once its rank is known,
    // belong to the parameters too: they are compared, not bound.
    std::set<std::string> fromParams = paramNames;
    for (auto &[pack, dims] : out.ctx.packBindings)
      if (paramNames.count(pack))
        for (auto &d : dims)
          for (auto &s : d.size.symbols())
            fromParams.insert(s);
    std::map<std::string, SizeExpr> &alias = resultAliases;
    for (size_t i = 0; i < declared.size(); ++i) {
      if (declared[i].isPack() || actual[i].isPack())
        continue;
      auto name = declared[i].size.asSymbol();
      if (name && !fromParams.count(*name) && !out.ctx.env.count(*name) &&
          !alias.count(*name))
        alias[*name] = actual[i].size;
    }
    for (auto &d : declared)
      if (!d.isPack())
        d.size = d.size.replaceSymbols(alias);
    return declared;
  }
  unsigned anonCounter = 0;

  unsigned addValue(TensorType type, std::string name = "") {
    Value v;
    v.type = std::move(type);
    v.name = std::move(name);
    out.values.push_back(std::move(v));
    return static_cast<unsigned>(out.values.size() - 1);
  }
  const TensorType &typeOf(unsigned id) const { return out.values[id].type; }

  std::optional<TensorType> checkType(const TypeAnnotation &t) {
    auto dtype = parseDType(t.dtype);
    if (!dtype) {
      diags.error(t.dtypeLoc,
                  "unknown dtype '" + t.dtype + "'; expected one of " +
                      kDTypeList,
                  static_cast<unsigned>(t.dtype.size()));
      return std::nullopt;
    }
    auto shape = parseShape(t.shape, &anonCounter);
    if (!shape) {
      diags.error(t.shapeLoc.advanced(1 + shape.error().offset),
                  "in shape \"" + t.shape + "\": " + shape.error().message,
                  shape.error().length);
      return std::nullopt;
    }
    // Carets go under the dim at fault, as written.
    auto spans = shapeDimSpans(t.shape);
    auto dimAt = [&](size_t i) -> std::pair<SourceLoc, unsigned> {
      if (i >= spans.size()) // cannot happen: one span per dim
        return {t.shapeLoc, static_cast<unsigned>(t.shape.size() + 2)};
      return {t.shapeLoc.advanced(1 + spans[i].first), spans[i].second};
    };
    auto written = [&](size_t i) {
      return i < spans.size() ? t.shape.substr(spans[i].first, spans[i].second)
                              : shape->at(i).str();
    };
    // Names like `_anon3` are the fresh names of `_` and `...`; written by
    // hand they would be taken for anonymous sizes, or for another `_`.
    for (size_t i = 0; i < shape->size(); ++i) {
      std::set<std::string> names;
      collectShapeNames(written(i), names);
      for (auto &name : names)
        if (isAnonymousName(name)) {
          auto [loc, length] = dimAt(i);
          diags.error(loc,
                      "in shape \"" + t.shape + "\": the name '" + name +
                          "' is reserved for the anonymous dims '_' and "
                          "'...'; choose another name",
                      length);
          return std::nullopt;
        }
    }
    for (size_t i = 0; i < shape->size(); ++i) {
      const Dim &d = (*shape)[i];
      if (d.isPack()) {
        packNames.insert(d.pack);
      } else {
        for (auto &s : d.size.symbols())
          dimNames.insert(s);
        // Size 0 is an empty tensor (as in numpy); only negative sizes are
        // meaningless.
        if (auto v = d.size.evaluate(out.ctx.env); v && *v < 0) {
          auto [loc, length] = dimAt(i);
          diags.error(loc,
                      "in shape \"" + t.shape + "\": dim " + written(i) +
                          " has size " + toString(*v) +
                          "; sizes must not be negative",
                      length);
          return std::nullopt;
        }
      }
    }
    if (numElements(*shape).tooComplex()) {
      diags.error(t.shapeLoc,
                  "in shape \"" + t.shape + "\": the number of elements is a " +
                      SizeExpr::tooComplexMessage(),
                  static_cast<unsigned>(t.shape.size() + 2));
      return std::nullopt;
    }
    if (numElements(*shape).substitute(out.ctx.env).overflowed()) {
      diags.error(t.shapeLoc,
                  "in shape \"" + t.shape +
                      "\": the number of elements overflows 128 bits",
                  static_cast<unsigned>(t.shape.size() + 2));
      return std::nullopt;
    }
    for (auto &p : packNames)
      if (dimNames.count(p)) {
        // Under this annotation's use of the name: the variadic `*p`, or the
        // first dim that mentions `p`.
        auto [loc, length] = dimAt(shape->size());
        for (size_t i = 0; i < shape->size(); ++i) {
          const Dim &d = (*shape)[i];
          if (d.isPack() ? d.pack == p : d.size.symbols().count(p) > 0) {
            std::tie(loc, length) = dimAt(i);
            break;
          }
        }
        diags.error(loc,
                    "'" + p + "' is used both as a variadic (*" + p +
                        ") and as a dim",
                    length);
        return std::nullopt;
      }
    return TensorType{*shape, *dtype};
  }

  /// Reports a ShapeError at the place its anchor names in `call`.
  void report(const ShapeError &e, const Expr &call, const Expr *patternExpr) {
    SourceLoc loc = call.loc;
    unsigned length = call.length;
    std::string message = e.message;
    switch (e.anchor) {
    case ShapeError::Anchor::Pattern:
      if (patternExpr) {
        loc = patternExpr->loc.advanced(1 + e.offset);
        length = e.length;
      }
      break;
    case ShapeError::Anchor::Operand: {
      std::vector<const Expr *> operands;
      for (auto &a : call.args)
        if (a->kind == Expr::Kind::List)
          for (auto &item : a->args)
            operands.push_back(item.get());
        else if (a->kind != Expr::Kind::String)
          operands.push_back(a.get());
      if (e.index < operands.size()) {
        loc = operands[e.index]->loc;
        length = operands[e.index]->length;
      }
      break;
    }
    case ShapeError::Anchor::Kwarg: {
      std::vector<const KeywordArg *> sizes;
      for (auto &k : call.keywords)
        if (k.name != "acc")
          sizes.push_back(&k);
      if (e.index < sizes.size()) {
        loc = sizes[e.index]->loc;
        length = static_cast<unsigned>(sizes[e.index]->name.size());
      }
      break;
    }
    case ShapeError::Anchor::Op:
      break;
    }
    diags.error(loc, message, length);
  }

  bool checkStmt(const Stmt &stmt) {
    auto value = eval(*stmt.values[0]);
    if (stmt.kind == Stmt::Kind::Return) {
      std::vector<std::pair<unsigned, const Expr *>> returned;
      for (auto &e : stmt.values) {
        auto v = &e == &stmt.values[0] ? std::move(value) : eval(*e);
        if (!v)
          return false;
        if (v->isLiteral) {
          diags.error(e->loc, "cannot return a bare number; return a tensor");
          return false;
        }
        for (unsigned id : v->values)
          returned.push_back({id, e.get()});
      }
      if (returned.size() != out.results.size()) {
        diags.error(stmt.loc, "returns " + std::to_string(returned.size()) +
                                  " value(s) but the function declares " +
                                  std::to_string(out.results.size()),
                    6);
        return false;
      }
      for (size_t i = 0; i < returned.size(); ++i) {
        auto [id, expr] = returned[i];
        const TensorType &actual = typeOf(id);
        const TensorType &declared = out.results[i];
        if (out.values[id].isPackedShapes) {
          diags.error(expr->loc, "cannot return packed shapes", expr->length);
          return false;
        }
        if (actual.dtype != declared.dtype) {
          diags.error(expr->loc,
                      "returned value " + std::to_string(i) + " has dtype " +
                          dtypeName(actual.dtype) +
                          " but the function declares " +
                          dtypeName(declared.dtype) + "; use astype",
                      expr->length);
          return false;
        }
        out.results[i].shape = bindResultNames(declared.shape, actual.shape);
        auto ok = checkShapeMatches(out.ctx, declared.shape, actual.shape);
        if (!ok) {
          diags.error(expr->loc,
                      "returned value " + std::to_string(i) + " has shape \"" +
                          shapeStr(out.ctx.expand(actual.shape)) +
                          "\" but the function declares \"" +
                          shapeStr(declared.shape) +
                          "\": " + ok.error().message,
                      expr->length);
          return false;
        }
        out.returns.push_back(id);
      }
      return true;
    }
    if (!value)
      return false;
    if (value->isLiteral) {
      diags.error(stmt.values[0]->loc,
                  "a bare number cannot be assigned; use it in an expression");
      return false;
    }
    if (value->values.size() != stmt.targets.size()) {
      diags.error(stmt.loc, "cannot assign " +
                                std::to_string(value->values.size()) +
                                " value(s) to " +
                                std::to_string(stmt.targets.size()) +
                                " name(s)");
      return false;
    }
    for (size_t i = 0; i < stmt.targets.size(); ++i) {
      auto &[name, loc] = stmt.targets[i];
      if (name == "_")
        continue;
      if (dimNames.count(name) || out.ctx.env.count(name)) {
        diags.error(loc, "'" + name + "' is a dim name; choose another name",
                    static_cast<unsigned>(name.size()));
        return false;
      }
      vars[name] = value->values[i];
      if (out.values[value->values[i]].name.empty())
        out.values[value->values[i]].name = name;
    }
    return true;
  }

  std::optional<unsigned> tensorOf(const Expr &e) {
    auto v = eval(e);
    if (!v)
      return std::nullopt;
    if (v->isLiteral || v->values.size() != 1 ||
        out.values[v->values[0]].isPackedShapes) {
      diags.error(e.loc, "expected a tensor here", e.length);
      return std::nullopt;
    }
    return v->values[0];
  }

  std::optional<SizeExpr> sizeOf(const Expr &e) {
    switch (e.kind) {
    case Expr::Kind::Int: {
      auto v = parseInt(e.text);
      if (!v) {
        diags.error(e.loc, "size " + e.text + " is too large", e.length);
        return std::nullopt;
      }
      return SizeExpr::constant(*v);
    }
    case Expr::Kind::Name:
      if (vars.count(e.text)) {
        diags.error(e.loc, "'" + e.text + "' is a tensor; a size is expected",
                    e.length);
        return std::nullopt;
      }
      if ((!dimNames.count(e.text) && !out.ctx.env.count(e.text) &&
           !knownNames.count(e.text)) ||
          isAnonymousName(e.text)) {
        diags.error(e.loc,
                    "unknown size '" + e.text +
                        "': declare it with 'dim' or use it in a parameter type",
                    e.length);
        return std::nullopt;
      }
      return SizeExpr::symbol(e.text);
    case Expr::Kind::Binary: {
      auto l = sizeOf(*e.args[0]), r = sizeOf(*e.args[1]);
      if (!l || !r)
        return std::nullopt;
      if (e.text == "+")
        return *l + *r;
      if (e.text == "-")
        return *l - *r;
      if (e.text == "*")
        return *l * *r;
      if (e.text == "/") {
        auto q = out.ctx.divide(*l, *r, "size " + exprToString(e));
        if (!q) {
          diags.error(e.loc, q.error().message, e.length);
          return std::nullopt;
        }
        return *q;
      }
      break;
    }
    default:
      break;
    }
    diags.error(e.loc, "expected a size (an integer, a dim name or an "
                       "arithmetic expression of them)",
                e.length);
    return std::nullopt;
  }

  std::optional<Operand> single(unsigned id) {
    Operand o;
    o.values.push_back(id);
    return o;
  }

  /// A literal next to a tensor of `dtype` becomes a constant of `dtype`, if
  /// it fits (lib/Shape/DTypeRules.cpp); `at` is the literal's expression.
  unsigned materialize(const Operand &lit, DType dtype, const Expr &at) {
    CheckedOp op;
    if (auto error = literalDTypeError(lit.literal, dtype))
      diags.error(at.loc, *error, literalSpan(at));
    op.kind = OpKind::Constant;
    op.loc = at.loc;
    op.constant = lit.literal.value;
    op.constantIsInt = lit.literal.isInt;
    if (lit.literal.isInt && lit.literal.exact && !isFloat(dtype))
      op.constantInt = static_cast<int64_t>(*lit.literal.exact);
    unsigned id = addValue(TensorType{{}, dtype});
    op.results.push_back(id);
    out.ops.push_back(std::move(op));
    return id;
  }

  std::optional<Operand> eval(const Expr &e) {
    switch (e.kind) {
    case Expr::Kind::Name: {
      auto it = vars.find(e.text);
      if (it != vars.end())
        return single(it->second);
      if (dimNames.count(e.text) || out.ctx.env.count(e.text))
        diags.error(e.loc,
                    "'" + e.text + "' is a dim, not a tensor", e.length);
      else
        diags.error(e.loc, "undefined name '" + e.text + "'", e.length);
      return std::nullopt;
    }
    case Expr::Kind::Int:
    case Expr::Kind::Float: {
      Operand o;
      o.isLiteral = true;
      o.literal = parseNumberLiteral(e.text);
      if (!std::isfinite(o.literal.value)) {
        diags.error(e.loc, "number " + e.text + " is out of range", e.length);
        return std::nullopt;
      }
      return o;
    }
    case Expr::Kind::String:
      diags.error(e.loc, "a string is only allowed as a pattern or a reduction",
                  e.length);
      return std::nullopt;
    case Expr::Kind::List:
      diags.error(e.loc, "a list is only allowed as the first argument of pack");
      return std::nullopt;
    case Expr::Kind::Neg: {
      auto v = eval(*e.args[0]);
      if (!v)
        return std::nullopt;
      if (v->isLiteral) {
        v->literal = negateLiteral(v->literal);
        return v;
      }
      return unary(OpKind::Neg, e, *e.args[0], v->values[0]);
    }
    case Expr::Kind::Binary:
      return binary(e);
    case Expr::Kind::Call:
      return call(e);
    }
    return std::nullopt;
  }

  std::optional<Operand> unary(OpKind kind, const Expr &at, const Expr &arg,
                               unsigned id) {
    if (out.values[id].isPackedShapes) {
      diags.error(arg.loc, "expected a tensor here", arg.length);
      return std::nullopt;
    }
    if (auto error = operandDTypeError(*findDTypeRule(opKindName(kind)),
                                       typeOf(id).dtype)) {
      diags.error(arg.loc, *error, arg.length);
      return std::nullopt;
    }
    CheckedOp op;
    op.kind = kind;
    op.loc = at.loc;
    op.operands.push_back(id);
    op.results.push_back(addValue(typeOf(id)));
    unsigned result = op.results[0];
    out.ops.push_back(std::move(op));
    return single(result);
  }

  std::optional<Operand> binary(const Expr &e) {
    OpKind kind = e.text == "+"   ? OpKind::Add
                  : e.text == "-" ? OpKind::Sub
                  : e.text == "*" ? OpKind::Mul
                  : e.text == "/" ? OpKind::Div
                                  : OpKind::Pow;
    auto l = eval(*e.args[0]);
    if (!l)
      return std::nullopt;
    auto r = eval(*e.args[1]);
    if (!r)
      return std::nullopt;
    if (l->isLiteral && r->isLiteral) {
      // Fold number arithmetic at compile time, as Python would.
      char op = e.text == "**" ? '^' : e.text[0];
      Expected<NumberLiteral> folded = foldLiterals(op, l->literal, r->literal);
      if (!folded) {
        diags.error(e.loc, folded.error().message, e.length);
        return std::nullopt;
      }
      Operand o;
      o.isLiteral = true;
      o.literal = *folded;
      return o;
    }
    for (auto *side : {&*l, &*r})
      if (!side->isLiteral && (side->values.size() != 1 ||
                               out.values[side->values[0]].isPackedShapes)) {
        diags.error(e.loc, "arithmetic needs tensors or numbers", e.length);
        return std::nullopt;
      }
    unsigned errorsBefore = diags.errorCount();
    unsigned lhs = l->isLiteral
                       ? materialize(*l, typeOf(r->values[0]).dtype, *e.args[0])
                       : l->values[0];
    unsigned rhs = r->isLiteral ? materialize(*r, typeOf(lhs).dtype, *e.args[1])
                                : r->values[0];
    if (diags.errorCount() != errorsBefore)
      return std::nullopt;
    DType lt = typeOf(lhs).dtype, rt = typeOf(rhs).dtype;
    if (lt != rt) {
      diags.error(e.loc,
                  "operands of '" + e.text + "' have different dtypes (" +
                      dtypeName(lt) + " and " + dtypeName(rt) +
                      "); convert one with astype",
                  e.length);
      return std::nullopt;
    }
    auto shape = inferBroadcast(out.ctx, typeOf(lhs).shape, typeOf(rhs).shape);
    if (!shape) {
      const Expr &culprit = *e.args[shape.error().index == 0 ? 0 : 1];
      diags.error(culprit.loc, shape.error().message, culprit.length);
      return std::nullopt;
    }
    CheckedOp op;
    op.kind = kind;
    op.loc = e.loc;
    op.operands = {lhs, rhs};
    op.results.push_back(addValue(TensorType{*shape, lt}));
    unsigned result = op.results[0];
    out.ops.push_back(std::move(op));
    return single(result);
  }

  /// Splits call arguments: tensors first, then the pattern string.
  const Expr *patternArg(const Expr &e, size_t index, const char *what) {
    if (e.args.size() <= index || e.args[index]->kind != Expr::Kind::String) {
      const Expr *at = e.args.size() > index ? e.args[index].get() : &e;
      diags.error(at->loc,
                  e.text + " expects " + what, at->length);
      return nullptr;
    }
    return e.args[index].get();
  }

  std::optional<Pattern> parsePatternAt(const Expr &str, PatternUse use) {
    auto p = parsePattern(str.text, use);
    if (!p) {
      diags.error(str.loc.advanced(1 + p.error().offset), p.error().message,
                  p.error().length);
      return std::nullopt;
    }
    return *p;
  }

  /// Reads `acc=DTYPE` (einsum and reduce) into `op.acc`; false on error.
  bool accArg(const Expr &e, CheckedOp &op) {
    for (auto &k : e.keywords) {
      if (k.name != "acc")
        continue;
      if (op.kind != OpKind::Einsum && op.kind != OpKind::Reduce) {
        diags.error(k.loc,
                    "acc= only applies to einsum and reduce (it sets the "
                    "accumulation and result dtype)",
                    3);
        return false;
      }
      std::optional<DType> acc;
      if (k.value->kind == Expr::Kind::Name)
        acc = parseDType(k.value->text);
      if (!acc) {
        diags.error(k.value->loc,
                    "acc= expects a dtype (" + std::string(kDTypeList) + ")",
                    k.value->length);
        return false;
      }
      const DTypeRule &rule = op.kind == OpKind::Reduce
                                  ? reduceDTypeRule(op.reduction)
                                  : *findDTypeRule("einsum");
      if (auto error = accDTypeError(rule, *acc)) {
        diags.error(k.value->loc, *error, k.value->length);
        return false;
      }
      op.acc = acc;
    }
    return true;
  }

  std::optional<std::vector<SizeArg>> sizeArgs(const Expr &e) {
    std::vector<SizeArg> sizes;
    for (auto &k : e.keywords) {
      if (k.name == "acc")
        continue;
      auto s = sizeOf(*k.value);
      if (!s)
        return std::nullopt;
      sizes.push_back({k.name, *s});
    }
    return sizes;
  }

  std::optional<Operand> call(const Expr &e) {
    static const std::map<std::string, OpKind> unaryFns = {
        {"exp", OpKind::Exp},     {"log", OpKind::Log},
        {"sqrt", OpKind::Sqrt},   {"rsqrt", OpKind::Rsqrt},
        {"relu", OpKind::Relu},   {"tanh", OpKind::Tanh}};
    const std::string &callee = e.text;
    auto noKeywords = [&]() {
      if (e.keywords.empty())
        return true;
      diags.error(e.keywords[0].loc,
                  callee + " takes no keyword argument '" +
                      e.keywords[0].name + "'",
                  static_cast<unsigned>(e.keywords[0].name.size()));
      return false;
    };
    if (auto it = unaryFns.find(callee); it != unaryFns.end()) {
      if (e.args.size() != 1) {
        diags.error(e.loc, callee + " takes exactly one tensor", e.length);
        return std::nullopt;
      }
      if (!noKeywords())
        return std::nullopt;
      auto x = tensorOf(*e.args[0]);
      if (!x)
        return std::nullopt;
      return unary(it->second, e, *e.args[0], *x);
    }
    if (callee == "astype")
      return astype(e);
    if (callee == "rearrange" || callee == "reduce" || callee == "repeat")
      return transform(e);
    if (callee == "einsum")
      return einsum(e);
    if (callee == "pack")
      return pack(e);
    if (callee == "unpack")
      return unpack(e);
    diags.error(e.loc,
                "unknown function '" + callee +
                    "'; expected rearrange, reduce, repeat, einsum, pack, "
                    "unpack, astype, exp, log, sqrt, rsqrt, relu or tanh",
                e.length);
    return std::nullopt;
  }

  std::optional<Operand> astype(const Expr &e) {
    if (e.args.size() != 2 || e.args[1]->kind != Expr::Kind::Name) {
      diags.error(e.loc, "astype expects (tensor, dtype), e.g. astype(x, f32)",
                  e.length);
      return std::nullopt;
    }
    auto x = tensorOf(*e.args[0]);
    if (!x)
      return std::nullopt;
    auto dtype = parseDType(e.args[1]->text);
    if (!dtype) {
      diags.error(e.args[1]->loc,
                  "unknown dtype '" + e.args[1]->text + "'; expected one of " +
                      kDTypeList,
                  e.args[1]->length);
      return std::nullopt;
    }
    CheckedOp op;
    op.kind = OpKind::Cast;
    op.loc = e.loc;
    op.operands.push_back(*x);
    op.results.push_back(addValue(TensorType{typeOf(*x).shape, *dtype}));
    unsigned result = op.results[0];
    out.ops.push_back(std::move(op));
    return single(result);
  }

  std::optional<Operand> transform(const Expr &e) {
    const std::string &callee = e.text;
    bool isReduce = callee == "reduce";
    size_t expectedArgs = isReduce ? 3 : 2;
    if (e.args.size() != expectedArgs) {
      diags.error(e.loc,
                  isReduce ? "reduce expects (tensor, pattern, reduction, **sizes)"
                           : callee + " expects (tensor, pattern, **sizes)",
                  e.length);
      return std::nullopt;
    }
    auto x = tensorOf(*e.args[0]);
    if (!x)
      return std::nullopt;
    const Expr *patExpr = patternArg(e, 1, "a pattern string as its second argument");
    if (!patExpr)
      return std::nullopt;
    PatternUse use = isReduce                ? PatternUse::Reduce
                     : callee == "repeat"    ? PatternUse::Repeat
                                             : PatternUse::Rearrange;
    auto pattern = parsePatternAt(*patExpr, use);
    if (!pattern)
      return std::nullopt;
    CheckedOp op;
    op.kind = isReduce                ? OpKind::Reduce
              : callee == "repeat"    ? OpKind::Repeat
                                      : OpKind::Rearrange;
    if (isReduce) {
      const Expr &red = *e.args[2];
      std::optional<ReduceKind> kind;
      if (red.kind == Expr::Kind::String)
        kind = parseReduceKind(red.text);
      if (!kind) {
        std::string what = red.kind == Expr::Kind::String
                               ? "unknown reduction " + exprToString(red)
                               : "the reduction must be a string such as "
                                 "\"sum\", not " + exprToString(red);
        diags.error(red.loc,
                    what + "; expected \"sum\", \"mean\", \"max\", \"min\" "
                           "or \"prod\"",
                    red.length);
        return std::nullopt;
      }
      op.reduction = *kind;
      if (auto error = operandDTypeError(reduceDTypeRule(op.reduction),
                                         typeOf(*x).dtype)) {
        diags.error(red.loc, *error, red.length);
        return std::nullopt;
      }
    }
    if (!accArg(e, op))
      return std::nullopt;
    auto sizes = sizeArgs(e);
    if (!sizes)
      return std::nullopt;
    auto info = analyzeTransform(out.ctx, use, *pattern, typeOf(*x).shape, *sizes);
    if (!info) {
      report(info.error(), e, patExpr);
      return std::nullopt;
    }
    if (isReduce) {
      size_t checksBefore = out.ctx.constraints.size();
      if (auto ok =
              requireNonEmptyReduction(out.ctx, op.reduction, *pattern, *info);
          !ok) {
        report(ok.error(), e, patExpr);
        return std::nullopt;
      }
      // The run-time message names the reduce by its place in the file.
      for (size_t i = checksBefore; i < out.ctx.constraints.size(); ++i)
        out.ctx.constraints[i].reason =
            "reduce(..., \"" + patExpr->text + "\", \"" +
            reduceKindName(op.reduction) + "\") at line " +
            std::to_string(e.loc.line) + ": " + out.ctx.constraints[i].reason;
    }
    op.loc = e.loc;
    op.pattern = patExpr->text;
    op.parsed = *pattern;
    op.sizes = *sizes;
    op.operands.push_back(*x);
    op.results.push_back(addValue(
        TensorType{info->result, op.acc.value_or(typeOf(*x).dtype)}));
    op.transform = *info;
    unsigned result = op.results[0];
    out.ops.push_back(std::move(op));
    return single(result);
  }

  std::optional<Operand> einsum(const Expr &e) {
    if (e.args.empty() || e.args.back()->kind != Expr::Kind::String) {
      diags.error(e.loc,
                  "einsum expects (tensor, ..., pattern): the pattern string "
                  "comes last",
                  e.length);
      return std::nullopt;
    }
    const Expr *patExpr = e.args.back().get();
    auto pattern = parsePatternAt(*patExpr, PatternUse::Einsum);
    if (!pattern)
      return std::nullopt;
    std::vector<unsigned> xs;
    std::vector<Shape> shapes;
    for (size_t i = 0; i + 1 < e.args.size(); ++i) {
      auto x = tensorOf(*e.args[i]);
      if (!x)
        return std::nullopt;
      if (!xs.empty() && typeOf(*x).dtype != typeOf(xs[0]).dtype) {
        diags.error(e.args[i]->loc,
                    std::string("einsum operands have different dtypes (") +
                        dtypeName(typeOf(xs[0]).dtype) + " and " +
                        dtypeName(typeOf(*x).dtype) +
                        "); convert one with astype",
                    e.args[i]->length);
        return std::nullopt;
      }
      xs.push_back(*x);
      shapes.push_back(typeOf(*x).shape);
    }
    if (xs.empty()) {
      diags.error(e.loc, "einsum needs at least one tensor", e.length);
      return std::nullopt;
    }
    CheckedOp op;
    op.kind = OpKind::Einsum;
    if (!accArg(e, op))
      return std::nullopt;
    auto sizes = sizeArgs(e);
    if (!sizes)
      return std::nullopt;
    auto info = analyzeEinsum(out.ctx, *pattern, shapes, *sizes);
    if (!info) {
      report(info.error(), e, patExpr);
      return std::nullopt;
    }
    op.loc = e.loc;
    op.pattern = patExpr->text;
    op.parsed = *pattern;
    op.sizes = *sizes;
    op.operands = xs;
    DType resultType = op.acc.value_or(typeOf(xs[0]).dtype);
    op.results.push_back(addValue(TensorType{info->result, resultType}));
    op.einsum = *info;
    unsigned result = op.results[0];
    out.ops.push_back(std::move(op));
    return single(result);
  }

  std::optional<Operand> pack(const Expr &e) {
    if (e.args.size() != 2 || e.args[0]->kind != Expr::Kind::List) {
      diags.error(e.loc, "pack expects ([tensor, ...], pattern)", e.length);
      return std::nullopt;
    }
    const Expr *patExpr = patternArg(e, 1, "a pattern string such as \"b * c\"");
    if (!patExpr)
      return std::nullopt;
    auto pattern = parsePatternAt(*patExpr, PatternUse::Pack);
    if (!pattern)
      return std::nullopt;
    std::vector<unsigned> xs;
    std::vector<Shape> shapes;
    for (auto &item : e.args[0]->args) {
      auto x = tensorOf(*item);
      if (!x)
        return std::nullopt;
      if (!xs.empty() && typeOf(*x).dtype != typeOf(xs[0]).dtype) {
        diags.error(item->loc, "pack needs tensors of one dtype", item->length);
        return std::nullopt;
      }
      xs.push_back(*x);
      shapes.push_back(typeOf(*x).shape);
    }
    auto result = inferPack(out.ctx, *pattern, shapes);
    if (!result) {
      report(result.error(), e, patExpr);
      return std::nullopt;
    }
    CheckedOp op;
    op.kind = OpKind::Pack;
    op.loc = e.loc;
    op.pattern = patExpr->text;
    op.parsed = *pattern;
    op.operands = xs;
    op.packParts = result->parts;
    unsigned packed = addValue(TensorType{result->packed, typeOf(xs[0]).dtype});
    unsigned ps = addValue(TensorType{});
    out.values[ps].isPackedShapes = true;
    out.values[ps].parts = result->parts;
    op.results = {packed};
    out.ops.push_back(std::move(op));
    Operand o;
    o.values = {packed, ps};
    return o;
  }

  std::optional<Operand> unpack(const Expr &e) {
    if (e.args.size() != 3) {
      diags.error(e.loc, "unpack expects (tensor, packed_shapes, pattern)",
                  e.length);
      return std::nullopt;
    }
    auto x = tensorOf(*e.args[0]);
    if (!x)
      return std::nullopt;
    auto psv = eval(*e.args[1]);
    if (!psv)
      return std::nullopt;
    if (psv->isLiteral || psv->values.size() != 1 ||
        !out.values[psv->values[0]].isPackedShapes) {
      diags.error(e.args[1]->loc,
                  "expected the packed shapes returned by pack", e.args[1]->length);
      return std::nullopt;
    }
    const Expr *patExpr = patternArg(e, 2, "a pattern string such as \"b * c\"");
    if (!patExpr)
      return std::nullopt;
    auto pattern = parsePatternAt(*patExpr, PatternUse::Pack);
    if (!pattern)
      return std::nullopt;
    const auto &parts = out.values[psv->values[0]].parts;
    auto shapes = inferUnpack(out.ctx, *pattern, typeOf(*x).shape, parts);
    if (!shapes) {
      report(shapes.error(), e, patExpr);
      return std::nullopt;
    }
    CheckedOp op;
    op.kind = OpKind::Unpack;
    op.loc = e.loc;
    op.pattern = patExpr->text;
    op.parsed = *pattern;
    op.operands = {*x};
    op.packParts = parts;
    for (auto &s : *shapes)
      op.results.push_back(addValue(TensorType{s, typeOf(*x).dtype}));
    Operand o;
    o.values = op.results;
    out.ops.push_back(std::move(op));
    return o;
  }
};

/// Evaluates a `dim` declaration's value from earlier declarations.
std::optional<Int> evalDim(const Expr &e, const Bindings &dims,
                           DiagnosticEngine &diags) {
  switch (e.kind) {
  case Expr::Kind::Int:
    if (auto v = parseInt(e.text))
      return *v;
    diags.error(e.loc, "size " + e.text + " is too large", e.length);
    return std::nullopt;
  case Expr::Kind::Name:
    if (auto it = dims.find(e.text); it != dims.end())
      return it->second;
    diags.error(e.loc, "unknown dim '" + e.text + "'", e.length);
    return std::nullopt;
  case Expr::Kind::Binary: {
    auto l = evalDim(*e.args[0], dims, diags);
    if (!l)
      return std::nullopt;
    auto r = evalDim(*e.args[1], dims, diags);
    if (!r)
      return std::nullopt;
    std::optional<Int> v;
    if (e.text == "+")
      v = checkedAdd(*l, *r);
    else if (e.text == "-")
      v = checkedAdd(*l, -*r);
    else if (e.text == "*")
      v = checkedMul(*l, *r);
    else if (e.text == "/" && *r != 0 && *l % *r == 0)
      v = *l / *r;
    else if (e.text == "/") {
      diags.error(e.loc, "dim division must be exact", e.length);
      return std::nullopt;
    }
    if (!v) {
      diags.error(e.loc, "dim value overflows", e.length);
      return std::nullopt;
    }
    return v;
  }
  default:
    diags.error(e.loc, "a dim value must be an integer expression", e.length);
    return std::nullopt;
  }
}

} // namespace

std::string packRankKey(const std::string &param, const std::string &pack) {
  return isAnonymousName(pack) ? param + "..." : pack;
}

std::optional<std::string> variadicOfUnknownRank(const CheckedFunction &fn) {
  for (unsigned id : fn.params)
    for (auto &d : fn.ctx.expand(fn.values[id].type.shape))
      if (d.isPack())
        return packRankKey(fn.values[id].name, d.pack);
  // A result's variadic is a parameter's (or fixed by the body), but for
  // an anonymous one written only in the result: it has no --rank key.
  for (auto &r : fn.results)
    for (auto &d : fn.ctx.expand(r.shape))
      if (d.isPack())
        return isAnonymousName(d.pack) ? "..." : d.pack;
  return std::nullopt;
}

CheckedModule checkModule(const Module &module, const CheckOptions &options,
                          DiagnosticEngine &diags) {
  CheckedModule result;
  result.path = diags.source().path;
  std::set<std::string> knownNames;
  for (auto &d : module.dims) {
    if (result.dims.count(d.name)) {
      diags.error(d.loc, "dim '" + d.name + "' is declared twice",
                  static_cast<unsigned>(d.name.size()));
      return result;
    }
    knownNames.insert(d.name);
    if (auto it = options.dimOverrides.find(d.name);
        it != options.dimOverrides.end()) {
      result.dims[d.name] = it->second;
      continue;
    }
    auto v = evalDim(*d.value, result.dims, diags);
    if (!v)
      return result;
    if (*v < 0) {
      diags.error(d.value->loc,
                  "dim '" + d.name + "' must not be negative, got " +
                      toString(*v),
                  d.value->length);
      return result;
    }
    result.dims[d.name] = *v;
  }
  for (auto &f : module.functions) {
    for (auto &p : f.params)
      collectShapeNames(p.type.shape, knownNames);
    for (auto &r : f.results)
      collectShapeNames(r.shape, knownNames);
  }
  if (!options.packRanks.empty()) {
    // The variadics --rank may name: `*NAME` anywhere, `PARAM...` for a
    // parameter typed with `...`.
    std::set<std::string> variadics;
    for (auto &f : module.functions) {
      for (auto &p : f.params)
        if (auto shape = parseShape(p.type.shape))
          for (auto &d : *shape)
            if (d.isPack())
              variadics.insert(packRankKey(p.name, d.pack));
      for (auto &r : f.results)
        if (auto shape = parseShape(r.shape))
          for (auto &d : *shape)
            if (d.isPack() && !isAnonymousName(d.pack))
              variadics.insert(d.pack);
    }
    for (auto &[name, rank] : options.packRanks)
      if (!variadics.count(name)) {
        std::string known;
        for (auto &v : variadics)
          known += (known.empty() ? "" : ", ") + v;
        diags.error({},
                    "--rank " + name + "=" + std::to_string(rank) +
                        ": no variadic named '" + name + "' in this file (" +
                        (known.empty() ? "it has none" : "it has " + known) +
                        "; the '...' of parameter x is x...)");
        return result;
      }
    // The dims of a named variadic of given rank may be bound with --dim
    // (`--rank batch=2 --dim batch_0=4`).
    for (auto &[name, rank] : options.packRanks)
      if (name.find("...") == std::string::npos)
        for (auto &d : packDims(name, rank))
          knownNames.insert(*d.size.asSymbol());
  }
  for (auto &[name, value] : options.dimOverrides) {
    if (!knownNames.count(name)) {
      diags.error({}, "--dim " + name + "=" + toString(value) +
                          ": no dim named '" + name + "' in this file");
      return result;
    }
    if (value < 0) {
      diags.error({}, "--dim " + name + " must not be negative");
      return result;
    }
    result.dims[name] = value;
  }
  for (auto &[name, value] : options.entryDims)
    result.dims[name] = value;
  std::set<std::string> seen;
  for (auto &f : module.functions) {
    if (!options.onlyFunction.empty() && f.name != options.onlyFunction)
      continue;
    if (!seen.insert(f.name).second) {
      diags.error(f.loc, "function '" + f.name + "' is defined twice",
                  static_cast<unsigned>(f.name.size()));
      return result;
    }
    result.functions.push_back(
        FunctionChecker(f, result.dims, knownNames, diags,
                        f.name == options.onlyFunction ? &options.entryUnitDims
                                                       : nullptr,
                        options.packRanks)
            .run());
  }
  return result;
}

} // namespace ein
