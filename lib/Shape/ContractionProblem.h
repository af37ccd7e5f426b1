// The einsum contraction-order search's problem: index sets, trees, costs.
#pragma once

#include "ein/Shape/ContractionOrder.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

namespace ein {
namespace contraction {

/// A FLOP count under the nominal sizes. Unsigned 128-bit and saturating: a
/// count past 2^128 compares as the largest instead of wrapping.
using Flops = unsigned __int128;
constexpr Flops kMaxFlops = ~Flops(0);

inline Flops addFlops(Flops a, Flops b) {
  return a > kMaxFlops - b ? kMaxFlops : a + b;
}

inline Flops mulFlops(Flops a, Flops b) {
  Flops product;
  return __builtin_mul_overflow(a, b, &product) ? kMaxFlops : product;
}

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

inline Mask bit(unsigned i) { return Mask(1) << i; }
inline unsigned lowest(Mask m) { return unsigned(__builtin_ctzll(m)); }

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
inline std::vector<ContractionStep> toSteps(const Tree &tree,
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

/// A size as a signed number for differences (sizes past 2^125 are equal).
inline Int signedSize(Flops size) {
  constexpr Flops limit = Flops(1) << 125;
  return Int(size < limit ? size : limit);
}

} // namespace contraction
} // namespace ein
