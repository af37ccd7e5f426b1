// The one table of elementwise functions, built from the rows of
// include/ein/Shape/Elementwise.def.
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
  // One entry per row of Elementwise.def, in the enum's order.
  static const std::vector<ElementwiseInfo> table = {
#define EIN_ELEMENTWISE(Fn, Name, Symbol, Arity, Operands, ConditionFirst,     \
                        BoolResult, Flops, Formula, GradRule, Gradient)        \
  {ElementwiseFn::Fn, Name,       Symbol, Arity,   DTypeSet::Operands,         \
   ConditionFirst,    BoolResult, Flops,  Formula, GradientRule::GradRule,     \
   Gradient},
#include "ein/Shape/Elementwise.def"
  };
  return table;
}

const ElementwiseInfo &elementwiseInfo(ElementwiseFn fn) {
  // The enum and the table come from the same rows in the same order.
  return elementwiseTable()[static_cast<size_t>(fn)];
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
