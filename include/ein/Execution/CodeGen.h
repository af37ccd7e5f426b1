// LLVM IR to object code, for the JIT and `einc build`: optimized and
// generated in partitions on parallel threads (docs/lowering.md, §4).
#pragma once

#include "ein/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace llvm {
class Module;
} // namespace llvm

namespace ein {

struct ResolvedCPU;

/// The object code of `module` for `cpu` (its triple and data layout are
/// set here), through optimizeLLVMModule and LLVM's code generator. Up to
/// `maxPartitions` objects: a large module is split by function (after
/// identical functions are merged; its local symbols made hidden globals)
/// into parts balanced by instruction count, each optimized and compiled on
/// a thread of its own in an LLVMContext of its own (as llvm::splitCodeGen).
/// How many parts depends only on the module's size, never on the number
/// of threads: the same module gives the same objects, bit for bit. The
/// objects reference each other's symbols; they are linked together (the
/// JIT's loader) or the caller asks for one (`maxPartitions` = 1).
ErrorOr<std::vector<std::string>>
generateObjects(std::unique_ptr<llvm::Module> module, const ResolvedCPU &cpu,
                unsigned maxPartitions);

/// The instructions of a module's part: fewer than this per partition are
/// not worth a thread (the gradient of examples/gpt.ein has ~40k).
inline constexpr unsigned kInstructionsPerPartition = 4000;
/// The most partitions a module is split into.
inline constexpr unsigned kMaxPartitions = 8;

} // namespace ein
