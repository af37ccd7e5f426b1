// einc's subcommands: argument parsing and the check/report/emit pipelines.
#include "ein/Driver/Driver.h"
#include "ein/Driver/Calibrate.h"
#include "ein/Driver/Report.h"
#include "ein/Driver/Run.h"
#include "ein/Execution/AOT.h"
#include "ein/MLIRGen/MLIRGen.h"
#include "ein/Sema/Checker.h"
#include "ein/Syntax/Parser.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <sys/stat.h>

namespace ein {

namespace {

const char *kUsage = R"(usage: einc <command> FILE [options]

Commands:
  check FILE [--dim NAME=INT]...
      Check shapes statically; print diagnostics and the entry checks that
      remain for run time. Exit 0 when the file is well-typed, 1 otherwise.
  report FILE [--fn NAME] [--dim NAME=INT]... [--device a100|h100|h200]
              [--peak-flops FLOPS] [--bandwidth BYTES_PER_S] [--json]
      Per-op FLOPs, bytes, arithmetic intensity, roofline time, view or copy,
      and totals per function.
  run FILE --fn NAME --in PARAM=FILE.npy... --out FILE.npy... [--dim NAME=INT]...
      [--time] [--peak-flops FLOPS] [--bandwidth BYTES_PER_S]
      JIT-compile NAME for this CPU with the inputs' sizes and run it; bf16
      inputs are read from f32 files (rounded to nearest even) or from raw
      uint16 files, and bf16 results are written as f32. Exit 2 when the
      inputs do not fit the signature; no output is written then.
  calibrate
      Measure this CPU (copy bandwidth, ein's matmul rate) and derive its f32
      peak from /proc/cpuinfo; stored for `run --time`.
  build FILE -o OBJECT.o --header HEADER.h [--dim NAME=INT]...
      Compile every function for this CPU into an object file, with a C
      header declaring `int ein_NAME(data, sizes, strides per tensor...)`.
      Every dim must be bound (by `dim` or --dim).
  emit FILE --stage=ast|ein|linalg|loops|llvm [--dim NAME=INT]...
      Print a compilation stage. Stages after ein lower to static shapes:
      every dim must be bound (by `dim` or --dim).

Options:
  --dim NAME=INT   bind a dim (overrides `dim NAME = ...` in the file)
  --tiles KEY=INT[,KEY=INT]...
                   (run, build, emit) blocking of contractions: mr and
                   nr-vectors (register tile: mr rows x nr-vectors vectors,
                   default 6 x 4 with AVX-512, 6 x 2 without), mc, nc, kc
                   (packed blocks, in f32
                   elements, default 128, 1024, 256), vector-bits (default:
                   the host's), work-items (parallel blocks, default: twice
                   the hardware threads)
  --help           show this help
)";

int usageError(const std::string &message) {
  std::cerr << "einc: error: " << message << "\n"
            << "run 'einc --help' for usage\n";
  return 2;
}

struct Args {
  std::string command, file, fn, stage, device = "h100", object, header;
  bool json = false, time = false;
  std::vector<std::pair<std::string, std::string>> inputs;
  std::vector<std::string> outputs;
  double peakFlops = 0, bandwidth = 0;
  CheckOptions check;
  CPUOptions cpu;
};

std::optional<double> parsePositive(const std::string &text) {
  char *end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v > 0) || v > 1e30)
    return std::nullopt;
  return v;
}

