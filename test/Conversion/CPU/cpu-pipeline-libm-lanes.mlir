// RUN: ein-opt %s --ein-lower-to-llvm="vector-bits=256" | FileCheck %s
// RUN: ein-opt %s --ein-lower-to-llvm="vector-bits=512" | FileCheck %s

// Regression test (was a failure to compile): f64 tanh, erf (in gelu) and
// gelu_tanh in a contraction's epilogue are vector ops that only libm
// computes. convert-math-to-libm calls it once per lane through
// vector.extract and vector.insert, which came after convert-vector-to-llvm
// and stayed in the LLVM dialect module ("missing
// LLVMTranslationDialectInterface ... vector.extract" from the JIT). The
// pipeline converts vectors again after it: no vector op is left.
// CHECK-LABEL: llvm.func @epilogues
// CHECK-DAG: llvm.call @tanh(
// CHECK-DAG: llvm.call @erf(
// CHECK-NOT: vector.
module attributes {ein.dims = {k = 3 : i64, m = 5 : i64, n = 11 : i64}} {
  func.func @epilogues(%x: !ein.tensor<"m k", f64>, %w: !ein.tensor<"k n", f64>) -> (!ein.tensor<"m n", f64>, !ein.tensor<"m n", f64>, !ein.tensor<"m n", f64>) {
    %0 = ein.einsum %x, %w "m k, k n -> m n" : !ein.tensor<"m k", f64>, !ein.tensor<"k n", f64> -> !ein.tensor<"m n", f64>
    %1 = ein.elementwise "tanh" %0 : !ein.tensor<"m n", f64> -> !ein.tensor<"m n", f64>
    %2 = ein.constant 2.000000e+00 : f64
    %3 = ein.elementwise "mul" %w, %2 : !ein.tensor<"k n", f64>, !ein.tensor<"", f64> -> !ein.tensor<"k n", f64>
    %4 = ein.einsum %x, %3 "m k, k n -> m n" : !ein.tensor<"m k", f64>, !ein.tensor<"k n", f64> -> !ein.tensor<"m n", f64>
    %5 = ein.elementwise "gelu" %4 : !ein.tensor<"m n", f64> -> !ein.tensor<"m n", f64>
    %6 = ein.constant 3.000000e+00 : f64
    %7 = ein.elementwise "mul" %w, %6 : !ein.tensor<"k n", f64>, !ein.tensor<"", f64> -> !ein.tensor<"k n", f64>
    %8 = ein.einsum %x, %7 "m k, k n -> m n" : !ein.tensor<"m k", f64>, !ein.tensor<"k n", f64> -> !ein.tensor<"m n", f64>
    %9 = ein.elementwise "gelu_tanh" %8 : !ein.tensor<"m n", f64> -> !ein.tensor<"m n", f64>
    return %1, %5, %9 : !ein.tensor<"m n", f64>, !ein.tensor<"m n", f64>, !ein.tensor<"m n", f64>
  }
}
