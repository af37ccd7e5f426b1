// RUN: ein-opt %s --ein-fuse-rows --canonicalize --cse --split-input-file | FileCheck %s
// RUN: ein-opt %s --ein-fuse-rows="rows-per-tile=3" --canonicalize --cse --split-input-file | FileCheck %s --check-prefix=THREE

// Tests a softmax over rows: the division (the root, reading the row sums)
// runs in an scf.forall over tiles of 8 rows, and the max, the exponentials
// and the sum, with their fills, are computed inside the tile for its rows:
// no linalg op is left outside the loop.
// CHECK-LABEL: func.func @softmax
// CHECK-NOT: linalg.
// CHECK: %[[R:.*]] = scf.forall (%[[I:.*]]) = (0) to (%{{.*}}) step (8)
// CHECK: %[[XS:.*]] = tensor.extract_slice %arg0[%[[I]], 0]
// CHECK: linalg.fill
// CHECK: %[[M:.*]] = linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction"]
// CHECK-SAME: ins(%[[XS]]
// CHECK: arith.maximumf
// CHECK: %[[E:.*]] = linalg.generic
// CHECK-SAME: ins(%[[XS]], %[[M]]
// CHECK: math.exp
// CHECK: linalg.fill
// CHECK: %[[Z:.*]] = linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction"]
// CHECK-SAME: ins(%[[E]]
// CHECK: arith.addf
// CHECK: %[[P:.*]] = linalg.generic
// CHECK-SAME: ins(%[[E]], %[[Z]]
// CHECK: arith.divf
// CHECK: tensor.parallel_insert_slice %[[P]]
// CHECK: } {ein.row_tiles}
// CHECK-NOT: linalg.
// CHECK: return %[[R]]
// THREE-LABEL: func.func @softmax
// THREE: scf.forall (%{{.*}}) = (0) to (%{{.*}}) step (3)
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @softmax(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %t = tensor.dim %x, %c1 : tensor<?x?xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %r0 = tensor.empty(%n) : tensor<?xf32>
  %f0 = linalg.fill ins(%ninf : f32) outs(%r0 : tensor<?xf32>) -> tensor<?xf32>
  %m = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<?x?xf32>) outs(%f0 : tensor<?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.maximumf %o, %a : f32
    linalg.yield %v : f32
  } -> tensor<?xf32>
  %t0 = tensor.empty(%n, %t) : tensor<?x?xf32>
  %e = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %m : tensor<?x?xf32>, tensor<?xf32>) outs(%t0 : tensor<?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %v = math.exp %d : f32
    linalg.yield %v : f32
  } -> tensor<?x?xf32>
  %r1 = tensor.empty(%n) : tensor<?xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%r1 : tensor<?xf32>) -> tensor<?xf32>
  %z = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%e : tensor<?x?xf32>) outs(%f1 : tensor<?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.addf %o, %a : f32
    linalg.yield %v : f32
  } -> tensor<?xf32>
  %t1 = tensor.empty(%n, %t) : tensor<?x?xf32>
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%e, %z : tensor<?x?xf32>, tensor<?xf32>) outs(%t1 : tensor<?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.divf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<?x?xf32>
  return %p : tensor<?x?xf32>
}

// -----

// Tests rows over two leading loops (b s -> b s t): one row at a time on b,
// tiles of 8 on s; the last loop whole.
// CHECK-LABEL: func.func @rows_3d
// CHECK: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (4, 16) step (1, 8)
// CHECK: arith.maximumf
// CHECK: arith.subf
// CHECK: } {ein.row_tiles}
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @rows_3d(%x: tensor<4x16x32xf32>) -> tensor<4x16x32xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %r0 = tensor.empty() : tensor<4x16xf32>
  %f0 = linalg.fill ins(%ninf : f32) outs(%r0 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %m = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : tensor<4x16x32xf32>) outs(%f0 : tensor<4x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.maximumf %o, %a : f32
    linalg.yield %v : f32
  } -> tensor<4x16xf32>
  %t0 = tensor.empty() : tensor<4x16x32xf32>
  %d = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %m : tensor<4x16x32xf32>, tensor<4x16xf32>) outs(%t0 : tensor<4x16x32xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.subf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<4x16x32xf32>
  return %d : tensor<4x16x32xf32>
}

