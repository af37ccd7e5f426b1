// The rules of pack (and cat, pack returning the tensor alone) and unpack:
// the checker's calls, the builder's bodies, the cost and the gradient.
#include "../BuildErrors.h"
#include "../Differentiator.h"
#include "../FunctionChecker.h"
#include "../LayoutInference.h"
#include "ein/Sema/OpCost.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <sstream>

namespace ein::sema {

// --- Checker ---

namespace {

/// cat's pattern with its `...` written out as fresh names for the dims
/// the inputs have beyond the named ones and the `*` one; nullopt when
/// there is no `...` to write out, or after an error.
std::optional<std::string> packCatEllipsis(FunctionChecker &checker,
                                           const Expr &patExpr,
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
    Shape shape = checker.function().ctx.expand(shapes[i]);
    for (const Dim &d : shape)
      if (d.isPack()) {
        checker.diagnostics().error(
            patExpr.loc,
            fmt::format("cat with '...' needs inputs of known rank; "
                        "input {} has the variadic *{}",
                        i + 1, d.pack),
            patExpr.length);
        return std::nullopt;
      }
    if (rank && *rank != shape.size()) {
      checker.diagnostics().error(
          patExpr.loc,
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
    checker.diagnostics().error(
        patExpr.loc,
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

/// pack([x1, ...], pattern); `cat` is pack returning the tensor alone.
std::optional<Operand> checkPackCall(FunctionChecker &checker, const Expr &e,
                                     bool cat) {
  const char *name = cat ? "cat" : "pack";
  if (e.args.size() != 2 || e.args[0]->kind != Expr::Kind::List) {
    checker.diagnostics().error(
        e.loc, fmt::format("{} expects ([tensor, ...], pattern)", name),
        e.length);
    return std::nullopt;
  }
  const Expr *patExpr =
      checker.patternArg(e, 1, "a pattern string such as \"b * c\"");
  if (!patExpr)
    return std::nullopt;
  std::vector<unsigned> xs;
  std::vector<Shape> shapes;
  auto inputs = [&]() {
    for (auto &item : e.args[0]->args) {
      auto x = checker.tensorOf(*item);
      if (!x)
        return false;
      xs.push_back(*x);
      shapes.push_back(checker.typeOf(*x).shape);
    }
    if (cat && xs.empty()) {
      checker.diagnostics().error(
          e.args[0]->loc, "cat needs at least one tensor", e.args[0]->length);
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
    unsigned errorsBefore = checker.diagnostics().errorCount();
    if (auto spelled = packCatEllipsis(checker, *patExpr, shapes)) {
      written.kind = Expr::Kind::String;
      written.loc = patExpr->loc;
      written.length = patExpr->length;
      written.text = *spelled;
      patExpr = &written;
    } else if (checker.diagnostics().errorCount() != errorsBefore) {
      return std::nullopt;
    }
  }
  auto pattern = checker.parsePatternAt(*patExpr, PatternUse::Pack);
  if (!pattern)
    return std::nullopt;
  if (!cat && !inputs())
    return std::nullopt;
  // The parts' dtype, the first's (an empty pack refuses by its shapes).
  DType dtype = xs.empty() ? DType::F32 : checker.typeOf(xs[0]).dtype;
  ProgramBuilder b = checker.builder(e.loc);
  auto packed = cat ? b.cat(xs, *pattern, dtype) : b.pack(xs, *pattern, dtype);
  if (!packed) {
    checker.report(packed.error().error, e, patExpr);
    return std::nullopt;
  }
  if (cat) // the concatenation alone: no packed shapes to unpack with
    return checker.single(*packed);
  unsigned ps = checker.builder(e.loc).newValue(TensorType{});
  checker.function().values[ps].isPackedShapes = true;
  checker.function().values[ps].parts = checker.function().ops.back().packParts;
  Operand o;
  o.values = {*packed, ps};
  return o;
}

/// `[[h, d], [h, d]]`: the packed shapes of an unpack, written
/// checker.function().
std::optional<std::vector<Shape>> packLiteralShapes(FunctionChecker &checker,
                                                    const Expr &list) {
  // einops' unpack takes any list of shapes: [[h, d], [h, d], []] splits
  // the '*' dim into h*d, h*d and 1 elements without a pack before it.
  std::vector<Shape> parts;
  for (auto &item : list.args) {
    if (item->kind != Expr::Kind::List) {
      checker.diagnostics().error(
          item->loc,
          "each packed shape is a list of sizes, such as [h, d] "
          "(or [] for a part without dims)",
          item->length);
      return std::nullopt;
    }
    Shape part;
    for (auto &size : item->args) {
      auto s = checker.sizeOf(*size);
      if (!s)
        return std::nullopt;
      if (auto known =
              s->substitute(checker.function().ctx.env).constantValue();
          known && *known < 0) {
        checker.diagnostics().error(
            size->loc,
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
    checker.diagnostics().error(
        list.loc, "unpack needs at least one packed shape", list.length);
    return std::nullopt;
  }
  return parts;
}

/// unpack(x, packed shapes, pattern).
std::optional<Operand> checkUnpackCall(FunctionChecker &checker,
                                       const Expr &e) {
  if (e.args.size() != 3) {
    checker.diagnostics().error(
        e.loc, "unpack expects (tensor, packed_shapes, pattern)", e.length);
    return std::nullopt;
  }
  auto x = checker.tensorOf(*e.args[0]);
  if (!x)
    return std::nullopt;
  std::vector<Shape> parts;
  if (e.args[1]->kind == Expr::Kind::List) {
    auto literal = packLiteralShapes(checker, *e.args[1]);
    if (!literal)
      return std::nullopt;
    parts = std::move(*literal);
  } else {
    auto psv = checker.eval(*e.args[1]);
    if (!psv)
      return std::nullopt;
    if (psv->isLiteral || psv->values.size() != 1 ||
        !checker.function().values[psv->values[0]].isPackedShapes) {
      checker.diagnostics().error(
          e.args[1]->loc,
          "expected the packed shapes returned by pack, or a list of "
          "shapes such as [[h, d], [h, d]]",
          e.args[1]->length);
      return std::nullopt;
    }
    parts = checker.function().values[psv->values[0]].parts;
  }
  const Expr *patExpr =
      checker.patternArg(e, 2, "a pattern string such as \"b * c\"");
  if (!patExpr)
    return std::nullopt;
  auto pattern = checker.parsePatternAt(*patExpr, PatternUse::Pack);
  if (!pattern)
    return std::nullopt;
  auto unpacked = checker.builder(e.loc).unpack(*x, *pattern, parts);
  if (!unpacked) {
    checker.report(unpacked.error().error, e, patExpr);
    return std::nullopt;
  }
  Operand o;
  o.values = *unpacked;
  return o;
}

} // namespace

const std::vector<SurfaceCall> &surfaceCallsOfPack() {
  static const std::vector<SurfaceCall> calls = {
      {"pack", 4,
       [](FunctionChecker &checker, const Expr &call) {
         return checkPackCall(checker, call, /*cat=*/false);
       }},
      {"cat", 6, [](FunctionChecker &checker, const Expr &call) {
         return checkPackCall(checker, call, /*cat=*/true);
       }}};
  return calls;
}

const std::vector<SurfaceCall> &surfaceCallsOfUnpack() {
  static const std::vector<SurfaceCall> calls = {
      {"unpack", 5, [](FunctionChecker &checker, const Expr &call) {
         return checkUnpackCall(checker, call);
       }}};
  return calls;
}

} // namespace ein::sema

namespace ein {

// --- Builder ---

BuildOr<unsigned> ProgramBuilder::pack(const std::vector<unsigned> &parts,
                                       const Pattern &pattern, DType dtype) {
  return packAs("pack", parts, pattern, dtype);
}

BuildOr<unsigned> ProgramBuilder::cat(const std::vector<unsigned> &parts,
                                      const Pattern &pattern, DType dtype) {
  return packAs("cat", parts, pattern, dtype);
}

BuildOr<unsigned> ProgramBuilder::packAs(const char *name,
                                         const std::vector<unsigned> &parts,
                                         const Pattern &pattern, DType dtype) {
  std::vector<Shape> shapes;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (type(parts[i]).dtype != dtype)
      return build::mixedDTypes(
          fmt::format("{} needs tensors of one dtype", name), unsigned(i), name,
          pattern.text);
    shapes.push_back(type(parts[i]).shape);
  }
  auto packed = inferPack(fn.ctx, pattern, shapes);
  if (!packed)
    return build::failure(packed.error(), name, pattern.text);
  CheckedOp op;
  op.kind = OpKind::Pack;
  op.pattern = pattern.text;
  op.parsed = pattern;
  op.packParts = packed->parts;
  op.operands = parts;
  return append(std::move(op), TensorType{packed->packed, dtype});
}

BuildOr<std::vector<unsigned>>
ProgramBuilder::unpack(unsigned x, const Pattern &pattern,
                       const std::vector<Shape> &parts) {
  auto shapes = inferUnpack(fn.ctx, pattern, type(x).shape, parts);
  if (!shapes)
    return build::failure(shapes.error(), "unpack", pattern.text);
  CheckedOp op;
  op.kind = OpKind::Unpack;
  op.pattern = pattern.text;
  op.parsed = pattern;
  op.packParts = parts;
  op.operands = {x};
  for (const Shape &shape : *shapes)
    op.results.push_back(newValue(TensorType{shape, type(x).dtype}));
  std::vector<unsigned> results = op.results;
  appendOp(std::move(op));
  return results;
}

// The registry rows' builder rules (ProgramBuilder::build), of the pattern
// as parsed (PatternUse::Pack).
namespace {

Expected<Pattern> packPatternOf(const CheckedOp &attributes) {
  if (!attributes.parsed.text.empty())
    return attributes.parsed;
  return parsePattern(attributes.pattern, PatternUse::Pack);
}

} // namespace

BuildOr<std::vector<unsigned>>
buildOpOfPack(ProgramBuilder &builder, const CheckedOp &attributes,
              const std::vector<unsigned> &operands) {
  // The parts' dtype, or the one given for a pack of no parts.
  if (auto refused = build::missingAttributes(attributes, operands.size(), 0,
                                              operands.empty()))
    return *refused;
  auto pattern = packPatternOf(attributes);
  if (!pattern)
    return build::failure(pattern.error(), "pack", attributes.pattern);
  DType dtype = attributes.dtype.value_or(
      operands.empty() ? DType::F32 : builder.type(operands[0]).dtype);
  return asResults(builder.pack(operands, *pattern, dtype));
}

BuildOr<std::vector<unsigned>>
buildOpOfUnpack(ProgramBuilder &builder, const CheckedOp &attributes,
                const std::vector<unsigned> &operands) {
  if (auto refused =
          build::missingAttributes(attributes, operands.size(), 1, false))
    return *refused;
  auto pattern = packPatternOf(attributes);
  if (!pattern)
    return build::failure(pattern.error(), "unpack", attributes.pattern);
  return builder.unpack(operands[0], *pattern, attributes.packParts);
}

} // namespace ein

namespace ein {

// --- Cost ---

void costOfPack(const CostInput &, const Bindings &, CostCounts &) {
  // A copy of every part: read once, written once, no arithmetic.
}

void costOfUnpack(const CostInput &in, const Bindings &, CostCounts &counts) {
  // Parts of a pack along its leading axis are contiguous slices.
  counts.view = in.packAxesBefore == 0;
  if (counts.view)
    counts.read = counts.written = SizeExpr();
}

} // namespace ein

// --- Gradient ---
// pack and unpack are each other's gradient: a pack's is the unpack of its
// output's gradient into the parts, an unpack's the pack of its parts'
// gradients (zeros for a part that has none).
namespace ein {

bool gradientOfPack(Differentiator &d, const CheckedOp &op) {
  std::optional<unsigned> adj = d.adjointOf(op.results[0]);
  if (!adj)
    return true;
  unsigned dy = *adj;
  d.target(op, op.operands[0]);
  // dy has the pack's dtype (accumulate casts to it), its operands' one.
  auto results = d.built(d.build().unpack(dy, op.parsed, op.packParts));
  if (!results)
    return false;
  for (size_t i = 0; i < op.operands.size(); ++i)
    if (d.isActive(op.operands[i]))
      if (!d.accumulate(op.operands[i], (*results)[i]))
        return false;
  return true;
}

/// Called when any part has an adjoint (not only the first): each part
/// without one contributes zeros.
bool gradientOfUnpack(Differentiator &d, const CheckedOp &op) {
  unsigned x = op.operands[0];
  d.target(op, x);
  std::vector<unsigned> parts;
  for (unsigned r : op.results) {
    std::optional<unsigned> g = d.adjointOf(r);
    if (!g)
      g = d.zeros(r);
    if (!g)
      return false;
    parts.push_back(*g);
  }
  auto dx = d.pack(parts, op.parsed, d.dtypeOf(x));
  return dx && d.accumulate(x, *dx);
}

} // namespace ein

// --- Layout ---
namespace ein {

namespace {

/// pack and unpack keep the splits of the dims around `*`, merged over the
/// tensors; a tensor split in the `*` part is gathered first (its offsets
/// would be per block), as a var's operand.
bool layoutOfPacking(LayoutInference &li, const CheckedOp &op) {
  std::string axis = li.shardedAxisOf(op);
  if (axis.empty())
    return true;
  if (op.parsed.inputs.empty() || op.parsed.inputs[0].hasEllipsis())
    return li.unsupported(op, axis, "its pattern has '...'");
  const PatternSide &side = op.parsed.inputs[0];
  size_t before = side.starIndex();
  size_t after = side.groups.size() - before - 1;
  std::vector<std::string> around(before + after);
  // The operands split in the `*` part: (operand index, mesh axis).
  std::vector<std::pair<unsigned, std::string>> gathers;
  auto merge = [&](unsigned k) {
    unsigned value = op.operands[k];
    if (li.fn.values[value].isPackedShapes)
      return true;
    const ValueLayout &l = li.operand(value);
    if (l.dims.size() < before + after)
      return li.unsupported(op, axis, "its ranks do not line up");
    size_t middle = l.dims.size() - before - after;
    for (size_t i = 0; i < l.dims.size(); ++i) {
      if (l.dims[i].empty())
        continue;
      if (i >= before && i < before + middle) {
        // On an axis of one rank, nothing moves.
        if (li.axisSize(l.dims[i]) != std::optional<Int>(1))
          gathers.push_back({k, l.dims[i]});
        continue;
      }
      std::string &d = around[i < before ? i : i - middle];
      if (!d.empty() && d != l.dims[i])
        return li.fail(op, fmt::format("{}'s tensors split a dim along "
                                       "different mesh axes ({} and {}); "
                                       "reshard one of them",
                                       opKindName(op.kind), d, l.dims[i]));
      d = l.dims[i];
    }
    return true;
  };
  size_t inputs = op.kind == OpKind::Pack ? op.operands.size() : 1;
  for (unsigned k = 0; k < inputs; ++k)
    if (!merge(k))
      return false;
  for (unsigned r : op.results) {
    if (li.fn.values[r].isPackedShapes)
      continue;
    ValueLayout out = li.replicatedOf(r);
    if (out.dims.size() < before + after)
      return li.unsupported(op, axis, "its ranks do not line up");
    size_t middle = out.dims.size() - before - after;
    for (size_t i = 0; i < before; ++i)
      out.dims[i] = around[i];
    for (size_t i = 0; i < after; ++i)
      out.dims[before + middle + i] = around[before + i];
    for (auto &[k, a] : gathers)
      li.gatherOperandFirst(op, a, r, out,
                            fmt::format("{}'s * part is split on {}: {} is "
                                        "gathered first",
                                        opKindName(op.kind), a,
                                        op.kind == OpKind::Pack
                                            ? fmt::format("tensor {}", k + 1)
                                            : std::string("its operand")),
                            k);
    gathers.clear(); // recorded once, on the first result
    li.setResult(r, std::move(out));
  }
  return true;
}

} // namespace

bool layoutOfPack(LayoutInference &li, const CheckedOp &op) {
  return layoutOfPacking(li, op);
}

bool layoutOfUnpack(LayoutInference &li, const CheckedOp &op) {
  return layoutOfPacking(li, op);
}

} // namespace ein
