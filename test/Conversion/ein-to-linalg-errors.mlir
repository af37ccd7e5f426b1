// RUN: ein-opt %s --ein-to-linalg --split-input-file --verify-diagnostics --allow-unregistered-dialect

// Tests that an op without a lowering fails the pass with an error naming
// it (it used to become an identity).
func.func @unknown(%x: !ein.tensor<"n", f32>) -> !ein.tensor<"n", f32> {
  // expected-error @+2 {{'test.mystery' op has no lowering to linalg}}
  // expected-error @+1 {{cannot lower this op to linalg}}
  %0 = "test.mystery"(%x) : (!ein.tensor<"n", f32>) -> !ein.tensor<"n", f32>
  return %0 : !ein.tensor<"n", f32>
}

// -----

// Tests that a name that appears only in a product of free names cannot be
// read from the arguments: an error naming it.
// expected-error @+1 {{size-generic code cannot read 'd' from the arguments' sizes (it appears only in parameter 0 dim 0 (d*h)); bind it with --dim}}
func.func @product(%x: !ein.tensor<"h*d", f32>) -> !ein.tensor<"h*d", f32> {
  %0 = ein.elementwise "exp" %x : !ein.tensor<"h*d", f32> -> !ein.tensor<"h*d", f32>
  return %0 : !ein.tensor<"h*d", f32>
}

// -----

// Tests that a function mixing ein tensors with other types is an error, not
// a crash.
// expected-error @+1 {{ein-to-linalg lowers functions over !ein.tensor values only; got a parameter or result of type 'memref<4xf32>'}}
func.func @mixed(%x: !ein.tensor<"n", f32>, %m: memref<4xf32>) -> !ein.tensor<"n", f32> {
  return %x : !ein.tensor<"n", f32>
}
