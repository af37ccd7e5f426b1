// The one table of elementwise functions (rows in Elementwise.def): name,
// operator, arity, dtype rule, result dtype and FLOP count. The checker, the
// `ein.elementwise` verifier, the cost model and both back ends read it
// (docs/language.md §6).
#pragma once

#include "ein/Shape/Shape.h"

#include <optional>
#include <string_view>
#include <vector>

namespace ein {

/// Every elementwise function of the language, one enumerator per row of
/// Elementwise.def.
enum class ElementwiseFn {
#define EIN_ELEMENTWISE(Fn, ...) Fn,
#include "ein/Shape/Elementwise.def"
};

/// Which element types an operand admits.
enum class DTypeSet {
  Any,    // every dtype, bool included
  Number, // every dtype but bool
  Float,  // the float dtypes
  Bool,   // bool only
};
bool admits(DTypeSet set, DType dtype);
const char *dtypeSetText(DTypeSet set); // "a float tensor", "a bool tensor"

/// How grad() differentiates a function (its gradient column).
enum class GradientRule {
  /// A rule in Sema/Autodiff.cpp (localGradient), written in `gradient`.
  Rule,
  /// Piecewise constant: the derivative is 0 wherever it exists, so no
  /// gradient flows (as torch's floor, sign, floordiv).
  Zero,
  /// A bool result or bool operands: nothing to differentiate.
  NotDifferentiable,
};

struct ElementwiseInfo {
  ElementwiseFn fn;
  /// The IR name (`ein.elementwise "silu"`) and, unless `symbol` is set,
  /// the source function name.
  std::string_view name;
  /// The source operator (`+`, `<`, `~`), or empty for a function call.
  std::string_view symbol;
  unsigned arity;
  /// The dtype of every operand, except that `firstIsCondition` makes the
  /// first operand a bool condition (`where`) and the others `operands`.
  DTypeSet operands;
  bool firstIsCondition = false;
  /// The result is bool (comparisons); otherwise the operands' dtype.
  bool boolResult = false;
  /// FLOPs per output element (docs/cost-model.md): 1 for each arithmetic
  /// operation, comparison or library function (exp, tanh, erf, sin count
  /// 1), and the count of its formula for a composite one (sigmoid =
  /// 1/(1+exp(-x)): 4).
  unsigned flops;
  /// The formula, for the docs and the report ("x * sigmoid(x)").
  std::string_view formula;
  /// How grad() differentiates it, and the derivative for the docs ("g * y"
  /// for exp) or why none flows.
  GradientRule gradientRule;
  std::string_view gradient;
};

/// The table, one row per function.
const std::vector<ElementwiseInfo> &elementwiseTable();
const ElementwiseInfo &elementwiseInfo(ElementwiseFn fn);
/// By IR/function name ("silu", "add"); nullptr if none.
const ElementwiseInfo *findElementwise(std::string_view name);
/// By source operator and arity ("<", 2); nullptr if none.
const ElementwiseInfo *findElementwiseOperator(std::string_view symbol,
                                               unsigned arity);

/// Why operand `index` of `fn` cannot have `dtype` ("exp needs a float
/// tensor, got i32; use astype"), or nullopt.
std::optional<std::string> elementwiseOperandError(const ElementwiseInfo &info,
                                                   unsigned index, DType dtype);

/// The result dtype of `fn` over operands whose (shared) value dtype is
/// `operands`.
DType elementwiseResultDType(const ElementwiseInfo &info, DType operands);

} // namespace ein
