// The dtype rules of every operation and of number literals, in one table
// that both the checker (lib/Sema) and the op verifiers (lib/Dialect) apply.
#pragma once

#include "ein/Shape/Elementwise.h"
#include "ein/Shape/Infer.h"
#include "ein/Shape/Shape.h"
#include "ein/Support/BigInt.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ein {

/// What an operation asks of element types. Operations are named as the
/// dialect names them without the `ein.` prefix ("add", "exp", "einsum",
/// "cast"); a reduction by its kind ("sum", "mean", ...).
struct DTypeRule {
  std::string_view op;
  /// The element type of every tensor operand.
  DTypeSet operands;
  /// All tensor operands share one element type.
  bool operandsShareDType;
  /// `acc=` (einsum, reduce) may set the accumulation and result type, which
  /// must then be in this set; nullopt: the op takes no `acc=`.
  std::optional<DTypeSet> acc;
  /// The result's element type is free (`astype`/`ein.cast`: any target);
  /// otherwise it is `acc` when given, else the operands'.
  bool resultIsTarget;
};

/// The table, one row per operation.
const std::vector<DTypeRule> &dtypeRules();

/// The row of `op`; nullptr for an operation the table does not know.
const DTypeRule *findDTypeRule(std::string_view op);

/// The row of a reduction ("sum", "mean", "max", "min", "prod").
const DTypeRule &reduceDTypeRule(ReduceKind kind);

/// Why `op` cannot take an operand of `dtype` ("exp needs a float tensor,
/// got i32; use astype"), or nullopt when it can.
std::optional<std::string> operandDTypeError(const DTypeRule &rule,
                                             DType dtype);

/// Why `op` cannot accumulate in `acc` ("acc= does not apply to repeat",
/// "mean accumulates in a float dtype, got acc=i32"), or nullopt.
std::optional<std::string> accDTypeError(const DTypeRule &rule, DType acc);

/// A number literal of the source after folding: an integer (written
/// without `.` or exponent) is kept exactly when it fits 128 bits.
struct NumberLiteral {
  bool isInt = false;
  std::optional<Int> exact; // integers within 128 bits
  double value = 0;         // the value as a double, always
};

/// Reads an integer or float literal as the lexer accepted it.
NumberLiteral parseNumberLiteral(const std::string &text);

/// The literal arithmetic of the source, folded at compile time as Python
/// would: integers stay exact (`+ - *`, `**` with an exponent >= 0), `/`
/// and a negative exponent give floats. Returns an error message for a
/// result that is not a finite number (division by zero, overflow).
Expected<NumberLiteral> foldLiterals(char op, const NumberLiteral &lhs,
                                     const NumberLiteral &rhs);
NumberLiteral negateLiteral(const NumberLiteral &literal);

/// Why `literal` cannot become a constant of `dtype`, or nullopt:
/// an integer must fit the integer dtype's range; a float literal never
/// becomes an integer; a number whose magnitude rounds beyond the float
/// dtype's largest finite value (to infinity, or to NaN on f8e4m3) is an
/// error. Smaller numbers round to nearest even (to 0 or a subnormal when
/// tiny).
std::optional<std::string> literalDTypeError(const NumberLiteral &literal,
                                             DType dtype);

/// Largest finite value of a float dtype (65504 for f16, 448 for f8e4m3).
double largestFinite(DType dtype);
/// Smallest and largest value of an integer dtype.
Int integerMin(DType dtype);
Int integerMax(DType dtype);

/// The literal as written for messages ("4294967297", "1e+06").
std::string literalText(const NumberLiteral &literal);

} // namespace ein
