// The checker of one function. Its work is split by concern: statements,
// types and results (Checker.cpp), expressions and elementwise arithmetic
// (CheckExpressions.cpp), pattern operations (CheckPatternOps.cpp).
// Private to lib/Sema.
#pragma once

#include "ein/Sema/Checker.h"
#include "ein/Shape/DTypeRules.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ein::sema {

inline constexpr const char *kDTypeList =
    "f64, f32, f16, bf16, f8e4m3, f8e5m2, i64, i32, bool";

/// Columns from `e`'s start to the end of a negated literal (`-465`), so
/// that the caret spans it; other expressions keep their own length.
inline unsigned literalSpan(const Expr &e) {
  if (e.kind == Expr::Kind::Neg && !e.args.empty() &&
      e.args[0]->loc.line == e.loc.line && e.args[0]->loc.col > e.loc.col)
    return e.args[0]->loc.col - e.loc.col + literalSpan(*e.args[0]);
  return e.length;
}

/// The result of evaluating an expression: tensor values, a scalar literal
/// not yet given a dtype, or a size (a dim used as a value, `B * K`); the
/// last two take their partner's dtype.
struct Operand {
  std::vector<unsigned> values;
  bool isLiteral = false;
  NumberLiteral literal;
  std::optional<SizeExpr> size;
  /// A function of numbers and sizes that needs a dtype (`1.0 / sqrt(d)`):
  /// evaluated again, with the dtype of the tensor it meets (or of astype,
  /// or of the declared result), when it meets one.
  const Expr *deferred = nullptr;
  /// Neither tensors nor packed shapes: a number, a size or a deferred value.
  bool isScalar() const { return isLiteral || size || deferred; }
};
class FunctionChecker {
public:
  FunctionChecker(const Function &fn, const Bindings &dims,
                  const std::set<std::string> &knownNames,
                  DiagnosticEngine &diags,
                  const std::map<std::string, std::set<size_t>> *unitDims,
                  const std::map<std::string, size_t> &packRanks)
      : fn(fn), knownNames(knownNames), diags(diags), unitDims(unitDims),
        packRanks(packRanks) {
    out.name = fn.name;
    out.loc = fn.loc;
    out.ctx.env = dims;
  }

  CheckedFunction run();

private:
  const Function &fn;
  const std::set<std::string> &knownNames;
  DiagnosticEngine &diags;
  /// `#` and anonymous dims that the actual inputs give size 1
  /// (CheckOptions::entryUnitDims).
  const std::map<std::string, std::set<size_t>> *unitDims;
  /// CheckOptions::packRanks.
  const std::map<std::string, size_t> &packRanks;

  /// Expands `pack` to fresh dims when its rank is given under `key`.
  void fixPackRank(const std::string &pack, const std::string &key);

  /// Types the dim at position `pos` of `shape` (counted with its variadic
  /// expanded) as the constant 1 if it is `#` or anonymous.
  void specialiseUnitDim(Shape &shape, size_t pos);
  CheckedFunction out;
  std::map<std::string, unsigned> vars;
  std::set<std::string> packNames, dimNames;
  /// Names bound by the parameters; others in a result type (and `_`,
  /// `...` there) take whatever the returned value has, as in jaxtyping.
  std::set<std::string> paramNames;
  /// What result-only names stand for, shared by all results.
  std::map<std::string, SizeExpr> resultAliases;

  /// The declared result shape with its result-only names and packs bound
  /// to the returned value's dims.
  Shape bindResultNames(const Shape &declaredIn, const Shape &actualIn);
  unsigned anonCounter = 0;

  unsigned addValue(TensorType type, std::string name = "");
  const TensorType &typeOf(unsigned id) const { return out.values[id].type; }

  std::optional<TensorType> checkType(const TypeAnnotation &t);

  /// Reports a ShapeError at the place its anchor names in `call`.
  void report(const ShapeError &e, const Expr &call, const Expr *patternExpr);

  bool checkStmt(const Stmt &stmt);

  std::optional<unsigned> tensorOf(const Expr &e);

  std::optional<SizeExpr> sizeOf(const Expr &e);

  std::optional<Operand> single(unsigned id);

  /// `v` as a tensor of `dtype` when it is a number, a size or a deferred
  /// value (its tensor otherwise); `at` is its expression. nullopt after an
  /// error.
  std::optional<unsigned> scalarAs(const Operand &v, DType dtype,
                                   const Expr &at);
  /// The dtype deferred values take while evaluated again (scalarAs).
  std::optional<DType> pendingDType;
  /// Names bound to numbers, sizes or deferred values (`scale = 1.0 /
  /// sqrt(d)`): they take a dtype where they are used.
  std::map<std::string, Operand> scalarVars;

  /// A literal next to a tensor of `dtype` becomes a constant of `dtype`, if
  /// it fits (lib/Shape/DTypeRules.cpp); `at` is the literal's expression.
  /// A size becomes a constant when its value is known, else an op that
  /// reads it at run time (OpKind::Size).
  unsigned materialize(const Operand &lit, DType dtype, const Expr &at);

  std::optional<Operand> eval(const Expr &e);

  /// Applies elementwise function `info` to `args` (tensors, numbers or
  /// sizes; `argExprs` are their expressions, for messages) at `at`:
  /// numbers fold, sizes stay sizes under exact integer arithmetic, and
  /// otherwise every number and size becomes a constant of the tensors'
  /// dtype and the shapes broadcast by name.
  std::optional<Operand> elementwise(const ElementwiseInfo &info,
                                     const Expr &at, std::vector<Operand> args,
                                     const std::vector<const Expr *> &argExprs);

  std::optional<Operand> binary(const Expr &e);

  /// Splits call arguments: tensors first, then the pattern string.
  const Expr *patternArg(const Expr &e, size_t index, const char *what);

  std::optional<Pattern> parsePatternAt(const Expr &str, PatternUse use);

  /// Reads `acc=DTYPE` (einsum and reduce) into `op.acc`; false on error.
  bool accArg(const Expr &e, CheckedOp &op);

  std::optional<std::vector<SizeArg>> sizeArgs(const Expr &e);

  std::optional<Operand> call(const Expr &e);

  std::optional<Operand> astype(const Expr &e);

  std::optional<Operand> transform(const Expr &e);

  std::optional<Operand> einsum(const Expr &e);

  std::optional<Operand> pack(const Expr &e);

  std::optional<Operand> unpack(const Expr &e);
};

} // namespace ein::sema
