// RUN: ein-opt %s --ein-serial-small-loops="min-work=1000" --split-input-file | FileCheck %s

// Tests that a nest of known small work (10 x 8 = 80 innermost iterations,
// below min-work) runs serially: no scf.parallel remains, the parallel loop
// becomes an scf.for around the body.
// CHECK-LABEL: func.func @small_static
// CHECK-NOT: scf.parallel
// CHECK: scf.for %[[I:.*]] = %c0 to %c10 step %c1 {
// CHECK-NEXT: scf.for %[[J:.*]] = %c0 to %c8 step %c1 {
// CHECK-NEXT: memref.load %{{.*}}[%[[I]], %[[J]]]
// CHECK-NOT: scf.parallel
func.func @small_static(%x: memref<10x8xf32>, %o: memref<10x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c10 = arith.constant 10 : index
  scf.parallel (%i) = (%c0) to (%c10) step (%c1) {
    scf.for %j = %c0 to %c8 step %c1 {
      %v = memref.load %x[%i, %j] : memref<10x8xf32>
      %w = arith.addf %v, %v : f32
      memref.store %w, %o[%i, %j] : memref<10x8xf32>
    }
    scf.reduce
  }
  return
}

// -----

// Tests that a nest of known large work (200 x 8 = 1600 >= min-work) stays
// one scf.parallel, unguarded and unmarked.
// CHECK-LABEL: func.func @large_static
// CHECK-NOT: scf.if
// CHECK: scf.parallel (%{{.*}}) = (%c0) to (%c200) step (%c1) {
// CHECK-NOT: ein.work_checked
func.func @large_static(%x: memref<200x8xf32>, %o: memref<200x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c200 = arith.constant 200 : index
  scf.parallel (%i) = (%c0) to (%c200) step (%c1) {
    scf.for %j = %c0 to %c8 step %c1 {
      %v = memref.load %x[%i, %j] : memref<200x8xf32>
      memref.store %v, %o[%i, %j] : memref<200x8xf32>
    }
    scf.reduce
  }
  return
}

// -----

// Tests sizes known only at run time: the work (rows times the inner trip
// count, whose memref.dim is hoisted in front of the nest) is computed
// there, and an scf.if runs the parallel nest when it reaches min-work,
// else a serial copy of it.
// CHECK-LABEL: func.func @dynamic
// CHECK-SAME: (%[[X:.*]]: memref<?x?xf32>, %{{.*}}: memref<?x?xf32>)
// CHECK-DAG: %[[N:.*]] = memref.dim %[[X]], %c0
// CHECK-DAG: %[[M:.*]] = memref.dim %[[X]], %c1
// CHECK-DAG: %[[TI:.*]] = arith.maxsi %{{.*}}, %{{.*}} : index
// CHECK-DAG: %[[TJ:.*]] = arith.maxsi %{{.*}}, %{{.*}} : index
// CHECK: %[[WORK:.*]] = arith.muli
// CHECK: %[[BIG:.*]] = arith.cmpi sge, %[[WORK]], %c1000
// CHECK: scf.if %[[BIG]] {
// CHECK-NEXT: scf.parallel (%{{.*}}) = (%c0) to (%[[N]]) step (%c1) {
// CHECK: } else {
// CHECK-NEXT: scf.for %[[I:.*]] = %c0 to %[[N]] step %c1 {
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c1 {
func.func @dynamic(%x: memref<?x?xf32>, %o: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?x?xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %m = memref.dim %x, %c1 : memref<?x?xf32>
    scf.for %j = %c0 to %m step %c1 {
      %v = memref.load %x[%i, %j] : memref<?x?xf32>
      memref.store %v, %o[%i, %j] : memref<?x?xf32>
    }
    scf.reduce
  }
  return
}

// -----

