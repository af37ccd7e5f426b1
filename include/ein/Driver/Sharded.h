// A sharded function prepared to run on ranks (docs/distributed.md §4): the
// library entry point under `einc run --ranks` and the C++ API's sharded
// call. Each rank runs the local program's parts on its own blocks.
#pragma once

#include "ein/Conversion/CPU/Pipelines.h"
#include "ein/Execution/JIT.h"
#include "ein/Runtime/HostTensor.h"
#include "ein/Sema/Checker.h"
#include "ein/Syntax/AST.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ein {

class Communicator;
/// Defined in RunSharded.cpp: the whole program bound, the local program's
/// parts compiled, the mesh's sizes.
struct ShardedProgram;

/// The whole shapes of a sharded function's parameters, given the function
/// checked on the mesh (its layouts) and the mesh's number of ranks: from
/// whole inputs (einc run) or from one rank's blocks (wholeShapesOfBlocks).
using WholeShapes = std::function<ErrorOr<std::vector<std::vector<int64_t>>>(
    const CheckedFunction &fn, int64_t meshRanks)>;

/// Checks `function` of `module` on its mesh (`check.meshSizes` must give
/// every axis's size), binds it to the whole shapes `shapes` gives and
/// compiles its local program's parts for the CPU, cached in memory and on
/// disk. What the local program cannot do is refused by name (§4). The
/// result may be shared by the threads of simulated ranks.
ErrorOr<std::shared_ptr<const ShardedProgram>>
prepareSharded(const SourceFile &file, const Module &module,
               const CheckOptions &check, const std::string &function,
               const CPUOptions &cpu, const JITOptions &jit,
               const WholeShapes &shapes);

/// The number of ranks the program's mesh has (the product of its sizes).
int64_t shardedRanks(const ShardedProgram &program);

/// The whole shape of each parameter of `fn` (checked on a mesh with the
/// sizes `meshSizes`) whose block on a rank has the shape in `blocks`: a
/// dim split on an axis has the block's size times the axis's. A block of
/// the wrong rank is refused by name.
ErrorOr<std::vector<std::vector<int64_t>>>
wholeShapesOfBlocks(const CheckedFunction &fn,
                    const std::map<std::string, Int> &meshSizes,
                    const std::vector<std::vector<int64_t>> &blocks);

/// The groups of a communicator's mesh axes (meshAxisGroup of each axis,
/// in the mesh's order), by the mesh's shape: kept by a caller that runs
/// sharded programs on one communicator again and again.
using AxisGroups =
    std::map<std::vector<int64_t>, std::vector<std::unique_ptr<Communicator>>>;

/// Rank `world.rank()`'s part of a sharded run: the local program's parts
/// on `blocks` (this rank's block of each input, by the parameters'
/// layouts, ranks row-major over the mesh), the collectives between them on
/// the mesh axes' groups of `world`; returns this rank's block of each
/// result. Every rank of `world` must call it with the same program (and
/// `kept` alike: null, or the groups of its earlier runs on `world`, to
/// which it adds the groups of a new mesh shape). A failure on one rank is
/// reported on every rank at the next part's end.
ErrorOr<std::vector<runtime::HostTensor>>
runShardedRank(const ShardedProgram &program, Communicator &world,
               std::vector<runtime::HostTensor> blocks,
               AxisGroups *kept = nullptr);

/// Rank `rank`'s block of each result by the result types' layouts, from
/// runShardedRank's results: a result it returns whole along a dim its
/// type splits (a reduce-scatter, completed as an all-reduce) is cut to
/// the rank's block; the others are as given.
ErrorOr<std::vector<runtime::HostTensor>>
declaredResultBlocks(const ShardedProgram &program, int64_t rank,
                     std::vector<runtime::HostTensor> results);

} // namespace ein
