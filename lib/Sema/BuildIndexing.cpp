// The builder's indexing ops: take (a gather along one dim, found by its
// size) and scatter_add (take's adjoint), with their shape and dtype rules.
#include "ein/Sema/ProgramBuilder.h"

#include "ein/Support/Spelling.h"

#include <fmt/format.h>

#include <algorithm>

namespace ein {

namespace {

BuildError takeError(ShapeError error, const std::string &written) {
  return BuildError{std::move(error), "take", written};
}

/// Why `dtype` cannot index (take's ids, scatter_add's), or nullopt.
std::optional<std::string> idsDTypeError(DType dtype) {
  if (dtype == DType::I64 || dtype == DType::I32)
    return std::nullopt;
  return fmt::format("take's ids must be integers (i32 or i64), not {}",
                     dtypeName(dtype));
}

/// The first variadic dim of `shape`, which take cannot index around (the
/// lowering needs every rank).
const Dim *variadicDim(const Shape &shape) {
  for (const Dim &d : shape)
    if (d.isPack())
      return &d;
  return nullptr;
}

std::string variadicMessage(const Dim &d) {
  return fmt::format("take does not support a variadic dim (*{}) in the "
                     "table or the ids; name its dims",
                     d.pack);
}

} // namespace

BuildOr<unsigned> ProgramBuilder::take(unsigned table, unsigned ids,
                                       const Dim &axis, std::string written) {
  if (written.empty())
    written = axis.str();
  auto axisError = [&](std::string message) {
    return takeError(
        ShapeError::atPattern(std::move(message), 0,
                              static_cast<unsigned>(written.size())),
        written);
  };
  if (auto why = idsDTypeError(type(ids).dtype))
    return takeError(ShapeError::atOperand(*why, 1), written);
  if (axis.isPack() || isAnonymousName(axis.size.str()))
    return axisError(fmt::format("take's axis \"{}\" must be a size, not a "
                                 "variadic or anonymous dim",
                                 written));
  Shape tableShape = fn.ctx.expand(type(table).shape);
  std::vector<size_t> matches = dimsOfSize(tableShape, axis.size);
  std::string tableText = shapeStr(type(table).shape);
  if (matches.empty()) {
    std::vector<std::string> names;
    for (const Dim &d : tableShape)
      if (!d.isPack())
        names.push_back(d.size.str());
    std::string hint;
    // Short names are too close to every other to suggest one.
    std::string wanted = axis.size.str();
    if (auto close =
            closestName(wanted, names, std::min<size_t>(2, wanted.size() / 2)))
      hint = fmt::format("; did you mean \"{}\"?", *close);
    else if (variadicDim(tableShape))
      hint = "; an axis inside a variadic (*name) cannot be named";
    return axisError(fmt::format("take's axis \"{}\" is not a dim of the "
                                 "table (shape \"{}\"){}",
                                 written, tableText, hint));
  }
  if (matches.size() > 1)
    return axisError(fmt::format("take's axis \"{}\" is ambiguous: the table "
                                 "(shape \"{}\") has {} dims of that size; "
                                 "rearrange it so that one dim has its own "
                                 "name",
                                 written, tableText, matches.size()));
  auto taken = takeAt(table, ids, static_cast<unsigned>(matches[0]));
  if (!taken)
    return takeError(taken.error().error, written);
  // The axis as the caller named it: the run-time message for an id out
  // of range names it (JIT.cpp's takeSites).
  fn.ops.back().sizeValue = axis.size;
  return taken;
}

BuildOr<unsigned> ProgramBuilder::takeAt(unsigned table, unsigned ids,
                                         unsigned axis) {
  if (auto why = idsDTypeError(type(ids).dtype))
    return takeError(ShapeError::atOperand(*why, 1), "");
  Shape tableShape = fn.ctx.expand(type(table).shape);
  Shape idsShape = fn.ctx.expand(type(ids).shape);
  // The variadics before the axis would leave its position unknown; after
  // it, and in the ids, they must have a rank the lowering knows.
  for (unsigned i : {0u, 1u})
    if (const Dim *d = variadicDim(i == 0 ? tableShape : idsShape))
      return takeError(ShapeError::atOperand(variadicMessage(*d), i), "");
  if (axis >= tableShape.size())
    return takeError(
        ShapeError::atOperand(fmt::format("take's axis {} is beyond the "
                                          "table's rank {}",
                                          axis, tableShape.size()),
                              0),
        "");
  Shape result(tableShape.begin(), tableShape.begin() + axis);
  result.insert(result.end(), idsShape.begin(), idsShape.end());
  result.insert(result.end(), tableShape.begin() + axis + 1, tableShape.end());
  CheckedOp op;
  op.kind = OpKind::Take;
  op.axis = axis;
  op.sizeValue = tableShape[axis].size;
  op.operands = {table, ids};
  return append(std::move(op), TensorType{result, type(table).dtype});
}

BuildOr<unsigned> ProgramBuilder::scatterAdd(unsigned ids, unsigned updates,
                                             const TensorType &table,
                                             unsigned axis) {
  auto refuse = [](std::string message, unsigned operand) {
    return BuildError{ShapeError::atOperand(std::move(message), operand),
                      "scatter_add", ""};
  };
  if (auto why = idsDTypeError(type(ids).dtype))
    return refuse(*why, 0);
  if (type(updates).dtype != table.dtype)
    return refuse(fmt::format("scatter_add's updates are {}, its table {}",
                              dtypeName(type(updates).dtype),
                              dtypeName(table.dtype)),
                  1);
  Shape tableShape = fn.ctx.expand(table.shape);
  if (const Dim *d = variadicDim(tableShape))
    return refuse(variadicMessage(*d), 1);
  if (axis >= tableShape.size())
    return refuse(fmt::format("scatter_add's axis {} is beyond the table's "
                              "rank {}",
                              axis, tableShape.size()),
                  1);
  CheckedOp op;
  op.kind = OpKind::ScatterAdd;
  op.axis = axis;
  op.operands = {ids, updates};
  return append(std::move(op), table);
}

} // namespace ein
