// The checker of expressions: names, literals, sizes, elementwise arithmetic
// and the dispatch of calls (an op's call to its family file's checker,
// through the registry's SurfaceCall rows).
#include "FunctionChecker.h"
#include "ein/Sema/Suggestions.h"
#include "ein/Support/Spelling.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

namespace ein::sema {

std::optional<unsigned> FunctionChecker::tensorOf(const Expr &e) {
  auto v = eval(e);
  if (!v)
    return std::nullopt;
  if (v->size && e.kind == Expr::Kind::Name) {
    diags.error(e.loc,
                "'" + e.text +
                    "' is a dim, not a tensor (as a value it is "
                    "a size: use it in arithmetic, or astype(" +
                    e.text + ", i64))",
                e.length);
    return std::nullopt;
  }
  if (v->deferredHasShape) {
    diags.error(e.loc,
                "this value has no dtype yet: it takes the dtype of the "
                "tensor it meets; convert it with astype(..., DTYPE)",
                e.length);
    return std::nullopt;
  }
  if (!isSingleTensor(*v)) {
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
    // In an inlined callee, its names stand for the caller's sizes.
    return inlined() ? renamedSize(SizeExpr::symbol(e.text))
                     : SizeExpr::symbol(e.text);
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
  case Expr::Kind::Float:
  case Expr::Kind::String:
  case Expr::Kind::Call:
  case Expr::Kind::Neg:
  case Expr::Kind::Not:
  case Expr::Kind::List:
  case Expr::Kind::Index:
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

std::optional<unsigned>
FunctionChecker::materialize(const Operand &lit, DType dtype, const Expr &at) {
  ProgramBuilder b = builder(at.loc);
  BuildOr<unsigned> id = lit.size
                             ? b.size(lit.size->substitute(out.ctx.env), dtype)
                             : b.literal(lit.literal, dtype);
  if (!id) {
    diags.error(at.loc, id.error().error.message, literalSpan(at));
    return std::nullopt;
  }
  return *id;
}

std::optional<unsigned> FunctionChecker::scalarAs(const Operand &v, DType dtype,
                                                  const Expr &at) {
  if (!v.isScalar())
    return v.values[0];
  if (!v.deferred)
    return materialize(v, dtype, at);
  std::optional<DType> saved = pendingDType;
  pendingDType = dtype;
  auto again = eval(*v.deferred);
  pendingDType = saved;
  if (!again)
    return std::nullopt;
  if (again->isScalar() || again->values.size() != 1) {
    diags.error(at.loc, "expected a tensor here", at.length);
    return std::nullopt;
  }
  return again->values[0];
}

std::optional<Operand> FunctionChecker::eval(const Expr &e) {
  switch (e.kind) {
  case Expr::Kind::Name: {
    auto it = vars.find(e.text);
    if (it != vars.end())
      return single(it->second);
    if (auto s = scalarVars.find(e.text); s != scalarVars.end())
      return s->second;
    if (isDimName(e.text) && !isAnonymousName(e.text)) {
      // A dim in an expression is its size (docs/language.md §6).
      Operand o;
      o.size = inlined() ? renamedSize(SizeExpr::symbol(e.text))
                         : SizeExpr::symbol(e.text);
      return o;
    }
    for (const Loop &loop : loops)
      if (bindsName(loop.stmt->body, e.text)) {
        diags.error(e.loc,
                    fmt::format("'{}' is bound later in the loop body; a "
                                "value first bound inside a loop does not "
                                "carry to the next iteration (unlike "
                                "Python): bind it before the loop",
                                e.text),
                    e.length);
        return std::nullopt;
      }
    if (auto local = loopLocals.find(e.text); local != loopLocals.end()) {
      // Python would see it: a value of the last iteration.
      diags.error(e.loc,
                  fmt::format("'{}' is bound inside the for loop on line {} "
                              "and is not visible after it (unlike Python): "
                              "to carry a value out of a loop, bind it before "
                              "the loop and reassign it inside",
                              e.text, local->second.line),
                  e.length);
      return std::nullopt;
    }
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
  case Expr::Kind::Index:
    return indexed(e);
  case Expr::Kind::Neg: {
    auto v = eval(*e.args[0]);
    if (!v)
      return std::nullopt;
    if (v->isLiteral) {
      v->literal = negateLiteral(v->literal);
      return v;
    }
    if (v->size) {
      v->size = SizeExpr::constant(0) - *v->size;
      return v;
    }
    return elementwise(elementwiseInfo(ElementwiseFn::Neg), e, {*v},
                       {e.args[0].get()});
  }
  case Expr::Kind::Not: {
    auto v = eval(*e.args[0]);
    if (!v)
      return std::nullopt;
    return elementwise(elementwiseInfo(ElementwiseFn::Not), e, {*v},
                       {e.args[0].get()});
  }
  case Expr::Kind::Binary:
    return binary(e);
  case Expr::Kind::Call: {
    auto result = call(e);
    if (result && !checkCompiledSizes(*result, e))
      return std::nullopt;
    return result;
  }
  }
  return std::nullopt;
}

bool FunctionChecker::checkCompiledSizes(const Operand &o, const Expr &e) {
  for (unsigned id : o.values) {
    if (out.values[id].isPackedShapes)
      continue;
    for (const Dim &d : typeOf(id).shape) {
      if (d.isPack())
        continue;
      if (auto v = d.size.constantValue(); v && *v > kMaxDimSize) {
        std::string size = toString(*v);
        std::string written = d.str();
        diags.error(e.loc,
                    "'" + e.text + "' makes a dim of size " + size +
                        (written == size ? "" : " (" + written + ")") +
                        "; compiled code takes sizes up to " + maxDimSizeText(),
                    e.length);
        return false;
      }
    }
  }
  return true;
}

std::optional<Operand>
FunctionChecker::elementwise(const ElementwiseInfo &info, const Expr &at,
                             std::vector<Operand> args,
                             const std::vector<const Expr *> &argExprs) {
  // Sizes stay exact integers under + - * // and unary minus, as in
  // Python's int arithmetic; they become tensors next to a tensor.
  bool allSizes = true, allNumbers = true, allScalars = true;
  for (const Operand &a : args) {
    allSizes &= a.size.has_value() ||
                (a.isLiteral && a.literal.isInt && a.literal.exact.has_value());
    allNumbers &= a.isLiteral;
    allScalars &= a.isScalar();
  }
  if (allSizes && !allNumbers) {
    auto sizeOfArg = [&](const Operand &a) {
      return a.size ? *a.size : SizeExpr::constant(*a.literal.exact);
    };
    std::optional<SizeExpr> folded;
    using F = ElementwiseFn;
    if (info.fn == F::Add)
      folded = sizeOfArg(args[0]) + sizeOfArg(args[1]);
    else if (info.fn == F::Sub)
      folded = sizeOfArg(args[0]) - sizeOfArg(args[1]);
    else if (info.fn == F::Mul)
      folded = sizeOfArg(args[0]) * sizeOfArg(args[1]);
    else if (info.fn == F::Neg)
      folded = SizeExpr::constant(0) - sizeOfArg(args[0]);
    else if (info.fn == F::FloorDiv) {
      // Python's floor division of ints: exact when it divides, folded when
      // both are known, else the floor quotient, computed at run time (no
      // divisibility check: a value is not a shape). A divisor of 0 is an
      // error when known; at run time it gives 0, as integer // does.
      SizeExpr num = sizeOfArg(args[0]), den = sizeOfArg(args[1]);
      auto n = num.substitute(out.ctx.env).constantValue();
      auto d = den.substitute(out.ctx.env).constantValue();
      if (d && *d == 0) {
        diags.error(at.loc, "division by zero in a size", at.length);
        return std::nullopt;
      }
      if (n && d) {
        Int q = *n / *d;
        if ((*n % *d != 0) && ((*n < 0) != (*d < 0)))
          q -= 1;
        folded = SizeExpr::constant(q);
      } else if (auto exact = num.divideExact(den)) {
        folded = *exact;
      } else {
        folded = SizeExpr::quotient(num, den);
      }
    }
    if (folded) {
      Operand o;
      o.size = *folded;
      return o;
    }
  }
  if (allNumbers && args.size() == 2) {
    // Fold number arithmetic at compile time, as Python would.
    static const std::map<ElementwiseFn, char> folds = {
        {ElementwiseFn::Add, '+'},
        {ElementwiseFn::Sub, '-'},
        {ElementwiseFn::Mul, '*'},
        {ElementwiseFn::Div, '/'},
        {ElementwiseFn::Pow, '^'}};
    if (auto it = folds.find(info.fn); it != folds.end()) {
      Expected<NumberLiteral> folded =
          foldLiterals(it->second, args[0].literal, args[1].literal);
      if (!folded) {
        diags.error(at.loc, folded.error().message, at.length);
        return std::nullopt;
      }
      Operand o;
      o.isLiteral = true;
      o.literal = *folded;
      return o;
    }
  }
  // The dtype every non-condition operand takes: the first tensor's.
  std::optional<DType> dtype;
  for (size_t i = 0; i < args.size(); ++i) {
    const Operand &a = args[i];
    if (a.isScalar())
      continue;
    if (!isSingleTensor(a)) {
      diags.error(argExprs[i]->loc, "expected a tensor here",
                  argExprs[i]->length);
      return std::nullopt;
    }
    if (!(info.firstIsCondition && i == 0) && !dtype)
      dtype = typeOf(a.values[0]).dtype;
  }
  if (!dtype && (allScalars || info.firstIsCondition) && !pendingDType) {
    // No tensor gives a dtype yet (numbers and sizes, or where's branches
    // beside a bool condition: where(allowed, 0.0, -1e9)): evaluated again
    // where one does.
    Operand o;
    o.deferred = &at;
    o.deferredHasShape =
        !allScalars || std::any_of(args.begin(), args.end(),
                                   [](auto &a) { return a.deferredHasShape; });
    return o;
  }
  if (!dtype) {
    if (!pendingDType) {
      const Expr &first = *argExprs[info.firstIsCondition ? 1 : 0];
      diags.error(first.loc, "expected a tensor here", first.length);
      return std::nullopt;
    }
    dtype = pendingDType;
  }
  unsigned errorsBefore = diags.errorCount();
  std::vector<unsigned> ids;
  for (size_t i = 0; i < args.size(); ++i) {
    const Operand &a = args[i];
    DType want = info.firstIsCondition && i == 0 ? DType::Bool : *dtype;
    if (!a.isScalar()) {
      ids.push_back(a.values[0]);
      continue;
    }
    auto id = scalarAs(a, want, *argExprs[i]);
    if (!id)
      return std::nullopt;
    ids.push_back(*id);
  }
  if (diags.errorCount() != errorsBefore)
    return std::nullopt;
  auto built = builder(at.loc).elementwise(info.fn, ids);
  if (built)
    return single(*built);
  // Under the operand at fault (its dtype, or its shape, with a note on
  // how to align it), or the whole call (operands of different dtypes).
  const ShapeError &why = built.error().error;
  if (why.anchor != ShapeError::Anchor::Operand || why.index >= ids.size()) {
    diags.error(at.loc, why.message, at.length);
    return std::nullopt;
  }
  size_t culprit = why.index;
  const Expr &e = *argExprs[culprit];
  diags.error(e.loc, why.message, e.length);
  if (built.error().rule == BuildError::Rule::Shape) {
    // The operand that did not join (operand 0 when the first pair failed
    // on it), against the join of those before it.
    size_t failed = culprit == 0 ? 1 : culprit;
    Shape other = typeOf(ids[failed]).shape;
    if (culprit == failed) {
      InferContext scratch = out.ctx;
      other = typeOf(ids[0]).shape;
      for (size_t j = 1; j < failed; ++j)
        if (auto joined = inferBroadcast(scratch, other, typeOf(ids[j]).shape))
          other = *joined;
    }
    noteBroadcastFix(e, typeOf(ids[culprit]).shape, other);
  }
  return std::nullopt;
}

std::optional<Operand> FunctionChecker::binary(const Expr &e) {
  if (e.text == "@")
    return matmul(e);
  const ElementwiseInfo *info = findElementwiseOperator(e.text, 2);
  auto l = eval(*e.args[0]);
  if (!l)
    return std::nullopt;
  auto r = eval(*e.args[1]);
  if (!r)
    return std::nullopt;
  for (auto *side : {&*l, &*r})
    if (!side->isScalar() && !isSingleTensor(*side)) {
      diags.error(e.loc, "arithmetic needs tensors or numbers", e.length);
      return std::nullopt;
    }
  return elementwise(*info, e, {*l, *r}, {e.args[0].get(), e.args[1].get()});
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
  if (isSingleTensor(*l) && isSingleTensor(*r))
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
  const ElementwiseInfo *info = nullptr;
  if (callee == "gelu" && e.keywords.size() == 1 &&
      e.keywords[0].name == "approximate") {
    // torch.nn.functional.gelu(x, approximate="tanh")
    const Expr &v = *e.keywords[0].value;
    if (v.kind != Expr::Kind::String ||
        (v.text != "tanh" && v.text != "none")) {
      diags.error(v.loc, "approximate= is \"tanh\" or \"none\"", v.length);
      return std::nullopt;
    }
    info = findElementwise(v.text == "tanh" ? "gelu_tanh" : "gelu");
  } else if (const ElementwiseInfo *named = findElementwise(callee);
             named && named->symbol.empty()) {
    if (!noKeywords())
      return std::nullopt;
    info = named;
  }
  if (info) {
    if (e.args.size() != info->arity) {
      diags.error(
          e.loc,
          info->arity == 1
              ? fmt::format("{} takes exactly one tensor", callee)
              : fmt::format("{} takes {} arguments", callee, info->arity),
          e.length);
      return std::nullopt;
    }
    std::vector<Operand> args;
    std::vector<const Expr *> exprs;
    for (auto &a : e.args) {
      auto v = eval(*a);
      if (!v)
        return std::nullopt;
      args.push_back(*v);
      exprs.push_back(a.get());
    }
    return elementwise(*info, e, std::move(args), exprs);
  }
  if (callee == "grad")
    return grad(e);
  // An op's call: its checker sits in its family file (SurfaceCall).
  if (const SurfaceCall *op = findSurfaceCall(callee))
    return op->check(*this, e);
  if (auto it = scope.functions.find({fn.loc.file, callee});
      it != scope.functions.end())
    return callFunction(e, *it->second);
  diags.error(e.loc,
              fmt::format("unknown function '{}'; expected one of {}{}", callee,
                          fmt::join(builtinFunctionNames(), ", "),
                          closeFunctionNames(callee)),
              e.length);
  return std::nullopt;
}

namespace {

/// Every registry row's calls, in the order of the unknown-function error.
std::vector<const SurfaceCall *> surfaceCallsListed() {
  std::vector<const SurfaceCall *> calls;
#define EIN_OP(Kind, Name, OpClass)                                            \
  for (const SurfaceCall &call : surfaceCallsOf##Kind())                       \
    calls.push_back(&call);
#include "ein/Sema/Ops.def"
  std::stable_sort(calls.begin(), calls.end(),
                   [](const SurfaceCall *a, const SurfaceCall *b) {
                     return a->listedAt < b->listedAt;
                   });
  return calls;
}

} // namespace

const SurfaceCall *findSurfaceCall(const std::string &name) {
  static const std::map<std::string, const SurfaceCall *> byName = [] {
    std::map<std::string, const SurfaceCall *> calls;
    for (const SurfaceCall *call : surfaceCallsListed())
      calls.emplace(call->name, call);
    return calls;
  }();
  auto it = byName.find(name);
  return it == byName.end() ? nullptr : it->second;
}

const std::vector<std::string> &builtinFunctionNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> known;
    for (const SurfaceCall *call : surfaceCallsListed())
      known.push_back(call->name);
    known.push_back("grad");
    for (const ElementwiseInfo &info : elementwiseTable())
      if (info.symbol.empty())
        known.push_back(std::string(info.name));
    return known;
  }();
  return names;
}

std::string FunctionChecker::closeFunctionNames(const std::string &name) const {
  // Levenshtein distance, for names a typo away.
  auto distance = [](const std::string &a, const std::string &b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j)
      row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      size_t diagonal = row[0];
      row[0] = i;
      for (size_t j = 1; j <= b.size(); ++j) {
        size_t above = row[j];
        row[j] = std::min(
            {row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
        diagonal = above;
      }
    }
    return row[b.size()];
  };
  std::string close;
  for (auto &[key, function] : scope.functions)
    if (key.first == fn.loc.file && distance(key.second, name) <= 2)
      close += (close.empty() ? "" : ", ") + ("'" + key.second + "'");
  return close.empty() ? "" : ", or a function of this file such as " + close;
}

} // namespace ein::sema
