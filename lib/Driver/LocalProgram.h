// The local program of a sharded run (docs/distributed.md §4): which dim
// names are split, whether the function can run on blocks with one binding
// per name, and copies between whole tensors and their blocks.
#pragma once

#include "ein/Runtime/HostTensor.h"
#include "ein/Sema/Layout.h"
#include "ein/Sema/Program.h"
#include "ein/Support/Error.h"

#include <map>
#include <string>
#include <vector>

namespace ein {

/// The local program is the function itself with every split name bound to
/// its block's size: sound only when a name split on an axis is split on it
/// in every value that has it (or the value is the same at every position
/// along it and only meets split values elementwise), and nothing reads a
/// split size as a number but `size` (folded to the whole's by the caller).
/// Returns the split names (name -> axis), or why the program cannot be run
/// that way, by name, at the op or value.
ErrorOr<std::map<std::string, std::string>>
splitNames(const CheckedModule &m, const CheckedFunction &fn);

/// The names a `reshard` gathers whole, by an all-gather or an all-to-all
/// (name -> the reshard's op index):
/// split in the values made before it, whole in the values it and later
/// ops make. The local program binds such a name to its block's size up
/// to the reshard and to its whole size after it. Refused by name: an
/// all-gather of a dim that is not a lone name, a name gathered twice, and
/// (by splitNames) a value split along it made or read after the gather.
ErrorOr<std::map<std::string, size_t>> gatheredNames(const CheckedModule &m,
                                                     const CheckedFunction &fn);

/// The dim of a `reshard`'s result that its all-gather or all-to-all `c`
/// gathers (split in the operand, whole in the result).
size_t gatheredDim(const CheckedFunction &fn, const InferredCollective &c);
/// The dim of a `reshard`'s result that its all-to-all `c` splits (whole
/// in the operand).
size_t scatteredDim(const CheckedFunction &fn, const InferredCollective &c);

/// The names a `reshard`'s all-to-all splits (name -> the reshard's op
/// index): whole in the values made before it, split (on the axis
/// splitNames gives) in the values it and later ops make; the name it
/// moves the split off is in gatheredNames. Refused by name: a value whole
/// along such a name made before it and read after it, a dim that is not
/// a lone name, a name split twice.
ErrorOr<std::map<std::string, size_t>>
scatteredNames(const CheckedModule &m, const CheckedFunction &fn);

/// Where each of fn.collectives runs in the local program: after the op
/// whose index it gives. An all-reduce runs after the op that made the
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

/// Copies between a whole C-order tensor and one block of it: the block
/// starts at `offset` and has `block`'s shape. `toBlock` copies whole ->
/// block, else block -> whole.
void copyBlock(runtime::HostTensor &whole, runtime::HostTensor &block,
               const std::vector<int64_t> &offset, bool toBlock);

} // namespace ein
