// RUN: ein-opt %s --ein-mesh-to-calls --split-input-file --verify-diagnostics | FileCheck %s

// Tests that an all-reduce becomes a copy of its operand into a new buffer,
// reduced in place by ein_comm_all_reduce (address, count, f32 = 1, sum =
// 0, axis 1), read back as the result; the mesh declaration goes.
// CHECK-NOT: mesh.mesh
// CHECK-LABEL: func.func private @ein_comm_all_reduce(i64, i64, i32, i32, i32)
// CHECK-LABEL: func.func @all_reduce(
// CHECK-SAME: %[[X:.*]]: tensor<2x3xf32>
// CHECK: %[[BUF:.*]] = memref.alloc() : memref<2x3xf32>
// CHECK: bufferization.materialize_in_destination %[[X]] in writable %[[BUF]]
// CHECK: %[[P:.*]] = memref.extract_aligned_pointer_as_index %[[BUF]]
// CHECK: %[[A:.*]] = arith.index_cast %[[P]] : index to i64
// CHECK: %[[N:.*]] = arith.constant 6 : i64
// CHECK: %[[F32:.*]] = arith.constant 1 : i32
// CHECK: %[[SUM:.*]] = arith.constant 0 : i32
// CHECK: %[[AXIS:.*]] = arith.constant 1 : i32
// CHECK: call @ein_comm_all_reduce(%[[A]], %[[N]], %[[F32]], %[[SUM]], %[[AXIS]])
// CHECK: %[[R:.*]] = bufferization.to_tensor %[[BUF]] restrict writable
// CHECK: return %[[R]]
mesh.mesh @mesh(shape = 2x2)
func.func @all_reduce(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = mesh.all_reduce %x on @mesh mesh_axes = [1] : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Tests that a dynamic dim's size is read from the operand (the count its
// product), and that max (1), min (2) and average (3) are the reduction
// codes; f64 is type 0.
// CHECK-LABEL: func.func @dynamic(
// CHECK: %[[D:.*]] = tensor.dim %{{.*}}, %c0
// CHECK: memref.alloc(%[[D]]) : memref<?x4xf64>
// CHECK: arith.muli %{{.*}}, %c4 : index
// CHECK: arith.constant 0 : i32
// CHECK-NEXT: arith.constant 1 : i32
// CHECK-NEXT: arith.constant 0 : i32
// CHECK-NEXT: call @ein_comm_all_reduce
// CHECK: arith.constant 0 : i32
// CHECK-NEXT: arith.constant 2 : i32
// CHECK-NEXT: arith.constant 0 : i32
// CHECK-NEXT: call @ein_comm_all_reduce
// CHECK: arith.constant 0 : i32
// CHECK-NEXT: arith.constant 3 : i32
// CHECK-NEXT: arith.constant 0 : i32
// CHECK-NEXT: call @ein_comm_all_reduce
mesh.mesh @mesh(shape = 4)
func.func @dynamic(%x: tensor<?x4xf64>) -> tensor<?x4xf64> {
  %0 = mesh.all_reduce %x on @mesh mesh_axes = [0] reduction = <max> : tensor<?x4xf64> -> tensor<?x4xf64>
  %1 = mesh.all_reduce %0 on @mesh mesh_axes = [0] reduction = <min> : tensor<?x4xf64> -> tensor<?x4xf64>
  %2 = mesh.all_reduce %1 on @mesh mesh_axes = [0] reduction = <average> : tensor<?x4xf64> -> tensor<?x4xf64>
  return %2 : tensor<?x4xf64>
}

// -----

// Tests that a reduce-scatter along dim 0 is the communicator's, from a
// copy of the operand (12 elements) into a buffer of the block.
// CHECK-LABEL: func.func @scatter_leading(
// CHECK: %[[SEND:.*]] = memref.alloc() : memref<4x3xf32>
// CHECK: %[[RECV:.*]] = memref.alloc() : memref<2x3xf32>
// CHECK: call @ein_comm_reduce_scatter(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (i64, i64, i64, i32, i32, i32) -> ()
// CHECK: bufferization.to_tensor %[[RECV]] restrict writable
mesh.mesh @mesh(shape = 2)
func.func @scatter_leading(%x: tensor<4x3xf32>) -> tensor<2x3xf32> {
  %0 = mesh.reduce_scatter %x on @mesh mesh_axes = [0] scatter_axis = 0 : tensor<4x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Tests that a reduce-scatter along another dim is an all-reduce, then the
// rank's block: at ein_comm_axis_rank times the block's size (3).
// CHECK-LABEL: func.func @scatter_inner(
// CHECK: call @ein_comm_all_reduce(
// CHECK: %[[AXIS:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[RANK:.*]] = call @ein_comm_axis_rank(%[[AXIS]]) : (i32) -> i64
// CHECK: %[[THREE:.*]] = arith.constant 3 : index
// CHECK: %[[R:.*]] = arith.index_cast %[[RANK]] : i64 to index
// CHECK: %[[OFF:.*]] = arith.muli %[[R]], %[[THREE]]
// CHECK: %[[ALL:.*]] = bufferization.to_tensor
// CHECK: tensor.extract_slice %[[ALL]][0, %[[OFF]]] [%{{.*}}, 3] [1, 1] : tensor<?x6xf32> to tensor<?x3xf32>
mesh.mesh @mesh(shape = 2x2)
func.func @scatter_inner(%x: tensor<?x6xf32>) -> tensor<?x3xf32> {
  %0 = mesh.reduce_scatter %x on @mesh mesh_axes = [1] scatter_axis = 1 : tensor<?x6xf32> -> tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}

// -----

// Tests that an all-gather along dim 0 moves the operand's 6 elements from
// each rank into a buffer of the whole.
// CHECK-LABEL: func.func @gather(
// CHECK: %[[RECV:.*]] = memref.alloc() : memref<4x3xi32>
// CHECK: call @ein_comm_all_gather(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (i64, i64, i64, i32, i32) -> ()
// CHECK: bufferization.to_tensor %[[RECV]] restrict writable
mesh.mesh @mesh(shape = 2)
func.func @gather(%x: tensor<2x3xi32>) -> tensor<4x3xi32> {
  %0 = mesh.all_gather %x on @mesh mesh_axes = [0] gather_axis = 0 : tensor<2x3xi32> -> tensor<4x3xi32>
  return %0 : tensor<4x3xi32>
}

// -----

// Tests that an all-gather along dim 1 gathers the ranks' 3x2 blocks one
// after another (6 elements each) into a 2x3x2 buffer, which a transpose
// makes 3x2x2 (the rank next to dim 1, before its 2) and a collapse 3x4:
// column 2·r + j is rank r's column j.
// CHECK-LABEL: func.func @gather_inner(
// CHECK: %[[RECV:.*]] = memref.alloc() : memref<2x3x2xf32>
// CHECK: %[[N:.*]] = arith.constant 6 : i64
// CHECK: call @ein_comm_all_gather(%{{.*}}, %{{.*}}, %[[N]], %{{.*}}, %{{.*}})
// CHECK: %[[ALL:.*]] = bufferization.to_tensor %[[RECV]] restrict writable
// CHECK: %[[T:.*]] = linalg.generic {indexing_maps = [#[[SWAP:.*]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[ALL]] : tensor<2x3x2xf32>) outs(%{{.*}} : tensor<3x2x2xf32>)
// CHECK: tensor.collapse_shape %[[T]] {{\[}}[0], [1, 2]] : tensor<3x2x2xf32> into tensor<3x4xf32>
mesh.mesh @mesh(shape = 2)
func.func @gather_inner(%x: tensor<3x2xf32>) -> tensor<3x4xf32> {
  %0 = mesh.all_gather %x on @mesh mesh_axes = [0] gather_axis = 1 : tensor<3x2xf32> -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

// Tests that an all-to-all moving a split from dim 0 to dim 1 over axis 1
// (3 ranks): dim 0 (6) is cut into 3 chunks of 2, already leading
// (contiguous: no transpose), each rank sends chunk r (2x4x5 = 40
// elements, f32 = 1, axis 1) to rank r; the 3 received pieces are
// transposed next to dim 1 and merged into it (4 -> 12).
// CHECK-DAG: #[[ID4:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[SWAP4:.*]] = affine_map<(d0, d1, d2, d3) -> (d1, d0, d2, d3)>
// CHECK-LABEL: func.func private @ein_comm_all_to_all(i64, i64, i64, i32, i32)
// CHECK-LABEL: func.func @all_to_all(
// CHECK-SAME: %[[X:.*]]: tensor<6x4x5xf32>
// CHECK: %[[CHUNKS:.*]] = tensor.expand_shape %[[X]] {{\[}}[0, 1], [2], [3]] output_shape [3, 2, 4, 5]
// CHECK-NOT: linalg.generic
// CHECK: %[[SEND:.*]] = memref.alloc() : memref<3x2x4x5xf32>
// CHECK: bufferization.materialize_in_destination %[[CHUNKS]] in writable %[[SEND]]
// CHECK: %[[RECV:.*]] = memref.alloc() : memref<3x2x4x5xf32>
// CHECK: %[[N:.*]] = arith.constant 40 : i64
// CHECK: %[[F32:.*]] = arith.constant 1 : i32
// CHECK: %[[AXIS:.*]] = arith.constant 1 : i32
// CHECK: call @ein_comm_all_to_all(%{{.*}}, %{{.*}}, %[[N]], %[[F32]], %[[AXIS]])
// CHECK: %[[PIECES:.*]] = bufferization.to_tensor %[[RECV]] restrict writable
// CHECK: %[[T:.*]] = linalg.generic {indexing_maps = [#[[SWAP4]], #[[ID4]]], {{.*}} ins(%[[PIECES]] : tensor<3x2x4x5xf32>) outs(%{{.*}} : tensor<2x3x4x5xf32>)
// CHECK: tensor.collapse_shape %[[T]] {{\[}}[0], [1, 2], [3]] : tensor<2x3x4x5xf32> into tensor<2x12x5xf32>
mesh.mesh @mesh(shape = 2x3)
func.func @all_to_all(%x: tensor<6x4x5xf32>) -> tensor<2x12x5xf32> {
  %0 = mesh.all_to_all %x on @mesh mesh_axes = [1] split_axis = 0 concat_axis = 1 : tensor<6x4x5xf32> -> tensor<2x12x5xf32>
  return %0 : tensor<2x12x5xf32>
}

// -----

// Tests that an all-to-all moving a split from dim 1 to dim 0: dim 1 (4)
// cut into 2 chunks of 2 and the chunk index moved to the front (a
// transpose into a contiguous buffer, 3x2 = 6 elements of i64 = 6 per
// rank); the received 2x3x2 merges into dim 0 with no transpose.
// CHECK-DAG: #[[SWAP3:.*]] = affine_map<(d0, d1, d2) -> (d1, d0, d2)>
// CHECK-LABEL: func.func @all_to_all_back(
// CHECK: %[[CHUNKS:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0], [1, 2]] output_shape [3, 2, 2]
// CHECK: %[[FRONT:.*]] = linalg.generic {indexing_maps = [#[[SWAP3]], #{{.*}}], {{.*}} ins(%[[CHUNKS]] : tensor<3x2x2xi64>) outs(%{{.*}} : tensor<2x3x2xi64>)
// CHECK: bufferization.materialize_in_destination %[[FRONT]] in writable
// CHECK: call @ein_comm_all_to_all(%{{.*}}, %{{.*}}, %c6_i64, %c6_i32, %c0_i32)
// CHECK: %[[PIECES:.*]] = bufferization.to_tensor
// CHECK-NOT: linalg.generic
// CHECK: tensor.collapse_shape %[[PIECES]] {{\[}}[0, 1], [2]] : tensor<2x3x2xi64> into tensor<6x2xi64>
mesh.mesh @mesh(shape = 2)
func.func @all_to_all_back(%x: tensor<3x4xi64>) -> tensor<6x2xi64> {
  %0 = mesh.all_to_all %x on @mesh mesh_axes = [0] split_axis = 1 concat_axis = 0 : tensor<3x4xi64> -> tensor<6x2xi64>
  return %0 : tensor<6x2xi64>
}

// -----

mesh.mesh @mesh(shape = 2x2)
func.func @two_axes(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{a collective over several mesh axes (or none) is not built: one axis is}}
  %0 = mesh.all_reduce %x on @mesh mesh_axes = [0, 1] : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

mesh.mesh @mesh(shape = 2)
func.func @widening(%x: tensor<2x3xf32>) -> tensor<2x3xf64> {
  // expected-error @+1 {{a collective whose result's element type is not its operand's is not built}}
  %0 = mesh.all_reduce %x on @mesh mesh_axes = [0] : tensor<2x3xf32> -> tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}

// -----

mesh.mesh @mesh(shape = 2)
func.func @product(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{a collective's product reduction is not built: sum, max, min and average are}}
  %0 = mesh.all_reduce %x on @mesh mesh_axes = [0] reduction = <product> : tensor<2xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

mesh.mesh @mesh(shape = 2)
func.func @average_half(%x: tensor<2xf16>) -> tensor<2xf16> {
  // expected-error @+1 {{an average of f16 over ranks is not supported yet: f32 and f64 are}}
  %0 = mesh.all_reduce %x on @mesh mesh_axes = [0] reduction = <average> : tensor<2xf16> -> tensor<2xf16>
  return %0 : tensor<2xf16>
}

// -----

mesh.mesh @mesh(shape = 2)
func.func @bool_sum(%x: tensor<2xi1>) -> tensor<2xi1> {
  // expected-error @+1 {{a reduction of bool over ranks is not supported yet: f64, f32, f16, bf16, i64 and i32 are}}
  %0 = mesh.all_reduce %x on @mesh mesh_axes = [0] : tensor<2xi1> -> tensor<2xi1>
  return %0 : tensor<2xi1>
}

// -----

mesh.mesh @mesh(shape = 2)
func.func @gather_dynamic(%x: tensor<3x?xf32>) -> tensor<3x?xf32> {
  // expected-error @+1 {{an all_gather along a dim other than the first is built for an operand of known sizes (it moves the blocks through a transpose)}}
  %0 = mesh.all_gather %x on @mesh mesh_axes = [0] gather_axis = 1 : tensor<3x?xf32> -> tensor<3x?xf32>
  return %0 : tensor<3x?xf32>
}

// -----

mesh.mesh @mesh(shape = 2)
func.func @all_to_all_dynamic(%x: tensor<?x4xf32>) -> tensor<?x2xf32> {
  // expected-error @+1 {{an all_to_all is built for an operand of known sizes (it moves the chunks through transposes)}}
  %0 = mesh.all_to_all %x on @mesh mesh_axes = [0] split_axis = 1 concat_axis = 0 : tensor<?x4xf32> -> tensor<?x2xf32>
  return %0 : tensor<?x2xf32>
}

// -----

mesh.mesh @mesh(shape = 2)
func.func @all_to_all_same_dim(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{an all_to_all whose split and concat dims are the same is not built (it moves a split between two dims)}}
  %0 = mesh.all_to_all %x on @mesh mesh_axes = [0] split_axis = 0 concat_axis = 0 : tensor<4x3xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

mesh.mesh @mesh(shape = 2)
func.func @broadcast(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{ein-mesh-to-calls lowers mesh.all_reduce, mesh.reduce_scatter, mesh.all_gather and mesh.all_to_all; mesh.broadcast is not built}}
  %0 = mesh.broadcast %x on @mesh mesh_axes = [0] root = [0] : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
