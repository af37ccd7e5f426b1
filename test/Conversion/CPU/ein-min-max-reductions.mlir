// RUN: ein-opt %s --ein-min-max-reductions --split-input-file | FileCheck %s

// Tests a max over the last axis after a fill of -inf: the fill becomes a
// fill of the keys with -inf's key (0xFF800000 ^ 0x7FFFFFFF = 0x807FFFFF =
// -2139095041), the reduction runs arith.maxsi on i32 keys (NaN -> MAX),
// and the keys are mapped back into the output.
// CHECK-LABEL: func.func @max_last
// CHECK-SAME: (%[[X:.*]]: memref<?x?xf32>, %[[O:.*]]: memref<?xf32>)
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[N:.*]] = memref.dim %[[O]], %[[C0]] : memref<?xf32>
// CHECK: %[[K:.*]] = memref.alloc(%[[N]]) : memref<?xi32>
// CHECK: %[[START:.*]] = arith.constant -2139095041 : i32
// CHECK: linalg.fill ins(%[[START]] : i32) outs(%[[K]] : memref<?xi32>)
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction"]
// CHECK-SAME: ins(%[[X]] : memref<?x?xf32>) outs(%[[K]] : memref<?xi32>)
// CHECK: ^bb0(%[[IN:.*]]: f32, %[[ACC:.*]]: i32):
// CHECK: %[[BITS:.*]] = arith.bitcast %[[IN]] : f32 to i32
// CHECK: %[[NAN:.*]] = arith.cmpf uno, %[[IN]], %[[IN]] : f32
// CHECK: %[[MAXKEY:.*]] = arith.constant 2147483647 : i32
// CHECK: arith.constant 31 : i32
// CHECK: %[[SIGN:.*]] = arith.shrsi %[[BITS]], %{{.*}} : i32
// CHECK: %[[MASK:.*]] = arith.andi %[[SIGN]], %{{.*}} : i32
// CHECK: %[[FLIP:.*]] = arith.xori %[[BITS]], %[[MASK]] : i32
// CHECK: %[[KEY:.*]] = arith.select %[[NAN]], %[[MAXKEY]], %[[FLIP]] : i32
// CHECK: %[[M:.*]] = arith.maxsi %[[ACC]], %[[KEY]] : i32
// CHECK: linalg.yield %[[M]] : i32
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[K]] : memref<?xi32>) outs(%[[O]] : memref<?xf32>)
// CHECK: arith.xori
// CHECK: arith.bitcast %{{.*}} : i32 to f32
// CHECK: memref.dealloc %[[K]] : memref<?xi32>
// CHECK-NOT: maximumf
func.func @max_last(%x: memref<?x?xf32>, %o: memref<?xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  linalg.fill ins(%ninf : f32) outs(%o : memref<?xf32>)
  linalg.generic {indexing_maps = [affine_map<(a, b) -> (a, b)>,
                                   affine_map<(a, b) -> (a)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x?xf32>) outs(%o : memref<?xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %m = arith.maximumf %acc, %in : f32
    linalg.yield %m : f32
  }
  return
}

// -----

// Tests a min on f16 without a fill before it (and with its operands the
// other way round): the keys start from the output's own keys (NaN ->
// MIN), the reduction is arith.minsi on i16, and the output is strided.
// CHECK-LABEL: func.func @min_f16
// CHECK: %[[K:.*]] = memref.alloc() : memref<4xi16>
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel"]
// CHECK-SAME: outs(%[[K]] : memref<4xi16>)
// CHECK: arith.constant -32768 : i16
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["reduction", "parallel"]
// CHECK: arith.minsi
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[K]] : memref<4xi16>)
// CHECK: arith.bitcast %{{.*}} : i16 to f16
// CHECK: memref.dealloc %[[K]]
func.func @min_f16(%x: memref<8x4xf16>, %o: memref<4xf16, strided<[2]>>) {
  linalg.generic {indexing_maps = [affine_map<(b, a) -> (b, a)>,
                                   affine_map<(b, a) -> (a)>],
                  iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<8x4xf16>) outs(%o : memref<4xf16, strided<[2]>>) {
  ^bb0(%in: f16, %acc: f16):
    %m = arith.minimumf %in, %acc : f16
    linalg.yield %m : f16
  }
  return
}

