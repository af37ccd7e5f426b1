// RUN: ein-opt %s --ein-to-linalg | FileCheck %s

// Tests that functions without ein tensors or ops (already lowered, or never
// ein) are left as they are.
// CHECK-LABEL: func.func @buffers(%arg0: memref<4xf32>)
// CHECK-NEXT: return
// CHECK-LABEL: func.func @tensors(%arg0: tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: return %arg0
func.func @buffers(%a: memref<4xf32>) {
  return
}
func.func @tensors(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
