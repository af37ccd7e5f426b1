// RUN: ein-opt %s --ein-tile-transposes="block=16 vector-bits=256" --canonicalize --cse --split-input-file | FileCheck %s

// Tests the tiles of a 2-D f32 transpose of odd sizes: a parallel loop over
// 16 x 16 blocks, whole 8 x 8 register tiles read as 8 vectors along the
// input's rows, 3 rounds of 8 interleaving shuffles, 8 vectors written along
// the output's rows, then the block's edges element by element.
// CHECK-LABEL: func.func @t2_f32
// CHECK-SAME: (%[[X:.*]]: memref<20x19xf32>, %[[Y:.*]]: memref<19x20xf32>)
// CHECK: scf.parallel (%[[I0:.*]], %[[O0:.*]]) = (%c0, %c0) to (%c19, %c20) step (%c16, %c16) {
// CHECK: scf.for %[[I:.*]] = %[[I0]] to %{{.*}} step %c8 {
// CHECK-NEXT: scf.for %[[O:.*]] = %[[O0]] to %{{.*}} step %c8 {
// CHECK-NEXT: %[[R0:.*]] = vector.load %[[X]][%[[O]], %[[I]]] : memref<20x19xf32>, vector<8xf32>
// CHECK-COUNT-7: vector.load %[[X]]
// CHECK: %[[S0:.*]] = vector.shuffle %[[R0]], %{{.*}} [0, 8, 1, 9, 2, 10, 3, 11]
// CHECK-NEXT: vector.shuffle %[[R0]], %{{.*}} [4, 12, 5, 13, 6, 14, 7, 15]
// CHECK-COUNT-22: vector.shuffle
// CHECK-NEXT: vector.store %{{.*}}, %[[Y]][%[[I]], %[[O]]] : memref<19x20xf32>, vector<8xf32>
// CHECK-COUNT-7: vector.store
// CHECK: scf.for
// CHECK-NEXT: scf.for
// CHECK-NEXT: memref.load %[[X]]
// CHECK-NEXT: memref.store %{{.*}}, %[[Y]]
// CHECK: scf.for
// CHECK-NEXT: scf.for
// CHECK-NEXT: memref.load %[[X]]
// CHECK-NEXT: memref.store %{{.*}}, %[[Y]]
// CHECK: scf.reduce
// CHECK-NOT: linalg.generic
func.func @t2_f32(%x: memref<20x19xf32>, %y: memref<19x20xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (j, i)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<20x19xf32>) outs(%y : memref<19x20xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  return
}

// -----

// Tests f64 (4 x 4 register tiles, 2 rounds of 4 shuffles) with a batch
// loop that is a parallel loop of its own, and an input broadcast along it.
// CHECK-LABEL: func.func @batch_f64
// CHECK: scf.parallel (%[[B:.*]], %[[I0:.*]], %[[O0:.*]]) = (%c0, %c0, %c0) to (%c3, %c40, %c36) step (%c1, %c16, %c16) {
// CHECK: scf.for %[[I:.*]] = %[[I0]] to %{{.*}} step %c4 {
// CHECK-NEXT: scf.for %[[O:.*]] = %[[O0]] to %{{.*}} step %c4 {
// CHECK-NEXT: vector.load %{{.*}}[%[[O]], %[[I]]] : memref<36x40xf64>, vector<4xf64>
// CHECK-COUNT-3: vector.load
// CHECK-COUNT-8: vector.shuffle
// CHECK-NEXT: vector.store %{{.*}}[%[[B]], %[[I]], %[[O]]] : memref<3x40x36xf64>, vector<4xf64>
// CHECK-COUNT-3: vector.store
// CHECK-NOT: linalg.generic
func.func @batch_f64(%x: memref<36x40xf64>, %y: memref<3x40x36xf64>) {
  linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (j, i)>, affine_map<(b, i, j) -> (b, i, j)>],
                  iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : memref<36x40xf64>) outs(%y : memref<3x40x36xf64>) {
  ^bb0(%in: f64, %o: f64):
    linalg.yield %in : f64
  }
  return
}

// -----

