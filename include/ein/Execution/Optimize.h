//===- Optimize.h - LLVM's optimizer as ein runs it ---------------*- C++
//-*-===//
//
// The one place where the JIT and the object writer (`einc build`) set up
// LLVM's optimization pipeline for lowered ein code.
//
//===----------------------------------------------------------------------===//
#ifndef EIN_EXECUTION_OPTIMIZE_H
#define EIN_EXECUTION_OPTIMIZE_H

namespace llvm {
class Error;
class Module;
class TargetMachine;
} // namespace llvm

namespace ein {

/// LLVM's -O3 module pipeline for `machine` (vectorizers on), with full
/// unrolling limited to loops whose unrolled body costs at most
/// kFullUnrollThreshold (docs/lowering.md, "LLVM's optimizer").
llvm::Error optimizeLLVMModule(llvm::Module &module,
                               llvm::TargetMachine *machine);

/// LLVM's cost budget for unrolling a loop completely (LLVM's -O3: 300).
/// At 300, the 64-iteration scalar loops of a training step's row ops are
/// unrolled before the loop vectorizer sees them, and the SLP vectorizer
/// rebuilds vectors from the copies: examples/gpt.ein's gradient grew from
/// 12.7k to 98k lines of IR, and its compile took 10.5 s of CPU. At 100
/// they are vectorized as loops: 6.4 s, with the same step time (bench/).
inline constexpr unsigned kFullUnrollThreshold = 100;

} // namespace ein

#endif // EIN_EXECUTION_OPTIMIZE_H
