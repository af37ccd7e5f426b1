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