// -----

// Tests what is left alone: a sum, an elementwise maximum (no reduction),
// and a max whose body reads the accumulator elsewhere too.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: memref.alloc
// CHECK: arith.addf
// CHECK: arith.maximumf
// CHECK: arith.maximumf
// CHECK-NOT: maxsi
func.func @left_alone(%x: memref<8x4xf32>, %y: memref<8x4xf32>,
                      %o: memref<8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(a, b) -> (a, b)>,
                                   affine_map<(a, b) -> (a)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x4xf32>) outs(%o : memref<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(a, b) -> (a, b)>,
                                   affine_map<(a, b) -> (a, b)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x4xf32>) outs(%y : memref<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %out, %in : f32
    linalg.yield %m : f32
  }
  linalg.generic {indexing_maps = [affine_map<(a, b) -> (a, b)>,
                                   affine_map<(a, b) -> (a)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x4xf32>) outs(%o : memref<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %a = arith.addf %in, %acc : f32
    %m = arith.maximumf %acc, %a : f32
    linalg.yield %m : f32
  }
  return
}

// -----

// Tests a max whose body computes its operand from two inputs first (a
// scale ein-fuse-elementwise moved in: attention's `max(s * 0.125)`): that
// work is kept, on the inputs, before the key.
// CHECK-LABEL: func.func @max_of_scaled
// CHECK: %[[K:.*]] = memref.alloc() : memref<8xi32>
// CHECK: ins(%{{.*}}, %{{.*}} : memref<8x4xf32>, memref<f32>) outs(%[[K]] : memref<8xi32>)
// CHECK: ^bb0(%[[IN:.*]]: f32, %[[S:.*]]: f32, %[[ACC:.*]]: i32):
// CHECK: %[[A:.*]] = math.absf %[[IN]] : f32
// CHECK: %[[X:.*]] = arith.mulf %[[A]], %[[S]] : f32
// CHECK: arith.bitcast %[[X]] : f32 to i32
// CHECK: arith.maxsi %[[ACC]]
// CHECK: arith.bitcast %{{.*}} : i32 to f32
func.func @max_of_scaled(%x: memref<8x4xf32>, %s: memref<f32>,
                         %o: memref<8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(a, b) -> (a, b)>,
                                   affine_map<(a, b) -> ()>,
                                   affine_map<(a, b) -> (a)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x, %s : memref<8x4xf32>, memref<f32>) outs(%o : memref<8xf32>) {
  ^bb0(%in: f32, %scale: f32, %acc: f32):
    %a = math.absf %in : f32
    %v = arith.mulf %a, %scale : f32
    %m = arith.maximumf %acc, %v : f32
    linalg.yield %m : f32
  }
  return
}

// -----

// Tests an f16 max accumulated in f32 (how ein lowers f16 and bf16
// reductions): the input is extended in the body, the keys are i32.
// CHECK-LABEL: func.func @max_f16_in_f32
// CHECK: %[[K:.*]] = memref.alloc() : memref<4xi32>
// CHECK: linalg.fill ins(%{{.*}} : i32) outs(%[[K]] : memref<4xi32>)
// CHECK: ^bb0(%[[IN:.*]]: f16, %[[ACC:.*]]: i32):
// CHECK: %[[W:.*]] = arith.extf %[[IN]] : f16 to f32
// CHECK: arith.bitcast %[[W]] : f32 to i32
// CHECK: arith.maxsi
// CHECK: arith.bitcast %{{.*}} : i32 to f32
func.func @max_f16_in_f32(%x: memref<4x8xf16>, %o: memref<4xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  linalg.fill ins(%ninf : f32) outs(%o : memref<4xf32>)
  linalg.generic {indexing_maps = [affine_map<(a, b) -> (a, b)>,
                                   affine_map<(a, b) -> (a)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x8xf16>) outs(%o : memref<4xf32>) {
  ^bb0(%in: f16, %acc: f32):
    %e = arith.extf %in : f16 to f32
    %m = arith.maximumf %acc, %e : f32
    linalg.yield %m : f32
  }
  return
}
