// RUN: ein-opt %s --ein-fuse-parallel-loops --split-input-file | FileCheck %s

// Tests a mean over the last axis as the loops stage leaves it: the fill
// of the accumulator, the reduction into it and the division into the
// output parameter become one nest. The output and the input are distinct
// llvm.noalias parameters, so the division's write does not conflict with
// the reduction's reads.
// CHECK-LABEL: func.func @mean
// CHECK: scf.parallel
// CHECK-NEXT: memref.store %{{.*}}, %[[ACC:.*]][%[[I:.*]]] : memref<16xf32>
// CHECK-NEXT: scf.for
// CHECK: }
// CHECK-NEXT: memref.load %[[ACC]][%[[I]]]
// CHECK-NEXT: arith.divf
// CHECK-NEXT: memref.store
// CHECK-NOT: scf.parallel
func.func @mean(%x: memref<16x64xf32> {llvm.noalias}, %o: memref<16xf32> {llvm.noalias}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 64.0 : f32
  %acc = memref.alloc() : memref<16xf32>
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    memref.store %zero, %acc[%i] : memref<16xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    scf.for %j = %c0 to %c64 step %c1 {
      %v = memref.load %x[%i, %j] : memref<16x64xf32>
      %a = memref.load %acc[%i] : memref<16xf32>
      %s = arith.addf %a, %v : f32
      memref.store %s, %acc[%i] : memref<16xf32>
    }
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    %a = memref.load %acc[%i] : memref<16xf32>
    %m = arith.divf %a, %n : f32
    memref.store %m, %o[%i] : memref<16xf32>
    scf.reduce
  }
  memref.dealloc %acc : memref<16xf32>
  return
}

// -----

// Tests that without llvm.noalias the parameters may overlap: the second
// nest writes %o, which the first reads, so they stay apart.
// CHECK-LABEL: func.func @may_alias
// CHECK: scf.parallel
// CHECK: scf.parallel
func.func @may_alias(%x: memref<16xf32>, %o: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %acc = memref.alloc() : memref<16xf32>
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    %v = memref.load %x[%i] : memref<16xf32>
    memref.store %v, %acc[%i] : memref<16xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    %a = memref.load %acc[%i] : memref<16xf32>
    memref.store %a, %o[%i] : memref<16xf32>
    scf.reduce
  }
  memref.dealloc %acc : memref<16xf32>
  return
}

// -----

// Tests that a second nest reading a neighbour's value (row i + 1 of what
// the first wrote) is not fused: another thread may not have written it.
// CHECK-LABEL: func.func @neighbour
// CHECK: scf.parallel
// CHECK: scf.parallel
func.func @neighbour(%x: memref<17xf32> {llvm.noalias}, %o: memref<16xf32> {llvm.noalias}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %acc = memref.alloc() : memref<17xf32>
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    %v = memref.load %x[%i] : memref<17xf32>
    memref.store %v, %acc[%i] : memref<17xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    %k = arith.addi %i, %c1 : index
    %a = memref.load %acc[%k] : memref<17xf32>
    memref.store %a, %o[%i] : memref<16xf32>
    scf.reduce
  }
  memref.dealloc %acc : memref<17xf32>
  return
}
