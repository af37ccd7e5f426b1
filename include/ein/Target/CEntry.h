// The C entry points every target writes around its compiled code: C
// names, the error codes and overflow-checked size helpers, and per
// function a signature and the checks of ranks, sizes, entry checks,
// pointers, strides and aliasing (the CPU header, the CUDA source).
#ifndef EIN_TARGET_CENTRY_H
#define EIN_TARGET_CENTRY_H

#include "ein/Sema/Program.h"
#include "ein/Shape/SizeExpr.h"

#include <map>
#include <string>
#include <vector>

namespace ein {

/// The C type that holds an element of `t` (raw bits for f16, bf16, fp8).
const char *cType(DType t);

/// The ASCII C spelling of an ein name: ASCII characters stay, every other
/// code point becomes `_uXXXX` (or `_UXXXXXXXX` above U+FFFF).
std::string cName(const std::string &name);

/// An error when two functions, or two parameters of one function, get the
/// same C name; empty when all are distinct.
std::string cNameClash(const CheckedModule &module);

/// The include guard of a generated header: `prefix`, the header's file
/// name (not its directory: the same build writes the same header wherever
/// it goes) and a hash of the module's function names (two generated
/// headers of one name, from different modules, still both include).
std::string headerGuard(const std::string &prefix,
                        const std::string &headerPath,
                        const CheckedModule &module);

/// C text that computes sizes with overflow checks: names are C locals,
/// quotients floor divisions; `ovf` is set on overflow or a division by 0.
class CSizeWriter {
public:
  std::map<std::string, std::string> names; // ein name -> C local
  std::string expr(const SizeExpr &e) const;
};

/// The error codes and the static inline helpers the checks call, for a
/// header or source after `#include <stdint.h>`.
std::string cEntryPreamble();

/// One function's entry point, up to the call of the compiled code.
struct CEntry {
  /// `int ein_NAME(...)` without a trailing brace: per tensor (parameters,
  /// then one `outK` per result) `data, int64_t rank, const int64_t *sizes,
  /// const int64_t *strides`, then `extraParams` (e.g. ", cudaStream_t s").
  std::string signature;
  /// The body's first statements: locals (`ovf`, `rc`, one `ein_sK` per
  /// size read), then the checks, each returning its EIN_ERR_* code.
  std::string checks;
  /// The C name of each tensor (parameters, then outputs) and its rank.
  std::vector<std::string> tensors;
  std::vector<size_t> ranks;
  /// Evaluates any size of the function from the sizes read (after the
  /// checks, `ovf` is known to stay 0 for the sizes of every tensor).
  CSizeWriter sizes;
};
CEntry cEntry(const CheckedFunction &fn, const std::string &extraParams = "");

} // namespace ein

#endif // EIN_TARGET_CENTRY_H
