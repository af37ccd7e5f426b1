// RUN: ein-opt %s --ein-tile-contractions="vector-bits=512 work-items=4 mr=6 mc=128 nc=1024 kc=256" --canonicalize --cse --split-input-file | FileCheck %s
// RUN: ein-opt %s --ein-tile-contractions="vector-bits=256 work-items=4 mr=6 mc=128 nc=1024 kc=256" --canonicalize --cse --split-input-file | FileCheck %s --check-prefix=AVX2
// Blocking from the cache model (HostCPU.h, gemmTiles) for given caches:
// Zen 3 (32 KiB 8-way L1d, 512 KiB L2) with AVX2, Zen 4 (32 KiB 8-way L1d,
// 1 MiB L2) with AVX-512.
// RUN: ein-opt %s --ein-tile-contractions="vector-bits=256 work-items=4 l1-bytes=32768 l1-ways=8 l2-bytes=524288 l3-bytes=16777216" --canonicalize --cse --split-input-file | FileCheck %s --check-prefix=ZEN3
// RUN: ein-opt %s --ein-tile-contractions="vector-bits=512 work-items=4 l1-bytes=32768 l1-ways=8 l2-bytes=1048576 l3-bytes=16777216" --canonicalize --cse --split-input-file | FileCheck %s --check-prefix=ZEN4

#mA = affine_map<(m, k, n) -> (m, k)>
#mB = affine_map<(m, k, n) -> (k, n)>
#mC = affine_map<(m, k, n) -> (m, n)>

