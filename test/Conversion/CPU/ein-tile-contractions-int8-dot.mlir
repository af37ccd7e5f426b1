// RUN: ein-opt %s --ein-tile-contractions="int8-dot=vnni work-items=1" --canonicalize --cse --split-input-file | FileCheck %s
// RUN: ein-opt %s --ein-tile-contractions="int8-dot=avx512bw work-items=1" --canonicalize --cse --split-input-file | FileCheck %s --check-prefix=BW
// RUN: ein-opt %s --ein-tile-contractions="int8-dot=avx2 work-items=1" --canonicalize --cse --split-input-file | FileCheck %s --check-prefix=AVX2
// RUN: ein-opt %s --ein-tile-contractions="int8-dot=none work-items=1" --canonicalize --cse --split-input-file | FileCheck %s --check-prefix=NONE
// RUN: not ein-opt %s --ein-tile-contractions="int8-dot=sse" --split-input-file 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: int8-dot 'sse' is not none, avx2, avx512bw or vnni

#mA = affine_map<(m, k, n) -> (m, k)>
#mB = affine_map<(m, k, n) -> (k, n)>
#mC = affine_map<(m, k, n) -> (m, n)>

// Tests i8 operands into i32 (sext * sext summed by addi): A packed as
// 20 x 4 words (k = 7 is 4 pairs, the last completed with 0), B as 3 panels
// of 16 words (n = 40), blocks of 6 rows in parallel; per pair step one
// broadcast word of A per row and one vpdpwssd per row and vector (vnni),
// vpmaddwd + addi (avx512bw, 16 lanes; avx2, 8 lanes), the generic left as
// it is without the option (NONE).
// CHECK-LABEL: func.func @int8_pairs
// CHECK-DAG: memref.alloc() {alignment = 64 : i64} : memref<20x4xi32>
// CHECK-DAG: memref.alloc() {alignment = 64 : i64} : memref<3x4x16xi32>
// CHECK: arith.shli %{{.*}}, %c16_i32 : i32
// CHECK: scf.parallel
// CHECK: scf.for %{{.*}} = %c0 to %c4 step %c1 iter_args
// CHECK: vector.load %{{.*}} : memref<3x4x16xi32>, vector<16xi32>
// CHECK: vector.broadcast %{{.*}} : i32 to vector<16xi32>
// CHECK: llvm.call_intrinsic "llvm.x86.avx512.vpdpwssd.512"(%{{.*}}, %{{.*}}, %{{.*}}) : (vector<16xi32>, vector<16xi32>, vector<16xi32>) -> vector<16xi32>
// CHECK-NOT: linalg.generic
// BW-LABEL: func.func @int8_pairs
// BW: vector.bitcast %{{.*}} : vector<16xi32> to vector<32xi16>
// BW: llvm.call_intrinsic "llvm.x86.avx512.pmaddw.d.512"(%{{.*}}, %{{.*}}) : (vector<32xi16>, vector<32xi16>) -> vector<16xi32>
// BW: arith.addi %{{.*}} : vector<16xi32>
// AVX2-LABEL: func.func @int8_pairs
// AVX2: memref.alloc() {alignment = 64 : i64} : memref<5x4x8xi32>
// AVX2: llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"(%{{.*}}, %{{.*}}) : (vector<16xi16>, vector<16xi16>) -> vector<8xi32>
// NONE-LABEL: func.func @int8_pairs
// NONE-NOT: llvm.call_intrinsic
// NONE: linalg.generic
func.func @int8_pairs(%a: memref<20x7xi8>, %b: memref<7x40xi8>, %c: memref<20x40xi32>) {
  %zero = arith.constant 0 : i32
  linalg.fill ins(%zero : i32) outs(%c : memref<20x40xi32>)
  linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : memref<20x7xi8>, memref<7x40xi8>) outs(%c : memref<20x40xi32>) {
  ^bb0(%x: i8, %y: i8, %acc: i32):
    %xe = arith.extsi %x : i8 to i32
    %ye = arith.extsi %y : i8 to i32
    %p = arith.muli %xe, %ye : i32
    %s = arith.addi %acc, %p : i32
    linalg.yield %s : i32
  }
  return
}

// -----

#mA = affine_map<(b, m, k, n) -> (b, m, k)>
#mB = affine_map<(b, m, k, n) -> (b, k, n)>
#mC = affine_map<(b, m, k, n) -> (b, m, n)>

// Tests that a batched int8 contraction (four loops) stays a generic: the
// int8 GEMM takes exactly m, n and k.
// CHECK-LABEL: func.func @int8_batched
// CHECK-NOT: llvm.call_intrinsic
// CHECK: linalg.generic
func.func @int8_batched(%a: memref<2x5x7xi8>, %b: memref<2x7x9xi8>, %c: memref<2x5x9xi32>) {
  linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
      ins(%a, %b : memref<2x5x7xi8>, memref<2x7x9xi8>) outs(%c : memref<2x5x9xi32>) {
  ^bb0(%x: i8, %y: i8, %acc: i32):
    %xe = arith.extsi %x : i8 to i32
    %ye = arith.extsi %y : i8 to i32
    %p = arith.muli %xe, %ye : i32
    %s = arith.addi %acc, %p : i32
    linalg.yield %s : i32
  }
  return
}
