// Private interface between the files of the ein-to-linalg pass.
#pragma once

// ein-to-linalg is an MLIR dialect conversion, one file per concern, the op
// patterns one file per op family (the families of lib/Sema/Ops/):
//   EinToLinalg.cpp   the pass: target, type converter, signature pattern
//   Sizes.cpp         FunctionSizes: entry reads, sizes as index arithmetic
//   Builders.cpp      OpLowering: reshapes, linalg.generic, element casts
//   Transforms.cpp    rearrange, reduce, repeat
//   Contractions.cpp  einsum
//   Pack.cpp          pack, unpack
//   Elementwise.cpp   the elementwise functions, astype (ein.cast)
//   Values.cpp        constant, size, arange
//   Indexing.cpp      take (and the function's index status), slice,
//                     scatter_add (take's gradient)

#include "ein/Dialect/EinDialect.h"
#include "ein/Shape/SizeExpr.h"
#include "ein/Shape/SizeReads.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/Transforms/DialectConversion.h"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace ein::lowering {

using mlir::Location;
using mlir::OpBuilder;
using mlir::OpFoldResult;
using mlir::RankedTensorType;
using mlir::Type;
using mlir::Value;

bool isLowPrecisionFloat(Type t);

/// The builtin type of `!ein.tensor` type `t`: a dim is static where `env`
/// binds every name of its size, dynamic (`?`) elsewhere. Fails on a
/// variadic dim or a size beyond kMaxDimSize, with an error on `at` when given
/// (the type converter passes none: it cannot report, so the patterns check the
/// types they convert first, with the diagnostics the lit tests expect).
mlir::FailureOr<RankedTensorType>
convertTensorType(EinTensorType t, const Bindings &env, mlir::Operation *at);

/// The sizes of one function being lowered: the names read from its
/// arguments at the entry, each size expression built as index arithmetic
/// once, and the sizes of the values the lowering built.
///
/// Patterns are meant to be stateless, but these sizes must not be: a size is
/// read once at the entry (not once per op that needs it), and every
/// expression is one SSA value so that equal sizes compare equal and a
/// reshape between equal shapes is skipped. So the pass owns one
/// `FunctionSizes` per function (`LoweringState`), the function signature
/// pattern fills it when it converts the signature (the entry block then
/// has the converted arguments to read from), and the op patterns, which
/// run after it on the ops of that block in order, take their sizes from it.
/// Its values stay valid: a pattern's ops are only rolled back when the
/// pattern fails, and then the whole conversion fails with it.
class FunctionSizes {
public:
  explicit FunctionSizes(const Bindings &env) : env(env) {}

  const Bindings &getEnv() const { return env; }

  /// The static size of `e` when it evaluates with the module's dims;
  /// kDynamic when it has free names (an error only beyond kMaxDimSize).
  mlir::FailureOr<int64_t> staticSize(const SizeExpr &e, mlir::Operation *at);
  /// `convertTensorType` of an ein type, reporting on `at`.
  mlir::FailureOr<RankedTensorType> tensorType(Type einType,
                                               mlir::Operation *at);

  /// Plans where each free name of `einParams` (the function's parameter
  /// types before conversion) is read from (`planSizeReads`); fails naming a
  /// name that cannot be read (it appears only inside a product of free
  /// names). Called before the function changes, so that the error shows it
  /// as it was.
  mlir::LogicalResult planReads(mlir::func::FuncOp fn,
                                llvm::ArrayRef<Type> einParams);
  /// Reads the planned names from the shapes of `arguments` (`tensor.dim` at
  /// `b`'s insertion point, the entry), and records the arguments' sizes.
  mlir::LogicalResult readSizes(OpBuilder &b, mlir::func::FuncOp fn,
                                llvm::ArrayRef<Type> einParams,
                                mlir::ValueRange arguments);

  /// `e` as an index: an attribute when static, else arithmetic on the
  /// names read at the entry, built once per expression.
  mlir::FailureOr<OpFoldResult> materialize(OpBuilder &b, Location loc,
                                            const SizeExpr &e,
                                            mlir::Operation *at);
  /// The sizes of a value of ein type `einType` (a parameter, a result).
  mlir::FailureOr<llvm::SmallVector<OpFoldResult>>
  typeSizes(OpBuilder &b, Location loc, Type einType, mlir::Operation *at);

  /// The sizes `v` was built with, if the lowering built it (or it is an
  /// argument); null otherwise.
  const llvm::SmallVector<OpFoldResult> *knownSizes(Value v) const;
  void setKnownSizes(Value v, llvm::ArrayRef<OpFoldResult> sizes);

private:
  mlir::FailureOr<Value> materializeTerms(OpBuilder &b, Location loc,
                                          const SizeExpr &e,
                                          mlir::Operation *at);

