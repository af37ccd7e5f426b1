// The rules of pack and unpack.

// --- Gradient ---
// pack and unpack are each other's gradient: a pack's is the unpack of its
// output's gradient into the parts, an unpack's the pack of its parts'
// gradients (zeros for a part that has none).
#include "../Differentiator.h"

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
