// RUN: ein-opt %s --ein-lower-to-llvm="vector-bits=256 nr-vectors=1 mr=4" | FileCheck %s --check-prefix=AVX2
// RUN: ein-opt %s --ein-lower-to-llvm="vector-bits=512" | FileCheck %s --check-prefix=AVX512

// Tests that ein-opt's CPU pipeline takes the contraction blocking as typed
// pipeline options (the --tiles of einc): 256-bit vectors give an 8-lane
// micro-kernel (its accumulators carried by the k loop), 512-bit ones a
// 16-lane one.
// AVX2-LABEL: llvm.func @mm
// AVX2: ^bb{{[0-9]+}}(%{{.*}}: i64, %{{.*}}: vector<8xf32>,
// AVX2-NOT: vector<16xf32>
// AVX512-LABEL: llvm.func @mm
// AVX512: ^bb{{[0-9]+}}(%{{.*}}: i64, %{{.*}}: vector<16xf32>,
module attributes {ein.dims = {m = 20 : i64, k = 30 : i64, n = 40 : i64}} {
  func.func @mm(%a: !ein.tensor<"m k", f32>, %b: !ein.tensor<"k n", f32>) -> !ein.tensor<"m n", f32> {
    %0 = ein.einsum %a, %b "m k, k n -> m n" : !ein.tensor<"m k", f32>, !ein.tensor<"k n", f32> -> !ein.tensor<"m n", f32>
    return %0 : !ein.tensor<"m n", f32>
  }
}
