// `einc train` of a file with a mesh (tensor parallel; docs/training.md,
// "Tensor parallel"): each rank of the mesh runs the one-process loop on its
// blocks of the parameters, with the sharded program of the loss's gradient
// (RunSharded.cpp) in place of the compiled one.
#include "ShardedBlocks.h"
#include "ShardedProgram.h"
#include "TrainState.h"

#include "ein/Runtime/Communicator.h"
#include "ein/Syntax/DiagnosticError.h"
#include "ein/Syntax/Imports.h"
#include "ein/Syntax/Parser.h"

#include <fmt/format.h>

#include <cstring>
#include <mutex>
#include <set>

namespace ein {

namespace {

using runtime::HostTensor;

Error usage(std::string message) { return Error::usage(std::move(message)); }

/// The function appended to the file for the sharded run: the loss's
/// parameters as it declares them (their layouts included), returning the
/// loss and its gradient wrt each trained parameter, each with the
/// parameter's type, so that every rank gets its block of each.
ErrorOr<std::string> gradientFunction(const Module &module,
                                      const TrainingState &s,
                                      std::string &name) {
  const Function *loss = nullptr;
  for (const auto *functions : {&module.functions, &module.importedFunctions})
    for (const Function &f : *functions)
      if (f.name == s.function && !loss)
        loss = &f;
  if (!loss || loss->results.empty())
    return Error::program(fmt::format("no loss function '{}' to differentiate "
                                      "on the mesh",
                                      s.function));
  // Fresh names: none of the file's dims, axes, functions or parameters.
  std::set<std::string> taken;
  for (const auto *dims : {&module.dims, &module.importedDims})
    for (const DimDecl &d : *dims)
      taken.insert(d.name);
  for (const auto *functions : {&module.functions, &module.importedFunctions})
    for (const Function &f : *functions)
      taken.insert(f.name);
  for (const MeshDecl &mesh : module.meshes)
    for (const auto &[axis, loc] : mesh.axes)
      taken.insert(axis);
  for (const ShardRule &rule : module.shardRules)
    taken.insert(rule.dim);
  for (const Param &p : loss->params)
    taken.insert(p.name);
  auto fresh = [&](std::string base) {
    while (taken.count(base))
      base += "_";
    taken.insert(base);
    return base;
  };
  auto typeText = [](const TypeAnnotation &t) {
    return fmt::format("{}[\"{}\"]", t.dtype, t.shape);
  };
  name = fresh("einc_train_gradient");
  std::vector<std::string> params, args, results = {typeText(loss->results[0])};
  for (const Param &p : loss->params) {
    params.push_back(fmt::format("{}: {}", p.name, typeText(p.type)));
    args.push_back(p.name);
  }
  std::vector<std::string> lossNames = {fresh("einc_loss")}, grads, wrt;
  for (size_t k = 1; k < loss->results.size(); ++k)
    lossNames.push_back(fresh(fmt::format("einc_result_{}", k)));
  for (const TrainedParam &p : s.trained) {
    results.push_back(typeText(loss->params[p.param].type));
    grads.push_back(fresh("einc_grad_" + p.name));
    wrt.push_back(p.name);
  }
  // With loss scaling, the gradient of loss * scale, the scale a last
  // parameter (as the one-process gradient's); the loss returned is not
  // scaled.
  std::string differentiated = lossNames[0], scaling;
  if (s.lossScaled) {
    std::string scale = fresh("einc_loss_scale");
    differentiated = fresh("einc_scaled_loss");
    params.push_back(fmt::format("{}: f32[\"\"]", scale));
    scaling =
        fmt::format("    {} = {} * {}\n", differentiated, lossNames[0], scale);
  }
  return fmt::format("\n\ndef {}({}) -> ({}):\n    {} = {}({})\n{}    {} = "
                     "grad({}, wrt=[{}])\n    return {}, {}\n",
                     name, fmt::join(params, ", "), fmt::join(results, ", "),
                     fmt::join(lossNames, ", "), s.function,
                     fmt::join(args, ", "), scaling, fmt::join(grads, ", "),
                     differentiated, fmt::join(wrt, ", "), lossNames[0],
                     fmt::join(grads, ", "));
}

/// The sharded programs of one run (the gradient's; the loss's, for
/// evaluation), each prepared by the first rank that asks and shared by
/// the others (simulated ranks are threads).
struct MeshPrograms {
  std::mutex mutex;
  std::optional<ErrorOr<std::shared_ptr<const ShardedProgram>>> programs[2];
  SourceFile file; // the file, the gradient's function appended
  Module module;

