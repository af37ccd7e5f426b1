// einc's subcommands: argument parsing, help, and the check/report/emit/build
// pipelines. Output text goes to the stream the tool passes in; errors are
// returned as values and printed by the tool.
#include "ein/Driver/Driver.h"
#include "DataParallelFlags.h"
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
#include "ein/Report/Report.h"
#include "ein/Runtime/Communicator.h"
#include "ein/Sema/Autodiff.h"
#include "ein/Sema/Checker.h"
#include "ein/Support/Spelling.h"
#include "ein/Syntax/DiagnosticError.h"
#include "ein/Syntax/Imports.h"
#include "ein/Syntax/Parser.h"
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

/// A usage error, with the help to read.
Error usageError(const std::string &command, std::string message) {
  return Error::usage(std::move(message))
      .withContext(fmt::format("run 'einc {}--help' for usage\n",
                               command.empty() ? "" : command + " "));
}

struct Args {
  std::string command, file, fn, stage, device = defaultDevice().name, object,
                                        header, target = "cpu", mainFunction;
  bool allowTf32 = false;
  bool json = false, expand = false, time = false, perfJitdump = false,
       sizeGeneric = false;
  std::vector<std::pair<std::string, std::string>> inputs;
  std::vector<std::pair<std::string, std::string>> outputs;
  double peakFlops = 0, bandwidth = 0;
  /// --fabric (report): a name resolveFabric knows (the table's, or the
  /// calibrated `host`); empty for the default.
  std::string fabric;
  bool train = false;
  TrainOptions trainOptions;
  std::vector<std::string> trainParams; // --params
  TrainRunOptions trainRun;             // `einc train`
  /// The command line after the tool's name, for --ranks's relaunch
  /// under mpirun.
  std::vector<std::string> argv;
  CheckOptions check;
  WarningOptions warnings;
  CPUOptions cpu;
  std::vector<int64_t> calibrateCheck; // calibrate --check: sizes in bytes
  /// run --ranks N [--simulate]: a sharded program on N ranks.
  int64_t runRanks = 0;
  bool simulate = false;
};

/// The largest rank --rank accepts.
constexpr int kMaxRank = 16;

std::optional<double> parsePositive(const std::string &text) {
  char *end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v > 0) || v > 1e30)
    return std::nullopt;
  return v;
}

/// What the command line asks for: a command to run with `Args`, or text
/// (help, version) to print.
struct Parsed {
  std::optional<std::string> text;
};

/// The registry's use of a command's --target.
TargetUse useOf(const std::string &command) {
  return command == "build"    ? TargetUse::Build
         : command == "report" ? TargetUse::Report
                               : TargetUse::Run;
}

/// What the targets read from the command line.
TargetOptions targetOptions(const Args &args) {
  TargetOptions options;
  options.cpu = args.cpu;
  options.allowTf32 = args.allowTf32;
  options.mainFunction = args.mainFunction;
  options.perfListener = args.perfJitdump;
  return options;
}

