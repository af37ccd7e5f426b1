// RUN: ein-opt %s --ein-parallel-tiles --split-input-file | FileCheck %s

// Tests a loop over row tiles after bufferization: it becomes an
// scf.parallel, the ops in a tile become sequential scf.for nests (no
// linalg and no affine loop left for affine-parallelize to spread), and the
// tile's buffer is freed at the end of the tile.
// CHECK-LABEL: func.func @tile
// CHECK: scf.parallel (%[[I:.*]]) = (%{{.*}}) to (%{{.*}}) step (%{{.*}}) {
// CHECK: %[[BUF:.*]] = memref.alloc
// CHECK: scf.for
// CHECK: scf.for
// CHECK: arith.maximumf
// CHECK: scf.for
// CHECK: scf.for
// CHECK: arith.subf
// CHECK: memref.dealloc %[[BUF]]
// CHECK-NEXT: scf.reduce
// CHECK-NOT: linalg.
// CHECK-NOT: scf.forall
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @tile(%x: memref<16x32xf32>, %y: memref<16x32xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  scf.forall (%i) = (0) to (16) step (8) {
    %xs = memref.subview %x[%i, 0] [8, 32] [1, 1] : memref<16x32xf32> to memref<8x32xf32, strided<[32, 1], offset: ?>>
    %ys = memref.subview %y[%i, 0] [8, 32] [1, 1] : memref<16x32xf32> to memref<8x32xf32, strided<[32, 1], offset: ?>>
    %m = memref.alloc() : memref<8xf32>
    linalg.fill ins(%ninf : f32) outs(%m : memref<8xf32>)
    linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
        ins(%xs : memref<8x32xf32, strided<[32, 1], offset: ?>>) outs(%m : memref<8xf32>) {
    ^bb0(%a: f32, %o: f32):
      %v = arith.maximumf %o, %a : f32
      linalg.yield %v : f32
    }
    linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
        ins(%xs, %m : memref<8x32xf32, strided<[32, 1], offset: ?>>, memref<8xf32>)
        outs(%ys : memref<8x32xf32, strided<[32, 1], offset: ?>>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %v = arith.subf %a, %b : f32
      linalg.yield %v : f32
    }
  }
  return
}

// -----

// Tests buffers sharing a tile: the scores %s die at the exponentials %e,
// so the probabilities %p (same type) take the scores' buffer; %e, live
// while %p is written, keeps its own. Both are freed at the end of the
// tile, once each (the dealloc of %p after its last use goes).
// CHECK-LABEL: func.func @shared_buffers
// CHECK: scf.parallel
// CHECK: %[[S:.*]] = memref.alloc() : memref<8x32xf32>
// CHECK: %[[E:.*]] = memref.alloc() : memref<8x32xf32>
// CHECK-NOT: memref.alloc
// CHECK: arith.mulf
// CHECK: memref.store %{{.*}}, %[[S]]
// CHECK: math.exp
// CHECK: memref.store %{{.*}}, %[[E]]
// CHECK: arith.divf
// CHECK: memref.store %{{.*}}, %[[S]]
// CHECK: memref.load %[[S]]
// CHECK: memref.store %{{.*}}, %subview
// CHECK: memref.dealloc %[[S]]
// CHECK-NEXT: memref.dealloc %[[E]]
// CHECK-NEXT: scf.reduce
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @shared_buffers(%x: memref<16x32xf32>, %y: memref<16x32xf32>) {
  scf.forall (%i) = (0) to (16) step (8) {
    %xs = memref.subview %x[%i, 0] [8, 32] [1, 1] : memref<16x32xf32> to memref<8x32xf32, strided<[32, 1], offset: ?>>
    %ys = memref.subview %y[%i, 0] [8, 32] [1, 1] : memref<16x32xf32> to memref<8x32xf32, strided<[32, 1], offset: ?>>
    %s = memref.alloc() : memref<8x32xf32>
    %e = memref.alloc() : memref<8x32xf32>
    %p = memref.alloc() : memref<8x32xf32>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%xs : memref<8x32xf32, strided<[32, 1], offset: ?>>) outs(%s : memref<8x32xf32>) {
    ^bb0(%a: f32, %o: f32):
      %v = arith.mulf %a, %a : f32
      linalg.yield %v : f32
    }
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%s : memref<8x32xf32>) outs(%e : memref<8x32xf32>) {
    ^bb0(%a: f32, %o: f32):
      %v = math.exp %a : f32
      linalg.yield %v : f32
    }
    linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%e, %e : memref<8x32xf32>, memref<8x32xf32>) outs(%p : memref<8x32xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %v = arith.divf %a, %b : f32
      linalg.yield %v : f32
    }
    memref.dealloc %p : memref<8x32xf32>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%p : memref<8x32xf32>) outs(%ys : memref<8x32xf32, strided<[32, 1], offset: ?>>) {
    ^bb0(%a: f32, %o: f32):
      linalg.yield %a : f32
    }
  }
  return
}
