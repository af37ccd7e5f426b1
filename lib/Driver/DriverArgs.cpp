// einc's command line: every flag of every command read and checked into
// `Args` (DriverArgs.h), before any file is read.
#include "DriverArgs.h"
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

namespace ein::driver {

Error usageError(const std::string &command, std::string message) {
  return Error::usage(std::move(message))
      .withContext(fmt::format("run 'einc {}--help' for usage\n",
                               command.empty() ? "" : command + " "));
}

namespace {

/// The largest rank --rank accepts.
constexpr int kMaxRank = 16;

std::optional<double> parsePositive(const std::string &text) {
  char *end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v > 0) || v > 1e30)
    return std::nullopt;
  return v;
}

/// The registry's use of a command's --target.
TargetUse useOf(const std::string &command) {
  return command == "build"    ? TargetUse::Build
         : command == "report" ? TargetUse::Report
                               : TargetUse::Run;
}

} // namespace

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
                args.command == "emit" || args.command == "run" ||
                args.command == "train")) {
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
    } else if (a == "--json" &&
               (args.command == "report" || args.command == "check")) {
      args.json = true;
    } else if (a == "--verbose" && args.command == "check") {
      args.verbose = true;
    } else if (isFlag("--lang") && args.command == "check") {
      auto v = value("--lang");
      if (!v || (*v != "python" && *v != "ein"))
        return usage("--lang expects python or ein");
      args.python = *v == "python";
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
                 *v != "loops" && *v != "llvm" && *v != "cuda"))
        return usage("--stage expects ast, ein, linalg, loops, llvm or cuda");
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
  if (args.command == "check" && args.file.size() > 3 &&
      args.file.compare(args.file.size() - 3, 3, ".py") == 0)
    args.python = true;
  if (args.command == "check" && !args.python && (args.json || args.verbose))
    return usage("check --json and --verbose are for a Python file (FILE.py "
                 "or --lang=python)");
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
    return usage("emit needs --stage=ast|ein|linalg|loops|llvm|cuda");
  return Parsed{};
}

} // namespace ein::driver