ErrorOr<Parsed> parseArgs(const std::vector<std::string> &rest, Args &args) {
  if (rest.empty())
    return usageError("", "no command given");
  if (rest[0] == "--help" || rest[0] == "-h" || rest[0] == "help")
    return Parsed{globalUsage()};
  if (rest[0] == "--version" || rest[0] == "version")
    return Parsed{versionText()};
  args.command = rest[0];
  args.argv = rest;
  const CommandHelp *command = findCommand(args.command);
  if (!command)
    return usageError("", fmt::format("unknown command '{}'", args.command));
  // --help anywhere after the command asks for its help, whatever else is
  // on the line.
  for (size_t i = 1; i < rest.size(); ++i)
    if (rest[i] == "--help" || rest[i] == "-h")
      return Parsed{commandUsage(*command)};
  auto usage = [&](std::string message) {
    return usageError(args.command, std::move(message));
  };
  // EIN_CPU and EIN_CPU_FEATURES are the defaults of --cpu and
  // --cpu-features (a whole test suite or build can target one CPU).
  bool compiles = args.command == "run" || args.command == "train" ||
                  args.command == "build" || args.command == "emit" ||
                  args.command == "calibrate";
  for (auto [variable, field] :
       {std::pair{"EIN_CPU", &args.cpu.target.name},
        std::pair{"EIN_CPU_FEATURES", &args.cpu.target.features}})
    if (const char *set = std::getenv(variable); compiles && set && *set)
      *field = set;
  if (!args.cpu.target.isHost())
    if (auto resolved = resolveCPU(args.cpu.target); !resolved)
      return usage(fmt::format("from EIN_CPU/EIN_CPU_FEATURES: {}",
                               resolved.error().message));
  for (size_t i = 1; i < rest.size(); ++i) {
    const std::string &a = rest[i];
    auto value = [&](const std::string &flag) -> std::optional<std::string> {
      if (a.rfind(flag + "=", 0) == 0)
        return a.substr(flag.size() + 1);
      if (a == flag && i + 1 < rest.size())
        return rest[++i];
      return std::nullopt;
    };
    auto isFlag = [&](const std::string &flag) {
      return a == flag || a.rfind(flag + "=", 0) == 0;
    };
    if (isFlag("--dim")) {
      auto v = value("--dim");
      if (!v)
        return usage("--dim needs NAME=INT");
      auto eq = v->find('=');
      if (eq == std::string::npos || eq == 0)
        return usage(fmt::format("--dim needs NAME=INT, got '{}'", *v));
      std::string name = v->substr(0, eq);
      auto n = parseInt(v->substr(eq + 1));
      if (!n || *n < 0)
        return usage(fmt::format("--dim {}: '{}' is not a non-negative integer "
                                 "that fits in 128 bits",
                                 name, v->substr(eq + 1)));
      args.check.dimOverrides[name] = *n;
    } else if (isFlag("--mesh") &&
               (args.command == "check" || args.command == "report" ||
                args.command == "emit" || args.command == "run")) {
      auto v = value("--mesh");
      if (!v || v->empty())
        return usage("--mesh needs AXIS=INT,... (--mesh dp=2,tp=4)");
      size_t start = 0;
      while (start <= v->size()) {
        size_t comma = v->find(',', start);
        std::string item =
            v->substr(start, comma == std::string::npos ? std::string::npos
                                                        : comma - start);
        auto eq = item.find('=');
        if (eq == std::string::npos || eq == 0)
          return usage(fmt::format(
              "--mesh needs AXIS=INT,... (--mesh dp=2,tp=4), got '{}'", *v));
        std::string name = item.substr(0, eq);
        auto n = parseInt(item.substr(eq + 1));
        if (!n || *n < 1)
          return usage(fmt::format("--mesh {}: '{}' is not a positive "
                                   "integer (a mesh axis spans at least 1 "
                                   "device)",
                                   name, item.substr(eq + 1)));
        if (!args.check.meshSizes.emplace(name, *n).second)
          return usage(fmt::format("--mesh names axis '{}' twice", name));
        if (comma == std::string::npos)
          break;
        start = comma + 1;
      }
    } else if (isFlag("--rank") && args.command != "run") {
      auto v = value("--rank");
      if (!v)
        return usage("--rank needs NAME=INT");
      auto eq = v->rfind('=');
      if (eq == std::string::npos || eq == 0)
        return usage(fmt::format("--rank needs NAME=INT, got '{}'", *v));
      std::string name = v->substr(0, eq);
      auto n = parseInt(v->substr(eq + 1));
      if (!n || *n < 0 || *n > Int(kMaxRank))
        return usage(fmt::format("--rank {}: '{}' is not a rank from 0 to {}",
                                 name, v->substr(eq + 1), kMaxRank));
      args.check.packRanks[name] = static_cast<size_t>(*n);
    } else if (isFlag("--in") &&
               (args.command == "run" || args.command == "report")) {
      auto v = value("--in");
      auto eq = v ? v->find('=') : std::string::npos;
      // A safetensors or .npz file alone: its tensors name the parameters.
      if (v && eq == std::string::npos &&
          (runtime::isSafeTensorsPath(*v) || runtime::isNpzPath(*v))) {
        args.inputs.push_back({"", *v});
      } else {
        if (!v || eq == std::string::npos || eq == 0 || eq + 1 == v->size())
          return usage("--in needs PARAM=FILE.npy, PARAM=FILE.safetensors, "
                       "FILE.safetensors, PARAM=FILE.npz or FILE.npz");
        args.inputs.push_back({v->substr(0, eq), v->substr(eq + 1)});
      }
    } else if (isFlag("--out") && args.command == "run") {
      auto v = value("--out");
      if (!v || v->empty())
        return usage("--out needs FILE.npy, FILE.safetensors, "
                     "NAME=FILE.safetensors, FILE.npz or NAME=FILE.npz");
      // NAME=FILE.safetensors or NAME=FILE.npz: the result's tensor name;
      // '=' before any '/' so that a path holding '=' is still a path.
      auto eq = v->find('=');
      auto named = [](const std::string &path) {
        return runtime::isSafeTensorsPath(path) || runtime::isNpzPath(path);
      };
      if (named(*v) && eq != std::string::npos && eq < v->find('/')) {
        if (eq == 0 || !named(v->substr(eq + 1)))
          return usage("--out needs NAME=FILE.safetensors or NAME=FILE.npz");
        args.outputs.push_back({v->substr(0, eq), v->substr(eq + 1)});
      } else {
        args.outputs.push_back({"", *v});
      }
    } else if ((a == "-o" || isFlag("--output")) && args.command == "build") {
      std::optional<std::string> v;
      if (a != "-o")
        v = value("--output");
      else if (i + 1 < rest.size())
        v = rest[++i];
      if (!v || v->empty())
        return usage("-o needs an object file path");
      args.object = *v;
    } else if (isFlag("--header") && args.command == "build") {
      auto v = value("--header");
      if (!v || v->empty())
        return usage("--header needs a file path");
      args.header = *v;
    } else if (isFlag("--check") && args.command == "calibrate") {
      auto v = value("--check");
      if (!v || v->empty())
        return usage("--check needs sizes such as 48KiB,3MiB,24MiB");
      auto sizes = parseByteSizes(*v);
      if (!sizes)
        return usage("--check: " + sizes.error().message);
      args.calibrateCheck = *sizes;
    } else if (isFlag("--ranks") && args.command == "run") {
      auto v = value("--ranks");
      auto n = v ? parseInt(*v) : std::nullopt;
      if (!n || *n < 1)
        return usage("--ranks expects a positive number of ranks");
      args.runRanks = *n;
    } else if (a == "--simulate" && args.command == "run") {
      args.simulate = true;
    } else if (a == "--time" && args.command == "run") {
      args.time = true;
    } else if (a == "--perf-jitdump" && args.command == "run") {
      args.perfJitdump = true;
    } else if (a == "--no-fusion" &&
               (args.command == "run" || args.command == "train" ||
                args.command == "build" || args.command == "emit" ||
                args.command == "report")) {
      args.cpu.fusion = false;
    } else if (a == "--size-generic" && args.command == "run") {
      args.sizeGeneric = true;
    } else if (isFlag("--fn") &&
               (args.command == "report" || args.command == "emit" ||
                args.command == "run" || args.command == "train")) {
      auto v = value("--fn");
      if (!v)
        return usage("--fn needs a function name");
      args.fn = *v;
    } else if (isFlag("--device") && args.command == "report") {
      auto v = value("--device");
      if (!v || !findDevice(*v))
        return usage("--device expects one of " + deviceNames(", "));
      args.device = *v;
    } else if (isFlag("--peak-flops") &&
               (args.command == "report" || args.command == "run")) {
      auto v = value("--peak-flops");
      auto d = v ? parsePositive(*v) : std::nullopt;
      if (!d)
        return usage("--peak-flops expects a positive number of FLOP/s");
      args.peakFlops = *d;
    } else if (isFlag("--bandwidth") &&
               (args.command == "report" || args.command == "run")) {
      auto v = value("--bandwidth");
      auto d = v ? parsePositive(*v) : std::nullopt;
      if (!d)
        return usage("--bandwidth expects a positive number of bytes/s");
      args.bandwidth = *d;
    } else if (isFlag("--tiles") &&
               (args.command == "run" || args.command == "train" ||
                args.command == "build" || args.command == "emit")) {
      auto v = value("--tiles");
      if (!v)
        return usage("--tiles needs KEY=INT[,KEY=INT]...");
      if (auto tiles = parseContractionTiles(*v, args.cpu); !tiles)
        return usage(tiles.error().message);
    } else if ((isFlag("--cpu") || isFlag("--cpu-features")) &&
               (args.command == "run" || args.command == "train" ||
                args.command == "build" || args.command == "emit" ||
                args.command == "calibrate")) {
      bool name = isFlag("--cpu");
      auto v = value(name ? "--cpu" : "--cpu-features");
      if (!v || v->empty())
        return usage(name ? "--cpu needs an LLVM CPU name (e.g. x86-64-v3)"
                          : "--cpu-features needs +FEATURE[,-FEATURE]...");
      (name ? args.cpu.target.name : args.cpu.target.features) = *v;
      if (auto resolved = resolveCPU(args.cpu.target); !resolved)
        return usage(resolved.error().message);
    } else if (isFlag("--target") &&
               (args.command == "run" || args.command == "train" ||
                args.command == "build" || args.command == "report")) {
      auto v = value("--target");
      auto target = lookupTarget(v ? *v : "", useOf(args.command));
      if (!target)
        return usage(target.error().message);
      args.target = *v;
    } else if (isFlag("--main") && args.command == "build") {
      auto v = value("--main");
      if (!v || v->empty())
        return usage("--main needs a function name");
      args.mainFunction = *v;
    } else if (a == "--allow-tf32" &&
               (args.command == "run" || args.command == "build")) {
      args.allowTf32 = true;
    } else if (a == "--json" && args.command == "report") {
      args.json = true;
    } else if (a == "--expand" && args.command == "report") {
      args.expand = true;
    } else if (a == "--train" && args.command == "report") {
      args.train = true;
    } else if (isFlag("--optimizer") && args.command == "report") {
      auto v = value("--optimizer");
      if (!v || !findOptimizer(*v))
        return usage("--optimizer expects one of sgd, momentum, adagrad, "
                     "rmsprop, adam, adamw");
      args.trainOptions.optimizer = *v;
    } else if ((isFlag("--param-dtype") || isFlag("--act-dtype")) &&
               args.command == "report") {
      bool param = isFlag("--param-dtype");
      auto v = value(param ? "--param-dtype" : "--act-dtype");
      auto t = v ? parseDType(*v) : std::nullopt;
      if (!t || !isFloat(*t))
        return usage(fmt::format("{} expects a float dtype: f64, f32, f16, "
                                 "bf16, f8e4m3, f8e5m2",
                                 param ? "--param-dtype" : "--act-dtype"));
      (param ? args.trainOptions.paramDType : args.trainOptions.actDType) = *t;
    } else if (isFlag("--tokens") && args.command == "report") {
      auto v = value("--tokens");
      auto e = v ? std::optional(parseSizeExpr(*v)) : std::nullopt;
      if (!e || !*e)
        return usage("--tokens expects a count or a formula of dims (b*s)");
      args.trainOptions.tokens = **e;
    } else if (args.command == "report" &&
               isDataParallelFlag(a.substr(0, a.find('=')))) {
      std::string flag = a.substr(0, a.find('='));
      if (auto ok = parseDataParallelFlag(flag, value(flag), args.trainOptions,
                                          args.fabric);
          !ok)
        return usage(ok.error().message);
    } else if (isFlag("--params") && args.command == "report") {
      auto v = value("--params");
      if (!v || v->empty())
        return usage("--params expects parameter names: w1,w2");
      std::string name;
      for (char c : *v + ",") {
        if (c != ',') {
          name += c;
          continue;
        }
        if (!name.empty())
          args.trainParams.push_back(name);
        name.clear();
      }
    } else if (isFlag("--stage") && args.command == "emit") {
      auto v = value("--stage");
      if (!v || (*v != "ast" && *v != "ein" && *v != "linalg" &&
                 *v != "loops" && *v != "llvm"))
        return usage("--stage expects ast, ein, linalg, loops or llvm");
      args.stage = *v;
    } else if (a.rfind("-W", 0) == 0 && args.command != "calibrate") {
      if (a == "-Werror") {
        args.warnings.asErrors = true;
        continue;
      }
      bool disable = a.rfind("-Wno-", 0) == 0;
      std::string name = a.substr(disable ? 5 : 2);
      auto kind = parseWarningName(name);
      if (!kind) {
        std::string known;
        for (WarningKind k : allWarningKinds())
          known +=
              fmt::format("{}{}", known.empty() ? "" : ", ", warningName(k));
        return usage(fmt::format("unknown warning '{}' in {}; the warnings "
                                 "are {}",
                                 name, a, known));
      }
      if (disable)
        args.warnings.disabled.insert(*kind);
      else
        args.warnings.disabled.erase(*kind);
    } else if (args.command == "train" &&
               isTrainOption(a.substr(0, a.find('=')))) {
      std::string flag = a.substr(0, a.find('='));
      std::optional<std::string> v;
      if (trainOptionTakesValue(flag))
        v = value(flag);
      if (auto ok = parseTrainOption(flag, v, args.trainRun); !ok)
        return usage(ok.error().message);
    } else if (!a.empty() && a[0] == '-') {
      return usage(
          fmt::format("unknown option '{}' for '{}'", a, args.command));
    } else if (args.command == "calibrate") {
      return usage(fmt::format(
          "calibrate takes no FILE, only --cpu, --cpu-features and --check; "
          "got '{}'",
          a));
    } else if (args.file.empty()) {
      args.file = a;
    } else {
      return usage(fmt::format("unexpected argument '{}'", a));
    }
  }
  if (args.command == "calibrate") {
    // Calibration runs its kernels here: a CPU this host cannot run is
    // refused now, not by SIGILL.
    auto target = resolveCPU(args.cpu.target);
    if (auto runnable = checkHostCanRun(*target); !runnable)
      return usage(runnable.error().message);
    return Parsed{};
  }
  if (args.file.empty())
    return usage(fmt::format("'{}' needs a FILE", args.command));
  const Target *target = nullptr;
  if (args.command == "run" || args.command == "train" ||
      args.command == "build" || args.command == "report") {
    auto found = lookupTarget(args.target, useOf(args.command));
    if (!found)
      return usage(found.error().message);
    target = *found;
  }
  if (!args.mainFunction.empty() && !target->acceptsMain()) {
    std::string with;
    for (const Target *t : targets())
      if (t->serves(TargetUse::Build) && t->acceptsMain())
        with += (with.empty() ? "--target=" : " or --target=") + t->flag();
    return usage("--main needs " + with);
  }
  if (args.command == "build" && (args.object.empty() || args.header.empty()))
    return usage(fmt::format("build needs -o {} and --header HEADER.h",
                             target->outputName()));
  if (args.command == "run" && args.fn.empty())
    return usage("run needs --fn NAME");
  if (args.command == "train") {
    args.trainRun.function = args.fn;
    if (auto ok = checkTrainOptions(args.trainRun); !ok)
      return usage(ok.error().message);
  }
  if (args.command == "run" || args.command == "train")
    if (auto runnable = target->checkRunnable(targetOptions(args)); !runnable)
      return usage(runnable.error().message);
  if (auto ok = checkDataParallelFlags(args.trainOptions, args.train); !ok)
    return usage(ok.error().message);
  if (args.command == "emit" && args.stage.empty())
    return usage("emit needs --stage=ast|ein|linalg|loops|llvm");
  return Parsed{};
}

