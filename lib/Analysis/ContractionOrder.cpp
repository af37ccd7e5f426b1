// The contraction order of a multi-operand einsum: exact dynamic programming
// over pairwise contraction trees, with the bounded fallbacks of
// docs/cost-model.md ("Contraction order").
#include "ein/Analysis/Cost.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <vector>

namespace ein {
namespace {

/// A FLOP count under the nominal sizes. Unsigned 128-bit and saturating: a
/// count past 2^128 compares as the largest instead of wrapping.
using Flops = unsigned __int128;
constexpr Flops kMaxFlops = ~Flops(0);

Flops addFlops(Flops a, Flops b) {
  return a > kMaxFlops - b ? kMaxFlops : a + b;
}

Flops mulFlops(Flops a, Flops b) {
  Flops product;
  return __builtin_mul_overflow(a, b, &product) ? kMaxFlops : product;
}

/// Up to this many operands (or components), every split of every subset is
/// tried: 3^n / 2 candidate steps, 800 thousand at 13 (about 10 ms; 14 would
/// take three times as long).
constexpr unsigned kExhaustiveOperands = 13;
/// Work the connected-subset search may do in one component before it gives
/// the component up for the greedy order: one unit per pair of subsets
/// looked at, kCombineWork per pair combined (about 30 ms in all).
constexpr size_t kConnectedWorkBudget = size_t(1) << 25;
constexpr size_t kCombineWork = 100;
/// Operand subsets are 64-bit masks; larger einsums use the greedy order.
constexpr unsigned kMaxSearchedOperands = 64;

/// Whether every word is 0, and each set bit's index in order: the parts of
/// the two index-set representations below that do not depend on storage.
template <typename Words> bool noBits(const Words &words) {
  for (uint64_t w : words)
    if (w)
      return false;
  return true;
}
template <typename Words, typename F> void forEachBit(const Words &words, F f) {
  unsigned base = 0;
  for (uint64_t bits : words) {
    for (; bits; bits &= bits - 1)
      f(base + unsigned(__builtin_ctzll(bits)));
    base += 64;
  }
}

/// A set of index classes: W 64-bit words, so W * 64 classes at most.
template <unsigned W> struct FixedIndexSet {
  std::array<uint64_t, W> words{};

  explicit FixedIndexSet(unsigned /*classes*/ = 0) {}
  void insert(unsigned k) { words[k / 64] |= uint64_t(1) << (k % 64); }
  bool contains(unsigned k) const { return (words[k / 64] >> (k % 64)) & 1; }
  FixedIndexSet operator|(const FixedIndexSet &o) const {
    FixedIndexSet r;
    for (unsigned w = 0; w < W; ++w)
      r.words[w] = words[w] | o.words[w];
    return r;
  }
  FixedIndexSet operator&(const FixedIndexSet &o) const {
    FixedIndexSet r;
    for (unsigned w = 0; w < W; ++w)
      r.words[w] = words[w] & o.words[w];
    return r;
  }
  bool operator==(const FixedIndexSet &o) const {
    for (unsigned w = 0; w < W; ++w) // not std::array's ==, a memcmp call
      if (words[w] != o.words[w])
        return false;
    return true;
  }
  bool operator!=(const FixedIndexSet &o) const { return !(*this == o); }
  bool empty() const { return noBits(words); }
  template <typename F> void forEach(F f) const { forEachBit(words, f); }
};

/// The same for any number of classes (only very wide einsums need it).
struct DynamicIndexSet {
  std::vector<uint64_t> words;

