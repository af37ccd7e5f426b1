// The checked program: every value typed, every op with its inferred structure.
#pragma once

#include "ein/Sema/Layout.h"
#include "ein/Shape/Elementwise.h"
#include "ein/Shape/Infer.h"
#include "ein/Syntax/Diagnostics.h"

#include <optional>
#include <string>
#include <vector>

namespace ein {

/// Operations of the language, after checking.
/// Every op kind, one per row of Ops.def (the op registry).
enum class OpKind {
#define EIN_OP(Kind, Name, OpClass) Kind,
#include "ein/Sema/Ops.def"
};
/// The number of op kinds (rows of Ops.def).
inline constexpr unsigned kNumOpKinds = 0
#define EIN_OP(Kind, Name, OpClass) +1
#include "ein/Sema/Ops.def"
    ;
/// "rearrange", "elementwise", ...
const char *opKindName(OpKind kind);
/// The name reports show: the op kind, or an elementwise op's function
/// ("add", "silu").
const char *opName(OpKind kind, ElementwiseFn fn);

/// Where an op belongs in a training step (grad(), Sema/Autodiff.h): the
/// forward pass, or the backward pass, computing the gradient of a value
/// that is not differentiated for (a data gradient: an activation's) or of
/// one that is (a weight gradient: a `wrt` value's), or a forward value
/// computed again for the backward instead of being saved (recompute).
enum class GradPhase { Forward, DataGrad, WeightGrad, Recompute };
/// "forward", "data-grad", "weight-grad", "recompute".
const char *gradPhaseName(GradPhase phase);

/// A value: a tensor, or the packed shapes returned by `pack` (`ps`).
struct Value {
  TensorType type;
  std::string name; // source name if any
  bool isPackedShapes = false;
  std::vector<Shape> parts; // for packed shapes
};

struct CheckedOp {
  OpKind kind;
  ElementwiseFn fn = ElementwiseFn::Add; // Elementwise: which function
  SourceLoc loc;
  std::string pattern;        // the pattern text as written
  Pattern parsed;             // for pattern ops
  std::vector<SizeArg> sizes; // keyword sizes
  ReduceKind reduction = ReduceKind::Sum;
  std::optional<DType> acc;   // einsum accumulation/result type
  double constant = 0;        // Constant (the value for a float dtype)
  bool constantIsInt = false; // written as an integer
  int64_t constantInt = 0;    // the exact value for an integer dtype
  SizeExpr sizeValue;         // Size, Arange: the size, in the function's dims
  /// Slice: the dim sliced (counted from the end when negative: a variadic
  /// of unknown rank precedes it) and the bounds, in the function's dims.
  int64_t sliceAxis = 0;
  SizeExpr sliceStart, sliceStop;
  std::vector<unsigned> operands, results; // value ids
  std::vector<Shape> packParts;            // Pack/Unpack: the `*` parts
  std::optional<TransformInfo> transform;  // rearrange/reduce/repeat
  std::optional<EinsumInfo> einsum;
  unsigned axis = 0; // Take, TakeAlong, ScatterAdd: the axis the ids index
  /// A rearrange written as reshard(x, "b@dp s d"): the identity pattern,
  /// and the layout it forces, per dim (a mesh axis or "" for replicated).
  /// Layout inference gives its result that layout and records the
  /// collectives between the two; everything else sees a rearrange (a
  /// view), so reshard needs no op of its own.
  std::optional<std::vector<std::string>> reshardTo;
  /// ProgramBuilder::build's result dtype for an op whose operands do not
  /// give it (Constant, Size, Arange, Cast; Pack without parts). The typed
  /// methods take it as an argument and leave this unset.
  std::optional<DType> dtype;
  /// The innermost call this op was inlined from (an index into
  /// CheckedFunction::callSites), or -1 for an op of the function itself.
  int callSite = -1;
  /// A backward op (grad()): its phase, and the value whose gradient it
  /// computes (a contribution to it, or a step towards one).
  GradPhase phase = GradPhase::Forward;
  int gradOf = -1;
  /// Whether the op checks values at run time into the function's index
  /// status: take and take_along count their ids out of range (operand 1
  /// is the ids), a dropout with a run-time p counts 1 when p is outside
  /// [0, 1) (checksDropoutRate; operand 2 is p).
  bool checksIds() const;
  bool checksDropoutRate() const;
};

/// One call of a function by another, inlined by the checker: the callee's
/// ops join the caller's, each remembering its call (CheckedOp::callSite).
/// One iteration of an unrolled `for` loop is a call site too: its callee
/// is the loop as written (`for l in range(layers)`), its loc the `for`.
struct CallSite {
  std::string callee;
  SourceLoc loc;   // the call, in the caller
  int parent = -1; // the call this one is inside, or -1
  /// The loop iteration (the loop variable's value), or -1 for a call.
  int64_t iteration = -1;
};

struct CheckedFunction {
  std::string name;
  SourceLoc loc;
  std::vector<unsigned> params; // value ids
  std::vector<TensorType> results;
  std::vector<unsigned> returns; // value ids
  std::vector<Value> values;
  std::vector<CheckedOp> ops;
  std::vector<CallSite> callSites;
  /// The values differentiated for by grad() (its `wrt`, each once): the
  /// parameters of a training step.
  std::vector<unsigned> gradWrt;
  /// The losses grad() differentiated.
  std::vector<unsigned> gradLosses;
  InferContext ctx; // bindings, packs, entry constraints of this function
  /// Layout inference (ein/Sema/Layout.h), in a module with a mesh: each
  /// value's layout (by id) as its op made it (partial results pending
  /// until a collective completes them), the collectives it put in, and the
  /// layouts the
  /// calls' parameter and result types demand (recorded when inlining).
  std::vector<ValueLayout> layouts;
  std::vector<InferredCollective> collectives;
  std::vector<LayoutDemand> layoutDemands;
  /// The `for` loops whose count was not known, checked but not unrolled
  /// (CheckOptions::loopsMayStaySymbolic): where each is, and the error
  /// that compiling the function gives. Such a function is never compiled.
  std::vector<std::pair<SourceLoc, std::string>> symbolicLoops;
  /// The calls `op` was inlined from, outermost first (empty for an op of
  /// the function itself).
  std::vector<int> callPath(const CheckedOp &op) const;
  /// Whether the compiled function reports an index status (it has a take):
  /// its C interface then has one more output, an i64 memref<1> counting
  /// the ids out of range (ein-to-linalg's addIndexStatus, then the host
  /// calling convention), and its CUDA entry waits to read its count.
  bool hasIndexStatus() const;
};

struct CheckedModule {
  std::string path;
  /// The paths of the files imported, by SourceLoc::file (0 is `path`).
  std::vector<std::string> files;
  /// The path of the file `loc` is in.
  const std::string &pathOf(SourceLoc loc) const;
  Bindings dims; // `dim` declarations and --dim overrides
  /// The axes of the file's `mesh`, in order (docs/distributed.md); empty
  /// for a program without one. Lowering refuses a module that has them
  /// until sharded programs lower.
  std::vector<std::string> meshAxes;
  std::vector<CheckedFunction> functions;
  const CheckedFunction *find(const std::string &name) const;
};

} // namespace ein