/// `einc report --train`: the function's report and its training account.
/// A function without grad() is differentiated here, its first result (a
/// scalar loss) with respect to --params.
ErrorOr<void> reportTraining(const Args &args, const CheckedModule &checked,
                             const Target &target, ReportOptions options,
                             const std::string &path, std::ostream &out) {
  auto programError = [&](std::string message) {
    return Error::inFile(ErrorKind::Program, path, std::move(message));
  };
  if (args.fn.empty() && checked.functions.size() != 1)
    return usageError("report", "--train needs --fn NAME (the training step "
                                "or the loss to differentiate)");
  const CheckedFunction *found =
      args.fn.empty() ? &checked.functions.front() : checked.find(args.fn);
  CheckedModule module = checked;
  module.functions = {*found};
  CheckedFunction &fn = module.functions.front();
  options.function = fn.name;
  if (!args.trainParams.empty()) {
    if (!fn.gradWrt.empty())
      return usageError("report", fmt::format("'{}' differentiates with "
                                              "grad(); --params is for a "
                                              "loss function without one",
                                              fn.name));
    if (fn.returns.empty() || !isFloat(fn.values[fn.returns[0]].type.dtype) ||
        !fn.ctx.expand(fn.values[fn.returns[0]].type.shape).empty())
      return programError(fmt::format(
          "--train --params needs '{}' to return a scalar float loss first",
          fn.name));
    std::vector<unsigned> wrt;
    for (const std::string &name : args.trainParams) {
      auto it =
          std::find_if(fn.params.begin(), fn.params.end(),
                       [&](unsigned v) { return fn.values[v].name == name; });
      if (it == fn.params.end())
        return usageError("report",
                          fmt::format("--params: '{}' is not a parameter of "
                                      "'{}'",
                                      name, fn.name));
      if (!isFloat(fn.values[*it].type.dtype))
        return usageError("report", fmt::format("--params: '{}' is not a "
                                                "float tensor",
                                                name));
      wrt.push_back(*it);
    }
    GradientResult grads = appendGradient(fn, fn.returns[0], wrt, fn.loc);
    if (grads.error) {
      SourceLoc at = grads.error->loc;
      return programError(fmt::format("{}:{}:{}: cannot differentiate: {}",
                                      module.pathOf(at), at.line, at.col,
                                      grads.error->message));
    }
    fn.gradWrt = wrt;
    fn.gradLosses = {fn.returns[0]};
    // The gradients are results of the step, as grad() would return them,
    // each in its parameter's layout (a sharded module's).
    for (size_t i = 0; i < wrt.size(); ++i) {
      fn.returns.push_back(grads.grads[i]);
      TensorType type = fn.values[grads.grads[i]].type;
      const Shape &param = fn.values[wrt[i]].type.shape;
      if (type.shape.size() == param.size())
        for (size_t d = 0; d < param.size(); ++d)
          type.shape[d].meshAxis = param[d].meshAxis;
      fn.results.push_back(std::move(type));
    }
    // The backward's layouts and collectives (the forward's again, then
    // the gradient's ops).
    if (!module.meshAxes.empty())
      if (auto e = inferLayouts(fn, module.meshAxes))
        return programError(fmt::format("{}:{}:{}: {}", module.pathOf(e->loc),
                                        e->loc.line, e->loc.col, e->message));
  }
  if (fn.gradWrt.empty())
    return usageError("report",
                      fmt::format("--train: '{}' has no grad(); name the "
                                  "parameters to train with --params w1,w2 "
                                  "(its first result is the loss)",
                                  fn.name));
  // The target's column of the step, op by op (Described::TrainingStep);
  // none for a sharded program, which no target compiles yet.
  std::map<std::string, TargetColumn> columns;
  if (module.meshAxes.empty())
    columns = Engine(args.cpu).describe(
        target, module, fn.name, Described::TrainingStep, targetOptions(args));
  options.targetColumns = &columns;
  auto account = (args.json ? trainReportJSON : trainReportTable)(
      module, fn, options, args.trainOptions);
  if (!account)
    return account.error();
  if (args.json) {
    std::string report = reportJSON(module, options);
    out << fmt::format("{{\"report\":{},\"train\":{}}}\n",
                       report.substr(0, report.find_last_not_of("\n") + 1),
                       *account);
    return {};
  }
  out << reportTable(module, options) << *account;
  return {};
}

