// The builder of checked programs: each op through the shape rules
// (Shape/Infer.h) and the dtype table (Shape/DTypeRules.h), as the checker
// applies them to written ops.
#include "ein/Sema/ProgramBuilder.h"
#include "ein/Sema/Suggestions.h"

#include "ein/Shape/DTypeRules.h"
#include "ein/Syntax/Pattern.h"

#include <fmt/format.h>

#include <cmath>

namespace ein {

std::string BuildError::str() const {
  if (pattern.empty())
    return fmt::format("{}: {}", op, error.message);
  return fmt::format("{}(\"{}\"): {}", op, pattern, error.message);
}

std::string BuildError::caret() const {
  if (error.anchor != ShapeError::Anchor::Pattern || pattern.empty())
    return "";
  unsigned length = error.length ? error.length : 1;
  return fmt::format("    {}\n    {}^{}", pattern,
                     std::string(error.offset, ' '),
                     std::string(length - 1, '~'));
}

namespace {

BuildError failure(ShapeError error, std::string op, std::string pattern) {
  return BuildError{std::move(error), std::move(op), std::move(pattern)};
}

/// `error` (the shape rule's, on `pattern`) with the numpy-spaced pattern
/// when that one passes `builds`, tried on a scratch copy of `ctx` so that
/// the attempt binds nothing.
template <typename Builds>
BuildError withSpacedHint(BuildError error, const Pattern &pattern,
                          PatternUse use, const InferContext &ctx,
                          Builds builds) {
  auto spaced = spacedPattern(pattern);
  if (!spaced)
    return error;
  auto respaced = parsePattern(*spaced, use);
  InferContext scratch = ctx;
  if (respaced && builds(scratch, *respaced))
    error.spaced = *spaced;
  return error;
}

/// The table's verdict on operand `i` of `op`, as a build error.
std::optional<BuildError> dtypeError(const DTypeRule &rule, DType dtype,
                                     unsigned i, const std::string &op,
                                     const std::string &pattern) {
  if (auto why = operandDTypeError(rule, dtype)) {
    BuildError error = failure(ShapeError::atOperand(*why, i), op, pattern);
    error.rule = BuildError::Rule::OperandDType;
    return error;
  }
  return std::nullopt;
}

/// The table's verdict on `acc=` for `op`, as a build error.
std::optional<BuildError> accError(const DTypeRule &rule,
                                   std::optional<DType> acc,
                                   const std::string &op,
                                   const std::string &pattern) {
  if (!acc)
    return std::nullopt;
  if (auto why = accDTypeError(rule, *acc)) {
    BuildError error = failure(ShapeError::atOp(*why), op, pattern);
    error.rule = BuildError::Rule::AccDType;
    return error;
  }
  return std::nullopt;
}

/// Operands that must share one dtype and do not: `op`'s message, at the
/// operand that differs from the first.
BuildError mixedDTypes(std::string message, unsigned operand,
                       const std::string &op, const std::string &pattern) {
  BuildError error =
      failure(ShapeError::atOperand(std::move(message), operand), op, pattern);
  error.rule = BuildError::Rule::OperandDType;
  return error;
}

/// transform() builds rearrange, repeat and reduce; another kind is refused
/// by name rather than built as a rearrange.
std::optional<BuildError> notATransform(OpKind kind,
                                        const std::string &pattern) {
  if (kind == OpKind::Rearrange || kind == OpKind::Repeat ||
      kind == OpKind::Reduce)
    return std::nullopt;
  return failure(ShapeError::atOp(fmt::format("transform builds rearrange, "
                                              "repeat or reduce, not {}",
                                              opKindName(kind))),
                 opKindName(kind), pattern);
}

} // namespace

unsigned ProgramBuilder::newValue(TensorType type) {
  fn.values.push_back(Value{std::move(type)});
  return static_cast<unsigned>(fn.values.size() - 1);
}

void ProgramBuilder::appendOp(CheckedOp op) {
  op.loc = at.loc;
  op.callSite = at.callSite;
  op.phase = at.phase;
  op.gradOf = at.gradOf;
  fn.ops.push_back(std::move(op));
}

unsigned ProgramBuilder::append(CheckedOp op, TensorType result) {
  unsigned id = newValue(std::move(result));
  op.results.push_back(id);
  appendOp(std::move(op));
  return id;
}

unsigned ProgramBuilder::param(TensorType type, std::string name) {
  unsigned id = newValue(std::move(type));
  fn.values[id].name = std::move(name);
  fn.params.push_back(id);
  return id;
}

void ProgramBuilder::ret(const std::vector<unsigned> &values) {
  for (unsigned v : values) {
    fn.returns.push_back(v);
    fn.results.push_back(type(v));
  }
}

unsigned ProgramBuilder::constant(double value, DType dtype) {
  CheckedOp op;
  op.kind = OpKind::Constant;
  op.constant = value;
  op.constantIsInt = std::trunc(value) == value;
  // MLIRGen carries an integer dtype's value exactly, from constantInt.
  if (!isFloat(dtype) && dtype != DType::Bool)
    op.constantInt = static_cast<int64_t>(value);
  return append(std::move(op), TensorType{{}, dtype});
}

BuildOr<unsigned> ProgramBuilder::literal(const NumberLiteral &value,
                                          DType dtype) {
  if (auto why = literalDTypeError(value, dtype))
    return failure(ShapeError::atOp(*why), "constant", "");
  CheckedOp op;
  op.kind = OpKind::Constant;
  op.constant = value.value;
  op.constantIsInt = value.isInt;
  if (value.isInt && value.exact && !isFloat(dtype) && dtype != DType::Bool)
    op.constantInt = static_cast<int64_t>(*value.exact);
  return append(std::move(op), TensorType{{}, dtype});
}

BuildOr<unsigned> ProgramBuilder::size(const SizeExpr &n, DType dtype) {
  if (auto known = n.constantValue()) {
    NumberLiteral number;
    number.isInt = true;
    number.exact = *known;
    number.value = static_cast<double>(*known);
    return literal(number, dtype);
  }
  if (dtype == DType::Bool)
    return failure(ShapeError::atOp("a size cannot combine with a bool "
                                    "tensor; compare it (x < n) or convert "
                                    "with astype"),
                   "size", "");
  CheckedOp op;
  op.kind = OpKind::Size;
  op.sizeValue = n;
  return append(std::move(op), TensorType{{}, dtype});
}

BuildOr<unsigned> ProgramBuilder::arange(const SizeExpr &n, DType dtype) {
  if (dtype == DType::Bool)
    return failure(ShapeError::atKwarg("arange counts in a number dtype, not "
                                       "bool; compare the result instead "
                                       "(arange(s) < n)",
                                       0),
                   "arange", "");
  if (auto known = n.substitute(fn.ctx.env).constantValue();
      known && *known < 0)
    return failure(
        ShapeError::atOperand(fmt::format("arange of a negative size ({})",
                                          static_cast<long long>(*known)),
                              0),
        "arange", "");
  CheckedOp op;
  op.kind = OpKind::Arange;
  op.sizeValue = n;
  return append(std::move(op), TensorType{{Dim::ofSize(n)}, dtype});
}

unsigned ProgramBuilder::cast(unsigned x, DType dtype) {
  if (type(x).dtype == dtype)
    return x;
  return astype(x, dtype);
}

unsigned ProgramBuilder::astype(unsigned x, DType dtype) {
  CheckedOp op;
  op.kind = OpKind::Cast;
  op.operands = {x};
  return append(std::move(op), TensorType{type(x).shape, dtype});
}

BuildOr<unsigned> ProgramBuilder::elementwise(ElementwiseFn f,
                                              std::vector<unsigned> xs) {
  const ElementwiseInfo &info = elementwiseInfo(f);
  std::string name(info.name);
  size_t first = info.firstIsCondition ? 1 : 0;
  DType dtype = type(xs[first]).dtype;
  for (size_t i = 0; i < xs.size(); ++i) {
    DType t = type(xs[i]).dtype;
    if (auto why = elementwiseOperandError(info, unsigned(i), t))
      return mixedDTypes(*why, unsigned(i), name, "");
    if (i >= first && t != dtype) {
      // Named as written: an operator by its symbol ('+'), a function by
      // its name; the mismatch is the whole call's.
      std::string what =
          info.symbol.empty() ? name : fmt::format("'{}'", info.symbol);
      BuildError error = failure(
          ShapeError::atOp(fmt::format("operands of {} have different dtypes "
                                       "({} and {}); convert one with astype",
                                       what, dtypeName(dtype), dtypeName(t))),
          name, "");
      error.rule = BuildError::Rule::OperandDType;
      return error;
    }
  }
  Shape shape = type(xs[0]).shape;
  for (size_t i = 1; i < xs.size(); ++i) {
    auto joined = inferBroadcast(fn.ctx, shape, type(xs[i]).shape);
    if (!joined) {
      ShapeError error = joined.error();
      error.anchor = ShapeError::Anchor::Operand;
      error.index = error.index == 0 && i == 1 ? 0 : unsigned(i);
      return failure(std::move(error), name, "");
    }
    shape = *joined;
  }
  CheckedOp op;
  op.kind = OpKind::Elementwise;
  op.fn = f;
  op.operands = std::move(xs);
  return append(std::move(op),
                TensorType{shape, elementwiseResultDType(info, dtype)});
}

BuildOr<unsigned> ProgramBuilder::rearrange(unsigned x,
                                            const std::string &pattern,
                                            std::vector<SizeArg> sizes) {
  return transform(OpKind::Rearrange, x, pattern, std::move(sizes));
}

BuildOr<unsigned> ProgramBuilder::repeat(unsigned x, const std::string &pattern,
                                         std::vector<SizeArg> sizes) {
  return transform(OpKind::Repeat, x, pattern, std::move(sizes));
}

BuildOr<unsigned> ProgramBuilder::reduce(unsigned x, const std::string &pattern,
                                         ReduceKind how,
                                         std::vector<SizeArg> sizes,
                                         std::optional<DType> acc) {
  return transform(OpKind::Reduce, x, pattern, std::move(sizes), how, acc);
}

BuildOr<unsigned> ProgramBuilder::transform(OpKind kind, unsigned x,
                                            const std::string &pattern,
                                            std::vector<SizeArg> sizes,
                                            ReduceKind how,
                                            std::optional<DType> acc) {
  if (auto refused = notATransform(kind, pattern))
    return *refused;
  PatternUse use = kind == OpKind::Reduce   ? PatternUse::Reduce
                   : kind == OpKind::Repeat ? PatternUse::Repeat
                                            : PatternUse::Rearrange;
  auto parsed = parsePattern(pattern, use);
  if (!parsed)
    return failure(parsed.error(), opKindName(kind), pattern);
  return transform(kind, x, *parsed, std::move(sizes), how, acc);
}

BuildOr<unsigned> ProgramBuilder::transform(OpKind kind, unsigned x,
                                            const Pattern &parsed,
                                            std::vector<SizeArg> sizes,
                                            ReduceKind how,
                                            std::optional<DType> acc) {
  if (auto refused = notATransform(kind, parsed.text))
    return *refused;
  bool isReduce = kind == OpKind::Reduce;
  PatternUse use = isReduce                 ? PatternUse::Reduce
                   : kind == OpKind::Repeat ? PatternUse::Repeat
                                            : PatternUse::Rearrange;
  std::string name = opKindName(kind);
  const std::string &pattern = parsed.text;
  const DTypeRule &rule =
      isReduce ? reduceDTypeRule(how) : *findDTypeRule(name);
  if (auto error = dtypeError(rule, type(x).dtype, 0, name, pattern))
    return *error;
  if (auto error = accError(rule, acc, name, pattern))
    return *error;
  auto info = analyzeTransform(fn.ctx, use, parsed, type(x).shape, sizes);
  if (!info)
    return withSpacedHint(
        failure(info.error(), name, pattern), parsed, use, fn.ctx,
        [&](InferContext &ctx, const Pattern &spaced) {
          return bool(analyzeTransform(ctx, use, spaced, type(x).shape, sizes));
        });
  CheckedOp op;
  op.kind = kind;
  op.pattern = pattern;
  op.parsed = parsed;
  op.sizes = std::move(sizes);
  op.reduction = how;
  op.acc = acc;
  op.operands = {x};
  op.transform = *info;
  return append(std::move(op),
                TensorType{info->result, acc.value_or(type(x).dtype)});
}

BuildOr<unsigned> ProgramBuilder::einsum(const std::vector<unsigned> &xs,
                                         const std::string &pattern,
                                         std::vector<SizeArg> sizes,
                                         std::optional<DType> acc) {
  auto parsed = parsePattern(pattern, PatternUse::Einsum);
  if (!parsed)
    return failure(parsed.error(), "einsum", pattern);
  return einsum(xs, *parsed, std::move(sizes), acc);
}

BuildOr<unsigned> ProgramBuilder::einsum(const std::vector<unsigned> &xs,
                                         const Pattern &parsed,
                                         std::vector<SizeArg> sizes,
                                         std::optional<DType> acc) {
  const std::string &pattern = parsed.text;
  const DTypeRule &rule = *findDTypeRule("einsum");
  if (xs.empty())
    return failure(ShapeError::atOp("einsum needs at least one tensor"),
                   "einsum", pattern);
  std::vector<Shape> shapes;
  for (size_t i = 0; i < xs.size(); ++i) {
    DType t = type(xs[i]).dtype;
    if (i > 0 && t != type(xs[0]).dtype)
      return mixedDTypes(
          fmt::format("einsum operands have different dtypes ({} and {}); "
                      "convert one with astype",
                      dtypeName(type(xs[0]).dtype), dtypeName(t)),
          unsigned(i), "einsum", pattern);
    if (auto error = dtypeError(rule, t, unsigned(i), "einsum", pattern))
      return *error;
    shapes.push_back(type(xs[i]).shape);
  }
  if (auto error = accError(rule, acc, "einsum", pattern))
    return *error;
  auto info = analyzeEinsum(fn.ctx, parsed, shapes, sizes);
  if (!info)
    return withSpacedHint(failure(info.error(), "einsum", pattern), parsed,
                          PatternUse::Einsum, fn.ctx,
                          [&](InferContext &ctx, const Pattern &spaced) {
                            return bool(
                                analyzeEinsum(ctx, spaced, shapes, sizes));
                          });
  CheckedOp op;
  op.kind = OpKind::Einsum;
  op.pattern = pattern;
  op.parsed = parsed;
  op.sizes = std::move(sizes);
  op.acc = acc;
  op.operands = xs;
  op.einsum = *info;
  return append(std::move(op),
                TensorType{info->result, acc.value_or(type(xs[0]).dtype)});
}

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
      return mixedDTypes(fmt::format("{} needs tensors of one dtype", name),
                         unsigned(i), name, pattern.text);
    shapes.push_back(type(parts[i]).shape);
  }
  auto packed = inferPack(fn.ctx, pattern, shapes);
  if (!packed)
    return failure(packed.error(), name, pattern.text);
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
    return failure(shapes.error(), "unpack", pattern.text);
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

} // namespace ein