// -----

// Tests a reduction over the leading axis (x - mean over rows: the reduced
// value is indexed by the last loop, not the leading ones): no row tiles.
// CHECK-LABEL: func.func @columns
// CHECK-NOT: scf.forall
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["reduction", "parallel"]
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel"]
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @columns(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %r0 = tensor.empty() : tensor<16xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%r0 : tensor<16xf32>) -> tensor<16xf32>
  %s = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<8x16xf32>) outs(%f0 : tensor<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.addf %o, %a : f32
    linalg.yield %v : f32
  } -> tensor<16xf32>
  %t0 = tensor.empty() : tensor<8x16xf32>
  %d = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %s : tensor<8x16xf32>, tensor<16xf32>) outs(%t0 : tensor<8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.subf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<8x16xf32>
  return %d : tensor<8x16xf32>
}

// -----

// Tests an op reading a contraction's result, not a reduction: the
// contraction stays whole for ein-tile-contractions, and nothing is tiled.
// CHECK-LABEL: func.func @after_contraction
// CHECK-NOT: scf.forall
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "reduction"]
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @after_contraction(%x: tensor<4x8xf32>, %w: tensor<8x4xf32>, %y: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %zero = arith.constant 0.0 : f32
  %t1 = tensor.empty() : tensor<4x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%t1 : tensor<4x4xf32>) -> tensor<4x4xf32>
  %c = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<4x8xf32>, tensor<8x4xf32>) outs(%f : tensor<4x4xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %v = arith.mulf %p, %q : f32
    %r = arith.addf %o, %v : f32
    linalg.yield %r : f32
  } -> tensor<4x4xf32>
  %cd = tensor.collapse_shape %c [[0, 1]] : tensor<4x4xf32> into tensor<16xf32>
  %c4 = tensor.extract_slice %cd[0] [4] [1] : tensor<16xf32> to tensor<4xf32>
  %t0 = tensor.empty() : tensor<4x3xf32>
  %d = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y, %c4 : tensor<4x3xf32>, tensor<4xf32>) outs(%t0 : tensor<4x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.subf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<4x3xf32>
  return %d : tensor<4x3xf32>
}

// -----

