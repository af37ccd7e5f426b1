// RUN: ein-opt %s --ein-tile-reductions="tile-bytes=96 work-items=1" --canonicalize --cse --split-input-file | FileCheck %s

// Tests a sum over the first axis (loops b a c, a more major than b in the
// input): rows of b are tiled by 3 (96 bytes of output per tile, 8 f32 per
// row), the last tile partial (10 = 3 + 3 + 3 + 1), the zero fill runs per
// tile, and inside a tile the reduced loop a is outermost, then the tile's
// rows, then c, all sequential.
// CHECK-LABEL: func.func @sum_first
// CHECK-SAME: (%[[X:.*]]: memref<4x10x8xf32>, %[[O:.*]]: memref<10x8xf32>)
// CHECK-NOT: linalg.fill
// CHECK: scf.parallel (%[[B0:.*]]) = (%c0) to (%c10) step (%c3) {
// CHECK: %[[ROWS:.*]] = affine.min
// CHECK-DAG: %[[XT:.*]] = memref.subview %[[X]][0, %[[B0]], 0] [4, %[[ROWS]], 8] [1, 1, 1]
// CHECK-DAG: %[[OT:.*]] = memref.subview %[[O]][%[[B0]], 0] [%[[ROWS]], 8] [1, 1]
// CHECK: scf.for %[[I:.*]] = %c0 to %[[ROWS]] step %c1 {
// CHECK-NEXT: scf.for %[[J:.*]] = %c0 to %c8 step %c1 {
// CHECK-NEXT: memref.store %cst, %[[OT]][%[[I]], %[[J]]]
// CHECK: scf.for %[[A:.*]] = %c0 to %c4 step %c1 {
// CHECK-NEXT: scf.for %[[B:.*]] = %c0 to %[[ROWS]] step %c1 {
// CHECK-NEXT: scf.for %[[C:.*]] = %c0 to %c8 step %c1 {
// CHECK-NEXT: memref.load %[[XT]][%[[A]], %[[B]], %[[C]]]
// CHECK-NEXT: memref.load %[[OT]][%[[B]], %[[C]]]
// CHECK-NEXT: arith.addf
// CHECK-NEXT: memref.store %{{.*}}, %[[OT]][%[[B]], %[[C]]]
// CHECK-NOT: linalg.generic
func.func @sum_first(%x: memref<4x10x8xf32>, %o: memref<10x8xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%o : memref<10x8xf32>)
  linalg.generic {indexing_maps = [affine_map<(b, a, c) -> (a, b, c)>,
                                   affine_map<(b, a, c) -> (b, c)>],
                  iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x : memref<4x10x8xf32>) outs(%o : memref<10x8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests two reduced axes, one of them inside the tiled rows (loops c a b d
// over x[a b c d]): the reduced loops a and b go first in the tile, and an
// output without a fill right before gets none.
// CHECK-LABEL: func.func @two_reduced
// CHECK: scf.parallel
// CHECK-NOT: memref.store %cst
// CHECK: scf.for %{{.*}} = %c0 to %c2 step %c1 {
// CHECK-NEXT: scf.for %{{.*}} = %c0 to %c5 step %c1 {
// CHECK-NEXT: scf.for %{{.*}} = %c0 to %{{.*}} step %c1 {
// CHECK-NEXT: scf.for %{{.*}} = %c0 to %c6 step %c1 {
// CHECK: arith.maximumf
func.func @two_reduced(%x: memref<2x5x7x6xf32>, %o: memref<7x6xf32>) {
  linalg.generic {indexing_maps = [affine_map<(c, a, b, d) -> (a, b, c, d)>,
                                   affine_map<(c, a, b, d) -> (c, d)>],
                  iterator_types = ["parallel", "reduction", "reduction", "parallel"]}
      ins(%x : memref<2x5x7x6xf32>) outs(%o : memref<7x6xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %m = arith.maximumf %acc, %in : f32
    linalg.yield %m : f32
  }
  return
}

// -----

// Tests that reductions over inner axes stay as they are: the middle axis
// (loops a b c, b less major than a) and the last axis (nothing parallel
// inside the reduced loop).
// CHECK-LABEL: func.func @inner_axes
// CHECK-NOT: scf.parallel
// CHECK: linalg.generic
// CHECK: linalg.generic
func.func @inner_axes(%x: memref<4x10x8xf32>, %o1: memref<4x8xf32>, %o2: memref<4x10xf32>) {
  linalg.generic {indexing_maps = [affine_map<(a, b, c) -> (a, b, c)>,
                                   affine_map<(a, b, c) -> (a, c)>],
                  iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x : memref<4x10x8xf32>) outs(%o1 : memref<4x8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(a, b, c) -> (a, b, c)>,
                                   affine_map<(a, b, c) -> (a, b)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : memref<4x10x8xf32>) outs(%o2 : memref<4x10xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests that reductions with an empty loop stay as they are: no rows to tile
// (b = 0, where a tile of rows would have 0 rows) or nothing to reduce
// (a = 0): canonicalize then drops both generics (they touch no element),
// and the zero fill stays as it was.
// CHECK-LABEL: func.func @empty_loops
// CHECK-NOT: scf
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : memref<10x8xf32>)
// CHECK-NEXT: return
func.func @empty_loops(%x: memref<4x0x8xf32>, %o1: memref<0x8xf32>, %y: memref<0x10x8xf32>, %o2: memref<10x8xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [affine_map<(b, a, c) -> (a, b, c)>,
                                   affine_map<(b, a, c) -> (b, c)>],
                  iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x : memref<4x0x8xf32>) outs(%o1 : memref<0x8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  }
  linalg.fill ins(%zero : f32) outs(%o2 : memref<10x8xf32>)
  linalg.generic {indexing_maps = [affine_map<(b, a, c) -> (a, b, c)>,
                                   affine_map<(b, a, c) -> (b, c)>],
                  iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%y : memref<0x10x8xf32>) outs(%o2 : memref<10x8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests sizes and strides known only at run time: the rows per tile are
// computed from the sizes read with memref.dim (96 bytes / (4 bytes * c)
// rows, at least 1, at most all, half of them when that would be one tile),
// and the tiles are subviews through the operands' strides, taken as
// row-major for the choice of the loop order.
// CHECK-LABEL: func.func @sum_first_dynamic
// CHECK-SAME: (%[[X:.*]]: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, %[[O:.*]]: memref<?x?xf32, strided<[?, ?], offset: ?>>)
// CHECK-NOT: linalg.fill
// CHECK-DAG: %[[B:.*]] = memref.dim %[[X]], %c1
// CHECK-DAG: %[[C:.*]] = memref.dim %[[X]], %c2
// CHECK: %[[ROWBYTES:.*]] = arith.muli %[[C]], %c4
// CHECK: %[[FIT:.*]] = arith.divsi %c96, %{{.*}}
// CHECK: %[[ROWS:.*]] = arith.select %{{.*}}, %{{.*}}, %{{.*}} : index
// CHECK: scf.parallel (%[[B0:.*]]) = (%c0) to (%[[B]]) step (%[[ROWS]]) {
// CHECK: %[[TILE:.*]] = affine.min #{{.*}}(%[[B0]])[%[[B]], %[[ROWS]]]
// CHECK: %[[XT:.*]] = memref.subview %[[X]][0, %[[B0]], 0] [%{{.*}}, %[[TILE]], %[[C]]] [1, 1, 1]
// CHECK: %[[OT:.*]] = memref.subview %[[O]][%[[B0]], 0] [%[[TILE]], %{{.*}}] [1, 1]
// CHECK: memref.store %cst, %[[OT]]
// CHECK: scf.for %[[I:.*]] = %c0 to %{{.*}} step %c1 {
// CHECK-NEXT: scf.for %[[J:.*]] = %c0 to %[[TILE]] step %c1 {
// CHECK-NEXT: scf.for %[[K:.*]] = %c0 to %[[C]] step %c1 {
// CHECK-NEXT: memref.load %[[XT]][%[[I]], %[[J]], %[[K]]]
// CHECK-NOT: linalg.generic
func.func @sum_first_dynamic(%x: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, %o: memref<?x?xf32, strided<[?, ?], offset: ?>>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%o : memref<?x?xf32, strided<[?, ?], offset: ?>>)
  linalg.generic {indexing_maps = [affine_map<(b, a, c) -> (a, b, c)>,
                                   affine_map<(b, a, c) -> (b, c)>],
                  iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x : memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>) outs(%o : memref<?x?xf32, strided<[?, ?], offset: ?>>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests static strided layouts: the strides, not the axis order, say which
// axis is more major. x's b (stride 32) is more major than its a (stride 8),
// so the sum over a is over an inner axis and stays; y's a (stride 100) is
// the most major, so it is tiled, into a strided output.
// CHECK-LABEL: func.func @strided_layouts
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.*}} : memref<4x10x8xf32, strided<[8, 32, 1]>>)
// CHECK: scf.parallel (%[[B0:.*]]) = (%c0) to (%c10) step (%c3) {
// CHECK: memref.subview %{{.*}}[0, %[[B0]], 0] [4, %{{.*}}, 8] [1, 1, 1] : memref<4x10x8xf32, strided<[100, 8, 1], offset: 5>>
// CHECK: memref.subview %{{.*}}[%[[B0]], 0] [%{{.*}}, 8] [1, 1] : memref<10x8xf32, strided<[16, 2]>>
// CHECK-NOT: linalg.generic
func.func @strided_layouts(%x: memref<4x10x8xf32, strided<[8, 32, 1]>>, %o1: memref<10x8xf32>, %y: memref<4x10x8xf32, strided<[100, 8, 1], offset: 5>>, %o2: memref<10x8xf32, strided<[16, 2]>>) {
  linalg.generic {indexing_maps = [affine_map<(b, a, c) -> (a, b, c)>,
                                   affine_map<(b, a, c) -> (b, c)>],
                  iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x : memref<4x10x8xf32, strided<[8, 32, 1]>>) outs(%o1 : memref<10x8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(b, a, c) -> (a, b, c)>,
                                   affine_map<(b, a, c) -> (b, c)>],
                  iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%y : memref<4x10x8xf32, strided<[100, 8, 1], offset: 5>>) outs(%o2 : memref<10x8xf32, strided<[16, 2]>>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  }
  return
}
