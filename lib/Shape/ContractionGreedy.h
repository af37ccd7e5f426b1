// Greedy contraction orders: the fallbacks of the contraction-order search.
#pragma once

#include "ContractionProblem.h"

#include <functional>
#include <optional>
#include <queue>

namespace ein {
namespace contraction {

/// Greedy by FLOPs: contracts the pair of live leaves whose step costs least,
/// the first pair on ties. Returns the root; adds the steps' FLOPs to `flops`.
template <class Set>
unsigned cheapestFirst(const Problem<Set> &p, const Leaves<Set> &in, Tree &tree,
                       Flops &flops) {
  std::vector<unsigned> nodes = in.nodes;
  std::vector<Set> sets = in.indices;
  // How many live leaves hold each class: a step sums a class away when no
  // other live leaf and nothing outside holds it.
  std::vector<unsigned> holders(p.classes, 0);
  for (auto &s : sets)
    s.forEach([&](unsigned k) { ++holders[k]; });
  while (nodes.size() > 1) {
    std::optional<Flops> best;
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
        Flops step = p.stepFlops(all, kept);
        if (!best || step < *best) {
          best = step;
          bi = i, bj = j;
          bestKept = kept;
        }
      }
    flops = addFlops(flops, *best);
    sets[bi].forEach([&](unsigned k) { --holders[k]; });
    sets[bj].forEach([&](unsigned k) { --holders[k]; });
    bestKept.forEach([&](unsigned k) { ++holders[k]; });
    unsigned node = tree.add(nodes[bi], nodes[bj]);
    nodes = afterContracting(nodes, bi, bj, node);
    sets = afterContracting(sets, bi, bj, bestKept);
  }
  return nodes[0];
}

/// Pseudo-random numbers that are the same on every machine (splitmix64).
class SplitMix {
public:
  explicit SplitMix(uint64_t seed) : state(seed) {}
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [-a, a].
  int64_t symmetric(uint64_t a) {
    return int64_t(next() % (2 * a + 1)) - int64_t(a);
  }

private:
  uint64_t state;
};

/// opt_einsum's RandomGreedy in integer arithmetic (so every machine makes
/// the same choices): each candidate's cost jittered by a factor of about
/// 1 + N(0, 0.01), then one of the `branches` cheapest chosen with weight
/// exp(-(cost - least) / T), T = temperature * max(1, |least|).
struct Thermal {
  SplitMix random;
  unsigned temperatureNum = 1, temperatureDen = 1; // a fraction
  unsigned branches = 8;

