// The checker of one function. Its work is split by concern: statements,
// types and results (Checker.cpp), expressions and elementwise arithmetic
// (CheckExpressions.cpp), the arguments of pattern operations
// (CheckPatternOps.cpp), calls of other functions (CheckCalls.cpp); each
// op's call is checked in its family file (lib/Sema/Ops/*.cpp), found
// through the op registry (SurfaceCall).
// Private to lib/Sema.
#pragma once

#include "ein/Sema/Checker.h"
#include "ein/Sema/ProgramBuilder.h"
#include "ein/Shape/DTypeRules.h"

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ein::sema {

inline constexpr const char *kDTypeList =
    "f64, f32, f16, bf16, f8e4m3, f8e5m2, i64, i32, i8, bool";

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
  /// A deferred value that is a tensor once it has a dtype (where with a
  /// tensor condition and number branches), not a number.
  bool deferredHasShape = false;
  /// Neither tensors nor packed shapes: a number, a size or a deferred value.
  bool isScalar() const { return isLiteral || size || deferred; }
};
/// The operations a call can name before the module's functions (call()
/// dispatches them first), in the order the unknown-function error lists:
/// the ops' calls (SurfaceCall), grad, the elementwise table's functions.
const std::vector<std::string> &builtinFunctionNames();

class FunctionChecker;

/// A name that a call in the language builds an op with, and its checker.
struct SurfaceCall {
  const char *name;
  /// The name's place in the unknown-function error's list of built-ins:
  /// the tests pin that order, which is not the registry's. A new op takes
  /// the next number.
  unsigned listedAt;
  std::optional<Operand> (*check)(FunctionChecker &checker, const Expr &call);
};

/// surfaceCallsOfKind(): the calls that build each registry row's op (none
/// for an op the language spells otherwise, such as elementwise or
/// constant), defined in the op's family file (lib/Sema/Ops/<Family>.cpp).
/// A row without its function fails to link, naming it.
#define EIN_OP(Kind, Name, OpClass)                                            \
  const std::vector<SurfaceCall> &surfaceCallsOf##Kind();
#include "ein/Sema/Ops.def"

/// The op call named `name`, or null.
const SurfaceCall *findSurfaceCall(const std::string &name);

/// What the checkers of one module share.
struct ModuleScope {
  /// (file id, name) -> the function a call of `name` in that file means:
  /// one the file defines or imports.
  std::map<std::pair<unsigned, std::string>, const Function *> functions;
  /// The `dim` declarations (of the file and of the files it imports):
  /// shared by every function, so a callee's are the caller's.
  Bindings declaredDims;
  /// CheckOptions::loopsMayStaySymbolic.
  bool loopsMayStaySymbolic = false;
  /// The axes of the file's `mesh` declaration, in order, and its `shard`
  /// rules (dim name -> mesh axis).
  std::vector<std::string> meshAxes;
  std::map<std::string, std::string> shardRules;
};

/// Limits on inlining, so that a deep or exponential call graph is an error
/// rather than exhausting the stack or the memory.
inline constexpr size_t kMaxCallDepth = 64;
inline constexpr size_t kMaxInlinedOps = 100000;

class FunctionChecker {
public:
  FunctionChecker(const Function &fn, const Bindings &dims,
                  const std::set<std::string> &entryNames,
                  const std::set<std::string> &knownNames,
                  DiagnosticEngine &diags,
                  const std::map<std::string, std::set<size_t>> *unitDims,
                  const std::map<std::string, size_t> &packRanks,
                  const ModuleScope &scope)
      : fn(fn), knownNames(knownNames), diags(diags), unitDims(unitDims),
        packRanks(packRanks), scope(scope), out(storage), results(out.results),
        returns(out.returns), anonCounter(anonStorage),
        callStack(callStackStorage) {
    out.name = fn.name;
    out.loc = fn.loc;
    out.ctx.env = dims;
    out.ctx.entryNames = entryNames;
    callStack.push_back(&fn);
  }

