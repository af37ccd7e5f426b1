// RUN: ein-opt %s --ein-constant-globals | FileCheck %s
// RUN: ein-opt %s --ein-constant-globals --one-shot-bufferize=bufferize-function-boundaries | FileCheck %s --check-prefix=BUFFERS

// Tests that every ranked-tensor constant gets its memref.global in program
// order (each new one goes to the front of the module, so the first constant's
// global is last and has the unsuffixed name), a value seen twice (2.0 in both
// functions) gets one global, the constants themselves stay, and one-shot
// bufferization afterwards reuses these globals and creates none (three
// globals before and after, names as written here by hand).
// CHECK: memref.global "private" constant @__constant_2xf32 : memref<2xf32> = dense<[1.000000e+00, 3.000000e+00]> {alignment = 64 : i64}
// CHECK-NEXT: memref.global "private" constant @__constant_xf32_0 : memref<f32> = dense<5.000000e-01> {alignment = 64 : i64}
// CHECK-NEXT: memref.global "private" constant @__constant_xf32 : memref<f32> = dense<2.000000e+00> {alignment = 64 : i64}
// CHECK-NOT: memref.global
// CHECK-LABEL: func.func @second
// CHECK: arith.constant dense<2.000000e+00> : tensor<f32>
// CHECK-LABEL: func.func @first
// CHECK: arith.constant dense<5.000000e-01> : tensor<f32>

// BUFFERS-COUNT-3: memref.global
// BUFFERS-NOT: memref.global
// BUFFERS-LABEL: func.func @second
// BUFFERS: memref.get_global @__constant_xf32 : memref<f32>
// BUFFERS-LABEL: func.func @first
// BUFFERS: memref.get_global @__constant_xf32_0 : memref<f32>
// BUFFERS: memref.get_global @__constant_xf32 : memref<f32>
// BUFFERS: memref.get_global @__constant_2xf32 : memref<2xf32>
func.func @second() -> tensor<f32> {
  %c = arith.constant dense<2.0> : tensor<f32>
  return %c : tensor<f32>
}
func.func @first() -> (tensor<f32>, tensor<f32>, tensor<2xf32>) {
  %a = arith.constant dense<0.5> : tensor<f32>
  %b = arith.constant dense<2.0> : tensor<f32>
  %d = arith.constant dense<[1.0, 3.0]> : tensor<2xf32>
  return %a, %b, %d : tensor<f32>, tensor<f32>, tensor<2xf32>
}