// Tests attention (s x t scores of q k, their softmax p, then p v): the
// weighted sum is a contraction reading the softmax through its rows (s),
// so it is the root, tiled by 64 rows (`contraction-rows-per-tile`); the
// scores contraction, read only on the way to it, is computed in the tile
// too, for the tile's rows: no linalg op is left outside the loop.
// CHECK-LABEL: func.func @attention
// CHECK-NOT: linalg.
// CHECK: %[[R:.*]] = scf.forall (%[[I:.*]]) = (0) to (100) step (64)
// CHECK: %[[QS:.*]] = tensor.extract_slice %arg0[%[[I]], 0]
// CHECK: %[[S:.*]] = linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-SAME: ins(%[[QS]], %arg1
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: arith.addf
// CHECK: %[[P:.*]] = linalg.generic
// CHECK: arith.divf
// CHECK: %[[O:.*]] = linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction", "parallel"]
// CHECK-SAME: ins(%[[P]], %arg2
// CHECK: tensor.parallel_insert_slice %[[O]]
// CHECK: } {ein.row_tiles}
// CHECK-NOT: linalg.
// CHECK: return %[[R]]
// THREE-LABEL: func.func @attention
// THREE: scf.forall (%{{.*}}) = (0) to (100) step (64)
#q = affine_map<(s, t, d) -> (s, d)>
#k = affine_map<(s, t, d) -> (t, d)>
#st = affine_map<(s, t, d) -> (s, t)>
#id = affine_map<(s, t) -> (s, t)>
#row = affine_map<(s, t) -> (s)>
#p = affine_map<(s, t, d) -> (s, t)>
#v = affine_map<(s, t, d) -> (t, d)>
#o = affine_map<(s, t, d) -> (s, d)>
func.func @attention(%q: tensor<100x16xf32>, %k: tensor<70x16xf32>, %v: tensor<70x16xf32>) -> tensor<100x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e0 = tensor.empty() : tensor<100x70xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<100x70xf32>) -> tensor<100x70xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #st], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<100x16xf32>, tensor<70x16xf32>) outs(%f0 : tensor<100x70xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %o, %m : f32
    linalg.yield %r : f32
  } -> tensor<100x70xf32>
  %r0 = tensor.empty() : tensor<100xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%r0 : tensor<100xf32>) -> tensor<100xf32>
  %mx = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%s : tensor<100x70xf32>) outs(%fm : tensor<100xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %o, %a : f32
    linalg.yield %r : f32
  } -> tensor<100xf32>
  %e1 = tensor.empty() : tensor<100x70xf32>
  %e = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%s, %mx : tensor<100x70xf32>, tensor<100xf32>) outs(%e1 : tensor<100x70xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %x = math.exp %d : f32
    linalg.yield %x : f32
  } -> tensor<100x70xf32>
  %r1 = tensor.empty() : tensor<100xf32>
  %fz = linalg.fill ins(%zero : f32) outs(%r1 : tensor<100xf32>) -> tensor<100xf32>
  %z = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%e : tensor<100x70xf32>) outs(%fz : tensor<100xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %o, %a : f32
    linalg.yield %r : f32
  } -> tensor<100xf32>
  %e2 = tensor.empty() : tensor<100x70xf32>
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%e, %z : tensor<100x70xf32>, tensor<100xf32>) outs(%e2 : tensor<100x70xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<100x70xf32>
  %e3 = tensor.empty() : tensor<100x16xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<100x16xf32>) -> tensor<100x16xf32>
  %out = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%p, %v : tensor<100x70xf32>, tensor<70x16xf32>) outs(%f3 : tensor<100x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %o, %m : f32
    linalg.yield %r : f32
  } -> tensor<100x16xf32>
  return %out : tensor<100x16xf32>
}

// -----

// Regression test (was a crash): an op of another element type after a row
// reduction (`astype(x < reduce(x, "i j -> i", "max"), f32)`). Once the
// chain is in the tile, CSE erases the dead original of the i8 comparison
// and leaves its empty tensor with no use, which the pass then split as if
// it had some. The tile holds the whole chain.
// CHECK-LABEL: func.func @type_change
// CHECK: scf.forall
// CHECK: arith.maximumf
// CHECK: arith.cmpf olt
// CHECK: arith.uitofp
// CHECK: } {ein.row_tiles}
// CHECK-NOT: linalg.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @type_change(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %m = tensor.dim %x, %c1 : tensor<?x?xf32>
  %r0 = tensor.empty(%n) : tensor<?xf32>
  %f0 = linalg.fill ins(%ninf : f32) outs(%r0 : tensor<?xf32>) -> tensor<?xf32>
  %max = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<?x?xf32>) outs(%f0 : tensor<?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.maximumf %o, %a : f32
    linalg.yield %v : f32
  } -> tensor<?xf32>
  %t0 = tensor.empty(%n, %m) : tensor<?x?xi8>
  %lt = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %max : tensor<?x?xf32>, tensor<?xf32>) outs(%t0 : tensor<?x?xi8>) {
  ^bb0(%a: f32, %b: f32, %o: i8):
    %c = arith.cmpf olt, %a, %b : f32
    %v = arith.extui %c : i1 to i8
    linalg.yield %v : i8
  } -> tensor<?x?xi8>
  %t1 = tensor.empty(%n, %m) : tensor<?x?xf32>
  %f = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%lt : tensor<?x?xi8>) outs(%t1 : tensor<?x?xf32>) {
  ^bb0(%a: i8, %o: f32):
    %v = arith.uitofp %a : i8 to f32
    linalg.yield %v : f32
  } -> tensor<?x?xf32>
  return %f : tensor<?x?xf32>
}

// -----