  ErrorOr<std::shared_ptr<const ShardedProgram>>
  prepare(const SourceFile &original, const Module &given,
          const CheckOptions &check, int64_t ranks, const TrainingState &s,
          bool forward) {
    std::lock_guard<std::mutex> lock(mutex);
    auto &program = programs[forward];
    if (!program)
      program = build(original, given, check, ranks, s, forward);
    return *program;
  }

  ErrorOr<std::shared_ptr<const ShardedProgram>>
  build(const SourceFile &original, const Module &given,
        const CheckOptions &check, int64_t ranks, const TrainingState &s,
        bool forward) {
    // The whole shapes: the state's, before any rank cuts its blocks.
    std::vector<std::vector<int64_t>> shapes;
    for (const HostTensor *t : s.wholeInputs())
      shapes.push_back(t->shape);
    if (!forward && s.lossScaled)
      shapes.push_back({}); // the loss scale (gradientFunction)
    WholeShapes shapesOf =
        [&](const CheckedFunction &,
            int64_t product) -> ErrorOr<std::vector<std::vector<int64_t>>> {
      if (product != ranks)
        return usage(fmt::format("--ranks {} does not match the mesh ({} "
                                 "rank(s): the product of its axes' sizes)",
                                 ranks, product));
      return shapes;
    };
    // The parts run on the training's target, in its memory.
    if (forward)
      return prepareShardedSized(original, given, check, s.function,
                                 s.options.cpu, s.options.jit, shapesOf,
                                 nullptr, s.options.target);
    std::string function;
    auto source = gradientFunction(given, s, function);
    if (!source)
      return source.error();
    file = original;
    file.text += *source;
    DiagnosticEngine diags(file);
    module = parseModule(file, diags);
    if (!diags.hadError())
      resolveImports(module, file, diags);
    if (diags.hadError())
      return errorFromDiagnostics(diags);
    return prepareShardedSized(file, module, check, function, s.options.cpu,
                               s.options.jit, shapesOf, nullptr,
                               s.options.target);
  }
};

} // namespace

ErrorOr<CheckedModule> checkOnUnitMesh(const SourceFile &file,
                                       const Module &module,
                                       const CheckOptions &check,
                                       const std::string &function) {
  CheckOptions unit = check;
  for (const MeshDecl &mesh : module.meshes)
    for (const auto &[axis, loc] : mesh.axes)
      unit.meshSizes[axis] = 1;
  unit.onlyFunction = function;
  unit.loopsMayStaySymbolic = true; // unrolled once bound
  DiagnosticEngine diags(file);
  CheckedModule checked = checkModule(module, unit, diags);
  if (diags.hadError())
    return errorFromDiagnostics(diags);
  if (!checked.find(function))
    return usage(fmt::format("{} has no function '{}'", file.path, function));
  return checked;
}

ErrorOr<void> TrainingState::useMesh(const MeshRank &mesh) {
  auto program = mesh.program(*this, false);
  if (!program)
    return program.error();
  meshProgram = *program;
  if (options.evalEvery > 0) {
    auto forward = mesh.program(*this, true);
    if (!forward)
      return forward.error();
    meshForward = *forward;
  }
  meshWorld = mesh.world;
  const ShardedProgram &sp = *meshProgram;
  std::vector<int64_t> coord = sp.coordinate(meshWorld->rank());
  for (TrainedParam &p : trained) {
    unsigned id = sp.bfn->params[p.param];
    auto cut = [&](HostTensor &t) -> ErrorOr<void> {
      auto block = cutBlock(sp, id, t, coord);
      if (!block)
        return block.error();
      t = std::move(*block);
      return {};
    };
    EIN_TRY(cut(p.value));
    for (HostTensor &st : p.states)
      EIN_TRY(cut(st));
    // The rest is written before it is read: the gradient and micro-batch
    // sums by the sharded gradient, a bf16 or f16 parameter's model copy
    // by rounding the master block (refreshModelCopies), each rank its own.
    for (HostTensor *t : {&p.grad, &p.micro, &p.model}) {
      if (t->data.empty())
        continue;
      auto block = HostTensor::create(t->type, p.value.shape);
      if (!block)
        return block.error();
      *t = std::move(*block);
    }
    // The first replica of the block counts in the norm: coordinate 0 on
    // every axis the parameter is not split on.
    std::set<size_t> splitOn;
    for (const std::string &axis : sp.bfn->layouts[id].dims)
      if (!axis.empty())
        splitOn.insert(sp.axisIndex(axis));
    for (size_t a = 0; a < coord.size(); ++a)
      if (!splitOn.count(a) && coord[a] != 0)
        p.inNorm = false;
  }
  return {};
}

ErrorOr<void>
TrainingState::runOnMesh(const ShardedProgram &sp,
                         const std::vector<HostTensor *> &outputs) {
  std::vector<int64_t> coord = sp.coordinate(meshWorld->rank());
  // The rank's blocks: the parameters' are held cut; the batches are
  // filled whole (every rank reads the same samples) and cut here.
  std::vector<HostTensor> blocks;
  // On a device, the parameters' blocks are their device copies (the
  // update wrote them there), and the sharded run takes host blocks: it
  // places them in its memory and returns its results on the host.
  for (TrainedParam &p : trained)
    EIN_TRY(download(p.master ? p.model : p.value));
  std::vector<const HostTensor *> inputs = lossInputs();
  for (size_t i = 0; i < inputs.size(); ++i) {
    bool held = false;
    for (const TrainedParam &p : trained)
      held |= p.param == i;
    if (held) {
      blocks.push_back(*inputs[i]);
      continue;
    }
    auto block = cutBlock(sp, sp.bfn->params[i], *inputs[i], coord);
    if (!block)
      return block.error();
    blocks.push_back(std::move(*block));
  }
  // The scaled gradient's last input: the loss scale, on every rank.
  if (lossScaled && &sp == meshProgram.get())
    blocks.push_back(lossScaleValue);
  auto results = runShardedRank(sp, *meshWorld, std::move(blocks), &meshGroups);
  if (!results)
    return results.error();
  auto declared =
      declaredResultBlocks(sp, meshWorld->rank(), std::move(*results));
  if (!declared)
    return declared.error();
  for (size_t k = 0; k < outputs.size() && k < declared->size(); ++k) {
    const HostTensor &got = (*declared)[k];
    HostTensor &out = *outputs[k];
    if (got.type != out.type || got.shape != out.shape)
      return Error::program(fmt::format(
          "the sharded '{}' result {} is {} {}, not the {} {} this rank "
          "holds",
          sp.bfn->name, k + 1, runtime::storageName(got.type),
          runtime::shapeTupleStr(got.shape), runtime::storageName(out.type),
          runtime::shapeTupleStr(out.shape)));
    std::memcpy(out.data.data(), got.data.data(), out.data.size());
    EIN_TRY(upload(out));
  }
  return {};
}

ErrorOr<void> TrainingState::gatherMeshBlocks() {
  const ShardedProgram &sp = *meshProgram;
  for (TrainedParam &p : trained) {
    unsigned id = sp.bfn->params[p.param];
    const std::vector<int64_t> &shape = sp.wholeShapes[p.param];
    std::vector<HostTensor *> held = {&p.value};
    for (HostTensor &st : p.states)
      held.push_back(&st);
    for (HostTensor *t : held) {
      EIN_TRY(download(*t));
      auto whole = gatherBlocks(sp, *meshWorld, id, *t, shape, false);
      if (!whole)
        return whole.error();
      p.keptBlocks.push_back(std::move(*t));
      *t = std::move(*whole);
    }
  }
  return {};
}

void TrainingState::keepMeshBlocks() {
  for (TrainedParam &p : trained) {
    if (p.keptBlocks.empty())
      continue;
    p.value = std::move(p.keptBlocks[0]);
    for (size_t k = 0; k < p.states.size(); ++k)
      p.states[k] = std::move(p.keptBlocks[k + 1]);
    p.keptBlocks.clear();
  }
}

std::string TrainingState::meshSummary() const {
  const ShardedProgram &sp = *meshProgram;
  std::vector<std::string> axes, blocks;
  for (size_t a = 0; a < sp.axisSize.size(); ++a)
    axes.push_back(
        fmt::format("{}={}", sp.checked.meshAxes[a], sp.axisSize[a]));
  int64_t values = 0;
  for (const TrainedParam &p : trained) {
    values += p.value.numElements();
    blocks.push_back(
        fmt::format("{} {}", p.name, runtime::shapeTupleStr(p.value.shape)));
  }
  return fmt::format("tensor parallel on the mesh {} ({} ranks): rank {} "
                     "holds {} values, its blocks {}\n",
                     fmt::join(axes, ","), meshWorld->size(), meshWorld->rank(),
                     values, fmt::join(blocks, ", "));
}

ErrorOr<void> trainSharded(const SourceFile &file, const Module &module,
                           const CheckOptions &check,
                           const TrainRunOptions &given,
                           const std::vector<std::string> &arguments,
                           std::ostream &out) {
  // Under an mpirun of its own (`mpirun -n 4 einc train ...`), its ranks.
  TrainRunOptions options = given;
  if (options.ranks == 0 && !options.simulate)
    options.ranks = launcherWorldSize();
  // What the mesh's loop does not do yet, refused by name.
  if (options.ranks == 0)
    return usage("a file with a mesh trains on the mesh's ranks: give --ranks "
                 "N (the product of --mesh's sizes), and --simulate to run "
                 "them as threads of this process");
  if (auto ok =
          checkSimulatedTarget(options.simulate, options.ranks, options.target);
      !ok)
    return ok.error();
  if (options.zero > 0)
    return usage(fmt::format("--zero {} shards over data-parallel ranks, "
                             "which a file with a mesh does not have (its "
                             "layouts shard it): not supported with a mesh",
                             options.zero));
  if (!options.dpDim.empty())
    return usage("--dp-dim: with a mesh, the batch is split by its layout "
                 "(b@dp), not by --dp-dim");
  if (!options.simulate && launcherWorldSize() == 0)
    return launchRanks(options.ranks, arguments);

  // The state prepared from the whole program (checkOnUnitMesh), the
  // gradient on the mesh.
  MeshPrograms programs;
  auto runRank = [&](Communicator &world, std::ostream &rankOut) {
    MeshRank mesh;
    mesh.world = &world;
    mesh.program = [&](const TrainingState &s, bool forward) {
      return programs.prepare(file, module, check, options.ranks, s, forward);
    };
    return trainRank(file, module, check, options, rankOut, &mesh);
  };
  if (options.simulate)
    return runSimulatedRanks(options.ranks, [&](Communicator &world) {
      std::ostream silent(nullptr);
      return runRank(world, world.rank() == 0 ? out : silent);
    });
  auto world = mpiWorld();
  if (!world)
    return world.error();
  if ((*world)->size() != options.ranks)
    return usage(fmt::format("--ranks {} under an mpirun of {} ranks",
                             options.ranks, (*world)->size()));
  auto trained = runRank(**world, out);
  // A rank that fails leaves without MPI_Finalize (which would wait for
  // the others); mpirun then ends the job.
  if (!trained)
    abandonMPI();
  return trained;
}

} // namespace ein
