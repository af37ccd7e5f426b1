// einc's subcommands: the check/report/emit/run/train/build pipelines over
// the parsed command line (DriverArgs.h). Output text goes to the stream the
// tool passes in; errors are returned as values and printed by the tool.
#include "ein/Driver/Driver.h"
#include "DataParallelFlags.h"
#include "DriverArgs.h"
#include "EmitSharded.h"
#include "Help.h"
#include "ein/Analysis/Collectives.h"
#include "ein/Analysis/Training.h"
#include "ein/Compile/Compile.h"
#include "ein/Conversion/CPU/Pipelines.h"
#include "ein/Driver/Calibrate.h"
#include "ein/Driver/Run.h"
#include "ein/Driver/Train.h"
#include "ein/Engine/Engine.h"
#include "ein/PyCheck/PyCheck.h"
#include "ein/Report/Report.h"
#include "ein/Runtime/Communicator.h"
#include "ein/Sema/Autodiff.h"
#include "ein/Sema/Checker.h"
#include "ein/Support/Spelling.h"
#include "ein/Syntax/DiagnosticError.h"
#include "ein/Syntax/Imports.h"
#include "ein/Syntax/Parser.h"
#include "ein/Target/CUDA/EmitCUDA.h"
#include "ein/Version.h"

#include "llvm/Config/llvm-config.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

#include "ein/Runtime/Npy.h"
#include "ein/Runtime/Npz.h"
#include "ein/Runtime/OutputFiles.h"
#include "ein/Runtime/SafeTensors.h"
#include "ein/Target/TargetRegistry.h"