  CheckedFunction run();

private:
  /// The checker of `callee`'s body inlined at call site `site` of
  /// `caller`'s function: its ops and values join the caller's.
  FunctionChecker(const Function &callee, FunctionChecker &caller, int site);

  const Function &fn;
  const std::set<std::string> &knownNames;
  DiagnosticEngine &diags;
  /// `#` and anonymous dims that the actual inputs give size 1
  /// (CheckOptions::entryUnitDims).
  const std::map<std::string, std::set<size_t>> *unitDims;
  /// CheckOptions::packRanks.
  const std::map<std::string, size_t> &packRanks;
  const ModuleScope &scope;

  /// Expands `pack` to fresh dims when its rank is given under `key`.
  void fixPackRank(const std::string &pack, const std::string &key);

  /// Types the dim at position `pos` of `shape` (counted with its variadic
  /// expanded) as the constant 1 if it is `#` or anonymous.
  void specialiseUnitDim(Shape &shape, size_t pos);
  /// The function being built: this checker's own, or (for an inlined
  /// callee) the caller's.
  CheckedFunction storage;
  CheckedFunction &out;
  /// The declared result types and the returned values: the function's, or
  /// for an inlined callee, the call's.
  std::vector<TensorType> callResults;
  std::vector<unsigned> callReturns;
  std::vector<TensorType> &results;
  std::vector<unsigned> &returns;
  /// Numbers the fresh names of `_` and `...`, shared with inlined callees
  /// so that theirs are fresh in the caller too.
  unsigned anonStorage = 0;
  unsigned &anonCounter;
  /// The functions being checked, outermost first: a call of one of them
  /// is recursion.
  std::vector<const Function *> callStackStorage;
  std::vector<const Function *> &callStack;

  /// For an inlined callee: its call site (CheckedFunction::callSites), or
  /// -1 for a function checked on its own.
  int callSite = -1;
  /// Set when an argument does not fit its parameter (an error at the call,
  /// not in the callee).
  bool badArgument = false;
  bool inlined() const { return callSite >= 0; }
  /// What the callee's size and variadic names stand for at this call:
  /// the caller's sizes their parameters bind to, or fresh names
  /// (`_call3_d`); the `dim`s of the file are never renamed.
  std::map<std::string, SizeExpr> sizeRenames;
  std::map<std::string, std::string> packRenames;
  /// Sizes known where a type is checked: the function's, or for an inlined
  /// callee the declared dims only (the caller's names mean other things).
  const Bindings &typeEnv() const {
    return inlined() ? scope.declaredDims : out.ctx.env;
  }
  /// Whether `name` names a size rather than a tensor here.
  bool isDimName(const std::string &name) const {
    return dimNames.count(name) || typeEnv().count(name);
  }
  std::string freshName(const std::string &name) const;
  SizeExpr renamedSize(const SizeExpr &size);
  std::string renamedPack(const std::string &pack);
  /// The callee's shape in the caller's names.
  Shape renamedShape(const Shape &shape);
  /// Binds the callee's parameter names to the argument shapes (lone names
  /// to the argument's size; variadics to the dims they cover).
  /// With `products`, binds instead the one unbound name of a product
  /// (`h*d` with h bound) to the argument's size over the rest.
  void bindParameterNames(const Shape &param, const Shape &argument,
                          bool products);
  void bindProductName(const SizeExpr &size, const SizeExpr &argument);
  /// Checks the callee's parameters against the arguments, its body and its
  /// returns; false after an error.
  bool inlineBody(const std::vector<unsigned> &args, const Expr &call);
  /// Whether this function's parameter or result types write a layout (or
  /// name a dim a `shard` rule splits): a call of it is held to them; a
  /// helper with none takes its arguments' layouts as they come.
  bool signatureHasLayouts() const;
  /// Checks the statements of the body; false after an error.
  bool checkBody();

