// Elementwise broadcasting and the check of a shape against a declared one
// (include/ein/Shape/Infer.h).
#include "ein/Shape/Infer.h"

#include <algorithm>
#include <set>

namespace ein {

//===----------------------------------------------------------------------===//
// Broadcasting and declared-type checks
//===----------------------------------------------------------------------===//

std::vector<size_t> dimsOfSize(const Shape &shape, const SizeExpr &size,
                               const Bindings *known) {
  std::vector<size_t> found;
  SizeExpr want = known ? size.substitute(*known) : size;
  for (size_t d = 0; d < shape.size(); ++d)
    if (!shape[d].isPack() &&
        (known ? shape[d].size.substitute(*known) : shape[d].size) == want)
      found.push_back(d);
  return found;
}

Expected<Shape> inferBroadcast(InferContext &ctx, const Shape &lhsIn,
                               const Shape &rhsIn,
                               BroadcastAlignment *alignment) {
  Shape lhs = ctx.expand(lhsIn), rhs = ctx.expand(rhsIn);
  BroadcastAlignment local;
  BroadcastAlignment &align = alignment ? *alignment : local;
  auto identity = [](size_t n) {
    std::vector<int> v(n);
    for (size_t i = 0; i < n; ++i)
      v[i] = static_cast<int>(i);
    return v;
  };
  if (lhs.empty() || rhs.empty()) {
    align.lhs = identity(lhs.size());
    align.rhs = identity(rhs.size());
    return lhs.empty() ? rhs : lhs;
  }
  auto isOne = [](const Dim &d) {
    return !d.isPack() && d.size.constantValue() == Int(1);
  };
  auto same = [&](const Dim &a, const Dim &b) {
    if (a.isPack() || b.isPack())
      return a.pack == b.pack;
    return ctx.prove(a.size, b.size) == InferContext::Proof::Equal;
  };
  if (lhs.size() == rhs.size()) {
    Shape out;
    align.lhs = identity(lhs.size());
    align.rhs = identity(rhs.size());
    for (size_t i = 0; i < lhs.size(); ++i) {
      int at = static_cast<int>(i);
      if (same(lhs[i], rhs[i])) {
        // Keep the dim a check without the sizes keeps (the named one over
        // a literal 1 or an anonymous size): with the inputs' sizes bound, a
        // name of size 1 equals a `1`, and the result must still carry the
        // name for the broadcasts by name that follow.
        bool keepRight = (isOne(lhs[i]) && !isOne(rhs[i])) ||
                         (isAnonymousDim(lhs[i]) && !isAnonymousDim(rhs[i]));
        out.push_back(keepRight ? rhs[i] : lhs[i]);
        continue;
      }
      // A '#' dim is equal to the other or 1 at run time; with both sizes
      // known, anything else cannot broadcast (and must not be lowered as
      // if equal).
      for (const Dim *hash : {&lhs[i], &rhs[i]}) {
        const Dim &other = hash == &lhs[i] ? rhs[i] : lhs[i];
        if (!hash->broadcastable || hash->isPack() || other.isPack())
          continue;
        auto a = hash->size.evaluate(ctx.env), b = other.size.evaluate(ctx.env);
        // (The other may be 1 only as a literal: a name bound to 1 is
        // lowered as the output's size, not broadcast.)
        if (a && b && *a != *b && *a != Int(1) &&
            (*b != Int(1) || other.size.constantValue() != Int(1)))
          return ShapeError::atOperand(
              "cannot broadcast dim " + std::to_string(i) + ": " + hash->str() +
                  " (= " + toString(*a) + ") vs " + other.str() +
                  " (= " + toString(*b) +
                  "); a '#' dim must equal the other "
                  "or be 1",
              1);
      }
      if (isOne(rhs[i]) || (rhs[i].broadcastable && !isOne(lhs[i]))) {
        out.push_back(lhs[i]);
        align.rhs[i] = isOne(rhs[i]) ? -1 : at;
        continue;
      }
      if (isOne(lhs[i]) || lhs[i].broadcastable) {
        out.push_back(rhs[i]);
        align.lhs[i] = isOne(lhs[i]) ? -1 : at;
        continue;
      }
      // Between an anonymous size (or `...`) and another, an entry check;
      // the result keeps the named one.
      bool keepRight = isAnonymousDim(lhs[i]) && !isAnonymousDim(rhs[i]);
      if (lhs[i].isPack() || rhs[i].isPack()) {
        if (!isAnonymousDim(lhs[i]) && !isAnonymousDim(rhs[i]))
          return ShapeError::atOperand("cannot broadcast dim " +
                                           std::to_string(i) + ": " +
                                           lhs[i].str() + " vs " + rhs[i].str(),
                                       1);
        ctx.requireEqualAtEntry(sizeOrPack(lhs[i]), sizeOrPack(rhs[i]),
                                "broadcast dim " + std::to_string(i));
        out.push_back(keepRight ? rhs[i] : lhs[i]);
        continue;
      }
      auto ok = ctx.unify(lhs[i].size, rhs[i].size,
                          "broadcast dim " + std::to_string(i));
      if (!ok)
        return ShapeError::atOperand(ok.error().message, 1);
      out.push_back(keepRight ? rhs[i] : lhs[i]);
    }
    return out;
  }
  bool lhsBig = lhs.size() > rhs.size();
  const Shape &big = lhsBig ? lhs : rhs;
  const Shape &small = lhsBig ? rhs : lhs;
  std::vector<int> &bigAlign = lhsBig ? align.lhs : align.rhs;
  std::vector<int> &smallAlign = lhsBig ? align.rhs : align.lhs;
  bigAlign = identity(big.size());
  smallAlign.clear();
  unsigned smallIdx = lhsBig ? 1 : 0;
  // Match by name (the same size expression) first; only a dim with no
  // namesake falls back to dims whose sizes are provably equal.
  auto sameName = [](const Dim &a, const Dim &b) {
    if (a.isPack() || b.isPack())
      return a.pack == b.pack;
    return a.size == b.size;
  };
  size_t pos = 0;
  for (auto &d : small) {
    if (isOne(d)) {
      smallAlign.push_back(-1);
      continue;
    }
    std::vector<size_t> matches;
    for (size_t k = 0; k < big.size(); ++k)
      if (sameName(big[k], d))
        matches.push_back(k);
    // Then by provable equality, first with the sizes known without the
    // call's inputs, so that binding them does not make a match ambiguous.
    if (matches.empty() && !ctx.entryNames.empty())
      for (size_t k = 0; k < big.size(); ++k)
        if (!big[k].isPack() && !d.isPack() &&
            ctx.proveStatic(big[k].size, d.size) == InferContext::Proof::Equal)
          matches.push_back(k);
    if (matches.empty())
      for (size_t k = 0; k < big.size(); ++k)
        if (same(big[k], d))
          matches.push_back(k);
    if (matches.size() > 1)
      return ShapeError::atOperand(
          "ambiguous broadcast: dim " + d.str() + " matches " +
              std::to_string(matches.size()) + " dims of \"" + shapeStr(big) +
              "\"; rearrange one operand to the other's rank first",
          smallIdx);
    if (matches.empty() || matches[0] < pos)
      return ShapeError::atOperand(
          "cannot broadcast \"" + shapeStr(small) + "\" against \"" +
              shapeStr(big) + "\": dim " + d.str() +
              (matches.empty() ? " is not in the larger shape"
                               : " is out of order in the larger shape") +
              "; broadcasting matches dims by name",
          smallIdx);
    pos = matches[0];
    smallAlign.push_back(static_cast<int>(pos));
    ++pos;
  }
  return big;
}

Expected<bool> checkShapeMatches(InferContext &ctx, const Shape &expectedIn,
                                 const Shape &actualIn) {
  Shape expected = ctx.expand(expectedIn), actual = ctx.expand(actualIn);
  // A free pack in the declared type binds to the dims it covers.
  std::vector<size_t> packs;
  for (size_t i = 0; i < expected.size(); ++i)
    if (expected[i].isPack())
      packs.push_back(i);
  if (packs.size() == 1 && expected.size() != actual.size()) {
    size_t p = packs[0];
    size_t fixed = expected.size() - 1;
    bool actualHasSamePack = false;
    for (auto &d : actual)
      actualHasSamePack |= d.isPack() && d.pack == expected[p].pack;
    if (!actualHasSamePack && actual.size() >= fixed) {
      Shape dims(actual.begin() + p,
                 actual.begin() + p + (actual.size() - fixed));
      bool ok = true;
      for (auto &d : dims)
        ok &= !d.isPack();
      if (ok) {
        ctx.packBindings[expected[p].pack] = dims;
        expected = ctx.expand(expected);
      }
    }
  }
  if (expected.size() != actual.size())
    return ShapeError::atOp(
        "rank mismatch: expected " + std::to_string(expected.size()) +
        " dims (\"" + shapeStr(expected) + "\"), got " +
        std::to_string(actual.size()) + " (\"" + shapeStr(actual) + "\")");
  for (size_t i = 0; i < expected.size(); ++i) {
    const Dim &e = expected[i], &a = actual[i];
    if (e.isPack() || a.isPack()) {
      if (e.pack != a.pack)
        return ShapeError::atOp("dim " + std::to_string(i) + ": expected " +
                                e.str() + ", got " + a.str());
      continue;
    }
    if (e.broadcastable && a.size.constantValue() == Int(1))
      continue;
    auto ok =
        ctx.unify(e.size, a.size,
                  "dim " + std::to_string(i) + " of \"" + shapeStr(actual) +
                      "\" vs declared \"" + shapeStr(expected) + "\"");
    if (!ok)
      return ok.error();
  }
  return true;
}

} // namespace ein
