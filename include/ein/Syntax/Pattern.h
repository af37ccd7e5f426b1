// The einops pattern grammar: "b s (h d) -> b h s d", parsed into groups of axes.
#pragma once

#include "ein/Support/Expected.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ein {

/// One elementary axis of a pattern.
struct PatternAxis {
  enum class Kind { Name, Ellipsis, Number, Star } kind = Kind::Name;
  std::string name; // identifier, "...", "*" (pack) or the decimal digits
  int64_t value = 0;  // for Number
  unsigned offset = 0, length = 0; // bytes into the (UTF-8) pattern text
};

/// A top-level element of one side: a bare axis, or a parenthesised
/// composition (possibly empty: `()`). A bare `1` is an empty group.
struct PatternGroup {
  std::vector<PatternAxis> axes;
  bool parenthesized = false;
  unsigned offset = 0, length = 0;
};

/// One side of a pattern (one operand, or the output).
struct PatternSide {
  std::vector<PatternGroup> groups;
  unsigned offset = 0, length = 0;
  bool hasEllipsis() const;
  bool hasEllipsisInParens() const;
  /// Index of the `*` group of a pack pattern (the number of named axes
  /// before it); the number of groups when there is none.
  size_t starIndex() const;
  /// Named axes in order of appearance (numbers and ellipsis excluded).
  std::vector<const PatternAxis *> namedAxes() const;
  std::string str() const;
};

/// A whole pattern: one or more comma-separated inputs, then `->` and an
/// output. `pack`/`unpack` patterns have no arrow (one side, `*` allowed).
struct Pattern {
  std::vector<PatternSide> inputs;
  PatternSide output;
  bool hasArrow = false;
  std::string text;
  /// Canonical text with single spaces: "b s (h d) -> b h s d".
  std::string str() const;
};

/// What the pattern is for; decides which grammar rules apply.
enum class PatternUse { Rearrange, Reduce, Repeat, Einsum, Pack };

/// Parses and checks the syntax of `text` for `use`: balanced, unnested
/// parentheses, at most one ellipsis per side, valid identifiers, no duplicate
/// axis on a side (einsum inputs may repeat one: a diagonal), an arrow where
/// needed. Errors carry the offset of the offending token (in bytes).
Expected<Pattern> parsePattern(const std::string &text, PatternUse use);

/// True for a valid axis name as einops defines it: a Python identifier
/// (Unicode: XID_Start or `_`, then XID_Continue; not NFKC-normalised) not
/// starting or ending with `_` (a lone `_` only where `allowUnderscore`).
bool isValidAxisName(const std::string &name, bool allowUnderscore = false,
                     std::string *reason = nullptr);

} // namespace ein
