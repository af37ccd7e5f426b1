// The local program of a sharded run (docs/distributed.md §4): which dim
// names are split, whether the function can run on blocks with one binding
// per name, and where its collectives run.
#pragma once

#include "ein/Sema/Layout.h"
#include "ein/Sema/Program.h"
#include "ein/Support/Error.h"

#include <map>
#include <string>
#include <vector>

namespace ein {

/// A sharded run's error at `loc` of `m`'s source (a refusal, by name).
Error shardedError(const CheckedModule &m, SourceLoc loc, std::string what);

/// Whether value `id`'s layout splits a dim through `name` (a lone name,
/// or the major factor of a split composition).
bool splitAlong(const CheckedFunction &fn, unsigned id,
                const std::string &name);

/// The local program is the function itself with every split name bound to
/// its block's size: sound only when a name split on an axis is split on it
/// in every value that has it (or the value is the same at every position
/// along it and only meets split values position by position: elementwise,
/// or in a pack's dims outside its `*` part), and nothing reads a
/// split size as a number but `size` (folded to the whole's by the caller).
/// Returns the split names (name -> axis), or why the program cannot be run
/// that way, by name, at the op or value.
ErrorOr<std::map<std::string, std::string>>
splitNames(const CheckedModule &m, const CheckedFunction &fn);

/// The names a `reshard` or a rearrange gathers whole, by an all-gather or
/// an all-to-all (name -> the op's index):
/// split in the values made before it, whole in the values it and later
/// ops make. The local program binds such a name to its block's size up
/// to the reshard and to its whole size after it. Refused by name: an
/// all-gather of a dim that is not a lone name, a name gathered twice, and
/// (by splitNames) a value split along it made or read after the gather.
ErrorOr<std::map<std::string, size_t>> gatheredNames(const CheckedModule &m,
                                                     const CheckedFunction &fn);

/// A reshard's all-gather or all-to-all: the collectives a sharded run
/// runs between parts besides the reductions.
bool reshardMoves(const CheckedFunction &fn, const InferredCollective &c);
/// Whether `c` is a rearrange's all-gather or all-to-all, or the
/// all-gather of a repeat, reduce, take_along, dropout, pack or unpack (not
/// a `reshard`'s): it runs on the op's operand (c.operand)
/// before the op, whose local result is then the block of its result (a
/// part starts at the op).
bool movesOperand(const CheckedFunction &fn, const InferredCollective &c);
/// The value `c` (a reshard's or a rearrange's all-gather or all-to-all)
/// moves: the reshard's result, or the rearrange's operand.
unsigned movedValue(const CheckedFunction &fn, const InferredCollective &c);
/// Whether `op` is a take from a table split along the ids' axis (a
/// vocab-parallel lookup, as Megatron's embedding): each rank takes the
/// rows its block holds, zeros for the other ids, and layout inference's
/// all-reduce sums them. The run takes it on the host (the compiled take
/// would refuse the other blocks' ids).
bool vocabParallel(const CheckedFunction &fn, const CheckedOp &op);
/// The first op of the phase a gather or split at op `at` (gatheredNames,
/// scatteredNames) starts: the op after a reshard, a rearrange itself.
size_t phaseStart(const CheckedFunction &fn, size_t at);

/// The dim of movedValue(c) that the all-gather or all-to-all `c` gathers
/// (split on c's axis before it, whole after).
size_t gatheredDim(const CheckedFunction &fn, const InferredCollective &c);
/// The dim of movedValue(c) that the all-to-all `c` splits (whole before
/// it): for a rearrange, the operand's lone dim whose axis becomes the
/// major factor of the result dim split after it; the rank when none.
size_t scatteredDim(const CheckedFunction &fn, const InferredCollective &c);

/// A split a `reshard` adds to a dim its operand has whole (no all-to-all
/// moves one there): no communication, each rank keeps its block of the
/// reshard's result along `dim`.
struct AddedSplit {
  size_t op;  // the reshard
  size_t dim; // of its result
  std::string axis;
};
std::vector<AddedSplit> addedSplits(const CheckedFunction &fn);

/// The names a `reshard`'s or a rearrange's all-to-all splits, or a
/// `reshard` adds a split to (name -> the op's index): whole in the values
/// made before it, split (on the axis splitNames gives) in the values it
/// and later ops make; the name an all-to-all moves the split off is in
/// gatheredNames. Refused by name: a value whole along such a name made
/// before it and read after it, a dim that is not a lone name, a name
/// split twice.
ErrorOr<std::map<std::string, size_t>>
scatteredNames(const CheckedModule &m, const CheckedFunction &fn);

/// Where each of fn.collectives runs in the local program: after the op
/// whose index it gives (a rearrange's all-gather or all-to-all: before
/// it, on its operand). An all-reduce runs after the op that made the
/// partial sums, unless every later reader reads them partial (a sum of
/// partials, pending too) and the value is a result: then after the last
/// op. A `reshard`'s all-gather runs after the reshard. A value read both
/// ways, or reduced twice, a reduce-scatter read again, and other
/// collectives are refused by name.
ErrorOr<std::vector<size_t>> collectivePoints(const CheckedModule &m,
                                              const CheckedFunction &fn);

/// Puts the whole program's numbers into its local program `local` (made
/// from `whole` op for op): a constant the checker folded from a size takes
/// the whole's value, and a `size` op reading a name of `split` becomes the
/// whole's size as a constant. Returns the first such `size` op whose value
/// `whole`'s bindings do not give (the caller refuses it by name), or null
/// when every one was folded.
const CheckedOp *
foldWholeSizes(CheckedFunction &local, const CheckedFunction &whole,
               const std::map<std::string, std::string> &split);

} // namespace ein
