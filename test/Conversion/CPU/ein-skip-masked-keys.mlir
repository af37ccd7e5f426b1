// RUN: ein-opt %s --ein-skip-masked-keys --canonicalize --split-input-file | FileCheck %s

// Tests a causal head's row tile as ein-fuse-rows leaves it (dynamic sizes,
// 64 rows from %r): every tensor over the keys takes min(%r + 64, keys),
// the keys' arange and the keys and values are sliced to it, and the
// softmax and both contractions run over those keys only.
// CHECK-DAG: #[[BOUND:.*]] = affine_map<(d0)[s0] -> (s0, d0 + 64)>
// CHECK-LABEL: func.func @causal(
// CHECK: %[[KEYS:.*]] = linalg.generic
// CHECK: scf.forall (%[[R:.*]]) = (0) to (%[[COUNT:.*]]) step (64)
// CHECK-NEXT: %[[N:.*]] = affine.min #[[BOUND]](%[[R]])[%[[COUNT]]]
// CHECK-NEXT: %[[A:.*]] = tensor.extract_slice %[[KEYS]][0] [%[[N]]] [1]
// CHECK: %[[MASK:.*]] = tensor.empty(%{{.*}}, %[[N]]) : tensor<?x?xi8>
// CHECK: linalg.generic {{.*}} ins(%[[A]], %{{.*}} : tensor<?xi64>, tensor<?xi64>) outs(%[[MASK]] : tensor<?x?xi8>)
// CHECK: %[[K:.*]] = tensor.extract_slice %arg1[0, 0] [%[[N]], %{{.*}}] [1, 1]
// CHECK: %[[S:.*]] = tensor.empty(%{{.*}}, %[[N]]) : tensor<?x?xf32>
// CHECK: ins(%{{.*}}, %[[K]] : tensor<?x?xf32>, tensor<?x?xf32>) outs(%{{.*}} : tensor<?x?xf32>)
// CHECK: %[[V:.*]] = tensor.extract_slice %arg2[0, 0] [%[[N]], %{{.*}}] [1, 1]
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[V]] : tensor<?x?xf32>, tensor<?x?xf32>)
// CHECK: } {ein.row_tiles}
#map = affine_map<(d0) -> (d0)>
#map1 = affine_map<(d0)[s0] -> (-d0 + s0, 64)>
#map2 = affine_map<(d0, d1) -> (d0 + d1)>
#map3 = affine_map<(d0, d1) -> (d1)>
#map4 = affine_map<(d0, d1) -> (d0)>
#map5 = affine_map<(d0, d1) -> (d0, d1)>
#map6 = affine_map<(d0, d1, d2) -> (d0, d2)>
#map7 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map8 = affine_map<(d0, d1, d2) -> (d0, d1)>
#map9 = affine_map<(d0, d1) -> ()>
func.func @causal(%arg0: tensor<?x?xf32>, %arg1: tensor<?x?xf32>, %arg2: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {ein.entry_checks = ["s >= 1"]} {
  %c1 = arith.constant 1 : index
  %cst = arith.constant 0xFF800000 : f32
  %c0_i8 = arith.constant 0 : i8
  %cst_0 = arith.constant dense<-1.000000e+09> : tensor<f32>
  %cst_1 = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %arg0, %c0 : tensor<?x?xf32>
  %dim_2 = tensor.dim %arg0, %c1 : tensor<?x?xf32>
  %0 = tensor.empty(%dim) : tensor<?xi64>
  %1 = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel"]} outs(%0 : tensor<?xi64>) {
  ^bb0(%out: i64):
    %4 = linalg.index 0 : index
    %5 = arith.index_cast %4 : index to i64
    linalg.yield %5 : i64
  } -> tensor<?xi64>
  %2 = tensor.empty(%dim, %dim_2) : tensor<?x?xf32>
  %dim_3 = tensor.dim %arg2, %c1 : tensor<?x?xf32>
  %3 = scf.forall (%arg3) = (0) to (%dim) step (64) shared_outs(%arg4 = %2) -> (tensor<?x?xf32>) {
    %4 = affine.min #map1(%arg3)[%dim]
    %5 = tensor.empty(%4) : tensor<?xi64>
    %6 = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel"]} outs(%5 : tensor<?xi64>) {
    ^bb0(%out: i64):
      %23 = linalg.index 0 : index
      %24 = affine.apply #map2(%23, %arg3)
      %25 = arith.index_cast %24 : index to i64
      linalg.yield %25 : i64
    } -> tensor<?xi64>
    %7 = tensor.empty(%4, %dim) : tensor<?x?xi8>
    %8 = linalg.generic {indexing_maps = [#map3, #map4, #map5], iterator_types = ["parallel", "parallel"]} ins(%1, %6 : tensor<?xi64>, tensor<?xi64>) outs(%7 : tensor<?x?xi8>) {
    ^bb0(%in: i64, %in_7: i64, %out: i8):
      %23 = arith.cmpi sle, %in, %in_7 : i64
      %24 = arith.extui %23 : i1 to i8
      linalg.yield %24 : i8
    } -> tensor<?x?xi8>
    %extracted_slice = tensor.extract_slice %arg0[%arg3, 0] [%4, %dim_2] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
    %extracted_slice_4 = tensor.extract_slice %arg1[0, 0] [%dim, %dim_2] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
    %9 = tensor.empty(%4, %dim) : tensor<?x?xf32>
    %10 = linalg.fill ins(%cst_1 : f32) outs(%9 : tensor<?x?xf32>) -> tensor<?x?xf32>
    %11 = linalg.generic {indexing_maps = [#map6, #map7, #map8], iterator_types = ["parallel", "parallel", "reduction"]} ins(%extracted_slice, %extracted_slice_4 : tensor<?x?xf32>, tensor<?x?xf32>) outs(%10 : tensor<?x?xf32>) {
    ^bb0(%in: f32, %in_7: f32, %out: f32):
      %23 = arith.mulf %in, %in_7 fastmath<reassoc,contract> : f32
      %24 = arith.addf %out, %23 fastmath<reassoc,contract> : f32
      linalg.yield %24 : f32
    } -> tensor<?x?xf32>
    %12 = linalg.generic {indexing_maps = [#map5, #map5, #map9, #map5], iterator_types = ["parallel", "parallel"]} ins(%8, %11, %cst_0 : tensor<?x?xi8>, tensor<?x?xf32>, tensor<f32>) outs(%9 : tensor<?x?xf32>) {
    ^bb0(%in: i8, %in_7: f32, %in_8: f32, %out: f32):
      %23 = arith.cmpi ne, %in, %c0_i8 : i8
      %24 = arith.select %23, %in_7, %in_8 : f32
      linalg.yield %24 : f32
    } -> tensor<?x?xf32>
    %13 = tensor.empty(%4) : tensor<?xf32>
    %14 = linalg.fill ins(%cst : f32) outs(%13 : tensor<?xf32>) -> tensor<?xf32>
    %15 = linalg.generic {indexing_maps = [#map5, #map4], iterator_types = ["parallel", "reduction"]} ins(%12 : tensor<?x?xf32>) outs(%14 : tensor<?xf32>) {
    ^bb0(%in: f32, %out: f32):
      %23 = arith.maximumf %out, %in : f32
      linalg.yield %23 : f32
    } -> tensor<?xf32>
    %16 = linalg.generic {indexing_maps = [#map5, #map4, #map5], iterator_types = ["parallel", "parallel"]} ins(%12, %15 : tensor<?x?xf32>, tensor<?xf32>) outs(%9 : tensor<?x?xf32>) {
    ^bb0(%in: f32, %in_7: f32, %out: f32):
      %23 = arith.subf %in, %in_7 : f32
      linalg.yield %23 : f32
    } -> tensor<?x?xf32>
    %17 = linalg.generic {indexing_maps = [#map5, #map5], iterator_types = ["parallel", "parallel"]} ins(%16 : tensor<?x?xf32>) outs(%9 : tensor<?x?xf32>) {
    ^bb0(%in: f32, %out: f32):
      %23 = math.exp %in : f32
      linalg.yield %23 : f32
    } -> tensor<?x?xf32>
    %18 = linalg.fill ins(%cst_1 : f32) outs(%13 : tensor<?xf32>) -> tensor<?xf32>
    %19 = linalg.generic {indexing_maps = [#map5, #map4], iterator_types = ["parallel", "reduction"]} ins(%17 : tensor<?x?xf32>) outs(%18 : tensor<?xf32>) {
    ^bb0(%in: f32, %out: f32):
      %23 = arith.addf %out, %in fastmath<reassoc,contract> : f32
      linalg.yield %23 : f32
    } -> tensor<?xf32>
    %20 = linalg.generic {indexing_maps = [#map5, #map4, #map5], iterator_types = ["parallel", "parallel"]} ins(%17, %19 : tensor<?x?xf32>, tensor<?xf32>) outs(%9 : tensor<?x?xf32>) {
    ^bb0(%in: f32, %in_7: f32, %out: f32):
      %23 = arith.divf %in, %in_7 : f32
      linalg.yield %23 : f32
    } -> tensor<?x?xf32>
    %extracted_slice_5 = tensor.extract_slice %arg2[0, 0] [%dim, %dim_3] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
    %extracted_slice_6 = tensor.extract_slice %arg4[%arg3, 0] [%4, %dim_3] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
    %21 = linalg.fill ins(%cst_1 : f32) outs(%extracted_slice_6 : tensor<?x?xf32>) -> tensor<?x?xf32>
    %22 = linalg.generic {indexing_maps = [#map8, #map7, #map6], iterator_types = ["parallel", "reduction", "parallel"]} ins(%20, %extracted_slice_5 : tensor<?x?xf32>, tensor<?x?xf32>) outs(%21 : tensor<?x?xf32>) {
    ^bb0(%in: f32, %in_7: f32, %out: f32):
      %23 = arith.mulf %in, %in_7 fastmath<reassoc,contract> : f32
      %24 = arith.addf %out, %23 fastmath<reassoc,contract> : f32
      linalg.yield %24 : f32
    } -> tensor<?x?xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %22 into %arg4[%arg3, 0] [%4, %dim_3] [1, 1] : tensor<?x?xf32> into tensor<?x?xf32>
    }
  } {ein.row_tiles}
  return %3 : tensor<?x?xf32>
}

// -----

// Tests that a fill of -10, whose exp(-10 - max) is not 0, leaves the tile
// whole.
// CHECK-LABEL: func.func @small_fill(
// CHECK-NOT: tensor<?xi64> to tensor<?xi64>
// CHECK: tensor.extract_slice %arg1[0, 0] [%[[ALL:.*]], %{{.*}}] [1, 1]
// CHECK: tensor.extract_slice %arg2[0, 0] [%[[ALL]], %{{.*}}] [1, 1]
// CHECK: } {ein.row_tiles}
#map = affine_map<(d0) -> (d0)>
#map1 = affine_map<(d0)[s0] -> (-d0 + s0, 64)>
#map2 = affine_map<(d0, d1) -> (d0 + d1)>
#map3 = affine_map<(d0, d1) -> (d1)>
#map4 = affine_map<(d0, d1) -> (d0)>
#map5 = affine_map<(d0, d1) -> (d0, d1)>
#map6 = affine_map<(d0, d1, d2) -> (d0, d2)>
#map7 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map8 = affine_map<(d0, d1, d2) -> (d0, d1)>
#map9 = affine_map<(d0, d1) -> ()>
func.func @small_fill(%arg0: tensor<?x?xf32>, %arg1: tensor<?x?xf32>, %arg2: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {ein.entry_checks = ["s >= 1"]} {
  %c1 = arith.constant 1 : index
  %cst = arith.constant 0xFF800000 : f32
  %c0_i8 = arith.constant 0 : i8
  %cst_0 = arith.constant dense<-1.000000e+01> : tensor<f32>
  %cst_1 = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %arg0, %c0 : tensor<?x?xf32>
  %dim_2 = tensor.dim %arg0, %c1 : tensor<?x?xf32>
  %0 = tensor.empty(%dim) : tensor<?xi64>
  %1 = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel"]} outs(%0 : tensor<?xi64>) {
  ^bb0(%out: i64):
    %4 = linalg.index 0 : index
    %5 = arith.index_cast %4 : index to i64
    linalg.yield %5 : i64
  } -> tensor<?xi64>
  %2 = tensor.empty(%dim, %dim_2) : tensor<?x?xf32>
  %dim_3 = tensor.dim %arg2, %c1 : tensor<?x?xf32>
  %3 = scf.forall (%arg3) = (0) to (%dim) step (64) shared_outs(%arg4 = %2) -> (tensor<?x?xf32>) {
    %4 = affine.min #map1(%arg3)[%dim]
    %5 = tensor.empty(%4) : tensor<?xi64>
    %6 = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel"]} outs(%5 : tensor<?xi64>) {
    ^bb0(%out: i64):
      %23 = linalg.index 0 : index
      %24 = affine.apply #map2(%23, %arg3)
      %25 = arith.index_cast %24 : index to i64
      linalg.yield %25 : i64
    } -> tensor<?xi64>
    %7 = tensor.empty(%4, %dim) : tensor<?x?xi8>
    %8 = linalg.generic {indexing_maps = [#map3, #map4, #map5], iterator_types = ["parallel", "parallel"]} ins(%1, %6 : tensor<?xi64>, tensor<?xi64>) outs(%7 : tensor<?x?xi8>) {
    ^bb0(%in: i64, %in_7: i64, %out: i8):
      %23 = arith.cmpi sle, %in, %in_7 : i64
      %24 = arith.extui %23 : i1 to i8
      linalg.yield %24 : i8
    } -> tensor<?x?xi8>
    %extracted_slice = tensor.extract_slice %arg0[%arg3, 0] [%4, %dim_2] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
    %extracted_slice_4 = tensor.extract_slice %arg1[0, 0] [%dim, %dim_2] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
    %9 = tensor.empty(%4, %dim) : tensor<?x?xf32>
    %10 = linalg.fill ins(%cst_1 : f32) outs(%9 : tensor<?x?xf32>) -> tensor<?x?xf32>
    %11 = linalg.generic {indexing_maps = [#map6, #map7, #map8], iterator_types = ["parallel", "parallel", "reduction"]} ins(%extracted_slice, %extracted_slice_4 : tensor<?x?xf32>, tensor<?x?xf32>) outs(%10 : tensor<?x?xf32>) {
    ^bb0(%in: f32, %in_7: f32, %out: f32):
      %23 = arith.mulf %in, %in_7 fastmath<reassoc,contract> : f32
      %24 = arith.addf %out, %23 fastmath<reassoc,contract> : f32
      linalg.yield %24 : f32
    } -> tensor<?x?xf32>
    %12 = linalg.generic {indexing_maps = [#map5, #map5, #map9, #map5], iterator_types = ["parallel", "parallel"]} ins(%8, %11, %cst_0 : tensor<?x?xi8>, tensor<?x?xf32>, tensor<f32>) outs(%9 : tensor<?x?xf32>) {
    ^bb0(%in: i8, %in_7: f32, %in_8: f32, %out: f32):
      %23 = arith.cmpi ne, %in, %c0_i8 : i8
      %24 = arith.select %23, %in_7, %in_8 : f32
      linalg.yield %24 : f32
    } -> tensor<?x?xf32>
    %13 = tensor.empty(%4) : tensor<?xf32>
    %14 = linalg.fill ins(%cst : f32) outs(%13 : tensor<?xf32>) -> tensor<?xf32>
    %15 = linalg.generic {indexing_maps = [#map5, #map4], iterator_types = ["parallel", "reduction"]} ins(%12 : tensor<?x?xf32>) outs(%14 : tensor<?xf32>) {
    ^bb0(%in: f32, %out: f32):
      %23 = arith.maximumf %out, %in : f32
      linalg.yield %23 : f32
    } -> tensor<?xf32>
    %16 = linalg.generic {indexing_maps = [#map5, #map4, #map5], iterator_types = ["parallel", "parallel"]} ins(%12, %15 : tensor<?x?xf32>, tensor<?xf32>) outs(%9 : tensor<?x?xf32>) {
    ^bb0(%in: f32, %in_7: f32, %out: f32):
      %23 = arith.subf %in, %in_7 : f32
      linalg.yield %23 : f32
    } -> tensor<?x?xf32>
    %17 = linalg.generic {indexing_maps = [#map5, #map5], iterator_types = ["parallel", "parallel"]} ins(%16 : tensor<?x?xf32>) outs(%9 : tensor<?x?xf32>) {
    ^bb0(%in: f32, %out: f32):
      %23 = math.exp %in : f32
      linalg.yield %23 : f32
    } -> tensor<?x?xf32>
    %18 = linalg.fill ins(%cst_1 : f32) outs(%13 : tensor<?xf32>) -> tensor<?xf32>
    %19 = linalg.generic {indexing_maps = [#map5, #map4], iterator_types = ["parallel", "reduction"]} ins(%17 : tensor<?x?xf32>) outs(%18 : tensor<?xf32>) {
    ^bb0(%in: f32, %out: f32):
      %23 = arith.addf %out, %in fastmath<reassoc,contract> : f32
      linalg.yield %23 : f32
    } -> tensor<?xf32>
    %20 = linalg.generic {indexing_maps = [#map5, #map4, #map5], iterator_types = ["parallel", "parallel"]} ins(%17, %19 : tensor<?x?xf32>, tensor<?xf32>) outs(%9 : tensor<?x?xf32>) {
    ^bb0(%in: f32, %in_7: f32, %out: f32):
      %23 = arith.divf %in, %in_7 : f32
      linalg.yield %23 : f32
    } -> tensor<?x?xf32>
    %extracted_slice_5 = tensor.extract_slice %arg2[0, 0] [%dim, %dim_3] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
    %extracted_slice_6 = tensor.extract_slice %arg4[%arg3, 0] [%4, %dim_3] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
    %21 = linalg.fill ins(%cst_1 : f32) outs(%extracted_slice_6 : tensor<?x?xf32>) -> tensor<?x?xf32>
    %22 = linalg.generic {indexing_maps = [#map8, #map7, #map6], iterator_types = ["parallel", "reduction", "parallel"]} ins(%20, %extracted_slice_5 : tensor<?x?xf32>, tensor<?x?xf32>) outs(%21 : tensor<?x?xf32>) {
    ^bb0(%in: f32, %in_7: f32, %out: f32):
      %23 = arith.mulf %in, %in_7 fastmath<reassoc,contract> : f32
      %24 = arith.addf %out, %23 fastmath<reassoc,contract> : f32
      linalg.yield %24 : f32
    } -> tensor<?x?xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %22 into %arg4[%arg3, 0] [%4, %dim_3] [1, 1] : tensor<?x?xf32> into tensor<?x?xf32>
    }
  } {ein.row_tiles}
  return %3 : tensor<?x?xf32>
}