  /// A `for` loop being checked (CheckLoops.cpp), innermost last.
  struct Loop {
    const Stmt *stmt = nullptr;
    std::string var;
    /// The number of iterations, in the names of the function being built.
    SizeExpr count;
    /// The iteration being checked; none in the one symbolic pass over the
    /// body that every loop gets first (so that the body of an empty loop
    /// is checked too).
    std::optional<size_t> iteration;
    /// The tensor names bound before the loop: a value assigned in the
    /// body keeps its type; names first bound in the body end with each
    /// iteration.
    std::map<std::string, unsigned> before;
    /// Per tensor indexed by the loop variable: its rows, one unpack along
    /// its leading axis shared by every iteration.
    std::map<unsigned, std::vector<unsigned>> rows;
    /// Those unpacks: ops of the loop, not of one of its iterations.
    std::set<size_t> loopOps;
    /// "for l in range(layers)", as its diagnostics quote it.
    std::string header() const;
  };
  std::vector<Loop> loops;
  /// Names bound only inside a loop that has ended -> the loop's `for`:
  /// not visible after it (an error that says so).
  std::map<std::string, SourceLoc> loopLocals;
  /// Whether a statement of `body` (nested loops included) binds `name`.
  static bool bindsName(const std::vector<Stmt> &body, const std::string &name);
  /// `for l in range(N):` unrolled into the function, N known when it is
  /// checked; false after an error.
  bool checkFor(const Stmt &stmt);
  /// One pass over the loop's body: the symbolic one, or iteration `i`.
  bool checkLoopPass(Loop &loop, std::optional<size_t> i);
  /// Whether `value` may be assigned to `name` inside the loops being
  /// checked: a name bound before a loop keeps its type (an error at `loc`
  /// otherwise).
  bool keepsLoopType(const std::string &name, SourceLoc loc,
                     const Operand &value, size_t index);
  /// A call of a function of the file (or an imported one), inlined.
  std::optional<Operand> callFunction(const Expr &e, const Function &callee);
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

public:
  // From here on, what an op's checker (SurfaceCall::check, in its family
  // file lib/Sema/Ops/<Family>.cpp) may use: a new op's checker is a free
  // function of these, so that it needs no line in this header.
  DiagnosticEngine &diagnostics() { return diags; }
  /// The function being built (for an inlined callee, the caller's).
  CheckedFunction &function() { return out; }
  /// Whether `name` names a value of this function (a parameter's or an
  /// assignment's).
  bool isTensorName(const std::string &name) const {
    return vars.count(name) != 0;
  }
  /// Whether `name` is a variadic of this function (`*b`).
  bool isPackName(const std::string &name) const {
    return packNames.count(name) != 0;
  }
  /// A size or shape written in this function's text, in the names of the
  /// function being built: an inlined callee's are the caller's.
  SizeExpr builtSize(const SizeExpr &written) {
    return inlined() ? renamedSize(written) : written;
  }
  Shape builtShape(const Shape &written) {
    return inlined() ? renamedShape(written) : written;
  }

  const TensorType &typeOf(unsigned id) const { return out.values[id].type; }
  /// The axes of the file's `mesh` (empty without one).
  const std::vector<std::string> &moduleMeshAxes() const {
    return scope.meshAxes;
  }

  std::optional<TensorType> checkType(const TypeAnnotation &t);

  /// Reports a ShapeError at the place its anchor names in `call`.
  void report(const ShapeError &e, const Expr &call, const Expr *patternExpr);

