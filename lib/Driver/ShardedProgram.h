// The prepared sharded program every rank runs (ShardedProgram), shared by
// its preparation and ranks' runs (RunSharded.cpp) and `einc run --ranks`
// (RunShardedCommand.cpp).
#pragma once

#include "LocalProgram.h"
#include "ein/Driver/Sharded.h"
#include "ein/Engine/Engine.h"
#include "ein/MLIRGen/MLIRGen.h"
#include "ein/Sema/Layout.h"

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ein {

/// The whole program bound to its inputs' shapes and its local program's
/// parts compiled: what every rank runs (shared by simulated ranks).
struct ShardedProgram {
  /// The local program: the function on a mesh of one rank per axis (so
  /// its sizes are blocks), checked once for every rank; one per set of
  /// names gathered whole so far (those bound to their whole size).
  struct Local {
    BoundCall bound;
    CheckedFunction fn;
    std::vector<std::vector<int64_t>> shapes;
  };
  /// A part of the local program between two collectives: compiled as a
  /// function of the values it reads, returning those read later. With
  /// `mesh`, the one part of a program whose collectives are compiled into
  /// it (ein-mesh-to-calls), run on the rank's groups inside the call.
  /// Without `callable`, a vocab-parallel take run on the host (takeBlock).
  struct Part {
    std::shared_ptr<Callable> callable;
    std::vector<unsigned> params, returns;
    size_t begin, end;
    const Local *local;
    std::shared_ptr<const MeshProgram> mesh;
  };

  ShardedProgram(const CPUOptions &cpu, const JITOptions &jit)
      : engine(cpu, jit) {}

  Engine engine;
  /// The memory the parts run on: the host's, or a CUDA device's (the one
  /// compiled function, on the ranks' NCCL communicators).
  DeviceMemory *memory = nullptr;
  /// The global check, and the function bound to the whole shapes.
  CheckedModule checked;
  BoundCall wholeBound;
  const CheckedFunction *bfn = nullptr;
  std::vector<std::vector<int64_t>> wholeShapes;
  /// The size of each mesh axis, in the mesh's order.
  std::vector<int64_t> axisSize;
  std::map<std::string, std::string> split;
  /// Keyed by the names whole and blocked in them ("@" before those);
  /// std::map keeps each in place.
  std::map<std::set<std::string>, Local> locals;
  std::vector<Part> parts;
  /// Where each of bfn->collectives runs (collectivePoints).
  std::vector<size_t> points;
  /// The splits reshards add (keepBlock after their op).
  std::vector<AddedSplit> slices;
  /// Keeps one compiled call at a time (simulated ranks); collectives run
  /// outside it.
  mutable std::mutex callMutex;

  size_t axisIndex(const std::string &axis) const {
    for (size_t i = 0; i < checked.meshAxes.size(); ++i)
      if (checked.meshAxes[i] == axis)
        return i;
    return size_t(0);
  }
  /// Rank r's coordinate on each axis: row-major, the last axis fastest.
  std::vector<int64_t> coordinate(int64_t r) const {
    std::vector<int64_t> c(axisSize.size());
    for (size_t i = axisSize.size(); i-- > 0;) {
      c[i] = r % axisSize[i];
      r /= axisSize[i];
    }
    return c;
  }
  /// A value's block on a rank: per dim, offset and size; a dim whose name
  /// is in `whole` (gathered by then, or split only later) is whole, one in
  /// `blocked` (split by then) is the block's size (local shapes only).
  std::vector<int64_t>
  blockOf(unsigned id, const std::vector<int64_t> &wholeShape,
          const std::vector<int64_t> &coord, std::vector<int64_t> &offset,
          const std::set<std::string> &whole = {},
          const std::set<std::string> &blocked = {}) const {
    std::vector<int64_t> shape = wholeShape;
    offset.assign(shape.size(), 0);
    const ValueLayout &layout = bfn->layouts[id];
    Shape dims = bfn->ctx.expand(bfn->values[id].type.shape);
    for (size_t d = 0; d < shape.size() && d < layout.dims.size(); ++d) {
      if (layout.dims[d].empty()) {
        if (d < dims.size())
          if (auto name = dims[d].size.asSymbol(); name && blocked.count(*name))
            shape[d] /= axisSize[axisIndex(split.at(*name))];
        continue;
      }
      if (d < dims.size())
        if (auto name = dims[d].size.asSymbol(); name && whole.count(*name))
          continue;
      size_t a = axisIndex(layout.dims[d]);
      shape[d] /= axisSize[a];
      offset[d] = coord[a] * shape[d];
    }
    return shape;
  }
};

/// Rank `coord`'s block of `whole`, a value of `program`'s bound function
/// (a parameter or a result) by its layout.
ErrorOr<runtime::HostTensor> cutBlock(const ShardedProgram &program,
                                      unsigned value,
                                      const runtime::HostTensor &whole,
                                      const std::vector<int64_t> &coord);
/// The whole tensor of shape `wholeShape` from every rank's `block` of
/// `value` (by its layout), gathered over `world` (collective); rank 0
/// alone assembles it unless `everyRank` (the others get an empty tensor).
ErrorOr<runtime::HostTensor>
gatherBlocks(const ShardedProgram &program, Communicator &world, unsigned value,
             const runtime::HostTensor &block,
             const std::vector<int64_t> &wholeShape, bool everyRank);

/// Runs `run` on `ranks` simulated ranks (threads) and waits for them; the
/// first error of a rank's own, else the first of any.
ErrorOr<void>
runSimulatedRanks(int64_t ranks,
                  const std::function<ErrorOr<void>(Communicator &)> &run);

/// prepareSharded, with `sized` giving the check again with the inputs'
/// sizes where the global check fails (withInputSizes; null: none), its
/// parts built for `target` (its --target name).
ErrorOr<std::shared_ptr<const ShardedProgram>>
prepareShardedSized(const SourceFile &file, const Module &module,
                    const CheckOptions &given, const std::string &function,
                    const CPUOptions &cpu, const JITOptions &jit,
                    const WholeShapes &shapesOf,
                    const std::function<std::optional<CheckOptions>()> &sized,
                    const std::string &target);

/// Refuses simulated ranks (`simulate`, more than one of `ranks`) on
/// --target=cuda by name: they would share the GPU's default stream.
ErrorOr<void> checkSimulatedTarget(bool simulate, int64_t ranks,
                                   const std::string &target);

} // namespace ein
