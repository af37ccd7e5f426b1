// The CUDA target's column of `einc report --target=cuda`: what each op
// becomes in the generated source (docs/cuda.md), planned by the target's
// own code: a contraction's GEMM roles and the runtime's planner
// (GemmRoles.h), as EmitCUDA and the generated code use them. Each op's cell
// comes from its row's describe function, beside its emit function in its
// family's file (Ops/<Family>.cpp); this file holds the dispatch and the
// layout helpers they share. MLIR-free, so that the report's fuzzer
// compiles it in.
#include "ein/Target/CUDA/DescribeCUDA.h"

#include "Describe.h"

namespace ein {
namespace cuda {

OpCost describedCost(const CheckedOp &op, const CheckedFunction &fn) {
  return computeCost(costInputOf(op, fn), fn.ctx.env);
}

std::map<std::string, int64_t>
layoutSizes(const std::map<std::string, SizeExpr> &axisSizes,
            const Bindings &env) {
  std::map<std::string, int64_t> sizes;
  for (auto &[axis, e] : axisSizes) {
    auto v = e.evaluate(env);
    sizes[axis] = !v                  ? 2
                  : *v > Int(1 << 10) ? 1 << 10
                                      : static_cast<int64_t>(*v);
  }
  return sizes;
}

bool rowMajorAxes(const std::vector<std::vector<std::string>> &groups,
                  const std::map<std::string, int64_t> &sizes,
                  std::vector<std::string> &axes,
                  std::vector<int64_t> &strides) {
  axes.clear();
  strides.clear();
  int64_t stride = 1;
  for (size_t d = groups.size(); d-- > 0;)
    for (size_t i = groups[d].size(); i-- > 0;) {
      axes.insert(axes.begin(), groups[d][i]);
      strides.insert(strides.begin(), stride);
      if (__builtin_mul_overflow(stride, sizes.at(groups[d][i]), &stride))
        return false;
    }
  return true;
}

} // namespace cuda

namespace {

/// What `op` becomes in the CUDA target's source: its row's describe
/// function.
std::string cudaLowering(const CheckedOp &op, const CheckedFunction &fn) {
  switch (op.kind) {
#define EIN_OP(Kind, Name, OpClass)                                            \
  case OpKind::Kind:                                                           \
    return cuda::describe##Kind(op, fn);
#include "ein/Sema/Ops.def"
  }
  return ""; // every case returns: for GCC's -Wreturn-type
}

} // namespace

TargetColumn describeCUDA(const CheckedFunction &fn) {
  TargetColumn column;
  column.heading = "CUDA";
  column.field = "cuda";
  column.callCell = "-";
  for (const CheckedOp &op : fn.ops) {
    // Each op planned once (a contraction runs the GEMM planner).
    std::string cell = cudaLowering(op, fn);
    column.values.push_back(cell);
    column.cells.push_back(std::move(cell));
  }
  return column;
}

} // namespace ein