namespace ein {

namespace {

using driver::Args;
using driver::parseArgs;
using driver::targetOptions;
using driver::usageError;

/// `einc report --train`: the function's report and its training account.
/// A function without grad() is differentiated here, its first result (a
/// scalar loss) with respect to --params (trainingStep, Report.h).
ErrorOr<void> reportTraining(const Args &args, const CheckedModule &checked,
                             const Target &target, ReportOptions options,
                             std::ostream &out) {
  auto step = trainingStep(checked, args.fn, args.trainParams);
  if (!step) {
    Error e = step.error();
    if (e.kind == ErrorKind::Usage)
      e = usageError("report", e.message);
    return e;
  }
  CheckedModule &module = *step;
  CheckedFunction &fn = module.functions.front();
  options.function = fn.name;
  // The target's column of the step, op by op (Described::TrainingStep);
  // none for a sharded program, which no target compiles yet.
  std::map<std::string, TargetColumn> columns;
  if (module.meshAxes.empty())
    columns = Engine(args.cpu).describe(
        target, module, fn.name, Described::TrainingStep, targetOptions(args));
  options.targetColumns = &columns;
  auto text = trainReportOutput(module, options, args.trainOptions, args.json);
  if (!text)
    return text.error();
  out << *text;
  return {};
}

/// `einc run`'s options from the command line (one process or ranks).
RunOptions runOptionsOf(const Args &args) {
  RunOptions run;
  run.function = args.fn;
  run.inputs = args.inputs;
  run.outputs = args.outputs;
  run.time = args.time;
  run.sizeGeneric = args.sizeGeneric;
  run.peakFlops = args.peakFlops;
  run.bandwidth = args.bandwidth;
  run.cpu = args.cpu;
  run.target = args.target;
  run.allowTf32 = args.allowTf32;
  run.jit = JITOptions::fromEnvironment();
  run.jit.perfListener |= args.perfJitdump;
  return run;
}

/// `einc train`'s options from the command line.
TrainRunOptions trainOptionsOf(const Args &args) {
  TrainRunOptions train = args.trainRun;
  train.target = args.target;
  train.cpu = args.cpu;
  train.jit = JITOptions::fromEnvironment();
  return train;
}

/// `einc report` of `checked` (checked with --dim, or with the sizes of
/// --in), the table, JSON or training account.
ErrorOr<void> reportCommand(const Args &args, const CheckedModule &checked,
                            const SourceFile &file, std::ostream &out) {
  ReportOptions options;
  options.function = args.fn;
  options.device = findDevice(args.device);
  options.peakOverride = args.peakFlops;
  options.bandwidthOverride = args.bandwidth;
  // --fabric: the table's fabrics or the `host` one einc calibrate
  // measured, resolved (and its calibration read) once here.
  std::optional<FabricSpec> fabric;
  if (!args.fabric.empty()) {
    auto resolved = resolveFabric(args.fabric);
    if (!resolved)
      return resolved.error();
    fabric = std::move(*resolved);
  }
  options.fabric = fabric ? &*fabric : nullptr;
  auto target = lookupTarget(args.target, TargetUse::Report);
  if (!target)
    return target.error();
  options.expandCalls = args.expand;
  if (args.train)
    return reportTraining(args, checked, **target, options, out);
  // The target's column: what each op becomes on it (the CPU's fusion, the
  // CUDA plan), asked of the target through the Engine.
  std::map<std::string, TargetColumn> columns;
  if (checked.meshAxes.empty())
    columns = Engine(args.cpu).describe(
        **target, checked, args.fn, Described::Function, targetOptions(args));
  options.targetColumns = &columns;
  out << (args.json ? reportJSON(checked, options)
                    : reportTable(checked, options));
  return {};
}

/// `einc check model.py`: the Python checker's diagnostics, its entry
/// checks and its report (docs/python-check.md).
ErrorOr<void> checkPythonCommand(const Args &args, std::ostream &out) {
  auto file = readSource(args.file);
  if (!file)
    return file.error();
  DiagnosticEngine diags(*file);
  auto report = pycheck::checkPython(diags);
  if (!report)
    return report.error();
  if (report->parsed)
    out << (args.json ? pycheck::reportJSON(*report)
                      : pycheck::reportText(*report, args.verbose));
  if (diags.hadError())
    return errorFromDiagnostics(diags);
  return {};
}

ErrorOr<void> runCommand(const Args &args, std::ostream &out,
                         std::ostream &warnings) {
  if (args.command == "calibrate") {
    auto text = runCalibrate(args.cpu, args.calibrateCheck);
    if (!text)
      return text.error();
    out << *text;
    return {};
  }
  if (args.command == "check" && args.python)
    return checkPythonCommand(args, out);
  auto file = readSource(args.file);
  if (!file)
    return file.error();
  DiagnosticEngine diags(*file);
  diags.setWarningOptions(args.warnings);
  Module module = parseModule(*file, diags);
  if (!diags.hadError())
    resolveImports(module, *file, diags);
  if (diags.hadError())
    return errorFromDiagnostics(diags);
  if (args.command == "emit" && !args.fn.empty() && module.meshes.empty())
    return usageError("emit", "--fn is for a file with a mesh (emit prints "
                              "every function of a file without one)");
  if (args.command == "emit" && args.stage == "ast") {
    printAST(module, out);
    return {};
  }
  // A sharded program is checked, but not yet costed, lowered or run
  // (docs/distributed.md §8): refused by name, never run unsharded. Its
  // check's errors come first.
  if (args.command == "run" && (args.runRanks || args.simulate)) {
    if (module.meshes.empty())
      return usageError("run",
                        "run --ranks and --simulate are for a file with a mesh "
                        "(a sharded program); data-parallel training is einc "
                        "train --ranks N");
    if (!args.runRanks)
      return usageError("run", "--simulate needs --ranks N");
    RunOptions run = runOptionsOf(args);
    run.ranks = args.runRanks;
    run.simulate = args.simulate;
    run.argv = args.argv;
    return runSharded(*file, module, args.check, run, out);
  }
  // `einc train` of a file with a mesh trains on its ranks (tensor
  // parallel), after the check on the mesh.
  if (args.command == "train" && !module.meshes.empty()) {
    CheckOptions options = args.check;
    options.loopsMayStaySymbolic = true;
    checkModule(module, options, diags);
    if (diags.hadError())
      return errorFromDiagnostics(diags);
    return trainSharded(*file, module, args.check, trainOptionsOf(args),
                        args.argv, out);
  }
  if (args.command == "train" && args.trainRun.simulate)
    return usageError("train", "--simulate runs the ranks of a file with a "
                               "mesh as threads; data-parallel training runs "
                               "MPI ranks (--ranks N)");
  if (!module.meshes.empty() && args.command != "check" &&
      args.command != "report") {
    CheckOptions options = args.check;
    options.loopsMayStaySymbolic = true;
    checkModule(module, options, diags);
    if (diags.hadError())
      return errorFromDiagnostics(diags);
    const SourceLoc &at = module.meshes.front().loc;
    // emit shows the local program with its collectives: mesh ops at
    // --stage=ein, runtime calls at the later stages.
    if (args.command == "emit" && args.stage == "cuda")
      return emitShardedCUDA(*file, module, args.check, args.fn, out);
    if (args.command == "emit")
      return emitShardedEin(*file, module, args.check, args.fn,
                            *irStageOf(args.stage), args.cpu, out);
    // An object of a sharded function would call the runtime's
    // collectives (ein/Runtime/CollectiveCalls.h), which run on a rank
    // context (a communicator per mesh axis) that only the sharded run
    // and the C++ API's call_sharded set up: no C entry makes one yet.
    if (args.command == "build")
      return Error::inFile(
          ErrorKind::Program, file->path,
          fmt::format("line {}: this file declares a mesh; einc build of a "
                      "sharded program is not supported: its collectives "
                      "need each rank's communicators, which no C entry "
                      "sets up yet; run it with einc run --ranks N, or call "
                      "it from C++ with ein::call_sharded "
                      "(ein/API/Distributed.h) on each rank",
                      at.line));
    return Error::inFile(
        ErrorKind::Program, file->path,
        args.command == "run"
            ? fmt::format("line {}: this file declares a mesh; a sharded "
                          "program runs on ranks: einc run --ranks N (MPI), "
                          "or --ranks N --simulate (threads)",
                          at.line)
            : fmt::format("line {}: this file declares a mesh; sharded "
                          "programs are checked, reported, run and trained "
                          "on ranks (einc check, report, run --ranks N, "
                          "train --ranks N) but not yet compiled (issue 30, "
                          "docs/distributed.md §8)",
                          at.line));
  }
  if (args.command == "run") {
    // The symbolic check of `run`, once: its warnings are printed here and
    // runFunction binds and compiles from it.
    CheckOptions symbolic = args.check;
    symbolic.onlyFunction = args.fn;
    symbolic.loopsMayStaySymbolic = true; // unrolled once the inputs bind
    CheckedModule checked = checkModule(module, symbolic, diags);
    if (diags.hadError())
      return errorFromDiagnostics(diags);
    diags.print(warnings);
    RunOptions run = runOptionsOf(args);
    return runFunction(*file, module, args.check, run, out, &checked);
  }
  if (args.command == "train") {
    TrainRunOptions train = trainOptionsOf(args);
    // Data parallel (docs/training.md): --ranks N outside mpirun launches
    // it; under mpirun each rank trains on its share of the batch.
    CheckOptions check = args.check;
    bool launchedJob = false;
    auto world = startRanks(module, check, train, args.argv, launchedJob);
    if (!world)
      return world.error();
    if (launchedJob)
      return {};
    CheckOptions symbolic = check;
    symbolic.onlyFunction = args.fn;
    symbolic.loopsMayStaySymbolic = true; // unrolled once the inputs bind
    checkModule(module, symbolic, diags);
    if (diags.hadError())
      return errorFromDiagnostics(diags);
    if (!*world || (*world)->rank() == 0)
      diags.print(warnings);
    auto trained = trainFunction(*file, module, check, train, out);
    // A rank that fails leaves without MPI_Finalize (which would wait for
    // the others); mpirun then ends the job.
    if (!trained && *world)
      abandonMPI();
    return trained;
  }
  CheckOptions checkOptions = args.check;
  // `check` checks a loop's body without its count, and `report --in`
  // checks again with the inputs' sizes; report, build and emit need it
  // (the loop is unrolled).
  checkOptions.loopsMayStaySymbolic =
      args.command == "check" ||
      (args.command == "report" && !args.inputs.empty());
  CheckedModule checked = checkModule(module, checkOptions, diags);
  if (diags.hadError())
    return errorFromDiagnostics(diags);
  diags.print(warnings);
  // Lowering gives every tensor a fixed rank: a variadic must have one.
  // `build` builds the entry points whose ranks are fixed and skips the
  // others with a note (a variadic helper such as `rmsnorm(x: f32["*b d"])`
  // is inlined into its callers, which build); it fails only when no entry
  // point is left. `emit` prints every function, so each must lower.
  bool lowers =
      args.command == "build" ||
      (args.command == "emit" && args.stage != "ast" && args.stage != "ein");
  if (lowers) {
    std::vector<CheckedFunction> fixed;
    std::optional<Error> firstUnfixed;
    std::string notes;
    for (auto &fn : checked.functions) {
      auto pack = variadicOfUnknownRank(fn);
      if (!pack) {
        fixed.push_back(fn);
        continue;
      }
      std::string flag = *pack == "..." ? "PARAM..." : *pack;
      if (!firstUnfixed)
        firstUnfixed = Error::at(
            ErrorKind::Program, file->path, fn.loc.line, fn.loc.col,
            fmt::format("cannot {} '{}': the rank of variadic {} is not "
                        "fixed; give it with --rank {}=N",
                        args.command == "build" ? "build" : "lower", fn.name,
                        *pack, flag));
      notes += fmt::format("{}:{}:{}: note: not building '{}': the rank of "
                           "variadic {} is not fixed (--rank {}=N builds "
                           "it)\n",
                           file->path, fn.loc.line, fn.loc.col, fn.name, *pack,
                           flag);
    }
    if (firstUnfixed && (args.command == "emit" || fixed.empty()))
      return *firstUnfixed;
    warnings << notes;
    checked.functions = std::move(fixed);
  }
  if (args.command == "build") {
    auto target = lookupTarget(args.target, TargetUse::Build);
    if (!target)
      return target.error();
    return Engine(args.cpu).buildFiles(**target, checked, file->path,
                                       args.object, args.header,
                                       targetOptions(args));
  }
  if (args.command == "check") {
    for (auto &fn : checked.functions) {
      for (auto &c : fn.ctx.constraints)
        out << fmt::format("{}: {}: entry check: {}\n", file->path, fn.name,
                           c.str());
      for (auto &[name, value] : fn.ctx.inferred)
        out << fmt::format("{}: {}: entry check: {} == {}\n", file->path,
                           fn.name, name, toString(value));
    }
    return {};
  }
  if (args.command == "report") {
    if (!args.fn.empty() && !checked.find(args.fn))
      return noFunctionError(file->path, args.fn, module.functionNames());
    // --in: the function checked with the inputs' sizes, as `run` binds
    // them (entry checks included; only the shapes of the files are read).
    if (!args.inputs.empty()) {
      if (args.fn.empty() && checked.functions.size() != 1)
        return usageError("report", "--in needs --fn NAME (the function "
                                    "whose parameters the files are)");
      std::string name =
          args.fn.empty() ? checked.functions.front().name : args.fn;
      auto tensors = readInputs(*checked.find(name), name, args.inputs,
                                /*convert=*/false);
      if (!tensors)
        return tensors.error();
      std::vector<std::vector<int64_t>> shapes;
      for (const runtime::HostTensor &tensor : *tensors)
        shapes.push_back(tensor.shape);
      Engine engine(args.cpu);
      auto symbolic = engine.check(*file, module, args.check, name);
      if (!symbolic)
        return symbolic.error();
      auto bound = engine.bind(*file, module, args.check, *symbolic, name,
                               shapes, Specialisation::Sizes);
      if (!bound)
        return bound.error();
      checked = std::move(bound->concrete);
      Args only = args;
      only.fn = name;
      return reportCommand(only, checked, *file, out);
    }
    return reportCommand(args, checked, *file, out);
  }
  if (args.stage == "cuda") {
    CUDAOptions cuda;
    cuda.fusion = args.cpu.fusion;
    auto source = emitCUDA(checked, cuda);
    if (!source)
      return source.error().inFileNamed(file->path);
    out << *source;
    return {};
  }
  if (auto emitted = emitIR(checked, *irStageOf(args.stage), out, args.cpu);
      !emitted)
    return Error::inFile(ErrorKind::Program, file->path,
                         fmt::format("cannot emit --stage={}:", args.stage))
        .withContext(std::move(emitted.error().context));
  return {};
}

} // namespace

ErrorOr<void> runEinc(const std::vector<std::string> &arguments,
                      std::ostream &out, std::ostream &warnings) {
  Args args;
  auto parsed = parseArgs(arguments, args);
  if (!parsed)
    return parsed.error();
  if (parsed->text) {
    out << *parsed->text;
    return {};
  }
  return runCommand(args, out, warnings);
}

} // namespace ein
