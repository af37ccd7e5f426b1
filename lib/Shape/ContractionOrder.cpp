// The contraction order of a multi-operand einsum: exact dynamic programming
// over pairwise contraction trees, with the bounded fallbacks of
// docs/cost-model.md ("Contraction order").
#include "ein/Shape/ContractionOrder.h"
#include "ContractionGreedy.h"
#include "ContractionProblem.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <vector>

namespace ein {
namespace {

using namespace contraction;

/// Up to this many operands (or components), every split of every subset is
/// tried: 3^n / 2 candidate steps, 800 thousand at 13 (about 10 ms; 14 would
/// take three times as long).
constexpr unsigned kExhaustiveOperands = 13;
/// Work the connected-subset search may do in one component before it gives
/// the component up for the greedy orders: one unit per pair of subsets
/// looked at, kCombineWork per pair combined (about 30 ms in all).
constexpr size_t kConnectedWorkBudget = size_t(1) << 25;
constexpr size_t kCombineWork = 100;
/// Operand subsets are 64-bit masks; larger einsums use the greedy order.
constexpr unsigned kMaxSearchedOperands = 64;
/// Seeded trials of opt_einsum's RandomGreedy for a component the connected
/// search gave up, the best kept when cheaper than the greedy orders (64
/// take about 3 ms at 20 operands). A fixed count, not a time, so every
/// machine finds the same order.
constexpr unsigned kRandomGreedyTrials = 64;

/// Exact: the cheapest tree over at most kExhaustiveOperands leaves, outer
/// products included, by dynamic programming over every subset and every
/// split of it into two. Returns the root.
template <class Set>
unsigned exhaustive(const Problem<Set> &p, const Leaves<Set> &in, Tree &tree) {
  unsigned m = unsigned(in.nodes.size());
  if (m == 1)
    return in.nodes[0];
  Mask full = bit(m) - 1;
  std::vector<Set> indices(full + 1, p.emptySet());
  for (Mask s = 1; s <= full; ++s)
    indices[s] = indices[s & (s - 1)] | in.indices[lowest(s)];
  // What a subset's product keeps: a leaf is still whole (its first step
  // sums what only it has), a product keeps what the rest still needs.
  std::vector<Set> result(full + 1, p.emptySet());
  for (Mask s = 1; s <= full; ++s)
    result[s] = (s & (s - 1)) == 0
                    ? in.indices[lowest(s)]
                    : indices[s] & (in.outside | indices[full ^ s]);
  std::vector<Flops> best(full + 1, 0);
  std::vector<Mask> split(full + 1, 0);
  for (Mask s = 1; s <= full; ++s) {
    if ((s & (s - 1)) == 0)
      continue;
    // Splits (a, s \ a) with a holding the lowest leaf of s: each once.
    Mask low = s & (~s + 1), rest = s ^ low;
    Flops bestHere = kMaxFlops;
    Mask bestSplit = 0;
    for (Mask sub = (rest - 1) & rest;; sub = (sub - 1) & rest) {
      Mask a = low | sub, b = s ^ a;
      Flops below = addFlops(best[a], best[b]);
      if (bestSplit == 0 || below < bestHere) {
        Flops c =
            addFlops(below, p.stepFlops(result[a] | result[b], result[s]));
        if (bestSplit == 0 || c < bestHere) {
          bestHere = c;
          bestSplit = a;
        }
      }
      if (sub == 0)
        break;
    }
    best[s] = bestHere;
    split[s] = bestSplit;
  }
  auto build = [&](auto &self, Mask s) -> unsigned {
    if ((s & (s - 1)) == 0)
      return in.nodes[lowest(s)];
    unsigned a = self(self, split[s]);
    unsigned b = self(self, s ^ split[s]);
    return tree.add(a, b);
  };
  return build(build, full);
}

/// A hash map from nonempty operand sets to indices: open addressing with
/// linear probing (the search looks a subset up for every candidate pair).
class MaskIndex {
public:
  const unsigned *find(Mask key) const {
    if (keys.empty())
      return nullptr;
    for (size_t i = slot(key);; i = (i + 1) & (keys.size() - 1)) {
      if (keys[i] == key)
        return &values[i];
      if (keys[i] == 0)
        return nullptr;
    }
  }
  void insert(Mask key, unsigned value) {
    if (2 * (used + 1) > keys.size())
      grow();
    size_t i = slot(key);
    while (keys[i] != 0 && keys[i] != key)
      i = (i + 1) & (keys.size() - 1);
    used += keys[i] == 0;
    keys[i] = key;
    values[i] = value;
  }

private:
  size_t slot(Mask key) const {
    // Fibonacci hashing: operand sets differ in few low bits.
    return size_t((key * 0x9E3779B97F4A7C15ull) >> 32) & (keys.size() - 1);
  }
  void grow() {
    std::vector<Mask> oldKeys = std::move(keys);
    std::vector<unsigned> oldValues = std::move(values);
    keys.assign(std::max<size_t>(64, oldKeys.size() * 2), 0);
    values.assign(keys.size(), 0);
    used = 0;
    for (size_t i = 0; i < oldKeys.size(); ++i)
      if (oldKeys[i])
        insert(oldKeys[i], oldValues[i]);
  }
  std::vector<Mask> keys; // 0: empty
  std::vector<unsigned> values;
  size_t used = 0;
};

/// Exact among trees without outer products, the space opt_einsum's 'dp'
/// optimizer searches: the connected subsets of one component of the operand
/// graph (two operands are adjacent when they share an index the output does
/// not have), each the product of two smaller disjoint adjacent ones. Where
/// 'dp' raises a cost cap round by round, this settles subsets cheapest
/// first (Knuth's generalization of Dijkstra's algorithm): a step never costs
/// less than nothing, so the cheapest subset not yet settled cannot be made
/// cheaper, and the whole component is settled at its optimum after only the
/// subsets that cost less. Each pair of settled subsets is combined once.
template <class Set> class ConnectedSearch {
public:
  ConnectedSearch(const Problem<Set> &p, std::vector<Mask> adjacent)
      : p(p), adjacent(std::move(adjacent)) {}

  /// The cheapest tree over `component` if one costs at most `bound` and the
  /// search ends within kConnectedWorkBudget.
  bool run(Mask component, Flops bound, Tree &tree, unsigned &root) {
    settled.clear();
    settledOperands.clear();
    tentative.clear();
    index = MaskIndex();
    queue = {};
    for (Mask m = component; m; m &= m - 1)
      propose(m & (~m + 1), 0, 0, p.operands[lowest(m)]);
    size_t work = 0;
    while (!queue.empty()) {
      auto [flops, s] = queue.top();
      queue.pop();
      Tentative &t = tentative[*index.find(s)];
      if (t.flops != flops || t.settled)
        continue; // superseded by a cheaper tree of s
      t.settled = true;
      unsigned next = unsigned(settled.size());
      settled.push_back(Settled{s, t.left, flops, t.result, neighbours(s)});
      settledOperands.push_back(s);
      if (s == component)
        break;
      // Combined with every subset settled before it that is disjoint and
      // adjacent (a linear scan beats indexing by operand here). A scan
      // costs about a ns, a combination about a hundred.
      const Settled &a = settled[next];
      work += next;
      for (unsigned j = 0; j < next; ++j) {
        Mask b = settledOperands[j];
        if (!(a.operands & b) && (a.neighbours & b)) {
          work += kCombineWork;
          combine(a, settled[j], bound);
        }
      }
      if (work > kConnectedWorkBudget)
        return false;
    }
    const unsigned *whole = index.find(component);
    if (!whole || !tentative[*whole].settled)
      return false; // no tree without outer products costs at most bound
    auto build = [&](auto &self, Mask s) -> unsigned {
      if ((s & (s - 1)) == 0)
        return lowest(s);
      Mask left = tentative[*index.find(s)].left;
      unsigned a = self(self, left);
      unsigned b = self(self, s ^ left);
      return tree.add(a, b);
    };
    root = build(build, component);
    return true;
  }

private:
  struct Tentative {
    Flops flops;
    Mask left; // one part of the cheapest split found
    Set result;
    bool settled;
  };
  struct Settled {
    Mask operands;
    Mask left;
    Flops flops;
    Set result;
    Mask neighbours; // adjacent operands outside
  };

  Mask neighbours(Mask s) const {
    Mask n = 0;
    for (Mask m = s; m; m &= m - 1)
      n |= adjacent[lowest(m)];
    return n & ~s;
  }

  void propose(Mask s, Flops flops, Mask left, const Set &result) {
    if (const unsigned *i = index.find(s)) {
      tentative[*i].flops = flops;
      tentative[*i].left = left;
    } else {
      index.insert(s, unsigned(tentative.size()));
      tentative.push_back(Tentative{flops, left, result, false});
    }
    queue.push({flops, s});
  }

  /// The product of settled `a` and `b`, proposed when it is the cheapest
  /// tree of their union so far and costs at most `bound`.
  void combine(const Settled &a, const Settled &b, Flops bound) {
    Mask s = a.operands | b.operands;
    Flops below = addFlops(a.flops, b.flops);
    const unsigned *known = index.find(s);
    if (below > bound || (known && tentative[*known].flops <= below))
      return; // also when s is settled: it costs no more than a or b
    Set result = known ? tentative[*known].result : p.resultOf(s);
    Flops total = addFlops(below, p.stepFlops(a.result | b.result, result));
    if (total > bound || (known && tentative[*known].flops <= total))
      return;
    propose(s, total, a.operands, result);
  }

  const Problem<Set> &p;
  std::vector<Mask> adjacent;
  std::vector<Settled> settled;
  std::vector<Mask> settledOperands; // settled[j].operands, scanned densely
  std::vector<Tentative> tentative;  // every subset proposed
  MaskIndex index;                   // a subset's place in `tentative`
  /// Cheapest first; equal costs by operand set, so the order is fixed.
  std::priority_queue<std::pair<Flops, Mask>,
                      std::vector<std::pair<Flops, Mask>>, std::greater<>>
      queue;
};

/// The cheapest order this search finds; see docs/cost-model.md.
template <class Set> Tree search(const Problem<Set> &p) {
  unsigned n = unsigned(p.operands.size());
  Leaves<Set> operands{{}, p.operands, p.output};
  for (unsigned i = 0; i < n; ++i)
    operands.nodes.push_back(i);
  if (n <= kExhaustiveOperands) {
    Tree tree{n, {}};
    exhaustive(p, operands, tree);
    return tree;
  }
  Tree greedyTree{n, {}};
  bestGreedy(p, operands, greedyTree);
  if (n > kMaxSearchedOperands)
    return greedyTree;

  // Components of the operand graph, each searched on its own.
  std::vector<Mask> adjacent(n, 0);
  std::vector<Mask> holders(p.classes, 0);
  for (unsigned i = 0; i < n; ++i)
    p.operands[i].forEach([&](unsigned k) { holders[k] |= bit(i); });
  for (unsigned k = 0; k < p.classes; ++k)
    if (!p.output.contains(k))
      for (Mask m = holders[k]; m; m &= m - 1)
        adjacent[lowest(m)] |= holders[k] & ~bit(lowest(m));
  std::vector<Mask> components;
  for (Mask left = p.allOperands(); left;) {
    Mask component = left & (~left + 1), grown = 0;
    while (grown != component) {
      grown = component;
      for (Mask m = grown; m; m &= m - 1)
        component |= adjacent[lowest(m)];
    }
    components.push_back(component);
    left &= ~component;
  }
  Tree base{n, {}};
  Leaves<Set> products{{}, {}, p.output};
  ConnectedSearch<Set> connected(p, adjacent);
  for (Mask component : components) {
    Leaves<Set> members{
        {}, {}, p.output | p.indicesOf(p.allOperands() & ~component)};
    for (Mask m = component; m; m &= m - 1) {
      members.nodes.push_back(lowest(m));
      members.indices.push_back(p.operands[lowest(m)]);
    }
    unsigned root = 0;
    if (members.nodes.size() <= kExhaustiveOperands) {
      root = exhaustive(p, members, base);
    } else {
      // The greedy order bounds the search: it fails where none is cheaper.
      Tree greedyPart = base;
      Flops bound = kMaxFlops;
      unsigned greedyRoot = bestGreedy(p, members, greedyPart, &bound);
      if (!connected.run(component, bound, base, root)) {
        // A tighter bound would not have let it finish: it settles subsets
        // cheapest first, and every one it settled costs less than the
        // optimum, so it needs the same work under any bound.
        randomGreedy(p, members, kRandomGreedyTrials, base, greedyPart,
                     greedyRoot, bound);
        base = std::move(greedyPart);
        root = greedyRoot;
      }
    }
    products.nodes.push_back(root);
    products.indices.push_back(
        members.nodes.size() == 1 ? members.indices[0] : p.resultOf(component));
  }

  // The products of the components: exactly when few, else the cheapest of
  // the greedy orders and opt_einsum's 'dp' rule (smallest first, left to
  // right).
  std::vector<Tree> candidates;
  if (products.nodes.size() <= kExhaustiveOperands) {
    candidates.push_back(base);
    exhaustive(p, products, candidates.back());
  } else {
    std::vector<unsigned> order(products.nodes.size());
    for (unsigned k = 0; k < order.size(); ++k)
      order[k] = k;
    std::stable_sort(order.begin(), order.end(), [&](unsigned a, unsigned b) {
      return p.sizeOf(products.indices[a]) < p.sizeOf(products.indices[b]);
    });
    candidates.push_back(base);
    unsigned acc = products.nodes[order[0]];
    for (unsigned k = 1; k < order.size(); ++k)
      acc = candidates.back().add(acc, products.nodes[order[k]]);
    candidates.push_back(base);
    bestGreedy(p, products, candidates.back());
  }
  candidates.push_back(greedyTree);
  Tree *best = nullptr;
  Flops bestFlops = kMaxFlops;
  for (Tree &t : candidates) {
    Flops f = p.cost(t);
    if (!best || f < bestFlops) {
      best = &t;
      bestFlops = f;
    }
  }
  return *best;
}

/// The size of `axis` with unbound names counted as 512.
Flops nominalSize(const SizeExpr &size, const Bindings &env) {
  Bindings nominal = env;
  for (auto &s : size.symbols())
    nominal.emplace(s, 512);
  std::optional<Int> v = size.evaluate(nominal);
  if (!v)
    return kMaxFlops; // past 128 bits
  return *v < 0 ? 0 : Flops(*v);
}

using IndexClasses =
    std::map<std::pair<std::vector<unsigned>, bool>, std::vector<std::string>>;

/// The order of `info` over `classes`; with `mayReduce`, the cheaper of the
/// pairwise order and one that first sums, in a one-operand step, every
/// index that only one operand has and the output has not (what opt_einsum's
/// 'dp' does), then contracts the smaller operands pairwise.
template <class Set>
std::vector<ContractionStep>
orderWith(const EinsumInfo &info, const Bindings &env,
          const IndexClasses &classes, bool mayReduce) {
  Problem<Set> p;
  p.classes = unsigned(classes.size());
  p.output = p.emptySet();
  p.operands.assign(info.operandAxes.size(), p.emptySet());
  unsigned k = 0;
  for (auto &[key, axes] : classes) {
    Flops size = 1;
    for (auto &a : axes)
      size = mulFlops(size, nominalSize(info.axisSizes.at(a), env));
    p.classSize.push_back(size);
    for (unsigned i : key.first)
      p.operands[i].insert(k);
    if (key.second)
      p.output.insert(k);
    ++k;
  }
  unsigned n = unsigned(p.operands.size());
  std::vector<unsigned> identity(n);
  for (unsigned i = 0; i < n; ++i)
    identity[i] = i;
  Tree pairwise = search(p);
  if (!mayReduce || n > kMaxSearchedOperands)
    return toSteps(pairwise, identity);

  // Each operand's indices that the output or another operand still needs.
  Problem<Set> reduced = p;
  Flops reduceFlops = 0;
  std::vector<unsigned> reducible;
  for (unsigned i = 0; i < n; ++i) {
    Set kept = p.resultOf(bit(i));
    if (kept == p.operands[i])
      continue;
    reducible.push_back(i);
    reduceFlops = addFlops(reduceFlops, p.stepFlops(p.operands[i], kept));
    reduced.operands[i] = kept;
  }
  if (reducible.empty())
    return toSteps(pairwise, identity);
  Tree afterReducing = search(reduced);
  if (!(addFlops(reduceFlops, reduced.cost(afterReducing)) < p.cost(pairwise)))
    return toSteps(pairwise, identity);
  // The one-operand steps first; each moves its operand to the end.
  std::vector<ContractionStep> steps;
  std::vector<unsigned> live = identity;
  for (unsigned i : reducible) {
    unsigned at =
        unsigned(std::find(live.begin(), live.end(), i) - live.begin());
    steps.push_back({at});
    live = afterContracting(live, at, at, i);
  }
  for (auto &step : toSteps(afterReducing, live))
    steps.push_back(step);
  return steps;
}

std::vector<ContractionStep> order(const EinsumInfo &info, const Bindings &env,
                                   bool mayReduce) {
  size_t n = info.operandAxes.size();
  if (n < 2)
    return {};
  // Index classes: axes held by the same operands, and by the output or not.
  std::map<std::string, std::vector<unsigned>> holders;
  for (unsigned i = 0; i < n; ++i)
    for (auto &a : info.operandAxes[i]) {
      auto &h = holders[a];
      if (h.empty() || h.back() != i)
        h.push_back(i);
    }
  std::set<std::string> output(info.outputAxes.begin(), info.outputAxes.end());
  IndexClasses classes;
  for (auto &[axis, ops] : holders)
    classes[{ops, output.count(axis) > 0}].push_back(axis);
  if (classes.size() <= 64)
    return orderWith<FixedIndexSet<1>>(info, env, classes, mayReduce);
  if (classes.size() <= 256)
    return orderWith<FixedIndexSet<4>>(info, env, classes, mayReduce);
  return orderWith<DynamicIndexSet>(info, env, classes, mayReduce);
}

} // namespace

std::vector<std::pair<unsigned, unsigned>>
contractionPath(const EinsumInfo &info, const Bindings &env) {
  std::vector<std::pair<unsigned, unsigned>> path;
  for (auto &step : order(info, env, /*mayReduce=*/false))
    path.push_back({step[0], step[1]});
  return path;
}

std::vector<ContractionStep> contractionOrder(const EinsumInfo &info,
                                              const Bindings &env) {
  return order(info, env, /*mayReduce=*/true);
}

namespace {

bool isEllipsisAxis(const std::string &axis) {
  return axis.rfind("...", 0) == 0;
}

/// The pattern side of a product holding `axes`: the named axes in order and
/// one `...` for the ellipsis dims (where the first of them is, else first).
std::string productSide(const std::vector<std::string> &axes,
                        bool hasEllipsis) {
  std::vector<std::string> parts;
  bool dots = false;
  for (auto &a : axes) {
    if (!isEllipsisAxis(a))
      parts.push_back(a);
    else if (!dots)
      parts.push_back("...");
    dots |= isEllipsisAxis(a);
  }
  if (hasEllipsis && !dots)
    parts.insert(parts.begin(), "...");
  std::string side;
  for (auto &p : parts)
    side += (side.empty() ? "" : " ") + p;
  return side;
}

/// One live operand of the chain: an operand of the einsum or a product.
struct ChainTerm {
  std::string side;              // its side of a step's pattern
  std::vector<std::string> axes; // elementary axes, as EinsumInfo names them
  bool original;
  bool hasEllipsis; // some operand it comes from has `...`
};

} // namespace

std::optional<std::vector<PairwiseStep>>
pairwiseChain(const EinsumInfo &info, const Pattern &pattern,
              const std::vector<SizeArg> &sizes, const Bindings &env) {
  std::vector<ChainTerm> live;
  for (size_t k = 0; k < pattern.inputs.size(); ++k)
    live.push_back(ChainTerm{pattern.inputs[k].str(), info.operandAxes[k], true,
                             pattern.inputs[k].hasEllipsis()});
  std::vector<PairwiseStep> steps;
  for (const ContractionStep &at : contractionOrder(info, env)) {
    unsigned i = at[0], j = at.back(); // j == i: one operand
    // The axes of the step's operands, in order, that the output or another
    // live operand still needs.
    std::set<std::string> needed(info.outputAxes.begin(),
                                 info.outputAxes.end());
    for (size_t k = 0; k < live.size(); ++k)
      if (k != i && k != j)
        needed.insert(live[k].axes.begin(), live[k].axes.end());
    std::vector<std::string> keep;
    bool hasEllipsis = false, withProduct = false;
    std::string in;
    for (unsigned k : at) {
      for (auto &a : live[k].axes)
        if (needed.count(a) &&
            std::find(keep.begin(), keep.end(), a) == keep.end())
          keep.push_back(a);
      hasEllipsis |= live[k].hasEllipsis;
      withProduct |= !live[k].original;
      in += (k == at[0] ? "" : ", ") + live[k].side; // a scalar's is ""
    }
    bool last = live.size() == at.size();
    std::string product = productSide(keep, hasEllipsis);
    auto stepPattern =
        parsePattern(in + " -> " + (last ? pattern.output.str() : product),
                     PatternUse::Einsum);
    if (!stepPattern)
      return std::nullopt;
    PairwiseStep step{at, *stepPattern, {}, withProduct, last};
    std::set<std::string> named; // the sizes of the axes this step names
    for (auto &side : step.pattern.inputs)
      for (auto *a : side.namedAxes())
        named.insert(a->name);
    for (auto *a : step.pattern.output.namedAxes())
      named.insert(a->name);
    for (auto &s : sizes)
      if (named.count(s.name))
        step.sizes.push_back(s);
    steps.push_back(std::move(step));
    live = afterContracting(live, i, j,
                            ChainTerm{product, keep, false, hasEllipsis});
  }
  return steps;
}

} // namespace ein
