// Ahead-of-time compilation: an object file and a C header per .ein module.
#pragma once

#include "ein/Conversion/CPU/Pipelines.h"
#include "ein/Sema/Program.h"
#include "ein/Support/Error.h"

#include <string>

namespace ein {

/// Compiles every function of `module` (all dims bound) for this CPU into
/// the object file `objectPath`, and writes a C header `headerPath` that
/// declares one C-ABI entry point per function:
///
///   int ein_NAME(const T *x_data, int64_t x_rank, const int64_t *x_sizes,
///                const int64_t *x_strides, ..., T *out0_data, ...);
///
/// taking, per tensor, a data pointer, its rank, its sizes and its strides
/// (in elements), and returning 0 on success or an `EIN_ERR_*` code (the
/// signature and checks are ein/Target/CEntry.h's, shared by all targets). The
/// object needs LLVM's OpenMP runtime (libomp) and libm at link time. The error
/// says "cannot build:" with the reason as its context (exit 1).
ErrorOr<void> compileToObject(const CheckedModule &module,
                              const std::string &objectPath,
                              const std::string &headerPath,
                              const CPUOptions &options = {});

/// The C header text for `module` (exposed for tests).
std::string cHeader(const CheckedModule &module, const std::string &guard);

} // namespace ein