/// Parses arguments; returns an exit code on error.
std::optional<int> parseArgs(int argc, char **argv, Args &args) {
  std::vector<std::string> rest;
  for (int i = 1; i < argc; ++i)
    rest.push_back(argv[i]);
  if (rest.empty())
    return usageError("no command given");
  if (rest[0] == "--help" || rest[0] == "-h" || rest[0] == "help") {
    std::cout << kUsage;
    return 0;
  }
  args.command = rest[0];
  if (args.command == "calibrate") {
    if (rest.size() > 1)
      return usageError("calibrate takes no arguments");
    return runCalibrate();
  }
  if (args.command != "check" && args.command != "report" &&
      args.command != "emit" && args.command != "run" &&
      args.command != "build")
    return usageError("unknown command '" + args.command + "'");
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
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return 0;
    }
    if (isFlag("--dim")) {
      auto v = value("--dim");
      if (!v)
        return usageError("--dim needs NAME=INT");
      auto eq = v->find('=');
      if (eq == std::string::npos || eq == 0)
        return usageError("--dim needs NAME=INT, got '" + *v + "'");
      std::string name = v->substr(0, eq);
      auto n = parseInt(v->substr(eq + 1));
      if (!n || *n < 0)
        return usageError("--dim " + name + ": '" + v->substr(eq + 1) +
                          "' is not a non-negative integer that fits in 128 "
                          "bits");
      args.check.dimOverrides[name] = *n;
    } else if (isFlag("--in") && args.command == "run") {
      auto v = value("--in");
      auto eq = v ? v->find('=') : std::string::npos;
      if (!v || eq == std::string::npos || eq == 0 || eq + 1 == v->size())
        return usageError("--in needs PARAM=FILE.npy");
      args.inputs.push_back({v->substr(0, eq), v->substr(eq + 1)});
    } else if (isFlag("--out") && args.command == "run") {
      auto v = value("--out");
      if (!v || v->empty())
        return usageError("--out needs FILE.npy");
      args.outputs.push_back(*v);
    } else if ((a == "-o" || isFlag("--output")) && args.command == "build") {
      auto v = a == "-o" ? (i + 1 < rest.size() ? std::optional<std::string>(rest[++i])
                                                : std::nullopt)
                         : value("--output");
      if (!v || v->empty())
        return usageError("-o needs an object file path");
      args.object = *v;
    } else if (isFlag("--header") && args.command == "build") {
      auto v = value("--header");
      if (!v || v->empty())
        return usageError("--header needs a file path");
      args.header = *v;
    } else if (a == "--time" && args.command == "run") {
      args.time = true;
    } else if (isFlag("--fn") && (args.command == "report" || args.command == "run")) {
      auto v = value("--fn");
      if (!v)
        return usageError("--fn needs a function name");
      args.fn = *v;
    } else if (isFlag("--device") && args.command == "report") {
      auto v = value("--device");
      if (!v || !findDevice(*v))
        return usageError("--device expects one of a100, h100, h200");
      args.device = *v;
    } else if (isFlag("--peak-flops") &&
               (args.command == "report" || args.command == "run")) {
      auto v = value("--peak-flops");
      auto d = v ? parsePositive(*v) : std::nullopt;
      if (!d)
        return usageError("--peak-flops expects a positive number of FLOP/s");
      args.peakFlops = *d;
    } else if (isFlag("--bandwidth") &&
               (args.command == "report" || args.command == "run")) {
      auto v = value("--bandwidth");
      auto d = v ? parsePositive(*v) : std::nullopt;
      if (!d)
        return usageError("--bandwidth expects a positive number of bytes/s");
      args.bandwidth = *d;
    } else if (isFlag("--tiles") && (args.command == "run" ||
                                     args.command == "build" ||
                                     args.command == "emit")) {
      auto v = value("--tiles");
      if (!v)
        return usageError("--tiles needs KEY=INT[,KEY=INT]...");
      std::string problem = parseContractionTiles(*v, args.cpu);
      if (!problem.empty())
        return usageError(problem);
    } else if (a == "--json" && args.command == "report") {
      args.json = true;
    } else if (isFlag("--stage") && args.command == "emit") {
      auto v = value("--stage");
      if (!v || (*v != "ast" && *v != "ein" && *v != "linalg" &&
                 *v != "loops" && *v != "llvm"))
        return usageError("--stage expects ast, ein, linalg, loops or llvm");
      args.stage = *v;
    } else if (!a.empty() && a[0] == '-') {
      return usageError("unknown option '" + a + "' for '" + args.command + "'");
    } else if (args.file.empty()) {
      args.file = a;
    } else {
      return usageError("unexpected argument '" + a + "'");
    }
  }
  if (args.file.empty())
    return usageError("'" + args.command + "' needs a FILE");
  if (args.command == "build" && (args.object.empty() || args.header.empty()))
    return usageError("build needs -o OBJECT.o and --header HEADER.h");
  if (args.command == "run" && args.fn.empty())
    return usageError("run needs --fn NAME");
  if (args.command == "emit" && args.stage.empty())
    return usageError("emit needs --stage=ast|ein|linalg|loops|llvm");
  return std::nullopt;
}

