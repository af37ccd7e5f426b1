// einc's command line read into `Args` (parseArgs), shared by the driver's
// commands (Driver.cpp); internal to EinDriver.
#pragma once

#include "ein/Analysis/Cost.h"
#include "ein/Analysis/Training.h"
#include "ein/Conversion/CPU/CPUOptions.h"
#include "ein/Driver/Train.h"
#include "ein/Report/Report.h"
#include "ein/Sema/Checker.h"
#include "ein/Support/Error.h"
#include "ein/Target/Target.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ein::driver {

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
  /// check --lang=python (or a FILE ending in .py): the Python checker;
  /// --verbose lists what it skipped.
  bool python = false, verbose = false;
};

/// What the command line asks for: a command to run with `Args`, or text
/// (help, version) to print.
struct Parsed {
  std::optional<std::string> text;
};

/// A usage error, with the help to read.
Error usageError(const std::string &command, std::string message);

/// What the targets read from the command line.
TargetOptions targetOptions(const Args &args);

/// Reads the command line after the tool's name into `args`; help and
/// version requests come back as text.
ErrorOr<Parsed> parseArgs(const std::vector<std::string> &rest, Args &args);

} // namespace ein::driver
