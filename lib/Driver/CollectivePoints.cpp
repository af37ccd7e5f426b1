// Where a sharded run's collectives run in its local program
// (docs/distributed.md §4): after which op, or refused by name.
#include "LocalProgram.h"
#include "ein/Sema/Layout.h"

#include <fmt/format.h>

namespace ein {

ErrorOr<std::vector<size_t>> collectivePoints(const CheckedModule &m,
                                              const CheckedFunction &fn) {
  std::vector<size_t> points;
  for (size_t k = 0; k < fn.collectives.size(); ++k) {
    const InferredCollective &c = fn.collectives[k];
    bool returned = false;
    for (unsigned r : fn.returns)
      returned |= r == c.value;
    // The later readers: a sum of partials reads the partial sums, the
    // others the completed value.
    bool partialReader = false, completeReader = false;
    for (size_t i = c.afterOp < 0 ? 0 : size_t(c.afterOp) + 1;
         i < fn.ops.size(); ++i) {
      const CheckedOp &op = fn.ops[i];
      bool reads = false;
      for (unsigned o : op.operands)
        reads |= o == c.value;
      if (!reads)
        continue;
      // As layout inference decides: a sum or difference of partial sums
      // stays partial; any other reader has them completed first.
      bool pending = false;
      for (unsigned r : op.results)
        if (r < fn.layouts.size())
          for (const std::string &a : fn.layouts[r].pending)
            pending |= a == c.axis;
      bool linear =
          op.kind == OpKind::Elementwise &&
          (op.fn == ElementwiseFn::Add || op.fn == ElementwiseFn::Sub) &&
          pending;
      (linear ? partialReader : completeReader) = true;
    }
    for (size_t j = 0; j < k; ++j)
      if (fn.collectives[j].value == c.value)
        completeReader = partialReader = true; // twice: refused below
    if (movesOperand(fn, c)) {
      // Run on the rearrange's operand before it (a part starts at it):
      // the rearrange of the gathered or moved block is its result's block.
      points.push_back(size_t(c.afterOp));
      continue;
    }
    if (reshardMoves(fn, c)) {
      // Completed first: sound when the sums are over another axis.
      for (size_t j = 0; j < k; ++j)
        if (fn.collectives[j].value == c.value &&
            fn.collectives[j].axis == c.axis)
          return shardedError(
              m, c.loc,
              fmt::format("a sharded run of a reshard that completes partial "
                          "sums over {} and moves a split on it is not "
                          "supported yet",
                          c.axis));
      // Not a reduction: its readers read the gathered value.
      points.push_back(size_t(c.afterOp));
      continue;
    }
    bool kindOk =
        c.afterOp >= 0 && (c.kind == CollectiveKind::AllReduce ||
                           (c.kind == CollectiveKind::ReduceScatter &&
                            returned && !partialReader && !completeReader));
    bool reductionOk =
        c.reduction == ReduceKind::Sum || c.reduction == ReduceKind::Mean ||
        c.reduction == ReduceKind::Max || c.reduction == ReduceKind::Min ||
        c.reduction == ReduceKind::Any || c.reduction == ReduceKind::All ||
        c.reduction == ReduceKind::Prod;
    if (!kindOk || !reductionOk)
      return shardedError(
          m, c.loc,
          fmt::format("a sharded run of an {} ({}) over {} ({}) is not "
                      "supported yet: all-reduces and the results' "
                      "reduce-scatters of sum, mean, max, min, prod, any and "
                      "all, and "
                      "a reshard's all-gathers and all-to-alls, run",
                      collectiveName(c.kind), reduceKindName(c.reduction),
                      c.axis, c.reason));
    if (partialReader && (completeReader || !returned))
      return shardedError(
          m, c.loc,
          fmt::format("a sharded run of a value read both as partial sums "
                      "over {} and completed ({}) is not supported yet",
                      c.axis, c.reason));
    // Read only as partial sums later: completed once they are all read,
    // after the last op, for the result.
    points.push_back(partialReader ? fn.ops.size() - 1 : size_t(c.afterOp));
  }
  return points;
}

} // namespace ein
