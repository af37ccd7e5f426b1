// Symbolic sizes: integer polynomials over named dimensions and opaque quotients.
#pragma once

#include "ein/Support/BigInt.h"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ein {

/// Sizes bound to numbers (from `dim` declarations, `--dim`, or run time).
using Bindings = std::map<std::string, Int>;

/// A dimension size or a count: a polynomial with integer coefficients whose
/// atoms are named sizes (`batch`) or opaque floor quotients (`hidden/8`,
/// created when a division cannot be done exactly). Terms are kept in a
/// canonical order, so structural equality is polynomial equality.
class SizeExpr {
public:
  SizeExpr() = default; // zero
  static SizeExpr constant(Int value);
  static SizeExpr symbol(const std::string &name);
  /// `num / den` as an atom; the caller records `num % den == 0` as a
  /// constraint.
  static SizeExpr quotient(const SizeExpr &num, const SizeExpr &den);

  SizeExpr operator+(const SizeExpr &rhs) const;
  SizeExpr operator-(const SizeExpr &rhs) const;
  SizeExpr operator*(const SizeExpr &rhs) const;
  bool operator==(const SizeExpr &rhs) const;
  bool operator!=(const SizeExpr &rhs) const { return !(*this == rhs); }
  bool operator<(const SizeExpr &rhs) const { return str() < rhs.str(); }

  bool isConstant() const;
  std::optional<Int> constantValue() const;
  bool isZero() const { return terms.empty(); }
  /// A single named symbol with coefficient 1 (`batch`), if this is one.
  std::optional<std::string> asSymbol() const;
  /// True when some arithmetic on this expression overflowed 128 bits.
  bool overflowed() const { return overflow; }

  /// Named sizes this expression depends on (including inside quotients).
  std::set<std::string> symbols() const;
  /// Replaces bound names by their values and folds what becomes constant.
  SizeExpr substitute(const Bindings &env) const;
  /// The value when every name is bound; nullopt otherwise or on overflow.
  std::optional<Int> evaluate(const Bindings &env) const;
  /// `this / divisor` when the divisor is a single term (a number times a
  /// product of names) dividing every term exactly, or equals `this`;
  /// nullopt otherwise (no general polynomial long division).
  std::optional<SizeExpr> divideExact(const SizeExpr &divisor) const;

  /// The (numerator, denominator) of every opaque quotient in this
  /// expression (not nested ones).
  std::vector<std::pair<SizeExpr, SizeExpr>> quotients() const;
  /// Replaces named sizes by expressions (also inside quotients, which
  /// simplify when the division becomes exact).
  SizeExpr replaceSymbols(const std::map<std::string, SizeExpr> &values) const;

  /// Canonical text: `2*batch*heads*seq`, `n + 1`, `hidden/8`.
  std::string str() const;

private:
  struct Atom;
  /// A monomial: atom keys with powers, sorted by key.
  using Monomial = std::vector<std::pair<std::string, unsigned>>;
  std::map<Monomial, Int> terms;
  std::map<std::string, std::shared_ptr<const Atom>> atoms;
  bool overflow = false;

  void addTerm(const Monomial &m, Int coeff);
  static std::string monomialStr(const Monomial &m);
};

/// A size relation that can only be decided once sizes bind, checked on entry.
struct Constraint {
  enum class Kind { Divisible, Equal, NonEmpty } kind;
  /// Divisible: lhs % rhs == 0; Equal: lhs == rhs; NonEmpty: lhs >= 1 (rhs
  /// unused), the product of the axes a max or min reduces over, which has
  /// no identity when empty.
  SizeExpr lhs, rhs;
  std::string reason;
  std::string str() const;
};

} // namespace ein
