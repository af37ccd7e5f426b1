// RUN: ein-opt %s --ein-tile-contractions="vector-bits=512 work-items=1 mr=6 mc=128 nc=1024 kc=256 bf16-dot=1" --canonicalize --cse --split-input-file | FileCheck %s
// RUN: ein-opt %s --ein-tile-contractions="vector-bits=512 work-items=1 mr=6 mc=128 nc=1024 kc=256 bf16-dot=0" --canonicalize --cse --split-input-file | FileCheck %s --check-prefix=WIDEN
// RUN: ein-opt %s --ein-tile-contractions="vector-bits=256 work-items=1 mr=6 mc=128 nc=1024 kc=256 bf16-dot=1" --canonicalize --cse --split-input-file | FileCheck %s --check-prefix=WIDEN

#mA = affine_map<(m, k, n) -> (m, k)>
#mB = affine_map<(m, k, n) -> (k, n)>
#mC = affine_map<(m, k, n) -> (m, n)>

// Tests bf16 operands into f32 with bf16-dot and 512-bit vectors: both
// operands are packed as bf16 k pairs (A's 6-row panels 2 x 6 wide, B's
// 48-lane panels 2 x 48 wide; k = 7 is 4 pairs, the last completed with a
// zero), and the kernel takes 4 steps of one vdpbf16ps per row and vector:
// A's pair broadcast as an i32, B's 32 bf16 of 16 column pairs. Without the
// feature, or with 256-bit vectors, bf16 is widened to f32 FMAs (WIDEN).
// CHECK-LABEL: func.func @bf16_pairs
// CHECK-DAG: memref.alloc() {alignment = 64 : i64} : memref<4x4x12xbf16>
// CHECK-DAG: memref.alloc() {alignment = 64 : i64} : memref<1x4x96xbf16>
// CHECK: memref.store %{{.*}}, %{{.*}}[%{{.*}}, %c3, %{{.*}}] : memref<1x4x96xbf16>
// A's full panels copy each k pair as one 32-bit move (k is contiguous).
// CHECK: vector.load %{{.*}} : memref<20x7xbf16>, vector<2xbf16>
// CHECK: vector.store %{{.*}} : memref<4x4x12xbf16>, vector<2xbf16>
// CHECK: scf.for %{{.*}} = %c0 to %c4 step %c1 iter_args
// CHECK: vector.load %{{.*}} : memref<1x4x96xbf16>, vector<32xbf16>
// CHECK: vector.load %{{.*}} : memref<4x4x12xbf16>, vector<2xbf16>
// CHECK: vector.bitcast %{{.*}} : vector<2xbf16> to vector<1xi32>
// CHECK: vector.bitcast %{{.*}} : vector<16xi32> to vector<32xbf16>
// CHECK: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"(%{{.*}}, %{{.*}}, %{{.*}}) : (vector<16xf32>, vector<32xbf16>, vector<32xbf16>) -> vector<16xf32>
// CHECK-NOT: vector.fma
// WIDEN-LABEL: func.func @bf16_pairs
// WIDEN-NOT: llvm.call_intrinsic
// WIDEN: arith.extf %{{.*}} : bf16 to f32
// WIDEN: vector.fma
// WIDEN-NOT: llvm.call_intrinsic
func.func @bf16_pairs(%a: memref<20x7xbf16>, %b: memref<7x40xbf16>, %c: memref<20x40xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<20x40xf32>)
  linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : memref<20x7xbf16>, memref<7x40xbf16>) outs(%c : memref<20x40xf32>) {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xe = arith.extf %x : bf16 to f32
    %ye = arith.extf %y : bf16 to f32
    %p = arith.mulf %xe, %ye : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

#mA = affine_map<(m, k, n) -> (m, k)>
#mB = affine_map<(m, k, n) -> (k, n)>
#mC = affine_map<(m, k, n) -> (m, n)>

// Tests that an f16 operand keeps the widening kernel even with bf16-dot:
// the pair dot product needs both operands bf16.
// CHECK-LABEL: func.func @mixed_half
// CHECK-NOT: llvm.call_intrinsic
// CHECK: vector.fma
func.func @mixed_half(%a: memref<20x7xf16>, %b: memref<7x40xbf16>, %c: memref<20x40xf32>) {
  linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : memref<20x7xf16>, memref<7x40xbf16>) outs(%c : memref<20x40xf32>) {
  ^bb0(%x: f16, %y: bf16, %acc: f32):
    %xe = arith.extf %x : f16 to f32
    %ye = arith.extf %y : bf16 to f32
    %p = arith.mulf %xe, %ye : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

#mA = affine_map<(m, k, n) -> (m, k)>
#mB = affine_map<(m, k, n) -> (k, n)>
#mC = affine_map<(m, k, n) -> (m, n)>

// Tests that a full 64-lane panel of a B whose columns are contiguous packs
// each k pair as two row loads interleaved into one 128-value store.
// CHECK-LABEL: func.func @bf16_interleave
// CHECK: %[[R0:.*]] = vector.load %{{.*}} : memref<4x64xbf16>, vector<64xbf16>
// CHECK: %[[R1:.*]] = vector.load %{{.*}} : memref<4x64xbf16>, vector<64xbf16>
// CHECK: %[[P:.*]] = vector.interleave %[[R0]], %[[R1]] : vector<64xbf16>
// CHECK: vector.store %[[P]], %{{.*}} : memref<1x2x128xbf16>, vector<128xbf16>
func.func @bf16_interleave(%a: memref<6x4xbf16>, %b: memref<4x64xbf16>, %c: memref<6x64xf32>) {
  linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : memref<6x4xbf16>, memref<4x64xbf16>) outs(%c : memref<6x64xf32>) {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xe = arith.extf %x : bf16 to f32
    %ye = arith.extf %y : bf16 to f32
    %p = arith.mulf %xe, %ye : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}
