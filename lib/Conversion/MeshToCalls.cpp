// The ein-mesh-to-calls pass: the mesh dialect's collectives become calls of
// the runtime's C entry points (ein/Runtime/CollectiveCalls.h) on buffers.
#include "ein/Conversion/MeshCalls.h"
#include "ein/Conversion/Passes.h"
#include "ein/Dialect/EinDialect.h"
#include "ein/Runtime/CollectiveCalls.h"
#include "ein/Runtime/HostTensor.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Mesh/IR/MeshOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <fmt/format.h>

namespace ein {

#define GEN_PASS_DEF_MESHTOCALLS
#include "ein/Conversion/Passes.h.inc"

namespace {

/// The mesh axes of a collective this pass lowers.
llvm::ArrayRef<int16_t> meshAxes(mlir::Operation *op) {
  if (auto o = llvm::dyn_cast<mlir::mesh::AllReduceOp>(op))
    return o.getMeshAxes();
  if (auto o = llvm::dyn_cast<mlir::mesh::ReduceScatterOp>(op))
    return o.getMeshAxes();
  return llvm::cast<mlir::mesh::AllGatherOp>(op).getMeshAxes();
}

} // namespace

std::optional<CollectiveReduction>
meshReductionCode(mlir::mesh::ReductionKind kind) {
  switch (kind) {
  case mlir::mesh::ReductionKind::Sum:
    return CollectiveReduction::Sum;
  case mlir::mesh::ReductionKind::Max:
    return CollectiveReduction::Max;
  case mlir::mesh::ReductionKind::Min:
    return CollectiveReduction::Min;
  case mlir::mesh::ReductionKind::Average:
    return CollectiveReduction::Mean;
  case mlir::mesh::ReductionKind::Product:
  case mlir::mesh::ReductionKind::BitwiseAnd:
  case mlir::mesh::ReductionKind::BitwiseOr:
  case mlir::mesh::ReductionKind::BitwiseXor:
  case mlir::mesh::ReductionKind::Generic:
    return std::nullopt;
  }
  llvm_unreachable("a mesh reduction kind");
}

std::string meshCollectiveRefusal(mlir::Operation *op) {
  auto input = llvm::cast<mlir::RankedTensorType>(op->getOperand(0).getType());
  auto result = llvm::cast<mlir::RankedTensorType>(op->getResult(0).getType());
  if (meshAxes(op).size() != 1)
    return "a collective over several mesh axes (or none) is not built: one "
           "axis is";
  if (input.getElementType() != result.getElementType())
    return "a collective whose result's element type is not its operand's is "
           "not built";
  auto dtype = toDType(input.getElementType());
  if (!dtype)
    return "a collective of an element type ein has not";
  auto storage = runtime::toStorage(*dtype);
  std::optional<mlir::mesh::ReductionKind> reduction;
  if (auto r = llvm::dyn_cast<mlir::mesh::AllReduceOp>(op))
    reduction = r.getReduction();
  if (auto r = llvm::dyn_cast<mlir::mesh::ReduceScatterOp>(op))
    reduction = r.getReduction();
  std::optional<CollectiveReduction> code;
  if (reduction) {
    code = meshReductionCode(*reduction);
    if (!code)
      return fmt::format("a collective's {} reduction is not built: sum, max, "
                         "min and average are",
                         mlir::mesh::stringifyReductionKind(*reduction).str());
  }
  if (auto why = collectiveRefusal(storage, code))
    return *why;
  if (auto g = llvm::dyn_cast<mlir::mesh::AllGatherOp>(op))
    if (g.getGatherAxis().getZExtValue() != 0 || result.isDynamicDim(0))
      return "an all_gather is built along the first dim, of a known size; "
             "not along another";
  if (auto r = llvm::dyn_cast<mlir::mesh::ReduceScatterOp>(op))
    if (result.isDynamicDim(int64_t(r.getScatterAxis().getZExtValue())))
      return "a reduce_scatter's block along its scatter dim must have a "
             "known size";
  return "";
}

namespace {

/// Builds the calls: declarations at the module's top, values at the op.
struct Calls {
  mlir::PatternRewriter &rewriter;
  mlir::Location loc;

