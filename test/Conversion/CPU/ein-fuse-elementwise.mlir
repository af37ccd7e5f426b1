// RUN: ein-opt %s --ein-fuse-elementwise --split-input-file --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s

// Tests a chain: the subtraction moves into the exp's loop, one generic
// remains, and its location names both source ops.
// CHECK-LABEL: func.func @chain
// CHECK-COUNT-1: linalg.generic
// CHECK-NOT: linalg.generic
// CHECK: arith.subf
// CHECK-NEXT: math.exp
// CHECK: loc(fused<"ein.fused">["softmax.ein":3:5, "softmax.ein":4:5])
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @chain(%x: tensor<4x8xf32>, %m: tensor<4xf32>) -> tensor<4x8xf32> {
  %t0 = tensor.empty() : tensor<4x8xf32>
  %d = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %m : tensor<4x8xf32>, tensor<4xf32>) outs(%t0 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.subf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32> loc("softmax.ein":3:5)
  %t1 = tensor.empty() : tensor<4x8xf32>
  %e = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%d : tensor<4x8xf32>) outs(%t1 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.exp %a : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32> loc("softmax.ein":4:5)
  return %e : tensor<4x8xf32>
}

// -----

// Tests a cheap elementwise producer (a scale) read by a reduction and by a
// division: it fuses into both (computed in the sum's loop and again in the
// division's), and its own loop and buffer are gone.
// CHECK-LABEL: func.func @cheap_two_readers
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction"]
// CHECK: arith.mulf
// CHECK-NEXT: arith.addf
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel"]
// CHECK: arith.mulf
// CHECK-NEXT: arith.divf
// CHECK-NOT: linalg.generic
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @cheap_two_readers(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %t0 = tensor.empty() : tensor<4x8xf32>
  %e = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%t0 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.mulf %a, %a : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %zero = arith.constant 0.0 : f32
  %t1 = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%t1 : tensor<4xf32>) -> tensor<4xf32>
  %z = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%e : tensor<4x8xf32>) outs(%f : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.addf %o, %a : f32
    linalg.yield %v : f32
  } -> tensor<4xf32>
  %t2 = tensor.empty() : tensor<4x8xf32>
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%e, %z : tensor<4x8xf32>, tensor<4xf32>) outs(%t2 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.divf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  return %p : tensor<4x8xf32>
}

// -----

// Tests a costly producer (exp) read by a reduction and by a division: it
// keeps its loop and buffer, read twice, rather than computing every exp
// twice (inside ein-fuse-rows' tiles that buffer is in cache).
// CHECK-LABEL: func.func @costly_two_readers
// CHECK: %[[E:.*]] = linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel"]
// CHECK: math.exp
// CHECK-NEXT: linalg.yield
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction"]
// CHECK-SAME: ins(%[[E]]
// CHECK-NOT: math.exp
// CHECK: arith.addf
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[E]]
// CHECK-NOT: math.exp
// CHECK: arith.divf
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @costly_two_readers(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %t0 = tensor.empty() : tensor<4x8xf32>
  %e = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%t0 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.exp %a : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %zero = arith.constant 0.0 : f32
  %t1 = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%t1 : tensor<4xf32>) -> tensor<4xf32>
  %z = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%e : tensor<4x8xf32>) outs(%f : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.addf %o, %a : f32
    linalg.yield %v : f32
  } -> tensor<4xf32>
  %t2 = tensor.empty() : tensor<4x8xf32>
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%e, %z : tensor<4x8xf32>, tensor<4xf32>) outs(%t2 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.divf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  return %p : tensor<4x8xf32>
}

// -----

// Tests a producer read through a broadcast: fusing would compute each of
// its 4 elements 8 times, so it keeps its own loop.
// CHECK-LABEL: func.func @broadcast_reader
// CHECK: linalg.generic
// CHECK: math.exp
// CHECK-NEXT: linalg.yield
// CHECK: linalg.generic
// CHECK-NOT: math.exp
// CHECK: arith.subf
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#vec = affine_map<(d0) -> (d0)>
func.func @broadcast_reader(%x: tensor<4x8xf32>, %m: tensor<4xf32>) -> tensor<4x8xf32> {
  %t0 = tensor.empty() : tensor<4xf32>
  %em = linalg.generic {indexing_maps = [#vec, #vec], iterator_types = ["parallel"]}
      ins(%m : tensor<4xf32>) outs(%t0 : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.exp %a : f32
    linalg.yield %v : f32
  } -> tensor<4xf32>
  %t1 = tensor.empty() : tensor<4x8xf32>
  %d = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %em : tensor<4x8xf32>, tensor<4xf32>) outs(%t1 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.subf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  return %d : tensor<4x8xf32>
}

// -----

// Tests a contraction reading a scaled operand: the scale keeps its own
// loop so that ein-tile-contractions still sees `C += A * B`.
// CHECK-LABEL: func.func @contraction_reader
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel"]
// CHECK: arith.mulf
// CHECK-NEXT: linalg.yield
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: arith.mulf
// CHECK-NEXT: arith.addf
// CHECK-NEXT: linalg.yield
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @contraction_reader(%x: tensor<4x8xf32>, %w: tensor<8x3xf32>) -> tensor<4x3xf32> {
  %half = arith.constant 0.5 : f32
  %zero = arith.constant 0.0 : f32
  %t0 = tensor.empty() : tensor<4x8xf32>
  %s = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%t0 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.mulf %a, %half : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %t1 = tensor.empty() : tensor<4x3xf32>
  %f = linalg.fill ins(%zero : f32) outs(%t1 : tensor<4x3xf32>) -> tensor<4x3xf32>
  %c = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%s, %w : tensor<4x8xf32>, tensor<8x3xf32>) outs(%f : tensor<4x3xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %v = arith.mulf %p, %q : f32
    %r = arith.addf %o, %v : f32
    linalg.yield %r : f32
  } -> tensor<4x3xf32>
  return %c : tensor<4x3xf32>
}

// -----

// Tests a producer that is also a result: its buffer is written anyway, so
// its reader reads it rather than computing it again.
// CHECK-LABEL: func.func @also_returned
// CHECK: %[[E:.*]] = linalg.generic
// CHECK: math.exp
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[E]]
// CHECK-NOT: math.exp
// CHECK: arith.negf
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @also_returned(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %t0 = tensor.empty() : tensor<4x8xf32>
  %e = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%t0 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.exp %a : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %t1 = tensor.empty() : tensor<4x8xf32>
  %n = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%e : tensor<4x8xf32>) outs(%t1 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.negf %a : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  return %e, %n : tensor<4x8xf32>, tensor<4x8xf32>
}
