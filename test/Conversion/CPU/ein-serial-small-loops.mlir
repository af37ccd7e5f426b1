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
