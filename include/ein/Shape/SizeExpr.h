// Symbolic sizes: integer polynomials over named dimensions and opaque quotients.
#pragma once

#include "ein/Support/BigInt.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ein {

/// Sizes bound to numbers (from `dim` declarations, `--dim`, or run time).
using Bindings = std::map<std::string, Int>;

/// The largest size a dim may have: compiled code computes sizes, strides
/// and offsets in 64-bit integers with a bit to spare for their sums (2^62 -
/// 1). The lowering refuses a size beyond it, and `einc check` a size the
/// file fixes beyond it (a literal, a `dim`), so that what checks compiles.
constexpr Int kMaxDimSize = Int(INT64_MAX) / 2;
/// "2^62 - 1 (4611686018427387903)", for messages.
std::string maxDimSizeText();

/// A dimension size or a count: a polynomial with integer coefficients whose
/// atoms are named sizes (`batch`) or opaque floor quotients (`hidden/8`,
/// created when a division cannot be done exactly). Terms are kept in a
/// canonical order, so structural equality is polynomial equality.
///
/// Multiplying sums out can double the number of terms with every factor, so
/// the work is bounded: an expression holds at most kMaxTerms terms (a
/// product whose factors' term counts multiply to more counts as more), a
/// term at most kMaxFactors factors (counting powers), and a quotient's text
/// at most kMaxQuotientText characters (which also bounds nesting). Beyond
/// that an expression is "too complex": a sticky flag like overflowed(), and
/// the terms are dropped so that later arithmetic on it costs nothing.
/// Callers report it as an error (tooComplexMessage()).
class SizeExpr {
public:
  /// The most terms one expression may have (see tooComplex()).
  static constexpr size_t kMaxTerms = 256;
  /// The most factors one term may have (a tensor of rank 300 has 300 in its
  /// number of elements).
  static constexpr size_t kMaxFactors = 256;
  /// The longest text of one quotient atom, `(n + 1)/2`.
  static constexpr size_t kMaxQuotientText = 1024;

  SizeExpr() = default; // zero
  static SizeExpr constant(Int value);
  static SizeExpr symbol(const std::string &name);
  /// `num / den` as an atom; the caller records `num % den == 0` as a
  /// constraint.
  static SizeExpr quotient(const SizeExpr &num, const SizeExpr &den);

  SizeExpr operator+(const SizeExpr &rhs) const;
  SizeExpr operator-(const SizeExpr &rhs) const;
  SizeExpr operator*(const SizeExpr &rhs) const;
  /// In-place forms: no copy of the left operand (sums of many terms).
  SizeExpr &operator+=(const SizeExpr &rhs);
  SizeExpr &operator-=(const SizeExpr &rhs);
  bool operator==(const SizeExpr &rhs) const;
  bool operator!=(const SizeExpr &rhs) const { return !(*this == rhs); }
  /// A strict weak order on the canonical terms (cheap: no text is built);
  /// for `a` and `b` alone it is the names' order.
  bool operator<(const SizeExpr &rhs) const;

  bool isConstant() const;
  std::optional<Int> constantValue() const;
  bool isZero() const { return !complex && terms.empty(); }
  /// A single named symbol with coefficient 1 (`batch`), if this is one.
  std::optional<std::string> asSymbol() const;
  /// True when some arithmetic on this expression overflowed 128 bits.
  bool overflowed() const { return overflow; }
  /// True when some arithmetic on this expression needed more than kMaxTerms
  /// terms; the expression then has no terms and compares equal to none.
  bool tooComplex() const { return complex; }
  /// "size expression too complex (limits: 256 terms, ...)".
  static std::string tooComplexMessage();

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

  /// Cancels each product of an exact quotient and its divisor:
  /// `(num/den)*den*r` becomes `num*r` for the quotients `exact(num, den)`
  /// says divide evenly, when `den` is a single term (a number times a
  /// product of names) and the term is a multiple of it. Repeated, so
  /// nested quotients cancel too: `2*((e/3)/2)` is `e/3`, `3*(e/3)` is `e`.
  SizeExpr cancelQuotients(
      const std::function<bool(const SizeExpr &num, const SizeExpr &den)>
          &exact) const;

  /// The (numerator, denominator) of every opaque quotient in this
  /// expression (not nested ones).
  std::vector<std::pair<SizeExpr, SizeExpr>> quotients() const;
  /// Replaces named sizes by expressions (also inside quotients, which
  /// simplify when the division becomes exact).
  SizeExpr replaceSymbols(const std::map<std::string, SizeExpr> &values) const;

  /// One factor of a term: a named size, or a floor quotient num / den
  /// (pointers into this expression, valid while it lives), to a power.
  struct Factor {
    std::string symbol;                           // empty for a quotient
    const SizeExpr *num = nullptr, *den = nullptr; // for a quotient
    unsigned power = 1;
  };
  /// One term: coefficient times the product of its factors.
  struct Term {
    Int coefficient;
    std::vector<Factor> factors;
  };
  /// The canonical terms, for code that computes the expression (the
  /// lowering's index arithmetic, the C header's size checks).
  std::vector<Term> termList() const;

  /// Canonical text: `2*batch*heads*seq`, `n + 1`, `hidden/8`, `-a + b`.
  /// parseSizeExpr reads it back as the same expression (for every
  /// expression that neither overflowed nor is too complex).
  std::string str() const;

private:
  struct Atom;
  /// A monomial: atom keys with powers, sorted by key.
  using Monomial = std::vector<std::pair<std::string, unsigned>>;
  std::map<Monomial, Int> terms;
  std::map<std::string, std::shared_ptr<const Atom>> atoms;
  bool overflow = false;
  bool complex = false;

  void addTerm(const Monomial &m, Int coeff);
  void markTooComplex();
  static std::string monomialStr(const Monomial &m);
};

/// A size relation that can only be decided once sizes bind, checked on entry.
struct Constraint {
  enum class Kind { Divisible, Equal, NonEmpty, LessEq } kind;
  /// Divisible: lhs % rhs == 0; Equal: lhs == rhs; NonEmpty: lhs >= 1 (rhs
  /// unused), the product of the axes a max or min reduces over, which has
  /// no identity when empty; LessEq: lhs <= rhs (a slice's bounds within
  /// its axis).
  SizeExpr lhs, rhs;
  std::string reason;
  std::string str() const;
};

} // namespace ein
