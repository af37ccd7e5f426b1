// libFuzzer target: the cost model as `einc report --json` computes it
// (lib/Analysis, lib/Report/Report.cpp; the CUDA target's column,
// lib/Target/CUDA/DescribeCUDA.cpp), bytes taken as a source file; sizes
// are bound by `#! dim NAME=INT` lines and by values derived from the input.
//
// Oracles beyond "no crash, no sanitizer report":
//   json   the JSON report is valid JSON (RFC 8259, UTF-8), for every input.
#include "FuzzSupport.h"

#include "ein/Report/Report.h"
#include "ein/Sema/Checker.h"
#include "ein/Syntax/Parser.h"
#include "ein/Target/CUDA/DescribeCUDA.h"

using namespace ein;

namespace {

/// Sizes the automatic bindings pick from: small ones, and ones near the
/// limits of int64 and of the 128-bit counts.
const Int kSizes[] = {1,
                      2,
                      3,
                      7,
                      8,
                      64,
                      1000,
                      Int(1) << 31,
                      Int(1) << 40,
                      (Int(1) << 62) + 1,
                      (Int(1) << 63) - 1,
                      Int(1) << 64,
                      Int(1) << 100,
                      (Int(1) << 126) - 1};

void report(const CheckedModule &module, const fuzz::Directives &directives,
            uint64_t seed) {
  ReportOptions options;
  options.function = directives.function;
  if (!options.function.empty() && !module.find(options.function))
    options.function.clear(); // einc stops with "no function named"
  const char *devices[] = {"a100", "h100", "h200", ""};
  options.device = findDevice(directives.device.empty() ? devices[seed % 4]
                                                        : directives.device);
  if ((seed >> 2) % 4 == 0)
    options.peakOverride = 1e12;
  if ((seed >> 4) % 4 == 0)
    options.bandwidthOverride = 3e9;
  // The CUDA target's column: the planner on any sizes.
  std::map<std::string, TargetColumn> columns;
  if ((seed >> 6) % 2 == 0) {
    for (auto &fn : module.functions)
      columns.emplace(fn.name, describeCUDA(fn));
    options.targetColumns = &columns;
  }
  std::string json = reportJSON(module, options);
  (void)reportTable(module, options);
  if (fuzz::ignored("json"))
    return;
  std::string problem = fuzz::JsonChecker(json).check();
  if (!problem.empty())
    fuzz::finding("json", problem + "\n" + json);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  SourceFile file{"fuzz.ein", std::string(reinterpret_cast<const char *>(data), size)};
  if (file.text.find('\0') != std::string::npos)
    return -1; // einc refuses NUL bytes
  uint64_t seed = fuzz::hashBytes(file.text);
  fuzz::Directives directives = fuzz::parseDirectives(file.text);
  Module module;
  {
    DiagnosticEngine diags(file);
    module = parseModule(file, diags);
    if (diags.hadError())
      return 0;
  }
  CheckOptions options;
  options.dimOverrides = directives.dims;
  DiagnosticEngine diags(file);
  CheckedModule checked = checkModule(module, options, diags);
  if (diags.hadError())
    return 0;
  report(checked, directives, seed);

  // Again with the free sizes bound (as `--dim` would), to exercise the
  // numeric side of the model, overflow included.
  auto names = fuzz::freeSizeNames(checked);
  bool bound = false;
  for (auto &name : names) {
    if (name.rfind("_anon", 0) == 0 || options.dimOverrides.count(name))
      continue;
    uint64_t h = fuzz::hashBytes(name, seed);
    options.dimOverrides[name] = kSizes[h % (sizeof kSizes / sizeof kSizes[0])];
    bound = true;
  }
  if (!bound)
    return 0;
  DiagnosticEngine diagsBound(file);
  CheckedModule checkedBound = checkModule(module, options, diagsBound);
  if (!diagsBound.hadError())
    report(checkedBound, directives, seed >> 8);
  return 0;
}