// Tests a remainder tile: the inner trip count min(n - i, 64) depends on
// the parallel loop's own variable, so its bound from above (64) counts,
// and the work is ceil(n / 64) * 64, tested at run time.
// CHECK-LABEL: func.func @remainder
// CHECK: %[[TI:.*]] = arith.maxsi
// CHECK: %[[WORK:.*]] = arith.muli %[[TI]], %c64
// CHECK: %[[BIG:.*]] = arith.cmpi sge, %[[WORK]], %c1000
// CHECK: scf.if %[[BIG]] {
// CHECK-NEXT: scf.parallel
// CHECK: } else {
// CHECK-NEXT: scf.for
func.func @remainder(%x: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%i) = (%c0) to (%n) step (%c64) {
    %rest = arith.subi %n, %i : index
    %len = arith.minsi %rest, %c64 : index
    scf.for %j = %c0 to %len step %c1 {
      %k = arith.addi %i, %j : index
      %v = memref.load %x[%k] : memref<?xf32>
      memref.store %v, %x[%k] : memref<?xf32>
    }
    scf.reduce
  }
  return
}

// -----

// Tests that a nest whose inner trip count has no bound here (read from
// memory in each iteration) is left parallel: a wrong "small" would lose
// the parallel speed of a large workload.
// CHECK-LABEL: func.func @unbounded
// CHECK-NOT: scf.if
// CHECK: scf.parallel
// CHECK-NOT: ein.work_checked
func.func @unbounded(%x: memref<?xf32>, %lens: memref<?xindex>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %len = memref.load %lens[%i] : memref<?xindex>
    scf.for %j = %c0 to %len step %c1 {
      %v = memref.load %x[%j] : memref<?xf32>
      memref.store %v, %x[%j] : memref<?xf32>
    }
    scf.reduce
  }
  return
}

// -----

// Tests that the work of a body sums its loops (two loops of 20 under 30
// rows: 1200 >= min-work), so the nest stays parallel; one loop alone
// (600) would not.
// CHECK-LABEL: func.func @summed
// CHECK: scf.parallel
func.func @summed(%x: memref<30x20xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c20 = arith.constant 20 : index
  %c30 = arith.constant 30 : index
  scf.parallel (%i) = (%c0) to (%c30) step (%c1) {
    scf.for %j = %c0 to %c20 step %c1 {
      %v = memref.load %x[%i, %j] : memref<30x20xf32>
      memref.store %v, %x[%i, %j] : memref<30x20xf32>
    }
    scf.for %j = %c0 to %c20 step %c1 {
      %v = memref.load %x[%i, %j] : memref<30x20xf32>
      memref.store %v, %x[%i, %j] : memref<30x20xf32>
    }
    scf.reduce
  }
  return
}

// -----

// Tests a tile whose loops start at the nest's variables, as
// ein-tile-transposes makes them: `for a = i to min(i + 64, n)`, and the
// remainder after whole steps of 8, `for b = e - (e - j) % 8 to e`. Each
// trip count is bounded by the tile (64, 7) and by the tensor (n, m), the
// tighter of the two at run time, so a tile of a tiny tensor counts its
// real size: at most 1 * min(n, 64) * min(m, 7) here.
// CHECK-LABEL: func.func @tile
// CHECK-SAME: (%[[X:.*]]: memref<?x?xf32>, %[[N:.*]]: index, %[[M:.*]]: index)
// CHECK-DAG: %[[TA:.*]] = arith.minsi %{{.*}}, %c64 : index
// CHECK-DAG: %[[TB:.*]] = arith.minsi %{{.*}}, %c7 : index
// CHECK: arith.muli
// CHECK: %[[BIG:.*]] = arith.cmpi sge, %{{.*}}, %c1000
// CHECK: scf.if %[[BIG]] {
// CHECK-NEXT: scf.parallel
// CHECK: } else {
// CHECK-NEXT: scf.for
func.func @tile(%x: memref<?x?xf32>, %n: index, %m: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %m) step (%c64, %c64) {
    %ia = arith.addi %i, %c64 : index
    %ie = arith.minsi %ia, %n : index
    %ja = arith.addi %j, %c64 : index
    %je = arith.minsi %ja, %m : index
    %span = arith.subi %je, %j : index
    %rem = arith.remsi %span, %c8 : index
    %jw = arith.subi %je, %rem : index
    scf.for %a = %i to %ie step %c1 {
      scf.for %b = %jw to %je step %c1 {
        %v = memref.load %x[%a, %b] : memref<?x?xf32>
        memref.store %v, %x[%a, %b] : memref<?x?xf32>
      }
    }
    scf.reduce
  }
  return
}

// -----

