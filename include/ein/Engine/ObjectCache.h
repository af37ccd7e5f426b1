// The disk cache of compiled code: bundles of object files under the user's
// cache directory, keyed by everything they depend on, so a second process
// starts without compiling.
#pragma once

#include "ein/Conversion/CPU/Pipelines.h"
#include "ein/Execution/JIT.h"

#include <memory>
#include <optional>
#include <string>

namespace ein {

class ObjectCache {
public:
  /// $EIN_CACHE_DIR, else $XDG_CACHE_HOME/ein, else $HOME/.cache/ein,
  /// created (mode 0700) on first use; empty when EIN_CACHE_DIR=off or the
  /// directory cannot be made.
  static const std::string &directory();
  /// This build of the compiler (the size and modification time of the file
  /// holding this code) and the host CPU's name and features: what a cached
  /// object depends on besides its source.
  static const std::string &compilerAndCPU();
  /// `function` of `checked` loaded from the object cached for `key` (the
  /// source and whatever else decides the code), or compiled and stored
  /// there. `*loaded` says which. A cache that cannot be read or written
  /// only costs a compilation; entries are written through a temporary
  /// file and a rename, so concurrent processes never see half of one.
  static ErrorOr<std::unique_ptr<JITFunction>>
  compileOrLoad(const std::string &key, const CheckedModule &checked,
                const std::string &function, const CPUOptions &cpu,
                JITOptions jit, bool *loaded);
  /// Where the file of `key` with `suffix` is or would be cached (nothing
  /// when the cache is off): for a file that must sit beside another of
  /// the same name (a precompiled header beside its header).
  static std::optional<std::string> entryPath(const std::string &key,
                                              const std::string &suffix);
  /// The path of the file cached for `key` (compared whole: it holds
  /// whatever decides the file) with `suffix` (".so"), when there is one.
  static std::optional<std::string> findFile(const std::string &key,
                                             const std::string &suffix);
  /// Moves the file `built` into the cache as `key`'s entry (the file
  /// first, then its key, so a key is only ever next to its whole file);
  /// its path there, or `built` when the cache is off or the move failed.
  static std::string storeFile(const std::string &key,
                               const std::string &suffix,
                               const std::string &built);
};

} // namespace ein
