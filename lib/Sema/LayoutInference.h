// Layout inference's state while it walks a function's ops, the helpers the
// ops' rules share, and the rule of each registry row (layoutOfKind).
// Private to lib/Sema.
#pragma once

#include "ein/Sema/Program.h"

#include <optional>
#include <string>
#include <vector>

namespace ein {

class LayoutInference {
public:
  LayoutInference(CheckedFunction &fn, const std::vector<std::string> &mesh);

  /// Walks the ops, then holds the results to their declared types.
  std::optional<LayoutError> run();

  CheckedFunction &fn;
  const std::vector<std::string> &mesh;

  /// The layout of `value` as an op reads it: pending partial results are
  /// all-reduced first (the collective follows the op that made them), so
  /// that every op but the ones that keep them sees whole values.
  const ValueLayout &operand(unsigned value);
  /// The layout without resolving anything.
  const ValueLayout &peek(unsigned value) const { return now[value]; }
  void setResult(unsigned value, ValueLayout layout);
  /// A replicated layout of `value`'s rank.
  ValueLayout replicatedOf(unsigned value) const;
  /// The dims of `value`'s type, variadics expanded.
  Shape shapeOf(unsigned value) const;

  /// An error at `op`; returns false.
  bool fail(const CheckedOp &op, std::string message);
  /// "<op> of a value sharded on <axis> is not supported yet": an op whose
  /// rule has no case for a sharded operand refuses it by name.
  bool unsupported(const CheckedOp &op, const std::string &axis,
                   const std::string &detail = "");
  /// The first mesh axis any of `op`'s operands is split along or has
  /// pending results over, or "".
  std::string shardedAxisOf(const CheckedOp &op) const;

  /// The rule of ops that map elementary axes (rearrange, reduce, repeat,
  /// einsum): an operand dim split on `a` splits its major (first)
  /// elementary axis on `a`; a result dim whose major axis is split keeps
  /// the split; a split axis summed away leaves results pending over `a`
  /// (`reduction`: sum, max or min; other reductions are refused); a split
  /// axis that a rearrange moves off the major position of a result dim
  /// is an all-to-all (the split moves to that dim's major axis) when that
  /// axis divides into the blocks, else an all-gather.
  bool throughAxes(
      const CheckedOp &op,
      const std::vector<std::vector<std::vector<std::string>>> &inputGroups,
      const std::vector<std::vector<std::string>> &outputGroups,
      const std::map<std::string, SizeExpr> &axisSizes, ReduceKind reduction);
  /// The rule of elementwise ops: operands broadcast by name; a dim keeps
  /// its split, a replicated operand is sliced locally where another is
  /// split; operands split along different axes are an error.
  bool elementwise(const CheckedOp &op);
  /// The result keeps operand `from`'s layout (cast, dropout).
  bool keep(const CheckedOp &op, unsigned from);

  /// Records a collective on `value` after op `afterOp`.
  void record(CollectiveKind kind, const std::string &axis, unsigned value,
              int afterOp, ReduceKind reduction, const ValueLayout &local,
              std::string reason);
  /// The elements of `value`'s block per rank under `layout`.
  /// Records the all-gather over `axis` of op `op`'s operand before it
  /// (a repeat's or reduce's moved split, a var over a split dim; pack's
  /// `operand`-th tensor): the op runs on the whole operand; the
  /// collective's S is the gathered operand.
  void gatherOperandFirst(const CheckedOp &op, const std::string &axis,
                          unsigned result, const ValueLayout &out,
                          std::string reason, unsigned operand = 0);
  SizeExpr localElements(unsigned value, const ValueLayout &layout) const;
  /// The size of mesh axis `axis`, if known.
  std::optional<Int> axisSize(const std::string &axis) const;

  /// "reshard": the op being walked, for messages.
  size_t current = 0;
  std::vector<int> producer; // value id -> op index, -1 for parameters

private:
  std::optional<LayoutError> error;
  /// Each value's layout at the op being walked: fn.layouts keeps it as its
  /// op made it (partial results pending), `now` as later ops read it.
  std::vector<ValueLayout> now;
  bool holdToDeclared(unsigned value, const TensorType &declared, SourceLoc loc,
                      const std::string &what, bool exact);
};

/// layoutOfKind(inference, op): the layout rule of each registry row,
/// defined in the op's family file (lib/Sema/Ops/<Family>.cpp): it reads its
/// operands' layouts and sets its results'. A row without its rule fails to
/// link, naming it.
#define EIN_OP(Kind, Name, OpClass)                                            \
  bool layoutOf##Kind(LayoutInference &li, const CheckedOp &op);
#include "ein/Sema/Ops.def"

} // namespace ein