// Tests the GEMM structure: the zero fill folds into the kernel, work is
// split over m into 4 parallel chunks of 6 rows, B is packed into aligned
// panels of 48 lanes (40 columns need only 3 of the 4 vectors of the default
// 6 x 64 tile), A (f32, k contiguous) is read in place with rows past the
// edge clamped to the last, and the 6 x 48 f32 tile lives in 18 vector
// accumulators through the k loop; C is written once, the 40 columns as two
// full vectors and one masked to 8 lanes.
// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[A:.*]]: memref<20x30xf32>, %[[B:.*]]: memref<30x40xf32>, %[[C:.*]]: memref<20x40xf32>)
// CHECK-NOT: linalg.fill
// CHECK: scf.parallel (%{{.*}}) = (%c0) to (%c4) step (%c1)
// CHECK-NOT: memref.alloc
// CHECK: %[[BP:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x30x48xf32>
// CHECK-NOT: memref.alloc
// CHECK: memref.load %[[B]]
// CHECK: memref.store %{{.*}}, %[[BP]]
// CHECK: vector.constant_mask [8] : vector<16xi1>
// CHECK: scf.for %[[P:.*]] = %c0 to %c30 step %c1 iter_args
// CHECK-COUNT-3: vector.load %[[BP]]
// CHECK: %[[ROW:.*]] = arith.minsi %{{.*}}, %c19 : index
// CHECK: memref.load %[[A]][%[[ROW]], %[[P]]]
// CHECK: vector.broadcast %{{.*}} : f32 to vector<16xf32>
// CHECK-COUNT-18: vector.fma
// CHECK: scf.yield
// CHECK: vector.store %{{.*}}, %[[C]]
// CHECK: vector.store %{{.*}}, %[[C]]
// CHECK: vector.maskedstore %[[C]]
// CHECK: memref.dealloc %[[BP]]
// CHECK-NOT: linalg.generic
func.func @matmul(%a: memref<20x30xf32>, %b: memref<30x40xf32>, %c: memref<20x40xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<20x40xf32>)
  linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : memref<20x30xf32>, memref<30x40xf32>) outs(%c : memref<20x40xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

#mA = affine_map<(m, k, n) -> (m, k)>
#mB = affine_map<(m, k, n) -> (k, n)>
#mC = affine_map<(m, k, n) -> (m, n)>

// Tests f16 operands accumulated in f32: packing extends them once (A too,
// into 6-row panels); a fill with a non-zero value stays, and the kernel
// reads C before accumulating.
// CHECK-LABEL: func.func @half_inputs
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[C:.*]] : memref<20x40xf32>)
// CHECK: scf.parallel
// CHECK: %[[AP:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x30x6xf32>
// CHECK: memref.load %{{.*}} : memref<30x40xf16>
// CHECK-NEXT: arith.extf %{{.*}} : f16 to f32
// CHECK: memref.load %{{.*}} : memref<20x30xf16>
// CHECK-NEXT: arith.extf %{{.*}} : f16 to f32
// CHECK-NEXT: memref.store %{{.*}}, %[[AP]]
// CHECK: vector.load %[[C]]
// CHECK: memref.load %[[AP]]
// CHECK: vector.fma
// CHECK: vector.store %{{.*}}, %[[C]]
// CHECK-NOT: linalg.generic
func.func @half_inputs(%a: memref<20x30xf16>, %b: memref<30x40xf16>, %c: memref<20x40xf32>) {
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%one : f32) outs(%c : memref<20x40xf32>)
  linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : memref<20x30xf16>, memref<30x40xf16>) outs(%c : memref<20x40xf32>) {
  ^bb0(%x: f16, %y: f16, %acc: f32):
    %xe = arith.extf %x : f16 to f32
    %ye = arith.extf %y : f16 to f32
    %p = arith.mulf %xe, %ye : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests attention scores `b s d, b t d -> b s t`: the batch loop alone gives
// enough parallel work (6 items, one chunk of s each); B is read along its
// contiguous d while packing t into lanes.
// CHECK-LABEL: func.func @scores
// CHECK-SAME: (%[[Q:.*]]: memref<6x16x8xf32>, %[[K:.*]]: memref<6x24x8xf32>
// CHECK: scf.parallel (%[[ITEM:.*]]) = (%c0) to (%c6) step (%c1)
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<1x8x32xf32>
// CHECK: scf.for %[[LANE:.*]] = %c0 to %c32
// CHECK-NEXT: scf.for %[[P:.*]] = %c0 to %c8
// CHECK: memref.load %[[K]][%{{.*}}, %{{.*}}, %[[P]]]
// CHECK: vector.fma
func.func @scores(%q: memref<6x16x8xf32>, %k: memref<6x24x8xf32>, %c: memref<6x16x24xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<6x16x24xf32>)
  linalg.generic {indexing_maps = [affine_map<(b, s, t, d) -> (b, s, d)>,
                                   affine_map<(b, s, t, d) -> (b, t, d)>,
                                   affine_map<(b, s, t, d) -> (b, s, t)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : memref<6x16x8xf32>, memref<6x24x8xf32>) outs(%c : memref<6x16x24xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests f64: 8 lanes per vector, and an output whose contiguous axis comes
// from the first operand (`k m, k n -> n m`): the operands swap roles.
// CHECK-LABEL: func.func @swapped_f64
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<{{[0-9]+}}x10x6xf64>
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<1x10x16xf64>
// CHECK: vector.broadcast %{{.*}} : f64 to vector<8xf64>
// CHECK: vector.fma %{{.*}} : vector<8xf64>
func.func @swapped_f64(%a: memref<10x12xf64>, %b: memref<10x9xf64>, %c: memref<9x12xf64>) {
  %zero = arith.constant 0.0 : f64
  linalg.fill ins(%zero : f64) outs(%c : memref<9x12xf64>)
  linalg.generic {indexing_maps = [affine_map<(k, m, n) -> (k, m)>,
                                   affine_map<(k, m, n) -> (k, n)>,
                                   affine_map<(k, m, n) -> (n, m)>],
                  iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%a, %b : memref<10x12xf64>, memref<10x9xf64>) outs(%c : memref<9x12xf64>) {
  ^bb0(%x: f64, %y: f64, %acc: f64):
    %p = arith.mulf %x, %y : f64
    %s = arith.addf %acc, %p : f64
    linalg.yield %s : f64
  }
  return
}

// -----

// Tests two summed axes: the longer is the kernel's k, the other an outer
// sequential loop inside each work item. (They come in different orders in
// A and B, so they cannot be grouped into one.)
// CHECK-LABEL: func.func @two_sums
// CHECK-NOT: memref.collapse_shape
// CHECK: scf.parallel
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<1x20x16xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c3 step %c1
// CHECK: vector.fma
func.func @two_sums(%a: memref<8x20x3xf32>, %b: memref<3x20x16xf32>, %c: memref<8x16xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<8x16xf32>)
  linalg.generic {indexing_maps = [affine_map<(m, k, j, n) -> (m, k, j)>,
                                   affine_map<(m, k, j, n) -> (j, k, n)>,
                                   affine_map<(m, k, j, n) -> (m, n)>],
                  iterator_types = ["parallel", "reduction", "reduction", "parallel"]}
      ins(%a, %b : memref<8x20x3xf32>, memref<3x20x16xf32>) outs(%c : memref<8x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests what stays with the generic lowering: integers, an output whose
// contiguous axis both operands carry, and a product with nothing to sum.
// CHECK-LABEL: func.func @integers
// CHECK-NOT: scf.parallel
// CHECK: linalg.generic
func.func @integers(%a: memref<4x5xi32>, %b: memref<5x6xi32>, %c: memref<4x6xi32>) {
  linalg.generic {indexing_maps = [affine_map<(m, k, n) -> (m, k)>, affine_map<(m, k, n) -> (k, n)>,
                                   affine_map<(m, k, n) -> (m, n)>],
                  iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : memref<4x5xi32>, memref<5x6xi32>) outs(%c : memref<4x6xi32>) {
  ^bb0(%x: i32, %y: i32, %acc: i32):
    %p = arith.muli %x, %y : i32
    %s = arith.addi %acc, %p : i32
    linalg.yield %s : i32
  }
  return
}

// CHECK-LABEL: func.func @shared_inner_axis
// CHECK-NOT: scf.parallel
// CHECK: linalg.generic
func.func @shared_inner_axis(%a: memref<7x4xf32>, %b: memref<7x5xf32>, %c: memref<4x5x7xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j, b) -> (b, i)>, affine_map<(i, j, b) -> (b, j)>,
                                   affine_map<(i, j, b) -> (i, j, b)>],
                  iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%a, %b : memref<7x4xf32>, memref<7x5xf32>) outs(%c : memref<4x5x7xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// CHECK-LABEL: func.func @outer_product
// CHECK-NOT: scf.parallel
// CHECK: linalg.generic
func.func @outer_product(%a: memref<4xf32>, %b: memref<5xf32>, %c: memref<4x5xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (j)>,
                                   affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : memref<4xf32>, memref<5xf32>) outs(%c : memref<4x5xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests the register tile without AVX-512 (16 vector registers): 6 rows of
// two 256-bit vectors, 12 accumulators.
// AVX2-LABEL: func.func @avx2
// AVX2: memref.alloc() {alignment = 64 : i64} : memref<3x30x16xf32>
// AVX2: scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
func.func @avx2(%a: memref<20x30xf32>, %b: memref<30x40xf32>, %c: memref<20x40xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<20x40xf32>)
  linalg.generic {indexing_maps = [affine_map<(m, k, n) -> (m, k)>, affine_map<(m, k, n) -> (k, n)>,
                                   affine_map<(m, k, n) -> (m, n)>],
                  iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : memref<20x30xf32>, memref<30x40xf32>) outs(%c : memref<20x40xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

!dyn = memref<?x?xf32, strided<[?, ?], offset: ?>>

// Tests sizes and strides known only at run time (function arguments of
// size-generic code): sizes come from memref.dim and the blocking from index
// arithmetic on them; a loop empty at run time skips the kernel and keeps the
// folded zero fill; the packed buffers are allocated at run time. Each pack
// reads along its lanes through a unit-stride view when their stride is 1 at
// run time (B's n, A's m), else through the operand's strides (A is packed:
// its k stride is not known to be 1). The micro-kernel checks C's n stride
// per tile: 1 means vector accesses through a unit-stride view, plain where
// the tile is full and masked at the edge; anything else goes through a
// contiguous 6 x 64 scratch tile, copied element by element through C's
// strides.
// CHECK-LABEL: func.func @dynamic_strided
// CHECK-SAME: (%[[A:.*]]: memref<?x?xf32, strided<[?, ?], offset: ?>>, %[[B:.*]]: memref<?x?xf32, strided<[?, ?], offset: ?>>, %[[C:.*]]: memref<?x?xf32, strided<[?, ?], offset: ?>>)
// CHECK-NOT: linalg.fill
// CHECK-DAG: %[[M:.*]] = memref.dim %[[A]], %c0
// CHECK-DAG: %[[K:.*]] = memref.dim %[[A]], %c1
// CHECK-DAG: %[[N:.*]] = memref.dim %[[B]], %c1
// CHECK: scf.if %{{.*}} {
// CHECK: %[[ROWS:.*]] = arith.ceildivsi %[[M]], %c6
// CHECK: scf.parallel (%{{.*}}) = (%c0) to (%{{.*}}) step (%c1) {
// CHECK: %[[AP:.*]] = memref.alloc(%{{.*}}, %{{.*}}) {alignment = 64 : i64} : memref<?x?x6xf32>
// CHECK: %[[BP:.*]] = memref.alloc(%{{.*}}, %{{.*}}) {alignment = 64 : i64} : memref<?x?x64xf32>
// CHECK: %[[TILE:.*]] = memref.alloc() {alignment = 64 : i64} : memref<6x64xf32>
// CHECK: %[[BS:[a-z_0-9]+]]:2 = memref.extract_strided_metadata %[[B]]
// CHECK-NEXT: %[[BUNIT:.*]] = arith.cmpi eq, %[[BS]]#1, %c1
// CHECK-NEXT: scf.if %[[BUNIT]] {
// CHECK-NEXT: %[[BV:.*]] = memref.reinterpret_cast %{{.*}} strides: [%[[BS]]#0, 1] : memref<f32> to memref<?x?xf32, strided<[?, 1], offset: ?>>
// CHECK: memref.load %[[BV]]
// CHECK: memref.store %{{.*}}, %[[BP]]
// CHECK: } else {
// CHECK: memref.load %[[B]]
// CHECK: memref.store %{{.*}}, %[[BP]]
// CHECK: %[[AS:[a-z_0-9]+]]:2 = memref.extract_strided_metadata %[[A]]
// CHECK-NEXT: %[[AUNIT:.*]] = arith.cmpi eq, %[[AS]]#0, %c1
// CHECK-NEXT: scf.if %[[AUNIT]] {
// CHECK-NEXT: %[[AV:.*]] = memref.reinterpret_cast %{{.*}} strides: [1, %[[AS]]#1] : memref<f32> to memref<?x?xf32, strided<[1, ?], offset: ?>>
// CHECK: memref.load %[[AV]]
// CHECK: memref.store %{{.*}}, %[[AP]]
// CHECK: } else {
// CHECK: memref.load %[[A]]
// CHECK: memref.store %{{.*}}, %[[AP]]
// CHECK: %[[FULL:.*]] = arith.cmpi eq, %{{.*}}, %c64 : index
// CHECK: %[[CS:[a-z_0-9]+]]:2 = memref.extract_strided_metadata %[[C]]
// CHECK-NEXT: %[[CUNIT:.*]] = arith.cmpi eq, %[[CS]]#1, %c1
// CHECK-NEXT: scf.if %[[CUNIT]] -> (vector<16xf32>
// CHECK-NEXT: %[[CV:.*]] = memref.reinterpret_cast %{{.*}} strides: [%[[CS]]#0, 1] : memref<f32> to memref<?x?xf32, strided<[?, 1], offset: ?>>
// CHECK: scf.if %[[FULL]]
// CHECK-NEXT: vector.load %[[CV]]
// CHECK: } else {
// CHECK-NEXT: vector.maskedload %[[CV]]
// CHECK: } else {
// CHECK: memref.load %[[C]]
// CHECK-NEXT: memref.store %{{.*}}, %[[TILE]]
// CHECK: vector.load %[[TILE]]
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c1 iter_args
// CHECK-COUNT-4: vector.load %[[BP]]
// CHECK: memref.load %[[AP]]
// CHECK-COUNT-24: vector.fma
// CHECK: scf.if %[[CUNIT]] {
// CHECK: vector.store %{{.*}}, %[[CV]]
// CHECK: vector.maskedstore %[[CV]]
// CHECK: } else {
// CHECK: vector.store %{{.*}}, %[[TILE]]
// CHECK: memref.load %[[TILE]]
// CHECK-NEXT: memref.store %{{.*}}, %[[C]]
// CHECK: memref.dealloc %[[AP]]
// CHECK: memref.dealloc %[[BP]]
// CHECK: memref.dealloc %[[TILE]]
// CHECK: } else {
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%[[C]] : memref<?x?xf32, strided<[?, ?], offset: ?>>)
// CHECK-NOT: linalg.generic
func.func @dynamic_strided(%a: !dyn, %b: !dyn, %c: !dyn) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : !dyn)
  linalg.generic {indexing_maps = [affine_map<(m, k, n) -> (m, k)>, affine_map<(m, k, n) -> (k, n)>,
                                   affine_map<(m, k, n) -> (m, n)>],
                  iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : !dyn, !dyn) outs(%c : !dyn) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests dynamic sizes with identity layouts (intermediates): the types give
// the unit strides, so nothing is checked at run time; A is read in place,
// rows past the edge clamped to the last (m - 1 at run time), and C is
// accessed with vectors. Without a fill, an empty loop needs no else branch.
// CHECK-LABEL: func.func @dynamic_identity
// CHECK-SAME: (%[[A:.*]]: memref<?x?xf32>, %[[B:.*]]: memref<?x?xf32>, %[[C:.*]]: memref<?x?xf32>)
// CHECK-NOT: memref.extract_strided_metadata
// CHECK-NOT: memref<?x?x6xf32>
// CHECK-NOT: memref<6x64xf32>
// CHECK: %[[M:.*]] = memref.dim %[[A]], %c0
// CHECK: scf.if
// CHECK-NOT: else
// CHECK: scf.parallel
// CHECK-NOT: memref.extract_strided_metadata
// CHECK-NOT: memref<?x?x6xf32>
// CHECK-NOT: memref<6x64xf32>
// CHECK: %[[LAST:.*]] = arith.subi %[[M]], %c1
// CHECK: vector.load %[[C]][
// CHECK: %[[ROW:.*]] = arith.minsi %{{.*}}, %[[LAST]] : index
// CHECK: memref.load %[[A]][%[[ROW]], %{{.*}}]
// CHECK: vector.fma
// CHECK-NOT: memref.extract_strided_metadata
// CHECK: vector.store %{{.*}}, %[[C]][
// CHECK-NOT: linalg
func.func @dynamic_identity(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %c: memref<?x?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(m, k, n) -> (m, k)>, affine_map<(m, k, n) -> (k, n)>,
                                   affine_map<(m, k, n) -> (m, n)>],
                  iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : memref<?x?xf32>, memref<?x?xf32>) outs(%c : memref<?x?xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests an output whose type says its n has stride 2: no run-time check, no
// vector access to C; C is copied into the scratch tile (the kernel reads
// C: nothing was filled), computed there, and copied back, element by
// element.
// CHECK-LABEL: func.func @static_strided_output
// CHECK-SAME: %[[C:[^:]*]]: memref<20x40xf32, strided<[81, 2], offset: 3>>
// CHECK-NOT: memref.extract_strided_metadata
// CHECK-NOT: vector.{{.*}}%[[C]][
// CHECK: %[[TILE:.*]] = memref.alloc() {alignment = 64 : i64} : memref<6x48xf32>
// CHECK-NOT: memref.extract_strided_metadata
// CHECK-NOT: vector.{{.*}}%[[C]][
// CHECK: memref.load %[[C]]
// CHECK-NEXT: memref.store %{{.*}}, %[[TILE]]
// CHECK-NOT: vector.{{.*}}%[[C]][
// CHECK: vector.load %[[TILE]]
// CHECK-NOT: vector.{{.*}}%[[C]][
// CHECK: vector.fma
// CHECK-NOT: vector.{{.*}}%[[C]][
// CHECK: vector.store %{{.*}}, %[[TILE]]
// CHECK-NOT: vector.{{.*}}%[[C]][
// CHECK: memref.load %[[TILE]]
// CHECK-NEXT: memref.store %{{.*}}, %[[C]]
// CHECK-NOT: vector.{{.*}}%[[C]][
// CHECK: return
func.func @static_strided_output(%a: memref<20x30xf32>, %b: memref<30x40xf32>, %c: memref<20x40xf32, strided<[81, 2], offset: 3>>) {
  linalg.generic {indexing_maps = [affine_map<(m, k, n) -> (m, k)>, affine_map<(m, k, n) -> (k, n)>,
                                   affine_map<(m, k, n) -> (m, n)>],
                  iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : memref<20x30xf32>, memref<30x40xf32>) outs(%c : memref<20x40xf32, strided<[81, 2], offset: 3>>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests the blocking model (the ZEN3 and ZEN4 runs; A given as `k m` so it is
// packed): with AVX2 a 6 x 16 tile, kc = 320 (5 of the 8 L1 ways hold B's
// 320 x 16 micro-panel), mc = 204 (half of L2 in A's 204 x 320 block), so
// m's chunk of 252 rows is two equal blocks of 126 (21 panels), one B
// block for all 1000 columns (63 panels); with AVX-512 a 6 x 64 tile, kc =
// 512 (the model's 96 raised to AVX-512's floor) and m's chunk of 252 rows in
// one block of 42 panels (mc = 252 from half of 1 MiB).
// ZEN3-LABEL: func.func @model_blocking
// ZEN3: memref.alloc() {alignment = 64 : i64} : memref<21x320x6xf32>
// ZEN3: memref.alloc() {alignment = 64 : i64} : memref<63x320x16xf32>
// ZEN4-LABEL: func.func @model_blocking
// ZEN4: memref.alloc() {alignment = 64 : i64} : memref<42x512x6xf32>
// ZEN4: memref.alloc() {alignment = 64 : i64} : memref<16x512x64xf32>
func.func @model_blocking(%a: memref<1000x1000xf32>, %b: memref<1000x1000xf32>, %c: memref<1000x1000xf32>) {
  linalg.generic {indexing_maps = [affine_map<(m, k, n) -> (k, m)>, affine_map<(m, k, n) -> (k, n)>,
                                   affine_map<(m, k, n) -> (m, n)>],
                  iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : memref<1000x1000xf32>, memref<1000x1000xf32>) outs(%c : memref<1000x1000xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests axis grouping: `b s h d, d e -> b s h e` (the multi-head projection)
// has b, s and h consecutive and contiguous in x and in the output, so they
// become one m of 2 * 3 * 4 = 24 rows through collapsed views: one GEMM
// (4 chunks of m) instead of 6 small ones; the zero fill moves along and
// folds.
// CHECK-LABEL: func.func @grouped_heads
// CHECK-SAME: (%[[X:.*]]: memref<2x3x4x8xf32>, %[[W:.*]]: memref<8x16xf32>, %[[Y:.*]]: memref<2x3x4x16xf32>)
// CHECK-DAG: %[[XC:.*]] = memref.collapse_shape %[[X]] {{\[\[}}0, 1, 2], [3]] : memref<2x3x4x8xf32> into memref<24x8xf32>
// CHECK-DAG: %[[YC:.*]] = memref.collapse_shape %[[Y]] {{\[\[}}0, 1, 2], [3]] : memref<2x3x4x16xf32> into memref<24x16xf32>
// CHECK-NOT: linalg.fill
// CHECK: scf.parallel (%{{.*}}) = (%c0) to (%c4) step (%c1)
// CHECK: memref.load %[[XC]]
// CHECK: vector.fma
// CHECK: vector.store %{{.*}}, %[[YC]]
// CHECK-NOT: linalg.generic
func.func @grouped_heads(%x: memref<2x3x4x8xf32>, %w: memref<8x16xf32>, %y: memref<2x3x4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<2x3x4x16xf32>)
  linalg.generic {indexing_maps = [affine_map<(b, s, h, d, e) -> (b, s, h, d)>,
                                   affine_map<(b, s, h, d, e) -> (d, e)>,
                                   affine_map<(b, s, h, d, e) -> (b, s, h, e)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]}
      ins(%x, %w : memref<2x3x4x8xf32>, memref<8x16xf32>) outs(%y : memref<2x3x4x16xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests grouping that the types rule out: x's s stride (64) is not h's size
// times h's stride (4 * 8), so s and h stay apart (b and s still group: 3 *
// 64 = 192); nothing is checked at run time.
// CHECK-LABEL: func.func @strided_not_grouped
// CHECK-NOT: scf.if
// CHECK: memref.collapse_shape %{{.*}} {{\[\[}}0, 1], [2], [3]] : memref<2x3x4x8xf32, strided<[192, 64, 8, 1]>> into memref<6x4x8xf32, strided<[64, 8, 1]>>
// CHECK: scf.parallel
func.func @strided_not_grouped(%x: memref<2x3x4x8xf32, strided<[192, 64, 8, 1]>>, %w: memref<8x16xf32>, %y: memref<2x3x4x16xf32>) {
  linalg.generic {indexing_maps = [affine_map<(b, s, h, d, e) -> (b, s, h, d)>,
                                   affine_map<(b, s, h, d, e) -> (d, e)>,
                                   affine_map<(b, s, h, d, e) -> (b, s, h, e)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]}
      ins(%x, %w : memref<2x3x4x8xf32, strided<[192, 64, 8, 1]>>, memref<8x16xf32>) outs(%y : memref<2x3x4x16xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

!x = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
!w = memref<?x?xf32, strided<[?, ?], offset: ?>>

// Tests grouping under strides known only at run time (size-generic code):
// the strides of x's and y's s and h are compared at run time; where they
// are contiguous the GEMM runs on collapsed views, else on the operands as
// they are; the zero fill moves into both branches and folds in each.
// CHECK-LABEL: func.func @grouped_dynamic
// CHECK-NOT: linalg.fill
// CHECK: memref.extract_strided_metadata
// CHECK: arith.cmpi eq
// CHECK: scf.if
// CHECK: memref.collapse_shape %{{.*}} {{\[\[}}0, 1], [2]] : memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>> into memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK: scf.parallel
// CHECK: vector.fma
// CHECK: } else {
// CHECK: scf.parallel
// CHECK: vector.fma
// CHECK-NOT: linalg.generic
func.func @grouped_dynamic(%x: !x, %w: !w, %y: !x) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : !x)
  linalg.generic {indexing_maps = [affine_map<(s, h, d, e) -> (s, h, d)>,
                                   affine_map<(s, h, d, e) -> (d, e)>,
                                   affine_map<(s, h, d, e) -> (s, h, e)>],
                  iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
      ins(%x, %w : !x, !w) outs(%y : !x) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Regression test (was a crash, found by the lowering fuzzer): a view whose
// size-1 axis has a stride off the chain (a tile's `1x1x3x8` view of a
// larger buffer, strides [48, 24, 8, 1]). Axes 0-1 and 1-2 are each
// collapsible (a size-1 axis's stride does not matter to a pair), but MLIR
// 19 refuses to collapse [0, 1, 2] as one, and building that view made a
// null layout. Only exactly contiguous axes are linked: 1 and 2 group (24 =
// 3 * 8); the size-1 axis, whose merging gains nothing, stays apart.
// CHECK-LABEL: func.func @unit_axis_off_stride
// CHECK: memref.collapse_shape %{{.*}} {{\[\[}}0], [1, 2], [3]] : memref<1x1x3x8xf32, strided<[48, 24, 8, 1]>> into memref<1x3x8xf32, strided<[48, 8, 1]>>
// CHECK: vector.fma
func.func @unit_axis_off_stride(%x: memref<1x1x3x8xf32, strided<[48, 24, 8, 1]>>, %w: memref<8x16xf32>, %y: memref<1x1x3x16xf32>) {
  linalg.generic {indexing_maps = [affine_map<(b, s, h, d, e) -> (b, s, h, d)>,
                                   affine_map<(b, s, h, d, e) -> (d, e)>,
                                   affine_map<(b, s, h, d, e) -> (b, s, h, e)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]}
      ins(%x, %w : memref<1x1x3x8xf32, strided<[48, 24, 8, 1]>>, memref<8x16xf32>) outs(%y : memref<1x1x3x16xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests a contraction inside a fused tile (the scf.forall of ein-fuse-rows,
// which ein-parallel-tiles runs on one core): the same kernel, its work
// items in an scf.for, with no parallel loop of its own.
// CHECK-LABEL: func.func @in_fused_tile
// CHECK: scf.forall
// CHECK-NOT: scf.parallel
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<1x30x48xf32>
// CHECK-COUNT-18: vector.fma
// CHECK-NOT: scf.parallel
// CHECK: } {ein.row_tiles}
// AVX2-LABEL: func.func @in_fused_tile
// AVX2-NOT: scf.parallel
#mA = affine_map<(m, k, n) -> (m, k)>
#mB = affine_map<(m, k, n) -> (k, n)>
#mC = affine_map<(m, k, n) -> (m, n)>
func.func @in_fused_tile(%a: memref<640x30xf32>, %b: memref<30x40xf32>, %c: memref<640x40xf32>) {
  %zero = arith.constant 0.0 : f32
  scf.forall (%i) = (0) to (640) step (64) {
    %as = memref.subview %a[%i, 0] [64, 30] [1, 1] : memref<640x30xf32> to memref<64x30xf32, strided<[30, 1], offset: ?>>
    %cs = memref.subview %c[%i, 0] [64, 40] [1, 1] : memref<640x40xf32> to memref<64x40xf32, strided<[40, 1], offset: ?>>
    linalg.fill ins(%zero : f32) outs(%cs : memref<64x40xf32, strided<[40, 1], offset: ?>>)
    linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "reduction", "parallel"]}
        ins(%as, %b : memref<64x30xf32, strided<[30, 1], offset: ?>>, memref<30x40xf32>) outs(%cs : memref<64x40xf32, strided<[40, 1], offset: ?>>) {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %p = arith.mulf %x, %y : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    }
  } {ein.row_tiles}
  return
}

// -----

// Tests an epilogue (relu(C + bias) of a temporary C that nothing else
// reads): the kernel accumulates into the epilogue's result, and on the
// last block of the sum (30 < kc: the only one, so the test for it folds
// away) applies the body to the
// accumulators, the bias a masked vector load along the columns; C is
// never allocated, the epilogue op is gone.
// CHECK-LABEL: func.func @epilogue
// CHECK-SAME: (%[[A:.*]]: memref<20x30xf32>, %[[B:.*]]: memref<30x40xf32>, %[[BIAS:.*]]: memref<40xf32>, %[[D:.*]]: memref<20x40xf32>)
// CHECK-NOT: memref<20x40xf32>
// CHECK: scf.parallel
// CHECK: scf.for %{{.*}} = %c0 to %c30 step %c1 iter_args
// CHECK: vector.maskedload %[[BIAS]]
// CHECK: arith.addf %{{.*}} : vector<16xf32>
// CHECK: arith.maximumf %{{.*}} : vector<16xf32>
// CHECK: vector.store %{{.*}}, %[[D]]
// CHECK-NOT: linalg.generic
// CHECK-NOT: memref.alloc() : memref<20x40xf32>
// AVX2-LABEL: func.func @epilogue
// AVX2: arith.maximumf %{{.*}} : vector<8xf32>
#mA = affine_map<(m, k, n) -> (m, k)>
#mB = affine_map<(m, k, n) -> (k, n)>
#mC = affine_map<(m, k, n) -> (m, n)>
#id = affine_map<(m, n) -> (m, n)>
#col = affine_map<(m, n) -> (n)>
func.func @epilogue(%a: memref<20x30xf32>, %b: memref<30x40xf32>, %bias: memref<40xf32>, %d: memref<20x40xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<20x40xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<20x40xf32>)
  linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : memref<20x30xf32>, memref<30x40xf32>) outs(%c : memref<20x40xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c, %bias : memref<20x40xf32>, memref<40xf32>) outs(%d : memref<20x40xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  }
  memref.dealloc %c : memref<20x40xf32>
  return
}

// -----

// Tests a product read twice (by the epilogue candidate and by a second
// op): it stays a buffer, and the elementwise op its own loop.
// CHECK-LABEL: func.func @read_twice
// CHECK: %[[C:.*]] = memref.alloc() : memref<20x40xf32>
// CHECK: vector.store %{{.*}}, %[[C]]
// CHECK: linalg.generic
// CHECK: arith.maximumf %{{.*}} : f32
// CHECK: memref.copy %[[C]]
#mA = affine_map<(m, k, n) -> (m, k)>
#mB = affine_map<(m, k, n) -> (k, n)>
#mC = affine_map<(m, k, n) -> (m, n)>
#id = affine_map<(m, n) -> (m, n)>
func.func @read_twice(%a: memref<20x30xf32>, %b: memref<30x40xf32>, %d: memref<20x40xf32>, %e: memref<20x40xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<20x40xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<20x40xf32>)
  linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : memref<20x30xf32>, memref<30x40xf32>) outs(%c : memref<20x40xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<20x40xf32>) outs(%d : memref<20x40xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.maximumf %x, %zero : f32
    linalg.yield %r : f32
  }
  memref.copy %c, %e : memref<20x40xf32> to memref<20x40xf32>
  memref.dealloc %c : memref<20x40xf32>
  return
}
