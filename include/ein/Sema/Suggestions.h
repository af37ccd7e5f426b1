// The fixes the checker suggests in warnings and notes: axes an einsum sums
// on their own, the rearrangements that resolve an ambiguous broadcast, the
// spaced form of a numpy-style pattern, the einsum that writes `a @ b`.
#pragma once

#include "ein/Shape/Shape.h"
#include "ein/Syntax/Pattern.h"

#include <optional>
#include <string>
#include <vector>

namespace ein {

/// An axis of an einsum's input that appears in no other input and not in
/// the output: einsum sums it on its own, which is usually a typo.
struct LoneAxis {
  size_t operand = 0;                // 0-based
  const PatternAxis *axis = nullptr; // into the pattern
  /// The name it was probably meant to be: another operand's axis that is
  /// summed but not shared with this operand (another lone axis first,
  /// whatever its spelling; otherwise only a close spelling).
  std::optional<std::string> suggestion;
};

/// The lone axes of an einsum pattern, in the order written. None for a
/// pattern of one operand: there summing an axis is the point of the call
/// (`"i j -> i"`). An axis repeated within its operand (a diagonal or a
/// trace, `"i i, j -> j"`) is deliberate and not lone.
std::vector<LoneAxis> loneAxes(const Pattern &pattern);

/// The warning for a lone axis: "axis 'e' appears only in the 2nd operand
/// and not in the output: einsum sums it on its own; did you mean 'd'?".
std::string loneAxisMessage(const LoneAxis &lone);

/// For `small` broadcast against `big` (of higher rank) when a dim of
/// `small` has several namesakes in `big`: rearrange patterns that give
/// `small` the rank of `big`, its dims aligned to their first namesakes and
/// to their last ones (`"b seq -> b seq 1"`, `"b seq -> b 1 seq"`; one
/// pattern when both are the same). Empty when `small` has a variadic dim
/// or a dim without an in-order namesake in `big`.
std::vector<std::string> unitAxisRearrangements(const Shape &small,
                                                const Shape &big);

/// The pattern with each axis name that is a run of two or more ASCII
/// letters split into one axis per letter, as numpy's einsum reads it:
/// `"nd,dk->nk"` becomes `"n d, d k -> n k"`. std::nullopt when no axis
/// name has several letters.
std::optional<std::string> spacedPattern(const Pattern &pattern);
/// The note for a pattern that builds once spaced as `spaced` ("einops
/// patterns separate axes with spaces ...").
std::string spacedPatternNote(const std::string &spaced);

/// The einsum pattern that computes `a @ b` with numpy's matmul rules (the
/// last axis of `a` contracts with the second-to-last of `b`, or the only
/// one of a vector; leading batch axes broadcast, aligned from the right),
/// naming axes after the dims of the shapes where they are names:
/// `"b s d, d e -> b s e"`. std::nullopt for a scalar or a variadic dim.
std::optional<std::string> matmulEinsumPattern(const Shape &a, const Shape &b);

/// "1st", "2nd", "3rd", "4th", ... for messages.
std::string ordinal(size_t n);

} // namespace ein
