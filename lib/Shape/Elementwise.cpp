// The one table of elementwise functions (include/ein/Shape/Elementwise.h).
#include "ein/Shape/Elementwise.h"

#include <fmt/format.h>

namespace ein {

bool admits(DTypeSet set, DType dtype) {
  switch (set) {
  case DTypeSet::Any:
    return true;
  case DTypeSet::Number:
    return dtype != DType::Bool;
  case DTypeSet::Float:
    return isFloat(dtype);
  case DTypeSet::Bool:
    return dtype == DType::Bool;
  }
  return false;
}

const char *dtypeSetText(DTypeSet set) {
  switch (set) {
  case DTypeSet::Any:
    return "a tensor";
  case DTypeSet::Number:
    return "a number tensor (not bool)";
  case DTypeSet::Float:
    return "a float tensor";
  case DTypeSet::Bool:
    return "a bool tensor";
  }
  return "a tensor";
}

const std::vector<ElementwiseInfo> &elementwiseTable() {
  using F = ElementwiseFn;
  using S = DTypeSet;
  using G = GradientRule;
  // fn, name, symbol, arity, operands, condition first, bool result, FLOPs,
  // formula, gradient rule and the derivative times the output gradient g
  // (one per operand, `;` between; y is the result)
  static const std::vector<ElementwiseInfo> table = {
      {F::Add, "add", "+", 2, S::Number, false, false, 1, "a + b", G::Rule,
       "g; g"},
      {F::Sub, "sub", "-", 2, S::Number, false, false, 1, "a - b", G::Rule,
       "g; -g"},
      {F::Mul, "mul", "*", 2, S::Number, false, false, 1, "a * b", G::Rule,
       "g * b; g * a"},
      // Integer division is defined for every operand pair (§6).
      {F::Div, "div", "/", 2, S::Number, false, false, 1, "a / b", G::Rule,
       "g / b; -g * y / b"},
      {F::Pow, "pow", "**", 2, S::Number, false, false, 1, "a ** b", G::Rule,
       "g * b * a ** (b - 1); g * y * ln a"},
      {F::FloorDiv, "floordiv", "//", 2, S::Number, false, false, 1,
       "floor(a / b)", G::Zero, "piecewise constant"},
      {F::Mod, "mod", "%", 2, S::Number, false, false, 1,
       "a - floor(a / b) * b", G::Rule, "g; -g * floor(a / b)"},
      {F::Neg, "neg", "-", 1, S::Number, false, false, 1, "-x", G::Rule, "-g"},
      {F::Minimum, "min", "", 2, S::Number, false, false, 1, "min(a, b)",
       G::Rule, "g where a wins (ties share half)"},
      {F::Maximum, "max", "", 2, S::Number, false, false, 1, "max(a, b)",
       G::Rule, "g where a wins (ties share half)"},
      {F::Clip, "clip", "", 3, S::Number, false, false, 2,
       "min(max(x, lo), hi)", G::Rule,
       "g inside [lo, hi]; g to the bound that binds"},
      {F::Abs, "abs", "", 1, S::Number, false, false, 1, "|x|", G::Rule,
       "g * sign(x)"},
      {F::Sign, "sign", "", 1, S::Number, false, false, 1, "-1, 0 or 1",
       G::Zero, "piecewise constant"},
      {F::Square, "square", "", 1, S::Number, false, false, 1, "x * x", G::Rule,
       "2 * x * g"},
      // Transcendental functions exist only on floats (math dialect).
      {F::Exp, "exp", "", 1, S::Float, false, false, 1, "e ** x", G::Rule,
       "g * y"},
      {F::Log, "log", "", 1, S::Float, false, false, 1, "ln x", G::Rule,
       "g / x"},
      {F::Sqrt, "sqrt", "", 1, S::Float, false, false, 1, "x ** 0.5", G::Rule,
       "g / (2 * y)"},
      {F::Rsqrt, "rsqrt", "", 1, S::Float, false, false, 1, "1 / sqrt(x)",
       G::Rule, "-g * y / (2 * x)"},
      {F::Tanh, "tanh", "", 1, S::Float, false, false, 1, "tanh x", G::Rule,
       "g * (1 - y * y)"},
      {F::Relu, "relu", "", 1, S::Number, false, false, 1, "max(x, 0)", G::Rule,
       "g where y > 0"},
      {F::Sigmoid, "sigmoid", "", 1, S::Float, false, false, 4,
       "1 / (1 + exp(-x))", G::Rule, "g * y * (1 - y)"},
      {F::Silu, "silu", "", 1, S::Float, false, false, 5, "x * sigmoid(x)",
       G::Rule, "g * s * (1 + x * (1 - s)), s = sigmoid(x)"},
      {F::Gelu, "gelu", "", 1, S::Float, false, false, 5,
       "0.5 * x * (1 + erf(x / sqrt(2)))", G::Rule,
       "g * (Phi(x) + x * phi(x))"},
      {F::GeluTanh, "gelu_tanh", "", 1, S::Float, false, false, 9,
       "0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x ** 3)))", G::Rule,
       "g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * du/dx)"},
      {F::Softplus, "softplus", "", 1, S::Float, false, false, 3,
       "log(1 + exp(x))", G::Rule, "g * sigmoid(x)"},
      {F::Sin, "sin", "", 1, S::Float, false, false, 1, "sin x", G::Rule,
       "g * cos x"},
      {F::Cos, "cos", "", 1, S::Float, false, false, 1, "cos x", G::Rule,
       "-g * sin x"},
      {F::Erf, "erf", "", 1, S::Float, false, false, 1, "erf x", G::Rule,
       "g * 2 / sqrt(pi) * exp(-x * x)"},
      {F::Floor, "floor", "", 1, S::Float, false, false, 1, "floor x", G::Zero,
       "piecewise constant"},
      {F::Ceil, "ceil", "", 1, S::Float, false, false, 1, "ceil x", G::Zero,
       "piecewise constant"},
      {F::Round, "round", "", 1, S::Float, false, false, 1,
       "x rounded to the nearest integer, ties to even", G::Zero,
       "piecewise constant"},
      {F::Lt, "lt", "<", 2, S::Number, false, true, 1, "a < b",
       G::NotDifferentiable, "bool result"},
      {F::Le, "le", "<=", 2, S::Number, false, true, 1, "a <= b",
       G::NotDifferentiable, "bool result"},
      {F::Gt, "gt", ">", 2, S::Number, false, true, 1, "a > b",
       G::NotDifferentiable, "bool result"},
      {F::Ge, "ge", ">=", 2, S::Number, false, true, 1, "a >= b",
       G::NotDifferentiable, "bool result"},
      {F::Eq, "eq", "==", 2, S::Any, false, true, 1, "a == b",
       G::NotDifferentiable, "bool result"},
      {F::Ne, "ne", "!=", 2, S::Any, false, true, 1, "a != b",
       G::NotDifferentiable, "bool result"},
      {F::And, "and", "&", 2, S::Bool, false, false, 1, "a and b",
       G::NotDifferentiable, "bool operands"},
      {F::Or, "or", "|", 2, S::Bool, false, false, 1, "a or b",
       G::NotDifferentiable, "bool operands"},
      {F::Not, "not", "~", 1, S::Bool, false, false, 1, "not x",
       G::NotDifferentiable, "bool operand"},
      {F::Where, "where", "", 3, S::Any, true, false, 1, "a where cond else b",
       G::Rule, "0; g where cond; g where not cond"},
  };
  return table;
}

const ElementwiseInfo &elementwiseInfo(ElementwiseFn fn) {
  for (const ElementwiseInfo &info : elementwiseTable())
    if (info.fn == fn)
      return info;
  return elementwiseTable().front();
}

const ElementwiseInfo *findElementwise(std::string_view name) {
  for (const ElementwiseInfo &info : elementwiseTable())
    if (info.name == name)
      return &info;
  return nullptr;
}

const ElementwiseInfo *findElementwiseOperator(std::string_view symbol,
                                               unsigned arity) {
  for (const ElementwiseInfo &info : elementwiseTable())
    if (info.symbol == symbol && info.arity == arity)
      return &info;
  return nullptr;
}

std::optional<std::string> elementwiseOperandError(const ElementwiseInfo &info,
                                                   unsigned index,
                                                   DType dtype) {
  DTypeSet set =
      info.firstIsCondition && index == 0 ? DTypeSet::Bool : info.operands;
  if (admits(set, dtype))
    return std::nullopt;
  std::string what = info.symbol.empty() ? std::string(info.name)
                                         : fmt::format("'{}'", info.symbol);
  if (info.firstIsCondition && index == 0)
    return fmt::format("the condition of {} must be a bool tensor, got {}; "
                       "compare with <, ==, ... or use astype(c, bool)",
                       what, dtypeName(dtype));
  return fmt::format("{} needs {}, got {}; use astype", what, dtypeSetText(set),
                     dtypeName(dtype));
}

DType elementwiseResultDType(const ElementwiseInfo &info, DType operands) {
  return info.boolResult ? DType::Bool : operands;
}

} // namespace ein
