// The one table of dtype rules (operands, acc=, results) and the rules for
// number literals; see docs/language.md §7 and docs/dialect.md.
#include "ein/Shape/DTypeRules.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

namespace ein {

const std::vector<DTypeRule> &dtypeRules() {
  using S = DTypeSet;
  // op, operands, operands share one dtype, acc=, result is a free target
  static const std::vector<DTypeRule> rules = {
      {"rearrange", S::Any, true, std::nullopt, false},
      {"repeat", S::Any, true, std::nullopt, false},
      {"sum", S::Number, true, S::Number, false},
      {"max", S::Number, true, S::Number, false},
      {"min", S::Number, true, S::Number, false},
      {"prod", S::Number, true, S::Number, false},
      // A mean divides by the element count: only floats divide without
      // truncating (and without trapping on an empty axis).
      {"mean", S::Float, true, S::Float, false},
      // var: two means (docs/language.md), so floats only; acc= is the
      // dtype both passes accumulate in and the result's, as for mean.
      {"var", S::Float, true, S::Float, false},
      // any/all: on bool, with the identities False and True of an empty
      // axis.
      {"any", S::Bool, true, S::Bool, false},
      {"all", S::Bool, true, S::Bool, false},
      {"einsum", S::Number, true, S::Number, false},
      {"pack", S::Any, true, std::nullopt, false},
      {"unpack", S::Any, true, std::nullopt, false},
      {"cast", S::Any, true, std::nullopt, true},
      // Elementwise functions have their rules in Elementwise.cpp.
  };
  return rules;
}

const DTypeRule *findDTypeRule(std::string_view op) {
  for (const DTypeRule &rule : dtypeRules())
    if (rule.op == op)
      return &rule;
  return nullptr;
}

const DTypeRule &reduceDTypeRule(ReduceKind kind) {
  // Every reduce kind has a row named as the kind (ReduceKinds.def); the
  // dtype-rule test checks it.
  return *findDTypeRule(reduceKindName(kind));
}

std::optional<std::string> operandDTypeError(const DTypeRule &rule,
                                             DType dtype) {
  if (admits(rule.operands, dtype))
    return std::nullopt;
  return fmt::format("{} needs {}, got {}; use astype", rule.op,
                     dtypeSetText(rule.operands), dtypeName(dtype));
}

std::optional<std::string> accDTypeError(const DTypeRule &rule, DType acc) {
  if (!rule.acc)
    return fmt::format("acc= does not apply to {}", rule.op);
  if (admits(*rule.acc, acc))
    return std::nullopt;
  if (*rule.acc == DTypeSet::Float)
    return fmt::format("{} accumulates in a float dtype, got acc={}", rule.op,
                       dtypeName(acc));
  return fmt::format("{} cannot accumulate in {}", rule.op, dtypeName(acc));
}

NumberLiteral parseNumberLiteral(const std::string &text) {
  NumberLiteral literal;
  literal.isInt = !text.empty() &&
                  text.find_first_not_of("0123456789") == std::string::npos;
  literal.value = std::strtod(text.c_str(), nullptr);
  if (literal.isInt)
    literal.exact = parseInt(text);
  return literal;
}

NumberLiteral negateLiteral(const NumberLiteral &literal) {
  NumberLiteral out = literal;
  out.value = -literal.value;
  if (literal.exact)
    out.exact = -*literal.exact; // |exact| < 2^127: no overflow
  return out;
}

namespace {
/// Exact integer power, nullopt beyond 128 bits.
std::optional<Int> checkedPow(Int base, Int exponent) {
  Int result = 1;
  for (Int i = 0; i < exponent; ++i) {
    std::optional<Int> next = checkedMul(result, base);
    if (!next)
      return std::nullopt;
    result = *next;
    if (result == 0 || result == 1)
      return result; // stays there; also bounds the loop for base 0 and 1
    if (result == -1)
      return (exponent - i - 1) % 2 == 0 ? Int(-1) : Int(1);
  }
  return result;
}
} // namespace

Expected<NumberLiteral> foldLiterals(char op, const NumberLiteral &lhs,
                                     const NumberLiteral &rhs) {
  double a = lhs.value, b = rhs.value;
  NumberLiteral out;
  out.isInt = lhs.isInt && rhs.isInt && op != '/' &&
              !(op == '^' && b < 0); // Python: 2 ** -1 is 0.5
  out.value = op == '+'   ? a + b
              : op == '-' ? a - b
              : op == '*' ? a * b
              : op == '/' ? a / b
                          : std::pow(a, b);
  if (op == '/' && b == 0)
    return ShapeError::atOp("division by zero in a number");
  if (!std::isfinite(out.value))
    return ShapeError::atOp("number out of range");
  if (out.isInt && lhs.exact && rhs.exact) {
    Int x = *lhs.exact, y = *rhs.exact;
    out.exact = op == '+'   ? checkedAdd(x, y)
                : op == '-' ? checkedAdd(x, -y)
                : op == '*' ? checkedMul(x, y)
                            : checkedPow(x, y);
  }
  return out;
}

double largestFinite(DType dtype) {
  const DTypeInfo &l = dtypeInfo(dtype);
  double ulpsBelowTwo = l.hasMaxMantissa ? 1 : 2;
  return std::ldexp(2.0 - ulpsBelowTwo * std::ldexp(1.0, -l.mantissaBits),
                    l.maxExponent);
}

// Two's complement over the row's bytes: i8, i32 and i64 alike.
Int integerMin(DType dtype) { return -integerMax(dtype) - 1; }
Int integerMax(DType dtype) {
  return (Int(1) << (8 * dtypeInfo(dtype).bytes - 1)) - 1;
}

std::string literalText(const NumberLiteral &literal) {
  if (literal.exact)
    return toString(*literal.exact);
  return fmt::format("{}", literal.value);
}

std::optional<std::string> literalDTypeError(const NumberLiteral &literal,
                                             DType dtype) {
  if (dtype == DType::Bool)
    return std::string("a number cannot combine with a bool tensor; compare "
                       "(x > 0) or convert with astype");
  if (!isFloat(dtype)) {
    if (!literal.isInt)
      return fmt::format("a non-integer number cannot combine with an integer "
                         "tensor ({}); use astype",
                         dtypeName(dtype));
    if (!literal.exact || *literal.exact < integerMin(dtype) ||
        *literal.exact > integerMax(dtype))
      return fmt::format("integer {} does not fit in {} (range {} to {})",
                         literalText(literal), dtypeName(dtype),
                         toString(integerMin(dtype)),
                         toString(integerMax(dtype)));
    return std::nullopt;
  }
  // Round to nearest even: a magnitude from the midpoint between the largest
  // finite value and the next step up rounds away from the finite values
  // (to infinity; on f8e4m3, which has none, to NaN). On f8e4m3 the midpoint
  // itself rounds down to the even 448.
  const DTypeInfo &limits = dtypeInfo(dtype);
  double max = largestFinite(dtype);
  double halfStep =
      std::ldexp(1.0, limits.maxExponent - limits.mantissaBits - 1);
  double magnitude = std::fabs(literal.value);
  bool overflows = !std::isfinite(magnitude) ||
                   (dtype != DType::F64 &&
                    (limits.hasMaxMantissa ? magnitude >= max + halfStep
                                           : magnitude > max + halfStep));
  if (overflows)
    return fmt::format("number {} is out of range for {} (largest finite "
                       "value {})",
                       literalText(literal), dtypeName(dtype), max);
  return std::nullopt;
}

} // namespace ein
