// The CUDA targets' in-process artifact (TargetOptions::inProcess): the
// function's CUDA source with C-ABI shims, built into a shared library and
// loaded into this process, called on device pointers.
#pragma once

#include "ein/Target/Target.h"

#include <memory>
#include <string>

namespace ein {

/// Builds (or finds in the disk cache of `.so`s, when
/// `options.diskCacheKey` is set) and loads the library of `function`.
ErrorOr<std::shared_ptr<Artifact>>
buildSharedLibrary(const CheckedModule &module, const std::string &function,
                   const TargetOptions &options, bool emulated);

/// The callable of a buildSharedLibrary() artifact; null when `artifact` is
/// not one.
std::shared_ptr<Callable>
sharedLibraryCallable(const std::shared_ptr<Artifact> &artifact);

} // namespace ein
