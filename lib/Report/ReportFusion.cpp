// `einc report`'s fused column: which source ops the CPU pipeline's fusion
// passes put in one loop nest, numbered per function (the IR is read by
// Compile's fusedLoopNests; no MLIR here).
#include "ein/Compile/Compile.h"
#include "ein/Report/Report.h"
#include "ein/Sema/Checker.h"

#include <fmt/format.h>

namespace ein {

namespace {

FunctionFusion fusionOf(const CheckedModule &module, const CheckedFunction &fn,
                        const CPUOptions &cpu) {
  FunctionFusion result;
  result.groups.resize(fn.ops.size());
  if (!cpu.fusion) {
    result.off = true;
    return result;
  }
  // Lowering gives every tensor a fixed rank (as `einc build`).
  if (auto pack = variadicOfUnknownRank(fn)) {
    result.unknown =
        fmt::format("the rank of variadic {} is not fixed (--rank {}=N)", *pack,
                    *pack == "..." ? "PARAM..." : *pack);
    return result;
  }
  auto nests = fusedLoopNests(module, fn, cpu);
  if (!nests) {
    result.unknown = "the CPU pipeline fails on it";
    // Its first diagnostic, without the location (the table says where).
    std::string first = nests.error().context;
    first = first.substr(0, first.find('\n'));
    if (size_t at = first.find("error: "); at != std::string::npos)
      result.unknown += ": " + first.substr(at + 7);
    return result;
  }
  std::map<std::string, int> counts;
  for (auto &nest : *nests) {
    // A loop computing one source op (its fill and its generic) is that
    // op's own loop nest.
    if (nest.ops.size() < 2)
      continue;
    std::string name = fmt::format("{}#{}", nest.kind, ++counts[nest.kind]);
    for (size_t i : nest.ops) {
      std::string &label = result.groups[i];
      label += (label.empty() ? "" : ",") + name;
    }
  }
  return result;
}

} // namespace

std::map<std::string, FunctionFusion> analyzeFusion(const CheckedModule &module,
                                                    const std::string &function,
                                                    const CPUOptions &cpu) {
  std::map<std::string, FunctionFusion> byName;
  for (auto &fn : module.functions)
    if (function.empty() || fn.name == function)
      byName[fn.name] = fusionOf(module, fn, cpu);
  return byName;
}

} // namespace ein
