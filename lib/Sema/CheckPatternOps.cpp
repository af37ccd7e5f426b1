// The checker of the pattern operations: rearrange, reduce, repeat, einsum,
// pack and unpack.
#include "FunctionChecker.h"
#include "ein/Sema/Suggestions.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <sstream>

namespace ein::sema {

const Expr *FunctionChecker::patternArg(const Expr &e, size_t index,
                                        const char *what) {
  if (e.args.size() <= index || e.args[index]->kind != Expr::Kind::String) {
    const Expr *at = e.args.size() > index ? e.args[index].get() : &e;
    diags.error(at->loc, e.text + " expects " + what, at->length);
    return nullptr;
  }
  return e.args[index].get();
}

std::optional<Pattern> FunctionChecker::parsePatternAt(const Expr &str,
                                                       PatternUse use) {
  auto p = parsePattern(str.text, use);
  if (!p) {
    diags.error(str.loc.advanced(1 + p.error().offset), p.error().message,
                p.error().length);
    return std::nullopt;
  }
  return *p;
}

std::optional<FunctionChecker::AccArg> FunctionChecker::accArg(const Expr &e,
                                                               OpKind kind) {
  AccArg acc;
  for (auto &k : e.keywords) {
    if (k.name != "acc")
      continue;
    if (kind != OpKind::Einsum && kind != OpKind::Reduce) {
      diags.error(k.loc,
                  "acc= only applies to einsum and reduce (it sets the "
                  "accumulation and result dtype)",
                  3);
      return std::nullopt;
    }
    std::optional<DType> dtype;
    if (k.value->kind == Expr::Kind::Name)
      dtype = parseDType(k.value->text);
    if (!dtype) {
      diags.error(k.value->loc,
                  "acc= expects a dtype (" + std::string(kDTypeList) + ")",
                  k.value->length);
      return std::nullopt;
    }
    acc = AccArg{dtype, k.value.get()};
  }
  return acc;
}

void FunctionChecker::reportBuild(const BuildError &error, const Expr &call,
                                  const Expr *patternExpr, const AccArg &acc,
                                  const Expr *reduction) {
  const Expr *at = nullptr;
  switch (error.rule) {
  case BuildError::Rule::AccDType:
    at = acc.at;
    break;
  case BuildError::Rule::OperandDType:
    at = reduction;
    break;
  case BuildError::Rule::Shape:
    break;
  }
  if (at)
    diags.error(at->loc, error.error.message, at->length);
  else
    report(error.error, call, patternExpr);
}

std::optional<std::vector<SizeArg>> FunctionChecker::sizeArgs(const Expr &e) {
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

void FunctionChecker::noteSpacedPattern(const BuildError &error,
                                        const Expr &patExpr) {
  if (!error.spaced.empty())
    diags.note(patExpr.loc, spacedPatternNote(error.spaced), patExpr.length);
}

std::optional<Operand> FunctionChecker::transform(const Expr &e) {
  const std::string &callee = e.text;
  bool isReduce = callee == "reduce";
  size_t expectedArgs = isReduce ? 3 : 2;
  if (e.args.size() != expectedArgs) {
    diags.error(e.loc,
                isReduce
                    ? "reduce expects (tensor, pattern, reduction, **sizes)"
                    : callee + " expects (tensor, pattern, **sizes)",
                e.length);
    return std::nullopt;
  }
  auto x = tensorOf(*e.args[0]);
  if (!x)
    return std::nullopt;
  const Expr *patExpr =
      patternArg(e, 1, "a pattern string as its second argument");
  if (!patExpr)
    return std::nullopt;
  PatternUse use = isReduce             ? PatternUse::Reduce
                   : callee == "repeat" ? PatternUse::Repeat
                                        : PatternUse::Rearrange;
  auto pattern = parsePatternAt(*patExpr, use);
  if (!pattern)
    return std::nullopt;
  OpKind kind = isReduce             ? OpKind::Reduce
                : callee == "repeat" ? OpKind::Repeat
                                     : OpKind::Rearrange;
  ReduceKind reduction = ReduceKind::Sum;
  if (isReduce) {
    const Expr &red = *e.args[2];
    std::optional<ReduceKind> kind;
    if (red.kind == Expr::Kind::String)
      kind = parseReduceKind(red.text);
    if (!kind) {
      std::string what = red.kind == Expr::Kind::String
                             ? "unknown reduction " + exprToString(red)
                             : "the reduction must be a string such as "
                               "\"sum\", not " +
                                   exprToString(red);
      // The kinds in table order (ReduceKinds.def): "sum", ... or "var".
      std::vector<std::string> names;
#define EIN_REDUCE_KIND(Kind, name, ...) names.push_back("\"" #name "\"");
#include "ein/Shape/ReduceKinds.def"
      std::string expected = names.front();
      for (size_t i = 1; i < names.size(); ++i)
        expected += (i + 1 == names.size() ? " or " : ", ") + names[i];
      diags.error(red.loc, what + "; expected " + expected, red.length);
      return std::nullopt;
    }
    reduction = *kind;
    // any/all of numbers reduce their truth, `x != 0` (as numpy, torch and
    // einops: NaN is true, -0.0 false), which is astype(x, bool).
    if (*kind == ReduceKind::Any || *kind == ReduceKind::All)
      x = builder(e.loc).cast(*x, DType::Bool);
  }
  auto acc = accArg(e, kind);
  if (!acc)
    return std::nullopt;
  auto sizes = sizeArgs(e);
  if (!sizes)
    return std::nullopt;
  auto built = builder(e.loc).transform(kind, *x, *pattern, *sizes, reduction,
                                        acc->dtype);
  if (!built) {
    reportBuild(built.error(), e, patExpr, *acc,
                isReduce ? e.args[2].get() : nullptr);
    noteSpacedPattern(built.error(), *patExpr);
    return std::nullopt;
  }
  if (isReduce) {
    const TransformInfo &info = *out.ops.back().transform;
    size_t checksBefore = out.ctx.constraints.size();
    if (auto ok = requireNonEmptyReduction(out.ctx, reduction, *pattern, info);
        !ok) {
      report(ok.error(), e, patExpr);
      return std::nullopt;
    }
    // The run-time message names the reduce by its place in the file.
    for (size_t i = checksBefore; i < out.ctx.constraints.size(); ++i)
      out.ctx.constraints[i].reason =
          "reduce(..., \"" + patExpr->text + "\", \"" +
          reduceKindName(reduction) + "\") at line " +
          std::to_string(e.loc.line) + ": " + out.ctx.constraints[i].reason;
  }
  return single(*built);
}

std::optional<Operand> FunctionChecker::einsum(const Expr &e) {
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
  for (size_t i = 0; i + 1 < e.args.size(); ++i) {
    auto x = tensorOf(*e.args[i]);
    if (!x)
      return std::nullopt;
    xs.push_back(*x);
  }
  auto acc = accArg(e, OpKind::Einsum);
  if (!acc)
    return std::nullopt;
  auto sizes = sizeArgs(e);
  if (!sizes)
    return std::nullopt;
  auto built = builder(e.loc).einsum(xs, *pattern, *sizes, acc->dtype);
  if (!built) {
    reportBuild(built.error(), e, patExpr, *acc);
    noteSpacedPattern(built.error(), *patExpr);
    return std::nullopt;
  }
  for (const LoneAxis &lone : loneAxes(*pattern)) {
    std::string message = fmt::format(
        "axis '{}' appears only in the {} operand and not in the output: "
        "einsum sums it on its own",
        lone.axis->name, ordinal(lone.operand + 1));
    if (lone.suggestion)
      message += fmt::format("; did you mean '{}'?", *lone.suggestion);
    diags.warning(WarningKind::LoneAxis,
                  patExpr->loc.advanced(1 + lone.axis->offset), message,
                  lone.axis->length);
  }
  return single(*built);
}

std::optional<std::string>
FunctionChecker::catEllipsis(const Expr &patExpr,
                             const std::vector<Shape> &shapes) {
  std::istringstream words(patExpr.text);
  std::vector<std::string> tokens;
  for (std::string w; words >> w;)
    tokens.push_back(w);
  size_t named = 0, ellipses = 0;
  for (const std::string &t : tokens) {
    if (t == "...")
      ++ellipses;
    else if (t != "*")
      ++named;
    if (t != "..." && t != "*" && !isValidAxisName(t))
      return std::nullopt; // not a plain list of names: the parser says why
  }
  if (ellipses != 1)
    return std::nullopt;
  std::optional<size_t> rank;
  for (size_t i = 0; i < shapes.size(); ++i) {
    Shape shape = out.ctx.expand(shapes[i]);
    for (const Dim &d : shape)
      if (d.isPack()) {
        diags.error(patExpr.loc,
                    fmt::format("cat with '...' needs inputs of known rank; "
                                "input {} has the variadic *{}",
                                i + 1, d.pack),
                    patExpr.length);
        return std::nullopt;
      }
    if (rank && *rank != shape.size()) {
      diags.error(patExpr.loc,
                  fmt::format("cat with '...' joins tensors of one rank "
                              "along one dim, but input 1 has rank {} and "
                              "input {} rank {}",
                              *rank, i + 1, shape.size()),
                  patExpr.length);
      return std::nullopt;
    }
    rank = shape.size();
  }
  if (!rank || *rank < named + 1) {
    diags.error(patExpr.loc,
                fmt::format("cat pattern '{}' needs at least {} dims, but the "
                            "inputs have {}",
                            patExpr.text, named + 1, rank.value_or(0)),
                patExpr.length);
    return std::nullopt;
  }
  std::vector<std::string> fresh;
  for (size_t k = 0; fresh.size() < *rank - named - 1; ++k) {
    std::string n = fmt::format("cat{}", k);
    if (std::find(tokens.begin(), tokens.end(), n) == tokens.end())
      fresh.push_back(n);
  }
  std::string text;
  for (const std::string &t : tokens) {
    std::string word =
        t == "..." ? fmt::format("{}", fmt::join(fresh, " ")) : t;
    if (!word.empty())
      text += (text.empty() ? "" : " ") + word;
  }
  return text;
}

std::optional<Operand> FunctionChecker::pack(const Expr &e, bool cat) {
  const char *name = cat ? "cat" : "pack";
  if (e.args.size() != 2 || e.args[0]->kind != Expr::Kind::List) {
    diags.error(e.loc, fmt::format("{} expects ([tensor, ...], pattern)", name),
                e.length);
    return std::nullopt;
  }
  const Expr *patExpr = patternArg(e, 1, "a pattern string such as \"b * c\"");
  if (!patExpr)
    return std::nullopt;
  std::vector<unsigned> xs;
  std::vector<Shape> shapes;
  auto inputs = [&]() {
    for (auto &item : e.args[0]->args) {
      auto x = tensorOf(*item);
      if (!x)
        return false;
      xs.push_back(*x);
      shapes.push_back(typeOf(*x).shape);
    }
    if (cat && xs.empty()) {
      diags.error(e.args[0]->loc, "cat needs at least one tensor",
                  e.args[0]->length);
      return false;
    }
    return true;
  };
  // cat's `...` (`"... s *"`): the dims its inputs have beyond the names and
  // the one dim they are concatenated along, written out as fresh names.
  Expr written;
  if (cat) {
    if (!inputs())
      return std::nullopt;
    unsigned errorsBefore = diags.errorCount();
    if (auto spelled = catEllipsis(*patExpr, shapes)) {
      written.kind = Expr::Kind::String;
      written.loc = patExpr->loc;
      written.length = patExpr->length;
      written.text = *spelled;
      patExpr = &written;
    } else if (diags.errorCount() != errorsBefore) {
      return std::nullopt;
    }
  }
  auto pattern = parsePatternAt(*patExpr, PatternUse::Pack);
  if (!pattern)
    return std::nullopt;
  if (!cat && !inputs())
    return std::nullopt;
  // The parts' dtype, the first's (an empty pack refuses by its shapes).
  DType dtype = xs.empty() ? DType::F32 : typeOf(xs[0]).dtype;
  ProgramBuilder b = builder(e.loc);
  auto packed = cat ? b.cat(xs, *pattern, dtype) : b.pack(xs, *pattern, dtype);
  if (!packed) {
    report(packed.error().error, e, patExpr);
    return std::nullopt;
  }
  if (cat) // the concatenation alone: no packed shapes to unpack with
    return single(*packed);
  unsigned ps = builder(e.loc).newValue(TensorType{});
  out.values[ps].isPackedShapes = true;
  out.values[ps].parts = out.ops.back().packParts;
  Operand o;
  o.values = {*packed, ps};
  return o;
}

std::optional<std::vector<Shape>>
FunctionChecker::literalPackedShapes(const Expr &list) {
  // einops' unpack takes any list of shapes: [[h, d], [h, d], []] splits
  // the '*' dim into h*d, h*d and 1 elements without a pack before it.
  std::vector<Shape> parts;
  for (auto &item : list.args) {
    if (item->kind != Expr::Kind::List) {
      diags.error(item->loc,
                  "each packed shape is a list of sizes, such as [h, d] "
                  "(or [] for a part without dims)",
                  item->length);
      return std::nullopt;
    }
    Shape part;
    for (auto &size : item->args) {
      auto s = sizeOf(*size);
      if (!s)
        return std::nullopt;
      if (auto known = s->substitute(out.ctx.env).constantValue();
          known && *known < 0) {
        diags.error(size->loc,
                    fmt::format("a packed shape has a negative size ({})",
                                static_cast<long long>(*known)),
                    size->length);
        return std::nullopt;
      }
      part.push_back(Dim::ofSize(*s));
    }
    parts.push_back(std::move(part));
  }
  if (parts.empty()) {
    diags.error(list.loc, "unpack needs at least one packed shape",
                list.length);
    return std::nullopt;
  }
  return parts;
}

std::optional<Operand> FunctionChecker::unpack(const Expr &e) {
  if (e.args.size() != 3) {
    diags.error(e.loc, "unpack expects (tensor, packed_shapes, pattern)",
                e.length);
    return std::nullopt;
  }
  auto x = tensorOf(*e.args[0]);
  if (!x)
    return std::nullopt;
  std::vector<Shape> parts;
  if (e.args[1]->kind == Expr::Kind::List) {
    auto literal = literalPackedShapes(*e.args[1]);
    if (!literal)
      return std::nullopt;
    parts = std::move(*literal);
  } else {
    auto psv = eval(*e.args[1]);
    if (!psv)
      return std::nullopt;
    if (psv->isLiteral || psv->values.size() != 1 ||
        !out.values[psv->values[0]].isPackedShapes) {
      diags.error(e.args[1]->loc,
                  "expected the packed shapes returned by pack, or a list of "
                  "shapes such as [[h, d], [h, d]]",
                  e.args[1]->length);
      return std::nullopt;
    }
    parts = out.values[psv->values[0]].parts;
  }
  const Expr *patExpr = patternArg(e, 2, "a pattern string such as \"b * c\"");
  if (!patExpr)
    return std::nullopt;
  auto pattern = parsePatternAt(*patExpr, PatternUse::Pack);
  if (!pattern)
    return std::nullopt;
  auto unpacked = builder(e.loc).unpack(*x, *pattern, parts);
  if (!unpacked) {
    report(unpacked.error().error, e, patExpr);
    return std::nullopt;
  }
  Operand o;
  o.values = *unpacked;
  return o;
}

} // namespace ein::sema
