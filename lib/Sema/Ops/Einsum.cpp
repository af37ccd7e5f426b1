// The rules of einsum.

// --- Gradient ---
// An einsum's gradient with respect to one operand is an einsum of the
// output's gradient with the other operands, its diagonals (`i i`) through an
// identity, and the operand's axes it summed alone repeated back.
#include "../Differentiator.h"

#include <fmt/format.h>

namespace ein {

bool gradientOfEinsum(Differentiator &d, const CheckedOp &op) {
  std::optional<unsigned> adj = d.adjointOf(op.results[0]);
  if (!adj)
    return true;
  unsigned dy = *adj;
  const EinsumInfo &info = *op.einsum;
  DType operandType = d.dtypeOf(op.operands[0]);
  unsigned g = d.cast(dy, operandType);
  for (size_t i = 0; i < op.operands.size(); ++i) {
    unsigned x = op.operands[i];
    if (!d.isActive(x))
      continue;
    d.target(op, x);
    AxisNames name(info.axisSizes, [&d] { return d.freshAxis(); });
    std::set<std::string> seen,
        available(info.outputAxes.begin(), info.outputAxes.end());
    // A diagonal (`i i` in this operand): the gradient lands on it only, so
    // each repeat of an axis gets a fresh name and the identity of the two
    // joins the gradient einsum. The identity carries both axes, so both
    // reach the result (a repeat of the first would spread the gradient
    // over the whole of `i i` instead of its diagonal).
    Groups groups = info.operandGroups[i];
    std::vector<std::pair<std::string, std::string>> diagonals;
    for (auto &group : groups)
      for (auto &axis : group)
        if (!seen.insert(axis).second) {
          diagonals.push_back({axis, d.freshAxis()});
          available.insert(axis);
          axis = diagonals.back().second;
          available.insert(axis);
        }
    std::vector<unsigned> inputs = {g};
    std::vector<const Groups *> sides = {&info.outputGroups};
    std::vector<std::string> texts = {sideText(info.outputGroups, name)};
    for (size_t j = 0; j < op.operands.size(); ++j) {
      if (j == i)
        continue;
      inputs.push_back(op.operands[j]);
      sides.push_back(&info.operandGroups[j]);
      texts.push_back(sideText(info.operandGroups[j], name));
      available.insert(info.operandAxes[j].begin(), info.operandAxes[j].end());
    }
    for (const auto &[axis, twin] : diagonals) {
      auto eye = d.identity(info.axisSizes.at(axis), operandType);
      if (!eye)
        return false;
      inputs.push_back(*eye);
      texts.push_back(fmt::format("{} {}", name(axis), twin));
    }
    // The operand's axes that reach the gradient einsum, in its order; the
    // others (summed in this operand alone, or its 1 dims) come back by a
    // repeat.
    Groups flat;
    bool exact = true;
    for (const auto &group : groups) {
      exact &= group.size() == 1;
      for (const auto &axis : group) {
        if (available.count(axis))
          flat.push_back({axis});
        else
          exact = false;
      }
    }
    std::string pattern =
        fmt::format("{} -> {}", fmt::join(texts, ", "), sideText(flat, name));
    auto dx = d.einsum(inputs, pattern, name.sizeArgs(sides), op.acc);
    if (!dx)
      return false;
    if (!exact) {
      AxisNames rename(info.axisSizes, [&d] { return d.freshAxis(); });
      std::string back = fmt::format("{} -> {}", sideText(flat, rename),
                                     sideText(groups, rename));
      // The repeat's new axes (those not in `flat`) need their sizes too.
      dx = d.transform(OpKind::Repeat, *dx, back,
                       rename.sizeArgs({&groups}, &available));
      if (!dx)
        return false;
    }
    if (!d.accumulate(x, *dx))
      return false;
  }
  return true;
}

} // namespace ein