// Regression test (was a crash): a sum over an axis of static size 0 read by
// a wider op (`reduce(x, "p q -> p", "sum") - z`, x: 20x0, z: 20x5). Tiling
// takes a size of 0 for "the whole loop", and MLIR's tiled linalg op then
// read a loop bound it was not given. The empty reduction (no work) is not
// fused: it stays outside, and the subtraction is tiled alone.
// CHECK-LABEL: func.func @empty_reduced_axis
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction"]
// CHECK-SAME: ins(%arg0 : tensor<20x0xf64>)
// CHECK: scf.forall
// CHECK: arith.subf
// CHECK: } {ein.row_tiles}
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @empty_reduced_axis(%x: tensor<20x0xf64>, %z: tensor<20x5xf64>) -> tensor<20x5xf64> {
  %zero = arith.constant 0.0 : f64
  %r0 = tensor.empty() : tensor<20xf64>
  %f0 = linalg.fill ins(%zero : f64) outs(%r0 : tensor<20xf64>) -> tensor<20xf64>
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<20x0xf64>) outs(%f0 : tensor<20xf64>) {
  ^bb0(%a: f64, %o: f64):
    %v = arith.addf %o, %a : f64
    linalg.yield %v : f64
  } -> tensor<20xf64>
  %t0 = tensor.empty() : tensor<20x5xf64>
  %d = linalg.generic {indexing_maps = [#row, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%s, %z : tensor<20xf64>, tensor<20x5xf64>) outs(%t0 : tensor<20x5xf64>) {
  ^bb0(%a: f64, %b: f64, %o: f64):
    %v = arith.subf %a, %b : f64
    linalg.yield %v : f64
  } -> tensor<20x5xf64>
  return %d : tensor<20x5xf64>
}

// -----

// Regression test (was a crash): rows of static length 0 (`x - reduce(x,
// "r t -> r", "max")`, x: 20x0). The op is no work, and its tile would read
// a loop bound MLIR does not give: it is not tiled.
// CHECK-LABEL: func.func @empty_row_length
// CHECK-NOT: scf.forall
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @empty_row_length(%x: tensor<20x0xf32>) -> tensor<20x0xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %r0 = tensor.empty() : tensor<20xf32>
  %f0 = linalg.fill ins(%ninf : f32) outs(%r0 : tensor<20xf32>) -> tensor<20xf32>
  %max = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<20x0xf32>) outs(%f0 : tensor<20xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.maximumf %o, %a : f32
    linalg.yield %v : f32
  } -> tensor<20xf32>
  %t0 = tensor.empty() : tensor<20x0xf32>
  %d = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %max : tensor<20x0xf32>, tensor<20xf32>) outs(%t0 : tensor<20x0xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.subf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<20x0xf32>
  return %d : tensor<20x0xf32>
}

// -----