/// Reads a source file; reports unreadable or binary files.
std::optional<SourceFile> readSource(const std::string &path) {
  struct stat info;
  if (::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) {
    std::cerr << path << ": error: not a regular file\n";
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::cerr << path << ": error: cannot open file: " << std::strerror(errno)
              << "\n";
    return std::nullopt;
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) {
    std::cerr << path << ": error: cannot read file\n";
    return std::nullopt;
  }
  SourceFile file{path, buffer.str()};
  if (file.text.find('\0') != std::string::npos) {
    std::cerr << path << ": error: not a text file (contains NUL bytes)\n";
    return std::nullopt;
  }
  return file;
}

} // namespace

int runEinc(int argc, char **argv) {
  Args args;
  if (auto code = parseArgs(argc, argv, args))
    return *code;
  auto file = readSource(args.file);
  if (!file)
    return 1;
  DiagnosticEngine diags(*file);
  Module module = parseModule(*file, diags);
  if (diags.hadError()) {
    diags.print(std::cerr);
    return 1;
  }
  if (args.command == "emit" && args.stage == "ast") {
    printAST(module, std::cout);
    return 0;
  }
  if (args.command == "run") {
    RunOptions run;
    run.function = args.fn;
    run.inputs = args.inputs;
    run.outputs = args.outputs;
    run.time = args.time;
    run.peakFlops = args.peakFlops;
    run.bandwidth = args.bandwidth;
    run.cpu = args.cpu;
    return runFunction(*file, module, args.check, run);
  }
  CheckedModule checked = checkModule(module, args.check, diags);
  if (diags.hadError()) {
    diags.print(std::cerr);
    return 1;
  }
  if (args.command == "build") {
    std::string error;
    if (!compileToObject(checked, args.object, args.header, error, args.cpu)) {
      std::cerr << file->path << ": error: cannot build:\n" << error;
      return 1;
    }
    return 0;
  }
  if (args.command == "check") {
    for (auto &fn : checked.functions) {
      for (auto &c : fn.ctx.constraints)
        std::cout << file->path << ": " << fn.name << ": entry check: "
                  << c.str() << "\n";
      for (auto &[name, value] : fn.ctx.inferred)
        std::cout << file->path << ": " << fn.name << ": entry check: "
                  << name << " == " << toString(value) << "\n";
    }
    return 0;
  }
  if (args.command == "report") {
    if (!args.fn.empty() && !checked.find(args.fn)) {
      std::cerr << file->path << ": error: no function named '" << args.fn
                << "'\n";
      return 1;
    }
    ReportOptions options;
    options.function = args.fn;
    options.device = findDevice(args.device);
    options.peakOverride = args.peakFlops;
    options.bandwidthOverride = args.bandwidth;
    if (args.json)
      printReportJSON(checked, options, std::cout);
    else
      printReportTable(checked, options, std::cout);
    return 0;
  }
  IRStage stage = args.stage == "ein"      ? IRStage::Ein
                  : args.stage == "linalg" ? IRStage::Linalg
                  : args.stage == "loops"  ? IRStage::Loops
                                           : IRStage::LLVM;
  std::string error;
  if (!emitIR(checked, stage, std::cout, error, args.cpu)) {
    std::cerr << file->path << ": error: cannot emit --stage=" << args.stage
              << ":\n"
              << error;
    return 1;
  }
  return 0;
}

} // namespace ein
