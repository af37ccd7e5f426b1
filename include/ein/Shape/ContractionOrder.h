// The contraction order of a multi-operand einsum: which operands to contract
// pairwise, and in what order, for the fewest FLOPs (docs/cost-model.md,
// "Contraction order"). Read by the cost model, ein-split-einsums, the
// lowering and grad(), which splits an einsum along it before differentiating.
#pragma once

#include "ein/Shape/Infer.h"
#include "ein/Syntax/Pattern.h"

#include <optional>

#include <utility>
#include <vector>

namespace ein {

/// One step of a contraction order, in opt_einsum's convention: the live
/// operands at these positions (two, or one) are removed and their result is
/// appended. A one-operand step sums the indices that only that operand has
/// and the output has not.
using ContractionStep = std::vector<unsigned>;

/// The operand list after contracting operands `i` and `j` of a path into
/// `result`: the others in order, then the result (`i == j`: a one-operand
/// step). Paths index operands by this convention, so the cost model and the
/// lowering share it.
template <typename T>
std::vector<T> afterContracting(const std::vector<T> &live, unsigned i,
                                unsigned j, T result) {
  std::vector<T> next;
  for (unsigned k = 0; k < live.size(); ++k)
    if (k != i && k != j)
      next.push_back(live[k]);
  next.push_back(std::move(result));
  return next;
}

/// The contraction order for an einsum with the fewest FLOPs
/// (docs/cost-model.md, "Contraction order"): the cheaper of the best
/// pairwise order and the best one after one-operand steps that first sum
/// every index only one operand has (opt_einsum's 'dp' does those). The best
/// pairwise order is the best of all up to 13 operands; above, the best
/// without outer products inside each group of operands linked by summed
/// indices when that search ends within its budget, else the cheapest of two
/// greedy orders (one is opt_einsum's 'greedy') and 64 seeded trials of
/// opt_einsum's RandomGreedy, never worse than the greedy orders. Unbound
/// sizes count as 512 when
/// comparing orders; equal costs always give the same order. `einc report`
/// prints it and ein-split-einsums follows it.
std::vector<ContractionStep> contractionOrder(const EinsumInfo &info,
                                              const Bindings &env);

/// The best pairwise order alone (no one-operand steps), for a lowering that
/// contracts an einsum pairwise in one go.
std::vector<std::pair<unsigned, unsigned>>
contractionPath(const EinsumInfo &info, const Bindings &env);

/// One einsum of the pairwise chain an einsum of several operands runs as
/// (ein-split-einsums and grad() build the same chain from it).
struct PairwiseStep {
  /// The positions of its operands in the live list (afterContracting).
  ContractionStep at;
  /// Its pattern: the operands' sides, and the product's side (the axes
  /// that the output or a later operand still needs, named axes in order,
  /// one `...`), or the einsum's output for the last step.
  Pattern pattern;
  /// The einsum's keyword sizes that this step's pattern names.
  std::vector<SizeArg> sizes;
  /// An operand is the product of an earlier step: operands of the einsum
  /// that meet it are converted to the accumulator type first.
  bool withProduct = false;
  /// It writes the einsum's result.
  bool last = false;
};

/// The chain of an einsum along contractionOrder(info, env); nullopt when a
/// step's pattern does not parse.
std::optional<std::vector<PairwiseStep>>
pairwiseChain(const EinsumInfo &info, const Pattern &pattern,
              const std::vector<SizeArg> &sizes, const Bindings &env);

} // namespace ein
