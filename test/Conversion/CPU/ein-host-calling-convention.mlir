// RUN: ein-opt %s --ein-host-calling-convention --split-input-file | FileCheck %s

// Tests that a result becomes a trailing output parameter the returned value
// is materialized in, that inputs are read-only, and that every parameter is
// noalias and the function gets a C entry point.
// CHECK-LABEL: func.func @f
// CHECK-SAME: (%[[X:.*]]: tensor<?xf32> {bufferization.writable = false, llvm.noalias}, %[[OUT:.*]]: tensor<?xf32> {llvm.noalias}) -> tensor<?xf32>
// CHECK-SAME: attributes {llvm.emit_c_interface}
// CHECK: %[[R:.*]] = math.exp %[[X]]
// CHECK: %[[M:.*]] = bufferization.materialize_in_destination %[[R]] in %[[OUT]]
// CHECK: return %[[M]]
func.func @f(%x: tensor<?xf32>) -> tensor<?xf32> {
  %0 = math.exp %x : tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// Tests that a value returned twice is computed into its first output and
// copied from there into the second (one value cannot be written in place
// into two buffers).
// CHECK-LABEL: func.func @twice
// CHECK-SAME: (%[[X:.*]]: tensor<3xf32> {bufferization.writable = false, llvm.noalias}, %[[O0:.*]]: tensor<3xf32> {llvm.noalias}, %[[O1:.*]]: tensor<3xf32> {llvm.noalias})
// CHECK: %[[M0:.*]] = bufferization.materialize_in_destination %[[X]] in %[[O0]]
// CHECK: %[[M1:.*]] = bufferization.materialize_in_destination %[[M0]] in %[[O1]]
// CHECK: return %[[M0]], %[[M1]]
func.func @twice(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  return %x, %x : tensor<3xf32>, tensor<3xf32>
}