  mlir::Value i32(int64_t v) {
    return rewriter.create<mlir::arith::ConstantIntOp>(loc, v, 32);
  }
  mlir::Value i64(mlir::Value index) {
    return rewriter.create<mlir::arith::IndexCastOp>(loc, rewriter.getI64Type(),
                                                     index);
  }
  /// The sizes of `t`'s dynamic dims, read from `like` (same shape).
  llvm::SmallVector<mlir::Value> dynamicSizes(mlir::RankedTensorType t,
                                              mlir::Value like) {
    llvm::SmallVector<mlir::Value> sizes;
    for (int64_t d = 0; d < t.getRank(); ++d)
      if (t.isDynamicDim(d))
        sizes.push_back(rewriter.create<mlir::tensor::DimOp>(loc, like, d));
    return sizes;
  }
  /// The number of elements of `t` (its dynamic sizes from `like`), as i64.
  mlir::Value count(mlir::RankedTensorType t, mlir::Value like) {
    mlir::Value n = rewriter.create<mlir::arith::ConstantIndexOp>(loc, 1);
    for (int64_t d = 0; d < t.getRank(); ++d) {
      mlir::Value size =
          t.isDynamicDim(d)
              ? rewriter.create<mlir::tensor::DimOp>(loc, like, d).getResult()
              : rewriter
                    .create<mlir::arith::ConstantIndexOp>(loc, t.getDimSize(d))
                    .getResult();
      n = rewriter.create<mlir::arith::MulIOp>(loc, n, size);
    }
    return i64(n);
  }
  /// A new contiguous buffer of `t`'s shape (dynamic sizes given).
  mlir::Value alloc(mlir::RankedTensorType t, mlir::ValueRange sizes) {
    auto type = mlir::MemRefType::get(t.getShape(), t.getElementType());
    return rewriter.create<mlir::memref::AllocOp>(loc, type, sizes);
  }
  /// A new buffer holding `tensor`'s values.
  mlir::Value copyOf(mlir::Value tensor) {
    auto t = llvm::cast<mlir::RankedTensorType>(tensor.getType());
    mlir::Value buffer = alloc(t, dynamicSizes(t, tensor));
    auto copy =
        rewriter.create<mlir::bufferization::MaterializeInDestinationOp>(
            loc, tensor, buffer);
    copy.setWritable(true);
    return buffer;
  }
  mlir::Value address(mlir::Value buffer) {
    return i64(rewriter.create<mlir::memref::ExtractAlignedPointerAsIndexOp>(
        loc, buffer));
  }
  /// `buffer` as the tensor the later ops read (its only tensor).
  mlir::Value asTensor(mlir::Value buffer) {
    return rewriter.create<mlir::bufferization::ToTensorOp>(
        loc, buffer, /*restrict=*/true, /*writable=*/true);
  }
  /// Calls `name`, declared (private, external) on first use.
  mlir::func::CallOp call(llvm::StringRef name, mlir::ValueRange args,
                          mlir::TypeRange results = {}) {
    auto module =
        rewriter.getBlock()->getParentOp()->getParentOfType<mlir::ModuleOp>();
    if (!module.lookupSymbol<mlir::func::FuncOp>(name)) {
      mlir::OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(module.getBody());
      auto decl = rewriter.create<mlir::func::FuncOp>(
          loc, name, rewriter.getFunctionType(args.getTypes(), results));
      decl.setPrivate();
    }
    return rewriter.create<mlir::func::CallOp>(loc, name, results, args);
  }
};

int32_t typeCode(mlir::Type element) {
  return int32_t(runtime::toStorage(*toDType(element)));
}

int32_t axisOf(mlir::Operation *op) { return meshAxes(op)[0]; }

/// all_reduce: the operand copied into a new buffer, reduced in place.
struct AllReduceToCall : mlir::OpRewritePattern<mlir::mesh::AllReduceOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult
  matchAndRewrite(mlir::mesh::AllReduceOp op,
                  mlir::PatternRewriter &rewriter) const override {
    Calls c{rewriter, op.getLoc()};
    auto type = llvm::cast<mlir::RankedTensorType>(op.getInput().getType());
    mlir::Value buffer = c.copyOf(op.getInput());
    c.call(kAllReduceCall,
           {c.address(buffer), c.count(type, op.getInput()),
            c.i32(typeCode(type.getElementType())),
            c.i32(int32_t(*meshReductionCode(op.getReduction()))),
            c.i32(axisOf(op))});
    rewriter.replaceOp(op, c.asTensor(buffer));
    return mlir::success();
  }
};

/// reduce_scatter along dim 0: the communicator's, into a buffer of the
/// block; along another dim, an all-reduce then the rank's block (the
/// communicator scatters contiguous chunks).
struct ReduceScatterToCall
    : mlir::OpRewritePattern<mlir::mesh::ReduceScatterOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult
  matchAndRewrite(mlir::mesh::ReduceScatterOp op,
                  mlir::PatternRewriter &rewriter) const override {
    Calls c{rewriter, op.getLoc()};
    mlir::Value input = op.getInput();
    auto type = llvm::cast<mlir::RankedTensorType>(input.getType());
    auto resultType = llvm::cast<mlir::RankedTensorType>(op.getType());
    int64_t dim = int64_t(op.getScatterAxis().getZExtValue());
    mlir::Value code = c.i32(typeCode(type.getElementType()));
    mlir::Value reduction =
        c.i32(int32_t(*meshReductionCode(op.getReduction())));
    mlir::Value send = c.copyOf(input);
    mlir::Value total = c.count(type, input);
    // The block: the result's sizes, static where it has them (along `dim`
    // always: meshCollectiveRefusal() asks for it), else the input's.
    llvm::SmallVector<mlir::OpFoldResult> offsets, sizes, strides;
    llvm::SmallVector<mlir::Value> dynamic;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      offsets.push_back(rewriter.getIndexAttr(0));
      strides.push_back(rewriter.getIndexAttr(1));
      if (!resultType.isDynamicDim(d)) {
        sizes.push_back(rewriter.getIndexAttr(resultType.getDimSize(d)));
        continue;
      }
      mlir::Value size = rewriter.create<mlir::tensor::DimOp>(c.loc, input, d);
      sizes.push_back(size);
      dynamic.push_back(size);
    }
    if (dim == 0) {
      mlir::Value recv = c.alloc(resultType, dynamic);
      c.call(kReduceScatterCall, {c.address(send), c.address(recv), total, code,
                                  reduction, c.i32(axisOf(op))});
      rewriter.replaceOp(op, c.asTensor(recv));
      return mlir::success();
    }
    c.call(kAllReduceCall,
           {c.address(send), total, code, reduction, c.i32(axisOf(op))});
    mlir::Value axisRank =
        c.call(kAxisRankCall, {c.i32(axisOf(op))}, rewriter.getI64Type())
            .getResult(0);
    offsets[size_t(dim)] =
        rewriter
            .create<mlir::arith::MulIOp>(
                c.loc,
                rewriter.create<mlir::arith::IndexCastOp>(
                    c.loc, rewriter.getIndexType(), axisRank),
                rewriter.create<mlir::arith::ConstantIndexOp>(
                    c.loc, resultType.getDimSize(dim)))
            .getResult();
    rewriter.replaceOpWithNewOp<mlir::tensor::ExtractSliceOp>(
        op, resultType, c.asTensor(send), offsets, sizes, strides);
    return mlir::success();
  }
};