  /// The builder of this function's ops (ProgramBuilder.h: each op's shape
  /// and dtype rule), its ops located at `at`; an inlined callee's ops get
  /// their call site once the call is checked (CheckCalls.cpp).
  ProgramBuilder builder(SourceLoc at) {
    ProgramBuilder b(out);
    b.setOrigin(BuildOrigin{at});
    return b;
  }
  /// The value built by an op that names an axis in a string (take,
  /// slice), or nullopt after reporting why not: an error about the axis
  /// under the whole string `axis`, as written, any other where its anchor
  /// points in `call` (report()).
  std::optional<unsigned> builtAlong(BuildOr<unsigned> value, const Expr &call,
                                     const Expr &axis) {
    if (value)
      return *value;
    const ShapeError &why = value.error().error;
    if (why.anchor == ShapeError::Anchor::Pattern)
      diags.error(axis.loc, why.message, axis.length);
    else
      report(why, call, nullptr);
    return std::nullopt;
  }

  bool checkStmt(const Stmt &stmt);

  std::optional<unsigned> tensorOf(const Expr &e);

  std::optional<SizeExpr> sizeOf(const Expr &e);

  /// One tensor value: not a number, a size, packed shapes or a tuple.
  bool isSingleTensor(const Operand &o) const {
    return !o.isScalar() && o.values.size() == 1 &&
           !out.values[o.values[0]].isPackedShapes;
  }
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
  /// Tensor names a deferred value bound to a name reads (`c` of
  /// `m = where(c, 0.0, -1e9)`) -> that value's name: they cannot be
  /// reassigned, or the value would change silently.
  std::map<std::string, std::string> readByDeferred;
  void pinTensorsReadBy(const Expr &e, const std::string &valueName);
  /// Whether `name` may be assigned: not a dim, not a name of scalarVars
  /// (an error at `loc` otherwise).
  bool assignable(const std::string &name, SourceLoc loc);

  /// A literal next to a tensor of `dtype` becomes a constant of `dtype`, if
  /// it fits (lib/Shape/DTypeRules.cpp); `at` is the literal's expression.
  /// A size becomes a constant when its value is known, else an op that
  /// reads it at run time (OpKind::Size).
  std::optional<unsigned> materialize(const Operand &lit, DType dtype,
                                      const Expr &at);

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

  /// After the builder refused the pattern `patExpr`: when it reads as
  /// numpy's unspaced one-letter axes (`"nd,dk->nk"`) and the spaced form
  /// builds (BuildError::spaced), a note that gives the spaced form. A
  /// pattern whose multi-letter names are meant is never affected: the note
  /// only follows an error.
  void noteSpacedPattern(const BuildError &error, const Expr &patExpr);

  /// `acc=DTYPE` as written (einsum and reduce): the dtype, and the
  /// expression that names it.
  struct AccArg {
    std::optional<DType> dtype;
    const Expr *at = nullptr;
  };
  /// Reads `acc=` of `e`, an op of `kind`; nullopt after an error.
  std::optional<AccArg> accArg(const Expr &e, OpKind kind);
  /// Reports the builder's refusal of `call`: a dtype error of acc= under
  /// acc's value, one of reduce's operand under its reduction
  /// (`reduction`), any other where its anchor points (report()).
  void reportBuild(const BuildError &error, const Expr &call,
                   const Expr *patternExpr, const AccArg &acc,
                   const Expr *reduction = nullptr);

  std::optional<std::vector<SizeArg>> sizeArgs(const Expr &e);

  std::optional<Operand> call(const Expr &e);
  /// `w[l]`: the row `l` of a stacked tensor, `l` the variable of an
  /// enclosing loop (CheckLoops.cpp).
  std::optional<Operand> indexed(const Expr &e);
  /// Whether every constant size of the tensors `o` holds is one compiled
  /// code takes (kMaxDimSize); an error at the call `e` if not (a pattern's
  /// `n -> n 4611686018427387904`, a keyword size, a merge of two).
  bool checkCompiledSizes(const Operand &o, const Expr &e);

  /// ", or a function of this file such as 'norm'" for the functions a
  /// typo away from `name`; empty when there is none.
  std::string closeFunctionNames(const std::string &name) const;

private:
  /// grad(loss, wrt=[w1, w2]): the backward ops appended (Autodiff.h).
  std::optional<Operand> grad(const Expr &e);
};

} // namespace ein::sema