/// `einc report` of `checked` (checked with --dim, or with the sizes of
/// --in), the table, JSON or training account.
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
    return reportTraining(args, checked, **target, options, file.path, out);
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

ErrorOr<void> runCommand(const Args &args, std::ostream &out,
                         std::ostream &warnings) {
  if (args.command == "calibrate") {
    auto text = runCalibrate(args.cpu, args.calibrateCheck);
    if (!text)
      return text.error();
    out << *text;
    return {};
  }
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
  if (!module.meshes.empty() && args.command != "check" &&
      args.command != "report") {
    CheckOptions options = args.check;
    options.loopsMayStaySymbolic = true;
    checkModule(module, options, diags);
    if (diags.hadError())
      return errorFromDiagnostics(diags);
    const SourceLoc &at = module.meshes.front().loc;
    // emit --stage=ein shows the local program with its collectives; the
    // lowering of the mesh ops is not built, so the later stages say so
    // rather than print an IR without them.
    if (args.command == "emit" && args.stage == "ein")
      return emitShardedEin(*file, module, args.check, args.fn, out);
    if (args.command == "emit")
      return Error::inFile(
          ErrorKind::Program, file->path,
          fmt::format("line {}: this file declares a mesh; einc emit "
                      "--stage=ein shows its local program with the mesh "
                      "collectives, but --stage={} is not: lowering mesh "
                      "collectives is not built yet (issue 30, "
                      "docs/distributed.md §8)",
                      at.line, args.stage));
    return Error::inFile(
        ErrorKind::Program, file->path,
        args.command == "run"
            ? fmt::format("line {}: this file declares a mesh; a sharded "
                          "program runs on ranks: einc run --ranks N (MPI), "
                          "or --ranks N --simulate (threads)",
                          at.line)
            : fmt::format("line {}: this file declares a mesh; sharded "
                          "programs are checked, reported and run on ranks "
                          "(einc check, report, run --ranks N) but not yet "
                          "{} (issue 30, docs/distributed.md §8)",
                          at.line,
                          args.command == "train" ? "trained" : "compiled"));
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
    TrainRunOptions train = args.trainRun;
    train.target = args.target;
    train.cpu = args.cpu;
    train.jit = JITOptions::fromEnvironment();
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
  IRStage stage = args.stage == "ein"      ? IRStage::Ein
                  : args.stage == "linalg" ? IRStage::Linalg
                  : args.stage == "loops"  ? IRStage::Loops
                                           : IRStage::LLVM;
  if (auto emitted = emitIR(checked, stage, out, args.cpu); !emitted)
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
