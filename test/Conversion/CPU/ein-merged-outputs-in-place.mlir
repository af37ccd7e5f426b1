// RUN: ein-opt %s --ein-merged-outputs-in-place --split-input-file | FileCheck %s

// Tests that a static result with a merged dim (`b h s d -> b s (h d)`) is
// computed in an expand_shape view of the output: no temporary, no copy.
// CHECK-LABEL: func.func @merge_heads
// CHECK-SAME: (%[[X:.*]]: memref<2x3x5x4xf32, strided<[?, ?, ?, ?], offset: ?>>, %[[OUT:.*]]: memref<2x5x12xf32, strided<[?, ?, ?], offset: ?>>)
// CHECK-NOT: memref.alloc
// CHECK: %[[V:.*]] = memref.expand_shape %[[OUT]] {{\[}}[0], [1], [2, 3]] output_shape [2, 5, 3, 4] : memref<2x5x12xf32, strided<[?, ?, ?], offset: ?>> into memref<2x5x3x4xf32, strided<[?, ?, ?, ?], offset: ?>>
// CHECK-NEXT: linalg.generic
// CHECK-SAME: ins(%[[X]] : memref<2x3x5x4xf32, strided<[?, ?, ?, ?], offset: ?>>) outs(%[[V]] : memref<2x5x3x4xf32, strided<[?, ?, ?, ?], offset: ?>>)
// CHECK-NOT: memref.collapse_shape
// CHECK-NOT: memref.copy
// CHECK: return
func.func @merge_heads(%x: memref<2x3x5x4xf32, strided<[?, ?, ?, ?], offset: ?>>, %out: memref<2x5x12xf32, strided<[?, ?, ?], offset: ?>>) {
  %tmp = memref.alloc() {alignment = 64 : i64} : memref<2x5x3x4xf32>
  linalg.generic {indexing_maps = [affine_map<(b, s, h, d) -> (b, h, s, d)>, affine_map<(b, s, h, d) -> (b, s, h, d)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : memref<2x3x5x4xf32, strided<[?, ?, ?, ?], offset: ?>>) outs(%tmp : memref<2x5x3x4xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  %m = memref.collapse_shape %tmp [[0], [1], [2, 3]] : memref<2x5x3x4xf32> into memref<2x5x12xf32>
  memref.copy %m, %out : memref<2x5x12xf32> to memref<2x5x12xf32, strided<[?, ?, ?], offset: ?>>
  return
}

// -----

// Tests a group with one dynamic size (`h w -> (c h) w`, c = 4): still an
// expand_shape, its dynamic sizes those of the temporary.
// CHECK-LABEL: func.func @repeat_rows
// CHECK-SAME: (%[[X:.*]]: memref<?x?xf32, strided<[?, ?], offset: ?>>, %[[OUT:.*]]: memref<?x?xf32, strided<[?, ?], offset: ?>>, %[[H:.*]]: index, %[[W:.*]]: index)
// CHECK-NOT: memref.alloc
// CHECK: %[[V:.*]] = memref.expand_shape %[[OUT]] {{\[}}[0, 1], [2]] output_shape [4, %[[H]], %[[W]]] : memref<?x?xf32, strided<[?, ?], offset: ?>> into memref<4x?x?xf32, strided<[?, ?, ?], offset: ?>>
// CHECK-NEXT: linalg.generic
// CHECK-SAME: outs(%[[V]] : memref<4x?x?xf32, strided<[?, ?, ?], offset: ?>>)
// CHECK-NOT: memref.copy
// CHECK: return
func.func @repeat_rows(%x: memref<?x?xf32, strided<[?, ?], offset: ?>>, %out: memref<?x?xf32, strided<[?, ?], offset: ?>>, %h: index, %w: index) {
  %tmp = memref.alloc(%h, %w) {alignment = 64 : i64} : memref<4x?x?xf32>
  linalg.generic {indexing_maps = [affine_map<(c, h, w) -> (h, w)>, affine_map<(c, h, w) -> (c, h, w)>],
                  iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : memref<?x?xf32, strided<[?, ?], offset: ?>>) outs(%tmp : memref<4x?x?xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  %m = memref.collapse_shape %tmp [[0, 1], [2]] : memref<4x?x?xf32> into memref<?x?xf32>
  memref.copy %m, %out : memref<?x?xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  return
}

// -----

// Tests a group of two dynamic sizes (size-generic `b h s d -> b s (h d)`),
// which MLIR 19 cannot lower as an expand_shape: a reinterpret_cast of the
// output's base, `h` with stride (stride of the merged dim) * d, `d` with the
// merged dim's stride.
// CHECK-LABEL: func.func @two_dynamic
// CHECK-SAME: (%[[X:.*]]: memref<?x?x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>, %[[OUT:.*]]: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, %[[B:.*]]: index, %[[H:.*]]: index, %[[S:.*]]: index, %[[D:.*]]: index)
// CHECK-NOT: memref.alloc
// CHECK: %[[BASE:.*]], %[[OFF:.*]], %{{.*}}:3, %[[ST:.*]]:3 = memref.extract_strided_metadata %[[OUT]]
// CHECK-NEXT: %[[HS:.*]] = arith.muli %[[ST]]#2, %[[D]] : index
// CHECK-NEXT: %[[V:.*]] = memref.reinterpret_cast %[[BASE]] to offset: [%[[OFF]]], sizes: [%[[B]], %[[S]], %[[H]], %[[D]]], strides: [%[[ST]]#0, %[[ST]]#1, %[[HS]], %[[ST]]#2] : memref<f32> to memref<?x?x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>
// CHECK-NEXT: linalg.generic
// CHECK-SAME: outs(%[[V]] : memref<?x?x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>)
// CHECK-NOT: memref.copy
// CHECK: return
func.func @two_dynamic(%x: memref<?x?x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>, %out: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, %b: index, %h: index, %s: index, %d: index) {
  %tmp = memref.alloc(%b, %s, %h, %d) {alignment = 64 : i64} : memref<?x?x?x?xf32>
  linalg.generic {indexing_maps = [affine_map<(b, s, h, d) -> (b, h, s, d)>, affine_map<(b, s, h, d) -> (b, s, h, d)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : memref<?x?x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>) outs(%tmp : memref<?x?x?x?xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  %m = memref.collapse_shape %tmp [[0], [1], [2, 3]] : memref<?x?x?x?xf32> into memref<?x?x?xf32>
  memref.copy %m, %out : memref<?x?x?xf32> to memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
  return
}

// -----

// Tests a group of three axes, two of them dynamic (`a b c -> (c 2 a)`
// with the 2 static): the strides from the innermost out, each the next
// one's times its size.
// CHECK-LABEL: func.func @three_axes
// CHECK-SAME: (%[[X:.*]]: memref<?x?xf64, strided<[?, ?], offset: ?>>, %[[OUT:.*]]: memref<?xf64, strided<[?], offset: ?>>, %[[A:.*]]: index, %[[C:.*]]: index)
// CHECK: %[[BASE:.*]], %[[OFF:.*]], %{{.*}}, %[[ST:.*]] = memref.extract_strided_metadata %[[OUT]]
// CHECK-DAG: %[[S1:.*]] = arith.muli %[[ST]], %[[A]] : index
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK: %[[S0:.*]] = arith.muli %[[S1]], %[[C2]] : index
// CHECK-NEXT: %[[V:.*]] = memref.reinterpret_cast %[[BASE]] to offset: [%[[OFF]]], sizes: [%[[C]], 2, %[[A]]], strides: [%[[S0]], %[[S1]], %[[ST]]]
// CHECK-NEXT: linalg.generic
// CHECK-SAME: outs(%[[V]] : memref<?x2x?xf64, strided<[?, ?, ?], offset: ?>>)
// CHECK-NOT: memref.copy
func.func @three_axes(%x: memref<?x?xf64, strided<[?, ?], offset: ?>>, %out: memref<?xf64, strided<[?], offset: ?>>, %a: index, %c: index) {
  %tmp = memref.alloc(%c, %a) {alignment = 64 : i64} : memref<?x2x?xf64>
  linalg.generic {indexing_maps = [affine_map<(c, k, a) -> (a, c)>, affine_map<(c, k, a) -> (c, k, a)>],
                  iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : memref<?x?xf64, strided<[?, ?], offset: ?>>) outs(%tmp : memref<?x2x?xf64>) {
  ^bb0(%in: f64, %o: f64):
    linalg.yield %in : f64
  }
  %m = memref.collapse_shape %tmp [[0, 1, 2]] : memref<?x2x?xf64> into memref<?xf64>
  memref.copy %m, %out : memref<?xf64> to memref<?xf64, strided<[?], offset: ?>>
  return
}

// -----

// Tests a temporary written by two linalg ops (a reduction's fill and
// accumulation, `a b c -> (b a)`): both write the view.
// CHECK-LABEL: func.func @reduction
// CHECK-SAME: (%[[X:.*]]: memref<4x3x6xf32, strided<[?, ?, ?], offset: ?>>, %[[OUT:.*]]: memref<12xf32, strided<[?], offset: ?>>)
// CHECK-NOT: memref.alloc
// CHECK: %[[V:.*]] = memref.expand_shape %[[OUT]] {{\[}}[0, 1]] output_shape [3, 4]
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[V]] : memref<3x4xf32, strided<[?, ?], offset: ?>>)
// CHECK-NEXT: linalg.generic
// CHECK-SAME: outs(%[[V]] : memref<3x4xf32, strided<[?, ?], offset: ?>>)
// CHECK-NOT: memref.copy
func.func @reduction(%x: memref<4x3x6xf32, strided<[?, ?, ?], offset: ?>>, %out: memref<12xf32, strided<[?], offset: ?>>) {
  %zero = arith.constant 0.0 : f32
  %tmp = memref.alloc() {alignment = 64 : i64} : memref<3x4xf32>
  linalg.fill ins(%zero : f32) outs(%tmp : memref<3x4xf32>)
  linalg.generic {indexing_maps = [affine_map<(b, a, c) -> (a, b, c)>, affine_map<(b, a, c) -> (b, a)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : memref<4x3x6xf32, strided<[?, ?, ?], offset: ?>>) outs(%tmp : memref<3x4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  }
  %m = memref.collapse_shape %tmp [[0, 1]] : memref<3x4xf32> into memref<12xf32>
  memref.copy %m, %out : memref<12xf32> to memref<12xf32, strided<[?], offset: ?>>
  return
}

// -----

// Tests that a temporary also read after the copy (a value returned and
// used) is left alone: its reader would otherwise read the output.
// CHECK-LABEL: func.func @read_after
// CHECK: memref.alloc
// CHECK: memref.copy
// CHECK: linalg.generic
func.func @read_after(%x: memref<2x3xf32>, %out: memref<6xf32, strided<[?], offset: ?>>, %out2: memref<2x3xf32>) {
  %tmp = memref.alloc() : memref<2x3xf32>
  memref.copy %x, %tmp : memref<2x3xf32> to memref<2x3xf32>
  %m = memref.collapse_shape %tmp [[0, 1]] : memref<2x3xf32> into memref<6xf32>
  memref.copy %m, %out : memref<6xf32> to memref<6xf32, strided<[?], offset: ?>>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%tmp : memref<2x3xf32>) outs(%out2 : memref<2x3xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  return
}

// -----

// Tests that the temporary is kept when its merged view has another use.
// CHECK-LABEL: func.func @view_read
// CHECK: memref.alloc
// CHECK: memref.copy %{{.*}}, %{{.*}} : memref<6xf32> to memref<6xf32>
func.func @view_read(%x: memref<2x3xf32>, %out: memref<6xf32>, %y: memref<6xf32>) {
  %t = memref.alloc() : memref<2x3xf32>
  memref.copy %x, %t : memref<2x3xf32> to memref<2x3xf32>
  %m = memref.collapse_shape %t [[0, 1]] : memref<2x3xf32> into memref<6xf32>
  memref.copy %m, %out : memref<6xf32> to memref<6xf32>
  %c0 = arith.constant 0 : index
  %e = memref.load %m[%c0] : memref<6xf32>
  memref.store %e, %y[%c0] : memref<6xf32>
  return
}

// -----

// Tests that the temporary is kept when the output is read while the
// temporary is written.
// CHECK-LABEL: func.func @output_read_meanwhile
// CHECK: memref.alloc
// CHECK: memref.copy %{{.*}}, %{{.*}} : memref<6xf32> to memref<6xf32>
func.func @output_read_meanwhile(%x: memref<2x3xf32>, %out: memref<6xf32>, %y: memref<6xf32>) {
  %t = memref.alloc() : memref<2x3xf32>
  memref.copy %x, %t : memref<2x3xf32> to memref<2x3xf32>
  %c0 = arith.constant 0 : index
  %early = memref.load %out[%c0] : memref<6xf32>
  memref.store %early, %y[%c0] : memref<6xf32>
  %m = memref.collapse_shape %t [[0, 1]] : memref<2x3xf32> into memref<6xf32>
  memref.copy %m, %out : memref<6xf32> to memref<6xf32>
  return
}

// -----

// Tests that the temporary is kept when it has a view whose type would
// change with its layout (a subview).
// CHECK-LABEL: func.func @subview
// CHECK: memref.alloc
// CHECK: memref.copy %{{.*}}, %{{.*}} : memref<6xf32> to memref<6xf32>
func.func @subview(%out: memref<6xf32>) {
  %t = memref.alloc() : memref<2x3xf32>
  %row = memref.subview %t[0, 0] [1, 3] [1, 1] : memref<2x3xf32> to memref<1x3xf32, strided<[3, 1]>>
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%row : memref<1x3xf32, strided<[3, 1]>>)
  %m = memref.collapse_shape %t [[0, 1]] : memref<2x3xf32> into memref<6xf32>
  memref.copy %m, %out : memref<6xf32> to memref<6xf32>
  return
}

// -----

// Tests that a copy into a buffer that is not a parameter is left alone.
// CHECK-LABEL: func.func @not_a_parameter
// CHECK: memref.alloc
// CHECK: memref.alloc
// CHECK: memref.copy %{{.*}}, %{{.*}} : memref<6xf32> to memref<6xf32>
func.func @not_a_parameter(%x: memref<2x3xf32>) -> memref<6xf32> {
  %t = memref.alloc() : memref<2x3xf32>
  memref.copy %x, %t : memref<2x3xf32> to memref<2x3xf32>
  %m = memref.collapse_shape %t [[0, 1]] : memref<2x3xf32> into memref<6xf32>
  %local = memref.alloc() : memref<6xf32>
  memref.copy %m, %local : memref<6xf32> to memref<6xf32>
  return %local : memref<6xf32>
}