// Tests a row value written with a kept `1` axis (`"n t -> n 1"`): a row
// sum expanded to n x 1, read through (d0, d1) -> (d0, 0), and an
// elementwise op on the n x 1 value. The unit dims are dropped first, so the
// subtraction is a root as in the plain form and the sum and its square are
// computed in its tile, on n values; no expand_shape is left.
// CHECK-LABEL: func.func @kept_one
// CHECK-NOT: linalg.
// CHECK-NOT: tensor.expand_shape
// CHECK: scf.forall (%{{.*}}) = (0) to (%{{.*}}) step (8)
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction"]
// CHECK: arith.addf
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel"]
// CHECK: arith.mulf
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel"]
// CHECK: arith.subf
// CHECK: } {ein.row_tiles}
// CHECK-NOT: linalg.
// CHECK-NOT: tensor.expand_shape
// CHECK: return
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#kept = affine_map<(d0, d1) -> (d0, 0)>
#unit = affine_map<(d0, d1) -> (d0, d1)>
func.func @kept_one(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %t = tensor.dim %x, %c1 : tensor<?x?xf32>
  %zero = arith.constant 0.0 : f32
  %r0 = tensor.empty(%n) : tensor<?xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%r0 : tensor<?xf32>) -> tensor<?xf32>
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<?x?xf32>) outs(%f0 : tensor<?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.addf %o, %a : f32
    linalg.yield %v : f32
  } -> tensor<?xf32>
  %e = tensor.expand_shape %s [[0, 1]] output_shape [%n, 1] : tensor<?xf32> into tensor<?x1xf32>
  %u0 = tensor.empty(%n) : tensor<?x1xf32>
  %h = linalg.generic {indexing_maps = [#unit, #unit], iterator_types = ["parallel", "parallel"]}
      ins(%e : tensor<?x1xf32>) outs(%u0 : tensor<?x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.mulf %a, %a : f32
    linalg.yield %v : f32
  } -> tensor<?x1xf32>
  %t1 = tensor.empty(%n, %t) : tensor<?x?xf32>
  %p = linalg.generic {indexing_maps = [#id, #kept, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %h : tensor<?x?xf32>, tensor<?x1xf32>) outs(%t1 : tensor<?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.subf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<?x?xf32>
  return %p : tensor<?x?xf32>
}

// -----

// Tests which producers read elsewhere too a tile computes again. The sum
// `h = a + b` (a residual stream) is also returned: computing it in the tile
// would read a and b where loading h reads one tensor, so it stays outside
// and the tile reads h. The scaling `g = a * 2`, also returned, streams one
// tensor, as loading it would: the tile computes it again for its rows.
// CHECK-LABEL: func.func @read_elsewhere
// CHECK: %[[H:.*]] = linalg.generic
// CHECK: arith.addf
// CHECK: %[[G:.*]] = linalg.generic
// CHECK: arith.mulf
// CHECK: scf.forall (%[[I:.*]]) = (0) to (%{{.*}}) step (8)
// CHECK-NOT: arith.addf %in, %in
// CHECK: %[[HS:.*]] = tensor.extract_slice %[[H]][%[[I]], 0]
// CHECK: %[[AS:.*]] = tensor.extract_slice %arg0[%[[I]], 0]
// CHECK: %[[GS:.*]] = linalg.generic
// CHECK-SAME: ins(%[[AS]]
// CHECK: arith.mulf
// CHECK: %[[S:.*]] = linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction"]
// CHECK-SAME: ins(%[[HS]]
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[HS]], %[[GS]], %[[S]]
// CHECK: } {ein.row_tiles}
// CHECK: return %{{.*}}, %[[H]], %[[G]]
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @read_elsewhere(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>)
    -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %a, %c0 : tensor<?x?xf32>
  %t = tensor.dim %a, %c1 : tensor<?x?xf32>
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %t0 = tensor.empty(%n, %t) : tensor<?x?xf32>
  %h = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<?x?xf32>, tensor<?x?xf32>) outs(%t0 : tensor<?x?xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %v = arith.addf %x, %y : f32
    linalg.yield %v : f32
  } -> tensor<?x?xf32>
  %t1 = tensor.empty(%n, %t) : tensor<?x?xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<?x?xf32>) outs(%t1 : tensor<?x?xf32>) {
  ^bb0(%x: f32, %o: f32):
    %v = arith.mulf %x, %two : f32
    linalg.yield %v : f32
  } -> tensor<?x?xf32>
  %r0 = tensor.empty(%n) : tensor<?xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%r0 : tensor<?xf32>) -> tensor<?xf32>
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%h : tensor<?x?xf32>) outs(%f0 : tensor<?xf32>) {
  ^bb0(%x: f32, %o: f32):
    %v = arith.addf %o, %x : f32
    linalg.yield %v : f32
  } -> tensor<?xf32>
  %t2 = tensor.empty(%n, %t) : tensor<?x?xf32>
  %p = linalg.generic {indexing_maps = [#id, #id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h, %g, %s : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xf32>) outs(%t2 : tensor<?x?xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32, %o: f32):
    %d = arith.subf %x, %z : f32
    %v = arith.mulf %d, %y : f32
    linalg.yield %v : f32
  } -> tensor<?x?xf32>
  return %p, %h, %g : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
}
