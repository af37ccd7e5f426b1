// Layouts of a sharded program's values and the collectives they imply
// (docs/distributed.md §3): what layout inference gives each value and op.
#pragma once

#include "ein/Shape/Infer.h"
#include "ein/Syntax/Diagnostics.h"

#include <optional>
#include <string>
#include <vector>

namespace ein {

struct CheckedFunction;

/// The collectives ein infers or runs. The front end names them (layout
/// inference); the cost model (ein/Analysis/Collectives.h) prices them.
enum class CollectiveKind {
  AllReduce,
  AllGather,
  ReduceScatter,
  AllToAll,
  Broadcast
};

/// "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "broadcast".
const char *collectiveName(CollectiveKind kind);

/// A value's layout over the mesh: per dim of its type (variadics
/// expanded), the mesh axis it is split along ("" for replicated), and the
/// mesh axes over which each rank holds only a partial result (a sum, max
/// or min over its block of a sharded dim) that an all-reduce completes.
struct ValueLayout {
  std::vector<std::string> dims;
  std::vector<std::string> pending;
  ReduceKind pendingKind = ReduceKind::Sum;
  /// What made the partial results ("einsum sums f@tp"), for messages.
  std::string pendingWhy;
  bool sharded() const;
  bool replicated() const { return !sharded() && pending.empty(); }
};

/// One collective layout inference put into the program: after op
/// `afterOp` (-1: on a parameter, before the first op), on value `value`.
struct InferredCollective {
  CollectiveKind kind;
  std::string axis;                       // the mesh axis: the group
  ReduceKind reduction = ReduceKind::Sum; // all-reduce, reduce-scatter
  unsigned value = 0;
  int afterOp = -1;
  /// An all-gather run on an operand of op `afterOp` before it (a
  /// repeat's or reduce's moved split, a var, a take_along, dropout, a
  /// split `*` part of pack or unpack): which operand.
  unsigned operand = 0;
  SourceLoc loc;
  /// nccl-tests' size S in elements, per rank: the all-reduced buffer, the
  /// gathered result, the reduce-scatter's input, the all-to-all's buffer
  /// (the value's local block, with the dims split on other axes local).
  SizeExpr elements;
  DType dtype = DType::F32;
  /// Why ("einsum sums f@tp", "reshard drops f@tp").
  std::string reason;
};

/// A declared layout a value must have at a point of the op sequence: a
/// call's argument (before the first op of the call) or its result (after
/// its last forward op), from the callee's parameter and result types. The
/// call is named by its call site, not by an op's index: grad() inserts ops
/// (contraction chains, recomputations) after the check.
struct LayoutDemand {
  unsigned value = 0;
  TensorType declared;
  int callSite = -1; // CheckedFunction::callSites
  bool result = false;
  SourceLoc loc;    // the call
  std::string what; // "argument 2 of 'mlp'", "result 1 of 'mlp'"
};

/// A layout error: where, what, and the caret's length.
struct LayoutError {
  SourceLoc loc;
  std::string message;
  unsigned length = 1;
};

/// Infers every value's layout of `fn` (a function of a module whose mesh
/// has `meshAxes`), op by op through each op's rule (layoutOfKind, beside
/// its other rules in lib/Sema/Ops), and records the collectives in
/// fn.layouts and fn.collectives (replacing earlier ones: run it again
/// after appending a gradient). The function's results and its calls'
/// arguments and results are held to their declared layouts: partial
/// results are all-reduced (reduce-scattered where the declared type splits
/// another dim on the axis); a value split where its declared type is
/// replicated is an error. Returns the first error.
std::optional<LayoutError> inferLayouts(CheckedFunction &fn,
                                        const std::vector<std::string> &mesh);

/// "b@dp s f@tp" (+ " (partial sum over tp)"): a value's layout written on
/// its shape, as a type would spell it.
std::string layoutStr(const Shape &expanded, const ValueLayout &layout);
/// A dim as written without the type's layout ("f", not "f@tp").
std::string bareDimStr(const Dim &d);

} // namespace ein