  explicit DynamicIndexSet(unsigned classes = 0)
      : words((classes + 63) / 64, 0) {}
  void insert(unsigned k) { words[k / 64] |= uint64_t(1) << (k % 64); }
  bool contains(unsigned k) const { return (words[k / 64] >> (k % 64)) & 1; }
  DynamicIndexSet operator|(const DynamicIndexSet &o) const {
    DynamicIndexSet r = *this;
    for (size_t w = 0; w < words.size(); ++w)
      r.words[w] |= o.words[w];
    return r;
  }
  DynamicIndexSet operator&(const DynamicIndexSet &o) const {
    DynamicIndexSet r = *this;
    for (size_t w = 0; w < words.size(); ++w)
      r.words[w] &= o.words[w];
    return r;
  }
  bool operator==(const DynamicIndexSet &o) const { return words == o.words; }
  bool operator!=(const DynamicIndexSet &o) const { return words != o.words; }
  bool empty() const { return noBits(words); }
  template <typename F> void forEach(F f) const { forEachBit(words, f); }
};

using Mask = uint64_t; // a set of operands (or of leaves of a search)

Mask bit(unsigned i) { return Mask(1) << i; }
unsigned lowest(Mask m) { return unsigned(__builtin_ctzll(m)); }

/// A binary contraction tree: nodes 0..n-1 are the operands, node n + k is
/// `inner[k]`, the contraction of its two children. Children come before
/// their parent, so the inner nodes in order are a valid contraction order.
struct Tree {
  unsigned leaves = 0;
  std::vector<std::pair<unsigned, unsigned>> inner;
  unsigned add(unsigned a, unsigned b) {
    inner.push_back({a, b});
    return leaves + unsigned(inner.size()) - 1;
  }
};

/// The steps of `tree` in opt_einsum's convention: positions in the list of
/// live operands, the two removed and their product appended
/// (`afterContracting`), starting from `live` (node ids).
std::vector<ContractionStep> toSteps(const Tree &tree,
                                     std::vector<unsigned> live) {
  std::vector<ContractionStep> steps;
  for (unsigned k = 0; k < tree.inner.size(); ++k) {
    auto [a, b] = tree.inner[k];
    unsigned i =
        unsigned(std::find(live.begin(), live.end(), a) - live.begin());
    unsigned j =
        unsigned(std::find(live.begin(), live.end(), b) - live.begin());
    if (i > j)
      std::swap(i, j);
    steps.push_back({i, j});
    live = afterContracting(live, i, j, tree.leaves + k);
  }
  return steps;
}

/// An einsum reduced to what the order depends on. Axes that occur in the
/// same operands and equally in the output or not are one index class (their
/// sizes multiplied), so the sets stay small.
template <class Set> struct Problem {
  unsigned classes = 0;
  std::vector<Set> operands; // index classes of each operand
  Set output;
  std::vector<Flops> classSize;

  Set emptySet() const { return Set(classes); }

  Flops sizeOf(const Set &s) const {
    Flops p = 1;
    s.forEach([&](unsigned k) { p = mulFlops(p, classSize[k]); });
    return p;
  }

  /// One pairwise step over the union `all` of its operands' indices,
  /// producing `kept`: opt_einsum's flop_count with two terms, the product of
  /// the sizes of `all` times 2 when an index is summed away, else 1.
  Flops stepFlops(const Set &all, const Set &kept) const {
    Flops size = sizeOf(all);
    return kept == all ? size : mulFlops(size, 2);
  }

  Set indicesOf(Mask operandsIn) const {
    Set s = emptySet();
    for (Mask m = operandsIn; m; m &= m - 1)
      s = s | operands[lowest(m)];
    return s;
  }

  Mask allOperands() const {
    return operands.size() == 64 ? ~Mask(0)
                                 : bit(unsigned(operands.size())) - 1;
  }

  /// The indices of the product of the operands in `s`: those still needed by
  /// the output or by an operand outside `s`.
  Set resultOf(Mask s) const {
    return indicesOf(s) & (output | indicesOf(allOperands() & ~s));
  }

  /// FLOPs of a tree (n <= 64 operands).
  Flops cost(const Tree &tree) const {
    std::vector<Mask> covers(tree.leaves + tree.inner.size());
    std::vector<Set> result(covers.size(), emptySet());
    for (unsigned i = 0; i < tree.leaves; ++i) {
      covers[i] = bit(i);
      result[i] = operands[i];
    }
    Flops total = 0;
    for (unsigned k = 0; k < tree.inner.size(); ++k) {
      auto [a, b] = tree.inner[k];
      unsigned node = tree.leaves + k;
      covers[node] = covers[a] | covers[b];
      result[node] = resultOf(covers[node]);
      total = addFlops(total, stepFlops(result[a] | result[b], result[node]));
    }
    return total;
  }
};

/// The leaves of one search: subtrees already built (operands, or the
/// products of components), their index sets, and what everything outside
/// them still needs (the output and the operands not among the leaves).
template <class Set> struct Leaves {
  std::vector<unsigned> nodes;
  std::vector<Set> indices;
  Set outside;
};

/// The two greedy rules: the cheapest step first (FLOPs), or, as opt_einsum's
/// 'greedy' does, the step that shrinks the operands most (the result's size
/// minus its operands' sizes; pairs that share an index before outer
/// products; then the cheaper step).
enum class GreedyRule { Flops, Size };

/// A size as a signed number for differences (sizes past 2^125 are equal).
Int signedSize(Flops size) {
  constexpr Flops limit = Flops(1) << 125;
  return Int(size < limit ? size : limit);
}

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

} // namespace ein