  const Bindings &env;
  std::vector<SizeRead> reads;               // planned by planReads
  std::map<std::string, Value> symbols;      // names read at the entry
  std::map<std::string, Value> materialized; // size expression -> its value
  /// The sizes of values this lowering built, as it built them.
  llvm::DenseMap<Value, llvm::SmallVector<OpFoldResult>> known;
};

/// What the patterns share across one run of the pass: the module's dims
/// and the sizes of each function (see `FunctionSizes` for why patterns hold
/// a reference to it rather than recomputing).
class LoweringState {
public:
  explicit LoweringState(Bindings env) : env(std::move(env)) {}
  const Bindings &getEnv() const { return env; }
  /// The sizes of the function enclosing `op` (or of `op`, a function),
  /// created empty on first use (a function without parameters reads
  /// nothing).
  FunctionSizes &sizesOf(mlir::Operation *op);

private:
  Bindings env;
  llvm::DenseMap<mlir::Operation *, std::unique_ptr<FunctionSizes>> functions;
};

// Index arithmetic on sizes (Sizes.cpp): constants fold, values build arith.
Value indexConstant(OpBuilder &b, Location loc, int64_t v);
/// An id (i32 sign-extended, or i64) as an index clamped into [0, last]:
/// where take reads and scatter_add writes, so that a bad id never reaches
/// outside the tensor.
Value clampedIndex(OpBuilder &b, Location loc, Value id, Value last,
                   Value zero);
Value asIndexValue(OpBuilder &b, Location loc, OpFoldResult v);
bool isStaticSize(OpFoldResult v, int64_t n);
OpFoldResult mulSizes(OpBuilder &b, Location loc, OpFoldResult x,
                      OpFoldResult y);
OpFoldResult addSizes(OpBuilder &b, Location loc, OpFoldResult x,
                      OpFoldResult y);

/// An operand of a generic: a value and the elementary axis of each dim; an
/// empty name is a dim of size 1, read at index 0 (a broadcast).
struct Indexed {
  Value value;
  std::vector<std::string> axes;
};

/// A result's type and sizes (attributes where static).
struct ResultShape {
  RankedTensorType type;
  llvm::SmallVector<OpFoldResult> sizes;
};

/// Builds the linalg of one op (Builders.cpp): reshapes between an op's
/// dims and its elementary axes, generics, element casts. One per pattern
/// application; it holds the op's axis sizes and builds with the pattern's
/// rewriter.
class OpLowering {
public:
  OpLowering(OpBuilder &b, FunctionSizes &sizes) : b(b), sizes(sizes) {}

  /// The type and sizes of each result of `op` (sizes built before the op's
  /// own ops); reports on `op`.
  mlir::FailureOr<llvm::SmallVector<ResultShape>>
  resultShapes(mlir::Operation *op);

  /// Binds the sizes of the op's elementary axes.
  mlir::LogicalResult bindAxes(const std::map<std::string, SizeExpr> &axes,
                               mlir::Operation *at);
  const OpFoldResult &axisSize(const std::string &a) const {
    return axisSizes.at(a);
  }
  bool isUnitAxis(const std::string &a) const {
    return isStaticSize(axisSize(a), 1);
  }
  /// Elementary axes of a group list, with size-1 axes dropped.
  std::vector<std::string>
  flatten(const std::vector<std::vector<std::string>> &groups) const;
  llvm::SmallVector<OpFoldResult>
  sizesOf(const std::vector<std::string> &axes) const;

  OpFoldResult index(int64_t v) { return b.getIndexAttr(v); }
  Value asValue(Location loc, OpFoldResult v) {
    return asIndexValue(b, loc, v);
  }
  OpFoldResult mul(Location loc, OpFoldResult x, OpFoldResult y) {
    return mulSizes(b, loc, x, y);
  }
  OpFoldResult add(Location loc, OpFoldResult x, OpFoldResult y) {
    return addSizes(b, loc, x, y);
  }
  static RankedTensorType typeOf(llvm::ArrayRef<OpFoldResult> shape,
                                 Type element);