// Tests the same tile on a static 16 x 16 tensor, read as whole vectors of
// 8 (a register tile of 8 loads, 64 elements): 2 x 2 tiles of 64 elements
// are 256 < min-work, so the nest is serial; the vector loads count their
// elements, not one iteration each (4 iterations would also be small, but
// 48 x 48 below is not).
// CHECK-LABEL: func.func @vector_tile_small
// CHECK-NOT: scf.parallel
// CHECK: scf.for
func.func @vector_tile_small(%x: memref<16x16xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  scf.parallel (%i) = (%c0) to (%c16) step (%c8) {
    scf.for %j = %c0 to %c16 step %c8 {
      %v0 = vector.load %x[%i, %j] : memref<16x16xf32>, vector<8xf32>
      vector.store %v0, %x[%j, %i] : memref<16x16xf32>, vector<8xf32>
      %v1 = vector.load %x[%i, %j] : memref<16x16xf32>, vector<8xf32>
      vector.store %v1, %x[%j, %i] : memref<16x16xf32>, vector<8xf32>
      %v2 = vector.load %x[%i, %j] : memref<16x16xf32>, vector<8xf32>
      vector.store %v2, %x[%j, %i] : memref<16x16xf32>, vector<8xf32>
      %v3 = vector.load %x[%i, %j] : memref<16x16xf32>, vector<8xf32>
      vector.store %v3, %x[%j, %i] : memref<16x16xf32>, vector<8xf32>
      %v4 = vector.load %x[%i, %j] : memref<16x16xf32>, vector<8xf32>
      vector.store %v4, %x[%j, %i] : memref<16x16xf32>, vector<8xf32>
      %v5 = vector.load %x[%i, %j] : memref<16x16xf32>, vector<8xf32>
      vector.store %v5, %x[%j, %i] : memref<16x16xf32>, vector<8xf32>
      %v6 = vector.load %x[%i, %j] : memref<16x16xf32>, vector<8xf32>
      vector.store %v6, %x[%j, %i] : memref<16x16xf32>, vector<8xf32>
      %v7 = vector.load %x[%i, %j] : memref<16x16xf32>, vector<8xf32>
      vector.store %v7, %x[%j, %i] : memref<16x16xf32>, vector<8xf32>
    }
    scf.reduce
  }
  return
}

// -----

// Tests that 6 x 6 register tiles of 64 elements (2304 >= min-work) stay
// parallel, where 36 iterations counted one each would have been serial.
// CHECK-LABEL: func.func @vector_tile_large
// CHECK: scf.parallel
func.func @vector_tile_large(%x: memref<48x48xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c48 = arith.constant 48 : index
  scf.parallel (%i) = (%c0) to (%c48) step (%c8) {
    scf.for %j = %c0 to %c48 step %c8 {
      %v0 = vector.load %x[%i, %j] : memref<48x48xf32>, vector<8xf32>
      vector.store %v0, %x[%j, %i] : memref<48x48xf32>, vector<8xf32>
      %v1 = vector.load %x[%i, %j] : memref<48x48xf32>, vector<8xf32>
      vector.store %v1, %x[%j, %i] : memref<48x48xf32>, vector<8xf32>
      %v2 = vector.load %x[%i, %j] : memref<48x48xf32>, vector<8xf32>
      vector.store %v2, %x[%j, %i] : memref<48x48xf32>, vector<8xf32>
      %v3 = vector.load %x[%i, %j] : memref<48x48xf32>, vector<8xf32>
      vector.store %v3, %x[%j, %i] : memref<48x48xf32>, vector<8xf32>
      %v4 = vector.load %x[%i, %j] : memref<48x48xf32>, vector<8xf32>
      vector.store %v4, %x[%j, %i] : memref<48x48xf32>, vector<8xf32>
      %v5 = vector.load %x[%i, %j] : memref<48x48xf32>, vector<8xf32>
      vector.store %v5, %x[%j, %i] : memref<48x48xf32>, vector<8xf32>
      %v6 = vector.load %x[%i, %j] : memref<48x48xf32>, vector<8xf32>
      vector.store %v6, %x[%j, %i] : memref<48x48xf32>, vector<8xf32>
      %v7 = vector.load %x[%i, %j] : memref<48x48xf32>, vector<8xf32>
      vector.store %v7, %x[%j, %i] : memref<48x48xf32>, vector<8xf32>
    }
    scf.reduce
  }
  return
}
