// The CPU JIT's profiler and debugger hooks, apart from the JIT (JIT.h), so
// that the Engine's header names them without the CPU back end.
#pragma once

#include <string>

namespace ein {

/// Profiler and debugger hooks of the JIT. Off by default: the perf listener
/// writes a jitdump directory (`$JITDUMPDIR` or `$HOME`/.debug/jit/...) on
/// every compilation, which piles up and is never cleaned.
struct JITOptions {
  bool perfListener = false; // perf jitdump files, for `perf inject --jit`
  bool gdbListener = false;  // register the code with gdb's JIT interface
  /// When set, compile() also writes the compiled object code to this file
  /// (a bundle of objects, ObjectBundle.h, for loadObject in a later
  /// process), when it can: a file it cannot write is left missing.
  std::string objectFile;
  /// The options asked for by EIN_JIT_PERF=1 and EIN_JIT_GDB=1 (JIT.cpp).
  static JITOptions fromEnvironment();
};

} // namespace ein
