// The CPU back end's targets: `cpu` (the JIT, for einc run, the API and the
// report) and `cpu-object` (einc build's object file and C header).
#pragma once

#include "ein/Target/Target.h"

#include <memory>
#include <vector>

namespace ein {

class JITFunction;

/// Appends the CPU targets (TargetRegistry.cpp's one line for them).
void addCPUTargets(std::vector<std::unique_ptr<Target>> &targets);

/// The JIT-compiled function inside a callable that the `cpu` target
/// loaded; null for any other callable (the Engine's probes and the API's
/// strided fast path call it directly).
std::shared_ptr<JITFunction> jitFunctionOf(const Callable &callable);

} // namespace ein