// Tests sizes and strides known only at run time: both last strides are
// checked, the tiles read and write through views that state a unit last
// stride, and the copy as it was runs when a check fails.
// CHECK-LABEL: func.func @dynamic
// CHECK-SAME: (%[[X:.*]]: memref<?x?x?xf16, strided<[?, ?, ?], offset: ?>>, %[[Y:.*]]: memref<?x?x?xf16, strided<[?, ?, ?], offset: ?>>)
// CHECK: %[[XB:.*]], %[[XO:.*]], %[[XS:.*]]:3, %[[XT:.*]]:3 = memref.extract_strided_metadata %[[X]]
// CHECK: %[[XU:.*]] = arith.cmpi eq, %[[XT]]#2, %c1
// CHECK: %[[YB:.*]], %[[YO:.*]], %[[YS:.*]]:3, %[[YT:.*]]:3 = memref.extract_strided_metadata %[[Y]]
// CHECK: %[[YU:.*]] = arith.cmpi eq, %[[YT]]#2, %c1
// CHECK: %[[BOTH:.*]] = arith.andi %[[XU]], %[[YU]]
// CHECK: scf.if %[[BOTH]] {
// CHECK-DAG: %[[YV:.*]] = memref.reinterpret_cast %[[YB]] to offset: [%[[YO]]], sizes: [%[[YS]]#0, %[[YS]]#1, %[[YS]]#2], strides: [%[[YT]]#0, %[[YT]]#1, 1]
// CHECK-DAG: %[[XV:.*]] = memref.reinterpret_cast %[[XB]] to offset: [%[[XO]]], sizes: [%[[XS]]#0, %[[XS]]#1, %[[XS]]#2], strides: [%[[XT]]#0, %[[XT]]#1, 1]
// CHECK: scf.parallel
// CHECK: vector.load %[[XV]]{{.*}} : memref<?x?x?xf16, strided<[?, ?, 1], offset: ?>>, vector<8xf16>
// CHECK: vector.store %{{.*}}, %[[YV]]
// CHECK: } else {
// CHECK-NEXT: linalg.generic
// CHECK-SAME: ins(%[[X]] : {{.*}}) outs(%[[Y]] : {{.*}})
func.func @dynamic(%x: memref<?x?x?xf16, strided<[?, ?, ?], offset: ?>>, %y: memref<?x?x?xf16, strided<[?, ?, ?], offset: ?>>) {
  linalg.generic {indexing_maps = [affine_map<(a, c, b) -> (a, b, c)>, affine_map<(a, c, b) -> (a, c, b)>],
                  iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : memref<?x?x?xf16, strided<[?, ?, ?], offset: ?>>) outs(%y : memref<?x?x?xf16, strided<[?, ?, ?], offset: ?>>) {
  ^bb0(%in: f16, %o: f16):
    linalg.yield %in : f16
  }
  return
}

// -----

// Tests what is not a transpose here, left as it is: the last axis stays
// last (rows copied whole), a static last stride other than 1, an axis
// shorter than a register tile, i1 elements, and a body that computes.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: vector.
// CHECK-COUNT-5: linalg.generic
// CHECK-NOT: vector.
func.func @left_alone(%a: memref<4x6x8xf32>, %b: memref<6x4x8xf32>,
                      %c: memref<16x16xf32, strided<[1, 16]>>, %d: memref<16x16xf32>,
                      %e: memref<4x16xf32>, %f: memref<16x4xf32>,
                      %g: memref<16x16xi1>, %h: memref<16x16xi1>,
                      %i: memref<16x16xf32>) {
  linalg.generic {indexing_maps = [affine_map<(s, b, d) -> (b, s, d)>, affine_map<(s, b, d) -> (s, b, d)>],
                  iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%a : memref<4x6x8xf32>) outs(%b : memref<6x4x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (j, i)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<16x16xf32, strided<[1, 16]>>) outs(%d : memref<16x16xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (j, i)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%e : memref<4x16xf32>) outs(%f : memref<16x4xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (j, i)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%g : memref<16x16xi1>) outs(%h : memref<16x16xi1>) {
  ^bb0(%in: i1, %o: i1):
    linalg.yield %in : i1
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (j, i)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%d : memref<16x16xf32>) outs(%i : memref<16x16xf32>) {
  ^bb0(%in: f32, %o: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  }
  return
}
