// A sharded run's collectives and block operations
// (docs/distributed.md §4), run between the local program's compiled parts
// in the memory they run on (the host's or a device's).
#pragma once

#include "ein/Execution/JIT.h"
#include "ein/Runtime/Communicator.h"
#include "ein/Runtime/HostTensor.h"
#include "ein/Sema/Program.h"
#include "ein/Support/Error.h"
#include "ein/Target/DeviceTensor.h"

#include <cstdint>

namespace ein {

/// Completes `c`'s partial results in `value` over `group` (the ranks that
/// differ only on the collective's axis): sum, max, min, any, all or prod;
/// a mean is a sum divided by the group's size (f16/bf16 reduced in f32,
/// fp8 refused by name).
ErrorOr<void> completePartials(Communicator &group, runtime::HostTensor &value,
                               const InferredCollective &c, DType dtype);
/// completePartials of `value` in its memory: on the host over `hostGroup`;
/// on a device a sum, max or min of f32, f64, i32 or i64 over `group` (the
/// device's communicator of the same ranks) in place, the others copied to
/// the host, completed there over `hostGroup` and copied back.
ErrorOr<void> completeOn(Communicator &hostGroup, Communicator &group,
                         DeviceTensor &value, const InferredCollective &c,
                         DType dtype);
/// Runs a reshard's or a rearrange's all-gather or all-to-all `c` on
/// `value` (movedValue(fn, c)) over `group`, whose buffers are `value`'s
/// memory's; the blocks are placed with copies within that memory.
ErrorOr<void> moveBlocks(Communicator &group, const CheckedFunction &fn,
                         const InferredCollective &c, DeviceTensor &value);
/// Keeps block `q` of `n` along dim `d` of `value` (a split a reshard adds:
/// no communication).
ErrorOr<void> keepBlock(DeviceTensor &value, size_t d, int64_t q, int64_t n);
/// A vocab-parallel take on one rank (vocabParallel): each id's row of the
/// rank's block of `table` along `axis` (rows [lo, lo + block) of the
/// whole), zeros for the other ids, into `out`; an id outside [0, vocab)
/// is the compiled take's error (takeIdError).
ErrorOr<void> takeBlock(const runtime::HostTensor &table,
                        const runtime::HostTensor &ids,
                        runtime::HostTensor &out, size_t axis, int64_t lo,
                        int64_t vocab, const TakeSite &site,
                        const Bindings &env);

/// Copies between a whole C-order tensor and one block of it: the block
/// starts at `offset` and has `block`'s shape. `toBlock` copies whole ->
/// block, else block -> whole.
void copyBlock(runtime::HostTensor &whole, runtime::HostTensor &block,
               const std::vector<int64_t> &offset, bool toBlock);

} // namespace ein
