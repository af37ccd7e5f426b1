// The rules of the indexing ops: take, slice and scatter_add.

// --- Gradient ---
// take and scatter_add are each other's adjoint (a take's table gradient is
// a scatter-add of dy at the ids; a scatter-add's updates gradient the take
// of dy at them); a slice's gradient is dy between zeros along its axis.
#include "../Differentiator.h"

#include "ein/Syntax/Pattern.h"

#include <fmt/format.h>

namespace ein {

/// take's adjoint: the table's gradient is zeros with dy added at the ids
/// (a scatter-add, O(updates), not a one-hot product over the vocabulary);
/// a row gathered several times gets the sum of its dys. The ids, integers,
/// have no gradient.
bool gradientOfTake(Differentiator &d, const CheckedOp &op) {
  std::optional<unsigned> dy = d.adjointOf(op.results[0]);
  if (!dy)
    return true;
  unsigned table = op.operands[0];
  if (!d.isActive(table) || !isFloat(d.dtypeOf(table)))
    return true;
  d.target(op, table);
  if (!d.shapeOf(table))
    return false;
  auto scattered = d.built(d.build().scatterAdd(
      op.operands[1], d.cast(*dy, d.dtypeOf(table)), d.type(table), op.axis));
  return scattered && d.accumulate(table, *scattered);
}

/// A scatter-add (a second-order gradient) is linear in its updates: their
/// gradient is the take of dy at the same ids.
bool gradientOfScatterAdd(Differentiator &d, const CheckedOp &op) {
  std::optional<unsigned> dy = d.adjointOf(op.results[0]);
  if (!dy)
    return true;
  unsigned updates = op.operands[1];
  if (!d.isActive(updates) || !isFloat(d.dtypeOf(updates)))
    return true;
  d.target(op, updates);
  auto gathered = d.built(d.build().takeAt(d.cast(*dy, d.dtypeOf(updates)),
                                           op.operands[0], op.axis));
  return gathered && d.accumulate(updates, *gathered);
}

bool gradientOfSlice(Differentiator &d, const CheckedOp &op) {
  std::optional<unsigned> adj = d.adjointOf(op.results[0]);
  if (!adj)
    return true;
  unsigned dy = *adj;
  unsigned x = op.operands[0];
  d.target(op, x);
  auto shape = d.shapeOf(x);
  if (!shape)
    return false;
  size_t axis = op.sliceAxis < 0 ? shape->size() + op.sliceAxis
                                 : static_cast<size_t>(op.sliceAxis);
  // The gradient is dy between zeros: cat([zeros, dy, zeros]) on the axis.
  std::vector<std::string> names;
  for (size_t dim = 0; dim < shape->size(); ++dim)
    names.push_back(dim == axis ? "*" : d.freshAxis());
  std::vector<unsigned> parts;
  auto zerosAlong = [&](const SizeExpr &n) -> bool {
    if (n.constantValue() == Int(0))
      return true;
    Shape s = *shape;
    s[axis] = Dim::ofSize(n);
    auto z = d.zerosOf(s, d.dtypeOf(x));
    if (z)
      parts.push_back(*z);
    return z.has_value();
  };
  if (!zerosAlong(op.sliceStart))
    return false;
  parts.push_back(dy);
  if (!zerosAlong((*shape)[axis].size - op.sliceStop))
    return false;
  std::string pattern = fmt::format("{}", fmt::join(names, " "));
  auto parsed = parsePattern(pattern, PatternUse::Pack);
  if (!parsed)
    return d.failBuilt("a cat", parsed.error().message).no();
  auto dx = d.pack(parts, *parsed, d.dtypeOf(x));
  return dx && d.accumulate(x, *dx);
}

} // namespace ein