  /// Reshapes `v` by merging runs of its dims: target dim j is the product
  /// of source dims `targets[j]` (see Builders.cpp).
  Value regroup(Location loc, Value v,
                const std::vector<std::vector<int64_t>> &targets,
                llvm::ArrayRef<OpFoldResult> targetSizes);
  /// Splits dims of `v` (`tensor.expand_shape`, or `tensor.reshape`).
  Value expandDims(Location loc, Value v,
                   llvm::ArrayRef<mlir::ReassociationIndices> groups,
                   llvm::ArrayRef<OpFoldResult> sizes);
  /// Regroups a value whose dims are the elementary axes `axes` ("" for a
  /// dim of size 1) into the dims `groups` (lists of elementary axes).
  Value regroupAxes(Location loc, Value v, const std::vector<std::string> &axes,
                    const std::vector<std::vector<std::string>> &groups,
                    llvm::ArrayRef<OpFoldResult> targetSizes);
  /// An operand with one dim per elementary axis (splits only: a view).
  Indexed elementary(Location loc, Value v,
                     const std::vector<std::vector<std::string>> &groups);

  /// Builds a linalg.generic over `loops`; `body` maps block arguments (one
  /// per input, then the output's current value) to the yielded value.
  Value generic(
      Location loc, const std::vector<std::string> &loops,
      const std::vector<Indexed> &inputs,
      const std::vector<std::string> &outAxes, Value init,
      const std::set<std::string> &reductions,
      llvm::function_ref<Value(OpBuilder &, Location, mlir::ValueRange)> body);
  Value emptyTensor(Location loc, llvm::ArrayRef<OpFoldResult> shape,
                    Type element);
  Value filled(Location loc, llvm::ArrayRef<OpFoldResult> shape, Type element,
               mlir::TypedAttr value);
  /// An elementwise map of `v` to element type `to` (identity shapes).
  Value mapElements(Location loc, Value v, Type to,
                    llvm::function_ref<Value(OpBuilder &, Location, Value)> f);

  /// A scalar converted to `to` (ein's `astype`: saturating float to int).
  /// An i8 here is ein's signed `i8`; a bool (stored as i8, 0 or 1) is named
  /// by its ein type i1 in `einFrom` / `to` (castElement, castTensor).
  Value cast(Location loc, Value v, Type to);
  /// `v` (stored as `einFrom` is: i1 as i8) converted to the ein type `to`.
  Value castElement(Location loc, Value v, Type einFrom, Type to);
  Value castTensor(Location loc, Value v, Type einFrom, Type to);
  Value castTensor(Location loc, Value v, Type to);

  /// The identity of a reduction on element type `t`.
  mlir::TypedAttr identity(ReduceKind kind, Type t);
  /// Reductions may be reassociated (and multiply-adds contracted into
  /// FMAs) so that LLVM vectorizes them; results stay within the tests'
  /// tolerances, as with any BLAS.
  static mlir::arith::FastMathFlags reductionMath();
  Value combine(OpBuilder &nb, Location loc, ReduceKind kind, Value acc,
                Value x);

  OpBuilder &b;
  FunctionSizes &sizes;

private:
  Value saturatingFPToSI(Location loc, Value v, Type to);

  std::map<std::string, OpFoldResult> axisSizes;
};

/// The base of the op patterns: an `OpConversionPattern` holding the pass's
/// state.
template <typename OpT>
class EinPattern : public mlir::OpConversionPattern<OpT> {
public:
  EinPattern(const mlir::TypeConverter &converter, mlir::MLIRContext *context,
             LoweringState &state)
      : mlir::OpConversionPattern<OpT>(converter, context), state(state) {}

protected:
  LoweringState &state;
};

/// Replaces `op` by `values`, or reports "cannot lower this op to linalg" on
/// it when the lowering failed (the lowering's own error comes first).
mlir::LogicalResult
replaceOrReport(mlir::ConversionPatternRewriter &rewriter, mlir::Operation *op,
                mlir::FailureOr<llvm::SmallVector<Value>> values);

/// populateFooLowering adds ein.foo's conversion patterns: one function per
/// row of the op registry (include/ein/Sema/Ops.def), defined in the op
/// family's file, and called for every row by the pass (EinToLinalg.cpp), so
/// a new op's lowering is its file alone and a row without its function
/// fails to link, naming it.
#define EIN_OP(Kind, Name, OpClass)                                            \
  void populate##Kind##Lowering(mlir::RewritePatternSet &patterns,             \
                                const mlir::TypeConverter &converter,          \
                                LoweringState &state);
#include "ein/Sema/Ops.def"

/// Marks the generic of a take that counts its ids out of range.
inline constexpr llvm::StringLiteral kIndexCountAttr = "ein.index_count";
/// After the conversion: a function marked kIndexStatusAttr returns one
/// more value, the sum of its kIndexCountAttr counts as a tensor<1xi64>.
void addIndexStatus(mlir::func::FuncOp fn);

} // namespace ein::lowering
