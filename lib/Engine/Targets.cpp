// The Engine's doors to a target that are not a compilation for a call:
// `einc build`'s files and the report's column. They only forward, so that
// every client reaches targets through the Engine.
#include "ein/Engine/Engine.h"

namespace ein {

ErrorOr<void> Engine::buildFiles(const Target &target,
                                 const CheckedModule &module,
                                 const std::string &sourcePath,
                                 const std::string &outputPath,
                                 const std::string &headerPath,
                                 const TargetOptions &options) const {
  return target.buildFiles(module, sourcePath, outputPath, headerPath, options);
}

std::map<std::string, TargetColumn>
Engine::describe(const Target &target, const CheckedModule &module,
                 const std::string &function, Described what,
                 const TargetOptions &options) const {
  std::map<std::string, TargetColumn> columns;
  for (const CheckedFunction &fn : module.functions)
    if (function.empty() || fn.name == function)
      if (auto column = target.describe(module, fn, what, options))
        columns.emplace(fn.name, std::move(*column));
  return columns;
}

} // namespace ein
