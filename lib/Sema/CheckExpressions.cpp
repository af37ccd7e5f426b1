// The checker of expressions: names, literals, sizes, elementwise arithmetic
// and the dispatch of calls.
#include "FunctionChecker.h"
#include "ein/Sema/Suggestions.h"

#include <fmt/format.h>

#include <cmath>

namespace ein::sema {

std::optional<unsigned> FunctionChecker::tensorOf(const Expr &e) {
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

std::optional<SizeExpr> FunctionChecker::sizeOf(const Expr &e) {
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
  diags.error(e.loc,
              "expected a size (an integer, a dim name or an "
              "arithmetic expression of them)",
              e.length);
  return std::nullopt;
}

std::optional<Operand> FunctionChecker::single(unsigned id) {
  Operand o;
  o.values.push_back(id);
  return o;
}

unsigned FunctionChecker::materialize(const Operand &lit, DType dtype,
                                      const Expr &at) {
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

std::optional<Operand> FunctionChecker::eval(const Expr &e) {
  switch (e.kind) {
  case Expr::Kind::Name: {
    auto it = vars.find(e.text);
    if (it != vars.end())
      return single(it->second);
    if (dimNames.count(e.text) || out.ctx.env.count(e.text))
      diags.error(e.loc, "'" + e.text + "' is a dim, not a tensor", e.length);
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

std::optional<Operand> FunctionChecker::unary(OpKind kind, const Expr &at,
                                              const Expr &arg, unsigned id) {
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

std::optional<Operand> FunctionChecker::binary(const Expr &e) {
  if (e.text == "@")
    return matmul(e);
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
    unsigned index = shape.error().index == 0 ? 0 : 1;
    const Expr &culprit = *e.args[index];
    diags.error(culprit.loc, shape.error().message, culprit.length);
    noteBroadcastFix(culprit, typeOf(index == 0 ? lhs : rhs).shape,
                     typeOf(index == 0 ? rhs : lhs).shape);
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

std::optional<Operand> FunctionChecker::matmul(const Expr &e) {
  // ein names the axes a product contracts, so `@` is an error that gives
  // the einsum to write, with the operands' own axis names.
  auto l = eval(*e.args[0]);
  if (!l)
    return std::nullopt;
  auto r = eval(*e.args[1]);
  if (!r)
    return std::nullopt;
  std::optional<std::string> pattern;
  auto isTensor = [&](const Operand &o) {
    return !o.isLiteral && o.values.size() == 1 &&
           !out.values[o.values[0]].isPackedShapes;
  };
  if (isTensor(*l) && isTensor(*r))
    pattern = matmulEinsumPattern(out.ctx.expand(typeOf(l->values[0]).shape),
                                  out.ctx.expand(typeOf(r->values[0]).shape));
  std::string call =
      pattern ? fmt::format("einsum({}, {}, \"{}\")", exprToString(*e.args[0]),
                            exprToString(*e.args[1]), *pattern)
              : std::string("einsum(a, b, \"n k, k m -> n m\")");
  diags.error(e.loc,
              "ein has no '@' (matrix product): einsum names the axes it "
              "contracts; write " +
                  call,
              e.length);
  return std::nullopt;
}

void FunctionChecker::noteBroadcastFix(const Expr &culprit,
                                       const Shape &culpritShape,
                                       const Shape &otherShape) {
  Shape small = out.ctx.expand(culpritShape), big = out.ctx.expand(otherShape);
  if (small.size() >= big.size())
    return;
  // Two different alignments by name: the broadcast was ambiguous.
  auto fixes = unitAxisRearrangements(small, big);
  if (fixes.size() != 2)
    return;
  std::string operand = exprToString(culprit);
  if (culprit.kind == Expr::Kind::Binary) // (x + y) -> x + y
    operand = operand.substr(1, operand.size() - 2);
  diags.note(culprit.loc,
             fmt::format("say which dims of \"{}\" it matches by giving it "
                         "that rank, e.g. rearrange({}, \"{}\") or "
                         "rearrange({}, \"{}\")",
                         shapeStr(big), operand, fixes[0], operand, fixes[1]),
             culprit.length);
}

std::optional<Operand> FunctionChecker::call(const Expr &e) {
  static const std::map<std::string, OpKind> unaryFns = {
      {"exp", OpKind::Exp},     {"log", OpKind::Log},   {"sqrt", OpKind::Sqrt},
      {"rsqrt", OpKind::Rsqrt}, {"relu", OpKind::Relu}, {"tanh", OpKind::Tanh}};
  const std::string &callee = e.text;
  auto noKeywords = [&]() {
    if (e.keywords.empty())
      return true;
    diags.error(e.keywords[0].loc,
                callee + " takes no keyword argument '" + e.keywords[0].name +
                    "'",
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

std::optional<Operand> FunctionChecker::astype(const Expr &e) {
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

} // namespace ein::sema