/// all_gather along dim 0: the ranks' blocks one after another.
struct AllGatherToCall : mlir::OpRewritePattern<mlir::mesh::AllGatherOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult
  matchAndRewrite(mlir::mesh::AllGatherOp op,
                  mlir::PatternRewriter &rewriter) const override {
    Calls c{rewriter, op.getLoc()};
    mlir::Value input = op.getInput();
    auto type = llvm::cast<mlir::RankedTensorType>(input.getType());
    auto resultType = llvm::cast<mlir::RankedTensorType>(op.getType());
    llvm::SmallVector<mlir::Value> dynamic;
    for (int64_t d = 1; d < resultType.getRank(); ++d)
      if (resultType.isDynamicDim(d))
        dynamic.push_back(
            rewriter.create<mlir::tensor::DimOp>(c.loc, input, d));
    mlir::Value send = c.copyOf(input);
    mlir::Value recv = c.alloc(resultType, dynamic);
    c.call(kAllGatherCall,
           {c.address(send), c.address(recv), c.count(type, input),
            c.i32(typeCode(type.getElementType())), c.i32(axisOf(op))});
    rewriter.replaceOp(op, c.asTensor(recv));
    return mlir::success();
  }
};

struct MeshToCallsPass : impl::MeshToCallsBase<MeshToCallsPass> {
  void runOnOperation() override {
    mlir::ModuleOp module = getOperation();
    // Every mesh op is lowered or refused by name, at the op.
    bool failed = false;
    llvm::SmallVector<mlir::Operation *> collectives;
    module.walk([&](mlir::Operation *op) {
      if (op->getDialect() == nullptr ||
          op->getDialect()->getNamespace() != "mesh" ||
          llvm::isa<mlir::mesh::MeshOp>(op))
        return;
      if (!llvm::isa<mlir::mesh::AllReduceOp, mlir::mesh::ReduceScatterOp,
                     mlir::mesh::AllGatherOp>(op)) {
        op->emitError() << "ein-mesh-to-calls lowers mesh.all_reduce, "
                           "mesh.reduce_scatter and mesh.all_gather; "
                        << op->getName() << " is not built";
        failed = true;
        return;
      }
      if (std::string why = meshCollectiveRefusal(op); !why.empty()) {
        op->emitError() << why;
        failed = true;
      }
      collectives.push_back(op);
    });
    if (failed)
      return signalPassFailure();
    mlir::RewritePatternSet patterns(&getContext());
    patterns.add<AllReduceToCall, ReduceScatterToCall, AllGatherToCall>(
        &getContext());
    // Only the collectives (and the ops their patterns make) are rewritten:
    // a program without them leaves the pass as it came.
    mlir::GreedyRewriteConfig config;
    config.strictMode = mlir::GreedyRewriteStrictness::ExistingAndNewOps;
    if (!collectives.empty() && mlir::failed(mlir::applyOpPatternsAndFold(
                                    collectives, std::move(patterns), config)))
      return signalPassFailure();
    bool left = false;
    module.walk([&](mlir::Operation *op) {
      if (llvm::isa<mlir::mesh::AllReduceOp, mlir::mesh::ReduceScatterOp,
                    mlir::mesh::AllGatherOp>(op)) {
        op->emitError() << "ein-mesh-to-calls could not lower this collective";
        left = true;
      }
    });
    if (left)
      return signalPassFailure();
    for (auto mesh :
         llvm::make_early_inc_range(module.getOps<mlir::mesh::MeshOp>()))
      mesh.erase();
  }
};

} // namespace
} // namespace ein
