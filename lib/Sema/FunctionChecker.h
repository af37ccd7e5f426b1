// The checker of one function. Its work is split by concern: statements,
// types and results (Checker.cpp), expressions and elementwise arithmetic
// (CheckExpressions.cpp), pattern operations (CheckPatternOps.cpp).
// Private to lib/Sema.
#pragma once

#include "ein/Sema/Checker.h"
#include "ein/Shape/DTypeRules.h"

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ein::sema {

inline constexpr const char *kDTypeList =
    "f64, f32, f16, bf16, f8e4m3, f8e5m2, i64, i32";

/// Adds the names used in a shape string (or a pattern) to `out`.
void collectShapeNames(const std::string &shape, std::set<std::string> &out);

/// Columns from `e`'s start to the end of a negated literal (`-465`), so
/// that the caret spans it; other expressions keep their own length.
inline unsigned literalSpan(const Expr &e) {
  if (e.kind == Expr::Kind::Neg && !e.args.empty() &&
      e.args[0]->loc.line == e.loc.line && e.args[0]->loc.col > e.loc.col)
    return e.args[0]->loc.col - e.loc.col + literalSpan(*e.args[0]);
  return e.length;
}

/// The result of evaluating an expression: tensor values, or a scalar
/// literal not yet given a dtype (it takes its partner's dtype).
struct Operand {
  std::vector<unsigned> values;
  bool isLiteral = false;
  NumberLiteral literal;
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

  /// A literal next to a tensor of `dtype` becomes a constant of `dtype`, if
  /// it fits (lib/Shape/DTypeRules.cpp); `at` is the literal's expression.
  unsigned materialize(const Operand &lit, DType dtype, const Expr &at);

  std::optional<Operand> eval(const Expr &e);

  std::optional<Operand> unary(OpKind kind, const Expr &at, const Expr &arg,
                               unsigned id);

  std::optional<Operand> binary(const Expr &e);

  /// `a @ b`: an error giving the einsum to write instead.
  std::optional<Operand> matmul(const Expr &e);

  /// After a failed broadcast of `culprit` (the operand of lower rank)
  /// against a shape in which one of its dims has several namesakes: a note
  /// with the rearrangements that say which dims it matches.
  void noteBroadcastFix(const Expr &culprit, const Shape &culpritShape,
                        const Shape &otherShape);

  /// Splits call arguments: tensors first, then the pattern string.
  const Expr *patternArg(const Expr &e, size_t index, const char *what);

  std::optional<Pattern> parsePatternAt(const Expr &str, PatternUse use);

  /// After an error in the pattern `patExpr`: when it reads as numpy's
  /// unspaced one-letter axes (`"nd,dk->nk"`) and the spaced form passes
  /// `checks`, a note that gives the spaced form. A pattern whose
  /// multi-letter names are meant is never affected: the note only follows
  /// an error.
  void noteSpacedPattern(
      const Expr &patExpr, PatternUse use,
      const std::function<bool(InferContext &, const Pattern &)> &checks);

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
