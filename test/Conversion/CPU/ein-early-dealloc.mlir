// RUN: ein-opt %s --ein-early-dealloc --split-input-file | FileCheck %s

// Tests that each dealloc moves up to just after the last use of its buffer:
// %a is freed after the copy that reads it, before %b is allocated.
// CHECK-LABEL: func.func @after_last_use
// CHECK: %[[A:.*]] = memref.alloc() : memref<32xf32>
// CHECK-NEXT: linalg.fill {{.*}} outs(%[[A]] : memref<32xf32>)
// CHECK-NEXT: linalg.copy ins(%[[A]] : memref<32xf32>)
// CHECK-NEXT: memref.dealloc %[[A]] : memref<32xf32>
// CHECK-NEXT: %[[B:.*]] = memref.alloc() : memref<32xf32>
// CHECK-NEXT: linalg.fill {{.*}} outs(%[[B]] : memref<32xf32>)
// CHECK-NEXT: linalg.copy ins(%[[B]] : memref<32xf32>)
// CHECK-NEXT: memref.dealloc %[[B]] : memref<32xf32>
// CHECK-NEXT: return
func.func @after_last_use(%c: f32, %out: memref<32xf32>) {
  %a = memref.alloc() : memref<32xf32>
  linalg.fill ins(%c : f32) outs(%a : memref<32xf32>)
  linalg.copy ins(%a : memref<32xf32>) outs(%out : memref<32xf32>)
  %b = memref.alloc() : memref<32xf32>
  linalg.fill ins(%c : f32) outs(%b : memref<32xf32>)
  linalg.copy ins(%b : memref<32xf32>) outs(%out : memref<32xf32>)
  memref.dealloc %a : memref<32xf32>
  memref.dealloc %b : memref<32xf32>
  return
}

// -----

// Tests uses through aliases: the last use of %a is a copy from a
// collapse_shape of a subview of it, so the dealloc goes after that copy,
// not after the last op that names %a itself.
// CHECK-LABEL: func.func @through_aliases
// CHECK: %[[A:.*]] = memref.alloc() : memref<4x8xf32>
// CHECK: %[[S:.*]] = memref.subview %[[A]]
// CHECK: %[[V:.*]] = memref.collapse_shape %[[S]]
// CHECK-NEXT: %[[B:.*]] = memref.alloc() : memref<16xf32>
// CHECK-NEXT: linalg.copy ins(%[[V]] : memref<16xf32, strided<[1], offset: 8>>) outs(%[[B]] : memref<16xf32>)
// CHECK-NEXT: memref.dealloc %[[A]] : memref<4x8xf32>
// CHECK-NEXT: linalg.copy ins(%[[B]] : memref<16xf32>) outs(%{{.*}} : memref<16xf32>)
// CHECK-NEXT: memref.dealloc %[[B]] : memref<16xf32>
// CHECK-NEXT: return
func.func @through_aliases(%c: f32, %out: memref<16xf32>) {
  %a = memref.alloc() : memref<4x8xf32>
  linalg.fill ins(%c : f32) outs(%a : memref<4x8xf32>)
  %s = memref.subview %a[1, 0] [2, 8] [1, 1] : memref<4x8xf32> to memref<2x8xf32, strided<[8, 1], offset: 8>>
  %v = memref.collapse_shape %s [[0, 1]] : memref<2x8xf32, strided<[8, 1], offset: 8>> into memref<16xf32, strided<[1], offset: 8>>
  %b = memref.alloc() : memref<16xf32>
  linalg.copy ins(%v : memref<16xf32, strided<[1], offset: 8>>) outs(%b : memref<16xf32>)
  linalg.copy ins(%b : memref<16xf32>) outs(%out : memref<16xf32>)
  memref.dealloc %a : memref<4x8xf32>
  memref.dealloc %b : memref<16xf32>
  return
}

// -----

// Tests uses in nested regions: a load inside a parallel loop and a store
// inside a serial loop keep the buffer alive until the loop that holds them
// has finished; the dealloc goes after the loop, never inside it.
// CHECK-LABEL: func.func @nested_uses
// CHECK: %[[A:.*]] = memref.alloc() : memref<8xf32>
// CHECK: scf.for
// CHECK: memref.store %{{.*}}, %[[A]]
// CHECK: scf.parallel
// CHECK: memref.load %[[A]]
// CHECK: scf.reduce
// CHECK-NEXT: }
// CHECK-NEXT: memref.dealloc %[[A]] : memref<8xf32>
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: return
func.func @nested_uses(%c: f32, %out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %a = memref.alloc() : memref<8xf32>
  scf.for %i = %c0 to %c8 step %c1 {
    memref.store %c, %a[%i] : memref<8xf32>
  }
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    %x = memref.load %a[%i] : memref<8xf32>
    memref.store %x, %out[%i] : memref<8xf32>
  }
  linalg.fill ins(%c : f32) outs(%out : memref<8xf32>)
  memref.dealloc %a : memref<8xf32>
  return
}

// -----