  /// exp(-q / 64) * 2^32 for q < 1024 (q / 64 past 16: weight 0).
  static const std::vector<uint64_t> &weights() {
    static const std::vector<uint64_t> table = [] {
      std::vector<uint64_t> t(1024);
      t[0] = uint64_t(1) << 32;
      for (unsigned q = 1; q < t.size(); ++q) // 4228380000: e^(-1/64) 2^32
        t[q] = uint64_t(
            ((unsigned __int128)t[q - 1] * 4228380000u + (uint64_t(1) << 31)) >>
            32);
      return t;
    }();
    return table;
  }
  /// The cost times 2^16 times the jitter (sum of three uniform terms: a
  /// standard deviation of 0.01 * 2^16).
  Int jitter(Int cost) {
    constexpr Int limit = Int(1) << 100; // no overflow below
    cost = std::max(-limit, std::min(cost, limit));
    int64_t noise =
        random.symmetric(655) + random.symmetric(655) + random.symmetric(655);
    return cost * ((Int(1) << 16) + noise);
  }
  /// Which of `costs` (ascending) to take.
  size_t choose(const std::vector<Int> &costs) {
    Int least = costs[0];
    Int scale = least < 0 ? -least : least;
    Int t = (scale < 1 ? Int(1) : scale) * temperatureNum;
    uint64_t total = 0;
    std::vector<uint64_t> w(costs.size());
    for (size_t i = 0; i < costs.size(); ++i) {
      Int q = (costs[i] - least) * 64 * temperatureDen / t;
      w[i] = q < 1024 ? weights()[size_t(q)] : 0;
      total += w[i];
    }
    uint64_t pick = random.next() % total; // w[0] > 0
    size_t i = 0;
    while (pick >= w[i])
      pick -= w[i++];
    return i;
  }
};

/// opt_einsum 3.4's 'greedy' (paths.py, ssa_greedy_optimize with the
/// "memory-removed" cost) step for step, so its order is ours: leaves with
/// equal index sets multiplied first; indices every leaf has treated as
/// output; candidate pairs share a summed index, cost = size(result) -
/// size(a) - size(b), ties to the pair whose later leaf came first, then its
/// earlier leaf (leaves numbered in order, each product the next number);
/// only each leaf's cheapest partner is queued, with the result it had then;
/// outer products last, smallest (in output indices) first. With `thermal`,
/// its RandomGreedy: every candidate queued and chosen by `thermal`.
/// Returns the root; adds the steps' FLOPs (of the real index sets) to
/// `flops`.
template <class Set>
unsigned optEinsumGreedy(const Problem<Set> &p, const Leaves<Set> &in,
                         Tree &tree, Flops &flops, Thermal *thermal = nullptr) {
  if (in.nodes.size() == 1)
    return in.nodes[0];
  Set output = in.outside, common = in.indices[0];
  for (auto &s : in.indices)
    common = common & s;
  output = output | common;
  // Leaves by number: opt_einsum's key (index set), the real one, the node.
  struct Leaf {
    Set key, real;
    unsigned node;
    bool live;
  };
  std::vector<Leaf> leaves;
  std::vector<unsigned> live;                      // numbers of the live leaves
  std::vector<unsigned> keyHolders(p.classes, 0);  // live keys, per class
  std::vector<unsigned> realHolders(p.classes, 0); // live real sets
  auto find = [&](const Set &key) -> std::optional<unsigned> {
    for (unsigned l : live)
      if (leaves[l].key == key)
        return l;
    return std::nullopt;
  };
  auto countKey = [&](const Set &key, int d) {
    key.forEach([&](unsigned k) {
      if (!output.contains(k))
        keyHolders[k] += d;
    });
  };
  auto kill = [&](unsigned l) {
    leaves[l].live = false;
    live.erase(std::find(live.begin(), live.end(), l));
    leaves[l].real.forEach([&](unsigned k) { --realHolders[k]; });
  };
  // The product of live leaves a and b as the next number, keyed `key`.
  auto contract = [&](unsigned a, unsigned b, Set key) {
    Set all = leaves[a].real | leaves[b].real;
    kill(a);
    kill(b);
    Set kept = all & in.outside;
    all.forEach([&](unsigned k) {
      if (realHolders[k] > 0)
        kept.insert(k);
    });
    flops = addFlops(flops, p.stepFlops(all, kept));
    unsigned node = tree.add(leaves[a].node, leaves[b].node);
    leaves.push_back(Leaf{std::move(key), kept, node, true});
    live.push_back(unsigned(leaves.size() - 1));
    kept.forEach([&](unsigned k) { ++realHolders[k]; });
    return unsigned(leaves.size() - 1);
  };
  unsigned n = unsigned(in.nodes.size());
  for (unsigned i = 0; i < n; ++i) {
    leaves.push_back(Leaf{in.indices[i], in.indices[i], in.nodes[i], true});
    live.push_back(i);
    in.indices[i].forEach([&](unsigned k) { ++realHolders[k]; });
  }
  // Leaf i against the keys seen before it (earlier leaves, products).
  for (unsigned i = 0; i < n; ++i) {
    std::optional<unsigned> same;
    for (unsigned l : live)
      if (l != i && (l < i || l >= n) && leaves[l].key == leaves[i].key)
        same = l;
    if (same)
      contract(*same, i, leaves[i].key);
    else
      countKey(leaves[i].key, 1);
  }

  struct Candidate {
    Int cost;
    unsigned second, first; // leaf numbers, first < second
    uint64_t sequence;      // the order queued (a fixed order on ties)
    Set key1, key2, result;
    bool operator>(const Candidate &o) const {
      if (cost != o.cost)
        return cost > o.cost;
      if (second != o.second)
        return second > o.second;
      if (first != o.first)
        return first > o.first;
      return sequence > o.sequence;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  uint64_t queued = 0;
  auto candidate = [&](unsigned a, unsigned b) {
    const Set &ka = leaves[a].key, &kb = leaves[b].key;
    Set either = ka | kb, two = ka & kb;
    Set result = either & output;
    either.forEach([&](unsigned k) {
      if (!output.contains(k) && keyHolders[k] >= (two.contains(k) ? 3u : 2u))
        result.insert(k);
    });
    Int cost = signedSize(p.sizeOf(result)) - signedSize(p.sizeOf(ka)) -
               signedSize(p.sizeOf(kb));
    if (thermal)
      cost = thermal->jitter(cost);
    if (a > b)
      std::swap(a, b);
    return Candidate{cost,          b,     a, queued++, leaves[a].key,
                     leaves[b].key, result};
  };
  // Leaf a's candidates with `partners`: all of them, or the cheapest.
  auto push = [&](unsigned a, const std::vector<unsigned> &partners) {
    std::optional<Candidate> best;
    for (unsigned b : partners) {
      Candidate c = candidate(a, b);
      if (thermal)
        queue.push(std::move(c));
      else if (!best || *best > c)
        best = std::move(c);
    }
    if (best)
      queue.push(std::move(*best));
  };
  auto sharesSummed = [&](const Set &a, const Set &b) {
    bool shares = false;
    (a & b).forEach([&](unsigned k) { shares |= !output.contains(k); });
    return shares;
  };
  for (unsigned k = 0; k < p.classes; ++k) {
    if (output.contains(k))
      continue;
    std::vector<unsigned> holders = live; // ascending
    holders.erase(
        std::remove_if(holders.begin(), holders.end(),
                       [&](unsigned l) { return !leaves[l].key.contains(k); }),
        holders.end());
    std::sort(holders.begin(), holders.end());
    for (unsigned h = 0; h + 1 < holders.size(); ++h)
      push(holders[h],
           std::vector<unsigned>(holders.begin() + h + 1, holders.end()));
  }
  // A candidate whose leaves (by key) are still live.
  auto valid = [&](const Candidate &c) { return find(c.key1) && find(c.key2); };
  std::vector<Candidate> choices;
  std::vector<Int> costs;
  while (!queue.empty()) {
    choices.clear();
    while (!queue.empty() &&
           choices.size() < (thermal ? thermal->branches : 1)) {
      Candidate c = queue.top();
      queue.pop();
      if (valid(c))
        choices.push_back(std::move(c));
    }
    if (choices.empty())
      continue;
    size_t chosen = 0;
    if (choices.size() > 1) {
      costs.clear();
      for (auto &c : choices)
        costs.push_back(c.cost);
      chosen = thermal->choose(costs);
    }
    Candidate c = std::move(choices[chosen]);
    for (size_t i = 0; i < choices.size(); ++i)
      if (i != chosen)
        queue.push(std::move(choices[i]));
    unsigned a = *find(c.key1), b = *find(c.key2);
    countKey(c.key1, -1);
    countKey(c.key2, -1);
    unsigned product = contract(a, b, c.result);
    // An equal key still live (not a or b): multiplied in at once.
    std::optional<unsigned> same;
    for (unsigned l : live)
      if (l != product && leaves[l].key == c.result)
        same = l;
    if (same)
      product = contract(*same, product, c.result);
    else
      countKey(c.result, 1);
    std::vector<unsigned> found;
    for (unsigned l : live)
      if (l != product && sharesSummed(leaves[l].key, leaves[product].key))
        found.push_back(l);
    push(product, found);
  }

  // Outer products, smallest first: (size in output indices, number).
  using Outer = std::pair<Flops, unsigned>;
  std::priority_queue<Outer, std::vector<Outer>, std::greater<>> outer;
  for (unsigned l : live)
    outer.push({p.sizeOf(leaves[l].key & output), l});
  unsigned first = outer.top().second;
  outer.pop();
  while (!outer.empty()) {
    unsigned second = outer.top().second;
    outer.pop();
    Set key = (leaves[first].key | leaves[second].key) & output;
    unsigned product = contract(first, second, key);
    outer.push({p.sizeOf(key), product});
    first = outer.top().second;
    outer.pop();
  }
  return leaves[first].node;
}

/// Trials of opt_einsum's RandomGreedy over `in` (seeds 1 to `trials`,
/// temperatures cycling through 1, 2, 1/2, 4), each added to a copy of
/// `start`: the cheapest trial, when cheaper than `flops`, replaces `best`,
/// `root` and `flops`.
template <class Set>
void randomGreedy(const Problem<Set> &p, const Leaves<Set> &in, unsigned trials,
                  const Tree &start, Tree &best, unsigned &root, Flops &flops) {
  static constexpr std::pair<unsigned, unsigned> temperatures[] = {
      {1, 1}, {2, 1}, {1, 2}, {4, 1}};
  for (unsigned r = 1; r <= trials; ++r) {
    auto [num, den] = temperatures[(r - 1) % 4];
    Thermal thermal{SplitMix(r), num, den};
    Tree t = start;
    Flops f = 0;
    unsigned top = optEinsumGreedy(p, in, t, f, &thermal);
    if (f < flops) {
      best = std::move(t);
      root = top;
      flops = f;
    }
  }
}

/// The cheaper of the two greedy orders over `in` (cheapest step first, and
/// opt_einsum's 'greedy'), added to `tree`; its FLOPs in `flops`. Returns the
/// root.
template <class Set>
unsigned bestGreedy(const Problem<Set> &p, const Leaves<Set> &in, Tree &tree,
                    Flops *flops = nullptr) {
  Tree bySize = tree;
  Flops a = 0, b = 0;
  unsigned root = cheapestFirst(p, in, tree, a);
  unsigned sizeRoot = optEinsumGreedy(p, in, bySize, b);
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
