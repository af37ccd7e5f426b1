// The CUDA emitter's part for a sharded function's local program
// (docs/distributed.md §4, docs/cuda.md): each `mesh` all-reduce or
// reduce-scatter becomes a call of the host's entry point through the
// generated runtime's table (Runtime/ein_cuda_comm.cuh) on a contiguous copy
// of its operand, which the rank's device communicator (NCCL) reduces in
// place; a mean is then divided on the device. The casts between `ein` and
// builtin tensors around the mesh ops are views of the same values.
#include "FunctionEmitter.h"

#include "ein/Conversion/MeshCalls.h"
#include "ein/MLIRGen/MLIRGen.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

namespace ein {
namespace cuda {

bool FunctionEmitter::hasCollectives() {
  bool found = false;
  func.walk([&](mlir::Operation *op) {
    found = found ||
            (op->getDialect() && op->getDialect()->getNamespace() == "mesh");
  });
  return found;
}

bool FunctionEmitter::emitMeshOp(mlir::Operation *op) {
  if (auto cast = mlir::dyn_cast<mlir::UnrealizedConversionCastOp>(op)) {
    if (cast->getNumOperands() != 1 || cast->getNumResults() != 1) {
      fail(op, "a cast of several values has no CUDA lowering");
      return true;
    }
    values[cast.getResult(0).getAsOpaquePointer()] =
        view(cast.getOperand(0), op);
    return true;
  }
  if (!op->getDialect() || op->getDialect()->getNamespace() != "mesh")
    return false;
  auto allReduce = mlir::dyn_cast<mlir::mesh::AllReduceOp>(op);
  auto reduceScatter = mlir::dyn_cast<mlir::mesh::ReduceScatterOp>(op);
  if (!allReduce && !reduceScatter) {
    fail(op, fmt::format("the CUDA target emits mesh.all_reduce and "
                         "mesh.reduce_scatter; {} is not built yet",
                         op->getName().getStringRef().str()));
    return true;
  }
  if (std::string why = meshCollectiveRefusal(op); !why.empty()) {
    fail(op, why);
    return true;
  }
  auto reduction =
      allReduce ? allReduce.getReduction() : reduceScatter.getReduction();
  int16_t axis =
      allReduce ? allReduce.getMeshAxes()[0] : reduceScatter.getMeshAxes()[0];
  auto meshName =
      allReduce ? allReduce.getMeshAttr() : reduceScatter.getMeshAttr();
  CollectiveReduction code = *meshReductionCode(reduction);
  // The host's entry point divides a mean on the CPU: the device divides
  // it here, after the group's sum.
  bool mean = code == CollectiveReduction::Mean;
  int64_t ranks = 0;
  if (mean) {
    auto mesh = mlir::SymbolTable::lookupNearestSymbolFrom<mlir::mesh::MeshOp>(
        op, meshName);
    if (mesh && size_t(axis) < mesh.getShape().size())
      ranks = mesh.getShape()[size_t(axis)];
    if (ranks <= 0) {
      fail(op, "a mean over a mesh axis of unknown size: give its size "
               "(--mesh)");
      return true;
    }
    code = CollectiveReduction::Sum;
  }
  const ValueView &in = view(op->getOperand(0), op);
  int typeCode = int(runtime::toStorage(in.dtype));
  // A contiguous copy of the operand, which the communicator reduces in
  // place.
  int owner = newOwner();
  std::string w = fresh("w");
  fmt::format_to(out(),
                 "  {0} {1} = ein_temp<{2}, {3}>(stream, {4}.size, &t{5});\n"
                 "  ein_move(stream, {1}, {4});\n",
                 viewType(in.dtype, in.rank, false), w, storageType(in.dtype),
                 in.rank, in.name, owner);
  std::string count = fmt::format("ein_count_({}, {}.size)", in.rank, w);
  std::string result = w;
  if (allReduce || reduceScatter.getScatterAxis().getZExtValue() != 0) {
    fmt::format_to(out(),
                   "  ein_comm_all_reduce(stream, {}.data, {}, {}, {}, "
                   "{});\n",
                   w, count, typeCode, int(code), axis);
    if (mean)
      fmt::format_to(out(), "  ein_comm_divide(stream, {}.data, {}, {});\n", w,
                     count, ranks);
  }
  if (reduceScatter) {
    // The rank's block along the scatter dim: the communicator's
    // reduce-scatter along dim 0 (contiguous chunks), the all-reduced
    // buffer's slice along another.
    auto type = mlir::cast<mlir::RankedTensorType>(reduceScatter.getType());
    int64_t dim = int64_t(reduceScatter.getScatterAxis().getZExtValue());
    int64_t block = type.getDimSize(dim);
    if (dim == 0) {
      std::vector<std::string> sizes;
      for (size_t d = 0; d < in.rank; ++d)
        sizes.push_back(d == 0 ? std::to_string(block)
                               : fmt::format("{}.size[{}]", in.name, d));
      std::string z = sizeArray(sizes);
      int recvOwner = newOwner();
      result = fresh("w");
      fmt::format_to(
          out(),
          "  {0} {1} = ein_temp<{2}, {3}>(stream, {4}, &t{5});\n"
          "  ein_comm_reduce_scatter(stream, {6}.data, {1}.data, {7}, {8}, "
          "{9}, {10});\n",
          viewType(in.dtype, in.rank, false), result, storageType(in.dtype),
          in.rank, z, recvOwner, w, count, typeCode, int(code), axis);
      if (mean)
        fmt::format_to(out(),
                       "  ein_comm_divide(stream, {0}.data, "
                       "ein_count_({1}, {0}.size), {2});\n",
                       result, in.rank, ranks);
      owner = recvOwner;
    } else {
      result = fresh("w");
      fmt::format_to(out(),
                     "  {0} {1} = ein_slice({2}, {3}, ein_comm_axis_rank({4}) "
                     "* {5}, {5});\n",
                     viewType(in.dtype, in.rank, false), result, w, dim, axis,
                     block);
    }
  }
  ValueView v;
  v.name = fresh("v");
  v.dtype = in.dtype;
  v.rank = in.rank;
  v.owners = {owner};
  fmt::format_to(out(), "  {} {} = ein_const_view({});\n",
                 viewType(v.dtype, v.rank), v.name, result);
  values[op->getResult(0).getAsOpaquePointer()] = v;
  return true;
}

CheckedFunction withMeshResults(const CheckedFunction &fn,
                                const MeshProgram &mesh) {
  CheckedFunction out = fn;
  std::vector<TensorType> types = meshResultTypes(fn, mesh);
  for (size_t k = 0; k < out.returns.size() && k < types.size(); ++k) {
    const Value &value = fn.values[fn.returns[k]];
    if (types[k].shape == fn.ctx.expand(value.type.shape))
      continue;
    Value block = value;
    block.type = types[k];
    out.values.push_back(block);
    out.returns[k] = unsigned(out.values.size() - 1);
    out.results[k] = types[k];
  }
  return out;
}

} // namespace cuda
} // namespace ein
