// The fixes the checker suggests in warnings and notes (see Suggestions.h).
#include "ein/Sema/Suggestions.h"
#include "ein/Support/Spelling.h"

#include <fmt/format.h>

#include <map>
#include <set>

namespace ein {

std::string loneAxisMessage(const LoneAxis &lone) {
  std::string message = fmt::format(
      "axis '{}' appears only in the {} operand and not in the output: "
      "einsum sums it on its own",
      lone.axis->name, ordinal(lone.operand + 1));
  if (lone.suggestion)
    message += fmt::format("; did you mean '{}'?", *lone.suggestion);
  return message;
}

std::vector<LoneAxis> loneAxes(const Pattern &pattern) {
  std::vector<LoneAxis> out;
  if (pattern.inputs.size() < 2)
    return out;
  std::map<std::string, size_t> occurrences;
  std::vector<std::set<std::string>> operandNames(pattern.inputs.size());
  for (size_t i = 0; i < pattern.inputs.size(); ++i)
    for (const PatternAxis *a : pattern.inputs[i].namedAxes()) {
      ++occurrences[a->name];
      operandNames[i].insert(a->name);
    }
  std::set<std::string> outputNames;
  for (const PatternAxis *a : pattern.output.namedAxes())
    outputNames.insert(a->name);
  auto isLone = [&](const std::string &name) {
    return occurrences[name] == 1 && !outputNames.count(name);
  };
  for (size_t i = 0; i < pattern.inputs.size(); ++i)
    for (const PatternAxis *a : pattern.inputs[i].namedAxes()) {
      if (!isLone(a->name))
        continue;
      // What it may have been meant to pair with: an axis of another
      // operand, summed, not already in this operand.
      std::vector<std::string> lone, summed;
      for (size_t j = 0; j < pattern.inputs.size(); ++j) {
        if (j == i)
          continue;
        for (const PatternAxis *b : pattern.inputs[j].namedAxes()) {
          if (outputNames.count(b->name) || operandNames[i].count(b->name))
            continue;
          (isLone(b->name) ? lone : summed).push_back(b->name);
        }
      }
      LoneAxis found{i, a, closestName(a->name, lone, SIZE_MAX)};
      // Pairing with an axis already shared by other operands is a guess
      // only when the spelling is close.
      if (!found.suggestion)
        found.suggestion = closestName(a->name, summed, a->name.size() / 2);
      out.push_back(found);
    }
  return out;
}

namespace {

/// Hands out unique axis names: a preferred one when it is free and valid,
/// else the next free letter.
class AxisNamer {
public:
  std::string name(const Dim &d) {
    auto symbol = d.isPack() ? std::nullopt : d.size.asSymbol();
    if (symbol && isValidAxisName(*symbol) && !isAnonymousName(*symbol) &&
        used.insert(*symbol).second)
      return *symbol;
    for (const char *letter : {"i", "j", "k", "l", "m", "n", "p", "q", "r", "s",
                               "t", "u", "v", "w", "x", "y", "z"})
      if (used.insert(letter).second)
        return letter;
    for (unsigned k = 0;; ++k)
      if (std::string n = fmt::format("a{}", k); used.insert(n).second)
        return n;
  }

private:
  std::set<std::string> used;
};

std::string join(const std::vector<std::string> &names) {
  std::string out;
  for (const std::string &n : names)
    out += (out.empty() ? "" : " ") + n;
  return out;
}

} // namespace

std::vector<std::string> unitAxisRearrangements(const Shape &small,
                                                const Shape &big) {
  auto isOne = [](const Dim &d) {
    return !d.isPack() && d.size.constantValue() == Int(1);
  };
  for (const Dim &d : small)
    if (d.isPack())
      return {};
  AxisNamer namer;
  std::vector<std::string> left;
  for (const Dim &d : small)
    left.push_back(isOne(d) ? "1" : namer.name(d));
  // The position in `big` of each dim of `small` (-1 for a 1, which the
  // rearrangement drops), choosing the first or the last namesake.
  auto align = [&](bool first) -> std::optional<std::vector<int>> {
    std::vector<int> at(small.size(), -1);
    int n = static_cast<int>(big.size());
    int bound = first ? 0 : n - 1;
    for (size_t step = 0; step < small.size(); ++step) {
      size_t i = first ? step : small.size() - 1 - step;
      if (isOne(small[i]))
        continue;
      int k = bound;
      while (k >= 0 && k < n && !(!big[k].isPack() && big[k] == small[i]))
        k += first ? 1 : -1;
      if (k < 0 || k >= n)
        return std::nullopt;
      at[i] = k;
      bound = first ? k + 1 : k - 1;
    }
    return at;
  };
  std::vector<std::string> out;
  for (bool first : {true, false}) {
    auto at = align(first);
    if (!at)
      return {};
    std::vector<std::string> right(big.size(), "1");
    for (size_t i = 0; i < small.size(); ++i)
      if ((*at)[i] >= 0)
        right[(*at)[i]] = left[i];
    std::string pattern = join(left) + " -> " + join(right);
    if (out.empty() || out[0] != pattern)
      out.push_back(pattern);
  }
  return out;
}

std::string spacedPatternNote(const std::string &spaced) {
  return fmt::format("einops patterns separate axes with spaces (a name of "
                     "several letters is one axis); for numpy's one-letter "
                     "axes write \"{}\"",
                     spaced);
}

std::optional<std::string> spacedPattern(const Pattern &pattern) {
  bool split = false;
  auto side = [&](const PatternSide &s) {
    std::vector<std::string> groups;
    for (const PatternGroup &g : s.groups) {
      std::vector<std::string> axes;
      for (const PatternAxis &a : g.axes) {
        bool letters = a.kind == PatternAxis::Kind::Name && a.name.size() > 1;
        for (char c : a.name)
          letters &= (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        if (!letters) {
          axes.push_back(a.name);
          continue;
        }
        split = true;
        for (char c : a.name)
          axes.push_back(std::string(1, c));
      }
      if (g.parenthesized)
        groups.push_back("(" + join(axes) + ")");
      else
        groups.push_back(axes.empty() ? "1" : join(axes));
    }
    return join(groups);
  };
  std::string out;
  for (size_t i = 0; i < pattern.inputs.size(); ++i)
    out += (i ? ", " : "") + side(pattern.inputs[i]);
  if (pattern.hasArrow)
    out += " -> " + side(pattern.output);
  if (!split)
    return std::nullopt;
  return out;
}

std::optional<std::string> matmulEinsumPattern(const Shape &a, const Shape &b) {
  if (a.empty() || b.empty())
    return std::nullopt;
  for (const Shape *s : {&a, &b})
    for (const Dim &d : *s)
      if (d.isPack())
        return std::nullopt;
  AxisNamer namer;
  size_t aBatch = a.size() >= 2 ? a.size() - 2 : 0;
  size_t bBatch = b.size() >= 2 ? b.size() - 2 : 0;
  size_t batch = std::max(aBatch, bBatch);
  // Batch axes aligned from the right share a name (taken from a dim that
  // is not 1, as numpy broadcasts 1 against the other).
  std::vector<std::string> batchNames(batch);
  for (size_t p = 0; p < batch; ++p) {
    const Dim *fromA = p + aBatch >= batch ? &a[p + aBatch - batch] : nullptr;
    const Dim *fromB = p + bBatch >= batch ? &b[p + bBatch - batch] : nullptr;
    const Dim *named = fromA ? fromA : fromB;
    if (fromA && fromB && fromA->size.constantValue() == Int(1))
      named = fromB;
    batchNames[p] = namer.name(*named);
  }
  std::vector<std::string> left(batchNames.end() - aBatch, batchNames.end());
  std::vector<std::string> right(batchNames.end() - bBatch, batchNames.end());
  std::vector<std::string> result = batchNames;
  if (a.size() >= 2) {
    left.push_back(namer.name(a[a.size() - 2]));
    result.push_back(left.back());
  }
  std::string contracted = namer.name(a.back());
  left.push_back(contracted);
  right.push_back(contracted);
  if (b.size() >= 2) {
    right.push_back(namer.name(b.back()));
    result.push_back(right.back());
  }
  return join(left) + ", " + join(right) + " -> " + join(result);
}

std::string ordinal(size_t n) {
  const char *suffix = "th";
  if (n % 100 < 11 || n % 100 > 13) {
    if (n % 10 == 1)
      suffix = "st";
    else if (n % 10 == 2)
      suffix = "nd";
    else if (n % 10 == 3)
      suffix = "rd";
  }
  return fmt::format("{}{}", n, suffix);
}

} // namespace ein
