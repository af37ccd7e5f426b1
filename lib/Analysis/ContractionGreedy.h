// Greedy contraction orders: the fallbacks of the contraction-order search.
#pragma once

#include "ContractionProblem.h"

#include <optional>

namespace ein {
namespace contraction {

/// The two greedy rules: the cheapest step first (FLOPs), or, as opt_einsum's
/// 'greedy' does, the step that shrinks the operands most (the result's size
/// minus its operands' sizes; pairs that share an index before outer
/// products; then the cheaper step).
enum class GreedyRule { Flops, Size };

/// Greedy: contracts pairs of live leaves by `rule`, the first pair on ties.
/// Returns the root; adds the steps' FLOPs to `flops`.
template <class Set>
unsigned greedy(const Problem<Set> &p, const Leaves<Set> &in, GreedyRule rule,
                Tree &tree, Flops &flops) {
  std::vector<unsigned> nodes = in.nodes;
  std::vector<Set> sets = in.indices;
  // How many live leaves hold each class: a step sums a class away when no
  // other live leaf and nothing outside holds it.
  std::vector<unsigned> holders(p.classes, 0);
  for (auto &s : sets)
    s.forEach([&](unsigned k) { ++holders[k]; });
  while (nodes.size() > 1) {
    struct Choice {
      bool outer;
      Int shrink;
      Flops flops;
    };
    auto better = [&](const Choice &a, const Choice &b) {
      if (rule == GreedyRule::Flops)
        return a.flops < b.flops;
      if (a.outer != b.outer)
        return !a.outer;
      if (a.shrink != b.shrink)
        return a.shrink < b.shrink;
      return a.flops < b.flops;
    };
    std::optional<Choice> best;
    unsigned bi = 0, bj = 1;
    Set bestKept = p.emptySet();
    for (unsigned i = 0; i < nodes.size(); ++i)
      for (unsigned j = i + 1; j < nodes.size(); ++j) {
        Set all = sets[i] | sets[j];
        Set kept = all & in.outside;
        all.forEach([&](unsigned k) {
          unsigned own = unsigned(sets[i].contains(k)) + sets[j].contains(k);
          if (holders[k] > own)
            kept.insert(k);
        });
        Choice c{(sets[i] & sets[j]).empty(), 0, p.stepFlops(all, kept)};
        if (rule == GreedyRule::Size)
          c.shrink = signedSize(p.sizeOf(kept)) -
                     signedSize(p.sizeOf(sets[i])) -
                     signedSize(p.sizeOf(sets[j]));
        if (!best || better(c, *best)) {
          best = c;
          bi = i, bj = j;
          bestKept = kept;
        }
      }
    flops = addFlops(flops, best->flops);
    sets[bi].forEach([&](unsigned k) { --holders[k]; });
    sets[bj].forEach([&](unsigned k) { --holders[k]; });
    bestKept.forEach([&](unsigned k) { ++holders[k]; });
    unsigned node = tree.add(nodes[bi], nodes[bj]);
    nodes = afterContracting(nodes, bi, bj, node);
    sets = afterContracting(sets, bi, bj, bestKept);
  }
  return nodes[0];
}

/// The cheaper of the two greedy orders over `in`, added to `tree`; its
/// FLOPs in `flops`. Returns the root.
template <class Set>
unsigned bestGreedy(const Problem<Set> &p, const Leaves<Set> &in, Tree &tree,
                    Flops *flops = nullptr) {
  Tree bySize = tree;
  Flops a = 0, b = 0;
  unsigned root = greedy(p, in, GreedyRule::Flops, tree, a);
  unsigned sizeRoot = greedy(p, in, GreedyRule::Size, bySize, b);
  if (b < a) {
    tree = std::move(bySize);
    root = sizeRoot;
  }
  if (flops)
    *flops = std::min(a, b);
  return root;
}

} // namespace contraction
} // namespace ein
