// `einc emit` of a sharded function: the local program a sharded run
// compiles (LocalProgram.h), with its collectives as `mesh` ops, lowered to
// the stage asked for.
#include "EmitSharded.h"
#include "LocalProgram.h"
#include "UniformValues.h"
#include "ein/Compile/Compile.h"
#include "ein/MLIRGen/MLIRGen.h"
#include "ein/Sema/Layout.h"
#include "ein/Support/Spelling.h"
#include "ein/Syntax/DiagnosticError.h"
#include "ein/Target/CUDA/EmitCUDA.h"

#include <fmt/format.h>

namespace ein {

namespace {
/// The local program's refusals name a sharded run: emit shows that
/// program, so it refuses what the run refuses.
Error withEmitNote(Error error) {
  error.withNote("einc emit of a sharded function shows the local program "
                 "a sharded run compiles, and refuses what that run refuses");
  return error;
}
} // namespace

ErrorOr<MeshProgram> meshProgramOf(const CheckedModule &checked,
                                   const CheckedFunction &fn,
                                   const std::vector<size_t> &points) {
  MeshProgram mesh;
  mesh.axes = checked.meshAxes;
  for (const std::string &axis : checked.meshAxes) {
    auto n = SizeExpr::symbol(axis).evaluate(fn.ctx.env);
    mesh.sizes.push_back(n ? int64_t(*n) : -1);
  }
  mesh.collectives = fn.collectives;
  mesh.points = points;
  for (const InferredCollective &c : fn.collectives) {
    int64_t dim = -1;
    if (c.kind == CollectiveKind::ReduceScatter)
      for (size_t k = 0; k < fn.returns.size() && dim < 0; ++k) {
        if (fn.returns[k] != c.value)
          continue;
        Shape declared = fn.ctx.expand(fn.results[k].shape);
        for (size_t j = 0; j < declared.size(); ++j)
          if (declared[j].meshAxis == c.axis)
            dim = int64_t(j);
      }
    // A reshard's all-gather grows the dim it gathers (MLIRGen builds it
    // where the gathered value is a result no later op reads, and refuses
    // the others by name); a rearrange's runs on its operand: none.
    if (c.kind == CollectiveKind::AllGather && !movesOperand(fn, c) &&
        c.afterOp >= 0 && fn.ops[size_t(c.afterOp)].reshardTo)
      dim = int64_t(gatheredDim(fn, c));
    if (c.kind == CollectiveKind::ReduceScatter && dim < 0)
      return Error::program(fmt::format(
          "a reduce-scatter over {} whose scatter dim is not a result's",
          c.axis));
    mesh.scatterDims.push_back(dim);
  }
  return mesh;
}

namespace {

/// A sharded function's local program (one function) and its mesh, as a
/// sharded run compiles them.
struct LocalWithMesh {
  CheckedModule module;
  MeshProgram mesh;
};

ErrorOr<LocalWithMesh> localWithMesh(const SourceFile &file,
                                     const Module &module,
                                     const CheckOptions &check,
                                     const std::string &function) {
  CheckOptions global = check;
  global.onlyFunction = function;
  DiagnosticEngine diags(file);
  CheckedModule checked = checkModule(module, global, diags);
  if (diags.hadError())
    return errorFromDiagnostics(diags);
  if (function.empty() && checked.functions.size() != 1)
    return Error::usage("einc emit of a sharded program shows one function's "
                        "local program: give --fn NAME");
  std::string name =
      function.empty() ? checked.functions.front().name : function;
  holdUniformResults(checked, name);
  const CheckedFunction *fn = checked.find(name);
  if (!fn)
    return noFunctionError(file.path, name, module.functionNames());

  // The local program, as the sharded run makes it: a mesh of one rank per
  // axis, each split name that has a size bound to its block's.
  auto split = splitNames(checked, *fn);
  if (!split)
    return withEmitNote(split.error());
  // One local program binds each name once: a name whole before a reshard
  // adds its split and blocked after it needs two (the run has a part per
  // phase).
  for (const AddedSplit &a : addedSplits(*fn)) {
    SourceLoc loc = fn->ops[a.op].loc;
    return Error::at(ErrorKind::Program, checked.pathOf(loc), loc.line, loc.col,
                     fmt::format("einc emit of a reshard adding a split on {} "
                                 "is not supported yet (einc run --ranks "
                                 "runs it)",
                                 a.axis));
  }
  CheckOptions local = global;
  for (const std::string &axis : checked.meshAxes)
    local.meshSizes[axis] = 1;
  for (auto &[dim, axis] : *split) {
    auto size = SizeExpr::symbol(dim).evaluate(fn->ctx.env);
    auto n = SizeExpr::symbol(axis).evaluate(fn->ctx.env);
    // A block of a known size over an axis of unknown size has no size:
    // refused rather than shown whole.
    if (size && !n)
      return Error::usage(fmt::format(
          "einc emit of a sharded program shows the blocks' sizes: dim {} "
          "({}) is split on mesh axis {}; give its size with --mesh {}=N",
          dim, toString(*size), axis, axis));
    if (size && n && (checked.dims.count(dim) || check.dimOverrides.count(dim)))
      local.dimOverrides[dim] = *size / *n;
  }
  DiagnosticEngine localDiags(file);
  CheckedModule localChecked = checkModule(module, local, localDiags);
  if (localDiags.hadError())
    return errorFromDiagnostics(localDiags);
  const CheckedFunction *lfn = localChecked.find(name);
  if (!lfn || lfn->ops.size() != fn->ops.size())
    return Error::program("the local program of a sharded function does not "
                          "have the whole program's ops");
  CheckedFunction localFn = *lfn;
  // A size read as a number is the whole's (the sharded run folds it the
  // same way); one not known is refused, never read as the block's.
  if (const CheckedOp *op = foldWholeSizes(localFn, *fn, *split))
    return Error::at(ErrorKind::Program, checked.pathOf(op->loc), op->loc.line,
                     op->loc.col,
                     fmt::format("einc emit of a sharded program reads the "
                                 "size {} of a split dim as a number: bind "
                                 "it (--dim) so the local program reads the "
                                 "whole's",
                                 op->sizeValue.str()));

  auto points = collectivePoints(checked, *fn);
  if (!points)
    return withEmitNote(points.error());
  auto mesh = meshProgramOf(checked, *fn, *points);
  if (!mesh)
    return mesh.error();
  CheckedModule one = localChecked;
  // The mesh's sizes are mesh.mesh's, not the one-rank mesh's 1s the local
  // check bound.
  for (const std::string &axis : checked.meshAxes)
    one.dims.erase(axis);
  one.functions = {localFn};
  return LocalWithMesh{std::move(one), std::move(*mesh)};
}

} // namespace

ErrorOr<void> emitShardedEin(const SourceFile &file, const Module &module,
                             const CheckOptions &check,
                             const std::string &function, IRStage stage,
                             const CPUOptions &cpu, std::ostream &out) {
  auto local = localWithMesh(file, module, check, function);
  if (!local)
    return local.error();
  auto emitted = emitShardedIR(local->module, local->mesh, stage, out, cpu);
  // A refusal by name as it is; a verifier's messages under a heading.
  if (!emitted && emitted.error().context.empty())
    return emitted.error();
  if (!emitted)
    return Error::inFile(
               ErrorKind::Program, file.path,
               fmt::format("cannot emit --stage={}:", irStageName(stage)))
        .withContext(std::move(emitted.error().context));
  return {};
}

ErrorOr<void> emitShardedCUDA(const SourceFile &file, const Module &module,
                              const CheckOptions &check,
                              const std::string &function, std::ostream &out) {
  auto local = localWithMesh(file, module, check, function);
  if (!local)
    return local.error();
  CUDAOptions options;
  options.mesh = std::make_shared<const MeshProgram>(std::move(local->mesh));
  auto source = emitCUDA(local->module, options);
  if (!source)
    return source.error().inFileNamed(file.path);
  out << *source;
  return {};
}

} // namespace ein
