// The values of a sharded run the same at every position along a dim name
// (docs/distributed.md §4): which they are, which ops read them by their
// block, and results held to their declared split.
#pragma once

#include "ein/Sema/Program.h"

#include <set>
#include <string>
#include <vector>

namespace ein {

/// Per value, the names along which it is the same at every position (a
/// fill, a repeat's new dim, arithmetic of such): its local block is the
/// value computed with the block's size.
std::vector<std::set<std::string>> uniformNames(const CheckedFunction &fn);

/// Whether `op` maps each position along `name` of its tensors to the same
/// position of its results: an elementwise op or a cast, or a pack or an
/// unpack whose tensors have `name` only as lone-name dims outside the `*`
/// part. A value the same along `name` computed at the block's size is then
/// read as its block.
bool positionwise(const CheckedFunction &fn, const CheckedOp &op,
                  const std::string &name);

/// A result of `function` in `m` that is the same at every position along
/// a name (grad()'s repeat of a scalar, a fill), made whole along it, read
/// by no op, and declared split along the name's one dim where another
/// value splits it (and no collective gathers or splits it): layout
/// inference keeps the rank's block of it, and the
/// local program computes it at the block's size, which is that block. Its
/// layout becomes the declared one, so that splitNames does not refuse it as
/// whole and the run does not cut its block again.
void holdUniformResults(CheckedModule &m, const std::string &function);

} // namespace ein
