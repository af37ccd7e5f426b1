// Each op's cost rule: what one op of each registry row counts in FLOPs and
// bytes, defined beside the op's other rules in lib/Sema/Ops/<Family>.cpp.
//
// The cost model (ein/Analysis/Cost.h) evaluates these formulas, and adds
// what is not one op's business: an einsum's contraction order. The rules
// sit in lib/Sema, which the analyses link, so that an op's rules are in one
// file; nothing here depends on lib/Analysis.
#pragma once

#include "ein/Sema/Program.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ein {

/// What the cost model needs to know about one op, independent of where it
/// comes from (the checked AST or an `ein` op in the IR).
struct CostInput {
  OpKind kind;
  ElementwiseFn fn = ElementwiseFn::Add; // Elementwise: which function
  std::vector<TensorType> inputs, outputs;
  const TransformInfo *transform = nullptr; // rearrange/reduce/repeat
  const EinsumInfo *einsum = nullptr;
  ReduceKind reduction = ReduceKind::Sum;
  size_t packAxesBefore = 0; // unpack: named axes before `*`; slice: dims
                             // before the sliced one
};

/// One op's counts as formulas in the dims (docs/cost-model.md). A rule
/// starts from every input read once and every output written once, and no
/// FLOPs.
struct CostCounts {
  SizeExpr flops, read, written;
  /// No data moves: strides only.
  bool view = false;
  /// Set by a rule whose FLOPs at the bindings are not its formula's value
  /// there (a reduction over an empty axis does no combining): then
  /// `flopsValue` is the value.
  bool overridesFlopsValue = false;
  std::optional<Int> flopsValue;
};

/// The bytes of a tensor of type `t`.
inline SizeExpr bytesOf(const TensorType &t) {
  return numElements(t.shape) * SizeExpr::constant(dtypeBytes(t.dtype));
}

/// opt_einsum's count for one contraction over `indices`: the product of
/// their sizes times (terms - 1, at least 1) plus one if something is summed
/// (`inner`). An einsum's rule counts its operands in one go with it; the
/// cost model counts each step of a contraction order with it.
SizeExpr contractionFlops(const std::set<std::string> &indices, bool inner,
                          size_t terms,
                          const std::map<std::string, SizeExpr> &sizes);

/// costOfKind(in, env, counts): the rule of each registry row (its family
/// file in lib/Sema/Ops), adjusting `counts` from its defaults; `env` binds
/// the dims where a rule's value is not its formula's. A row without its
/// rule fails to link, naming it.
#define EIN_OP(Kind, Name, OpClass)                                            \
  void costOf##Kind(const CostInput &in, const Bindings &env,                  \
                    CostCounts &counts);
#include "ein/Sema/Ops.def"

} // namespace ein