// Tests that a dealloc stays when an alias escapes: passed to a call (which
// may keep it), or yielded out of a loop (used later under another name).
// CHECK-LABEL: func.func @escapes
// CHECK: %[[A:.*]] = memref.alloc() : memref<8xf32>
// CHECK: %[[B:.*]] = memref.alloc() : memref<8xf32>
// CHECK: call @keep
// CHECK: scf.for
// CHECK: linalg.fill
// CHECK-NEXT: memref.dealloc %[[A]] : memref<8xf32>
// CHECK-NEXT: memref.dealloc %[[B]] : memref<8xf32>
// CHECK-NEXT: return
func.func private @keep(memref<?xf32>)
func.func @escapes(%c: f32, %out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %a = memref.alloc() : memref<8xf32>
  %b = memref.alloc() : memref<8xf32>
  %cast = memref.cast %a : memref<8xf32> to memref<?xf32>
  call @keep(%cast) : (memref<?xf32>) -> ()
  %r = scf.for %i = %c0 to %c8 step %c1 iter_args(%it = %b) -> (memref<8xf32>) {
    scf.yield %it : memref<8xf32>
  }
  linalg.fill ins(%c : f32) outs(%out : memref<8xf32>)
  memref.dealloc %a : memref<8xf32>
  memref.dealloc %b : memref<8xf32>
  return
}

// -----

// Tests that a conditional dealloc (the deallocation pipeline's `scf.if`
// when ownership is known only at run time) is not moved, and that a buffer
// freed elsewhere too keeps its unconditional dealloc in place.
// CHECK-LABEL: func.func @conditional
// CHECK: %[[A:.*]] = memref.alloc() : memref<8xf32>
// CHECK: linalg.copy
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: scf.if
// CHECK-NEXT: memref.dealloc %[[A]] : memref<8xf32>
// CHECK-NEXT: }
// CHECK-NEXT: memref.dealloc %[[A]] : memref<8xf32>
// CHECK-NEXT: return
func.func @conditional(%c: f32, %own: i1, %out: memref<8xf32>) {
  %a = memref.alloc() : memref<8xf32>
  linalg.copy ins(%a : memref<8xf32>) outs(%out : memref<8xf32>)
  linalg.fill ins(%c : f32) outs(%out : memref<8xf32>)
  scf.if %own {
    memref.dealloc %a : memref<8xf32>
  }
  memref.dealloc %a : memref<8xf32>
  return
}

// -----

// Tests a buffer allocated and freed inside a loop body: its dealloc moves
// up within the body, after the body's last use.
// CHECK-LABEL: func.func @in_loop_body
// CHECK: scf.for
// CHECK-NEXT: %[[A:.*]] = memref.alloc() : memref<8xf32>
// CHECK-NEXT: linalg.fill {{.*}} outs(%[[A]] : memref<8xf32>)
// CHECK-NEXT: linalg.copy ins(%[[A]] : memref<8xf32>)
// CHECK-NEXT: memref.dealloc %[[A]] : memref<8xf32>
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: }
func.func @in_loop_body(%c: f32, %out: memref<8xf32>, %other: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %a = memref.alloc() : memref<8xf32>
    linalg.fill ins(%c : f32) outs(%a : memref<8xf32>)
    linalg.copy ins(%a : memref<8xf32>) outs(%out : memref<8xf32>)
    linalg.fill ins(%c : f32) outs(%other : memref<8xf32>)
    memref.dealloc %a : memref<8xf32>
  }
  return
}

// -----

// Tests the base buffer of extract_strided_metadata as an alias (as
// ein-merged-outputs-in-place and expand-strided-metadata make them): the
// last use is a copy from a reinterpret_cast of it.
// CHECK-LABEL: func.func @strided_metadata
// CHECK: %[[A:.*]] = memref.alloc() : memref<4x8xf32>
// CHECK: %[[R:.*]] = memref.reinterpret_cast
// CHECK-NEXT: linalg.copy ins(%[[R]] : memref<32xf32>)
// CHECK-NEXT: memref.dealloc %[[A]] : memref<4x8xf32>
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: return
func.func @strided_metadata(%c: f32, %out: memref<32xf32>) {
  %a = memref.alloc() : memref<4x8xf32>
  linalg.fill ins(%c : f32) outs(%a : memref<4x8xf32>)
  %base, %offset, %sizes:2, %strides:2 = memref.extract_strided_metadata %a : memref<4x8xf32> -> memref<f32>, index, index, index, index, index
  %r = memref.reinterpret_cast %base to offset: [0], sizes: [32], strides: [1] : memref<f32> to memref<32xf32>
  linalg.copy ins(%r : memref<32xf32>) outs(%out : memref<32xf32>)
  linalg.fill ins(%c : f32) outs(%out : memref<32xf32>)
  memref.dealloc %a : memref<4x8xf32>
  return
}

// -----

// Tests that an alias stored as a value (a pointer kept in memory) keeps
// the dealloc in place.
// CHECK-LABEL: func.func @stored
// CHECK: memref.store %[[A:.*]], %{{.*}}[] : memref<memref<8xf32>>
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: memref.dealloc %[[A]] : memref<8xf32>
// CHECK-NEXT: return
func.func @stored(%c: f32, %slot: memref<memref<8xf32>>, %out: memref<8xf32>) {
  %a = memref.alloc() : memref<8xf32>
  memref.store %a, %slot[] : memref<memref<8xf32>>
  linalg.fill ins(%c : f32) outs(%out : memref<8xf32>)
  memref.dealloc %a : memref<8xf32>
  return
}
