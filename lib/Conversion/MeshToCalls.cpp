// The ein-mesh-to-calls pass: the mesh dialect's collectives become calls of
// the runtime's C entry points (ein/Runtime/CollectiveCalls.h) on buffers.
#include "ein/Conversion/MeshCalls.h"
#include "ein/Conversion/Passes.h"
#include "ein/Dialect/EinDialect.h"
#include "ein/Dialect/MeshReduction.h"
#include "ein/Runtime/CollectiveCalls.h"
#include "ein/Runtime/HostTensor.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
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
  if (auto o = llvm::dyn_cast<mlir::mesh::AllToAllOp>(op))
    return o.getMeshAxes();
  return llvm::cast<mlir::mesh::AllGatherOp>(op).getMeshAxes();
}

/// The collectives this pass lowers.
bool isLowered(mlir::Operation *op) {
  return llvm::isa<mlir::mesh::AllReduceOp, mlir::mesh::ReduceScatterOp,
                   mlir::mesh::AllGatherOp, mlir::mesh::AllToAllOp>(op);
}

} // namespace

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
    code = collectiveReduction(*reduction);
    if (!code)
      return fmt::format("a collective's {} reduction is not built: sum, max, "
                         "min and average are",
                         mlir::mesh::stringifyReductionKind(*reduction).str());
  }
  if (auto why = collectiveRefusal(storage, code))
    return *why;
  if (auto g = llvm::dyn_cast<mlir::mesh::AllGatherOp>(op)) {
    if (g.getGatherAxis().getZExtValue() == 0 && result.isDynamicDim(0))
      return "an all_gather along the first dim is built where that dim has a "
             "known size";
    if (g.getGatherAxis().getZExtValue() != 0 && !input.hasStaticShape())
      return "an all_gather along a dim other than the first is built for an "
             "operand of known sizes (it moves the blocks through a "
             "transpose)";
  }
  if (auto a = llvm::dyn_cast<mlir::mesh::AllToAllOp>(op)) {
    if (!input.hasStaticShape())
      return "an all_to_all is built for an operand of known sizes (it moves "
             "the chunks through transposes)";
    if (a.getSplitAxis() == a.getConcatAxis())
      return "an all_to_all whose split and concat dims are the same is not "
             "built (it moves a split between two dims)";
  }
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
  /// `v` (static shape) with its dims permuted: result dim i is `v`'s dim
  /// `perm[i]`; a copy (linalg.generic) into a new tensor, so that the
  /// blocks it moves are contiguous.
  mlir::Value permuted(mlir::Value v, llvm::ArrayRef<int64_t> perm) {
    auto t = llvm::cast<mlir::RankedTensorType>(v.getType());
    llvm::SmallVector<int64_t> shape;
    for (int64_t p : perm)
      shape.push_back(t.getDimSize(p));
    mlir::Value init =
        rewriter.create<mlir::tensor::EmptyOp>(loc, shape, t.getElementType());
    auto *context = rewriter.getContext();
    auto rank = unsigned(perm.size());
    // The input's dim perm[i] is read at loop i.
    llvm::SmallVector<mlir::AffineExpr> reads(rank);
    for (unsigned i = 0; i < rank; ++i)
      reads[size_t(perm[i])] = mlir::getAffineDimExpr(i, context);
    llvm::SmallVector<mlir::AffineMap> maps = {
        mlir::AffineMap::get(rank, 0, reads, context),
        mlir::AffineMap::getMultiDimIdentityMap(rank, context)};
    llvm::SmallVector<mlir::utils::IteratorType> loops(
        rank, mlir::utils::IteratorType::parallel);
    return rewriter
        .create<mlir::linalg::GenericOp>(
            loc, init.getType(), v, init, maps, loops,
            [](mlir::OpBuilder &b, mlir::Location l, mlir::ValueRange args) {
              b.create<mlir::linalg::YieldOp>(l, args[0]);
            })
        .getResult(0);
  }
  /// The ranks' received blocks `blocks` (a leading dim of the group's size,
  /// then the block's dims) placed along dim `dim` of the block, in rank
  /// order: that dim grows by the group's size.
  mlir::Value concatenated(mlir::Value blocks, int64_t dim,
                           mlir::RankedTensorType resultType) {
    auto t = llvm::cast<mlir::RankedTensorType>(blocks.getType());
    int64_t rank = t.getRank() - 1;
    // [n, d0 .. d_{dim-1}, d_dim, ...] -> [d0 .. d_{dim-1}, n, d_dim, ...]
    llvm::SmallVector<int64_t> perm;
    for (int64_t i = 1; i <= dim; ++i)
      perm.push_back(i);
    perm.push_back(0);
    for (int64_t i = dim + 1; i <= rank; ++i)
      perm.push_back(i);
    mlir::Value moved = dim == 0 ? blocks : permuted(blocks, perm);
    llvm::SmallVector<mlir::ReassociationIndices> groups;
    for (int64_t i = 0; i < rank; ++i) {
      if (i < dim)
        groups.push_back({i});
      else if (i == dim)
        groups.push_back({i, i + 1});
      else
        groups.push_back({i + 1});
    }
    return rewriter.create<mlir::tensor::CollapseShapeOp>(loc, resultType,
                                                          moved, groups);
  }
  /// Calls the entry point `name` that moves `count` elements per block
  /// from buffer `send` into `recv` over mesh axis `axis` (an all-gather, an
  /// all-to-all).
  void moveBlocks(const char *name, mlir::Value send, mlir::Value recv,
                  mlir::Value count, mlir::Type element, int32_t axis);
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

void Calls::moveBlocks(const char *name, mlir::Value send, mlir::Value recv,
                       mlir::Value count, mlir::Type element, int32_t axis) {
  call(name, {address(send), address(recv), count, i32(typeCode(element)),
              i32(axis)});
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
            c.i32(int32_t(*collectiveReduction(op.getReduction()))),
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
        c.i32(int32_t(*collectiveReduction(op.getReduction())));
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

/// all_gather: the communicator gathers the ranks' blocks one after another
/// (rank-major); along dim 0 that is the result, along dim g > 0 the
/// received [n, block] is transposed to [.., n, d_g, ..] and its n and d_g
/// merged (as the host's moveBlocks places blocks along a dim).
struct AllGatherToCall : mlir::OpRewritePattern<mlir::mesh::AllGatherOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult
  matchAndRewrite(mlir::mesh::AllGatherOp op,
                  mlir::PatternRewriter &rewriter) const override {
    Calls c{rewriter, op.getLoc()};
    mlir::Value input = op.getInput();
    auto type = llvm::cast<mlir::RankedTensorType>(input.getType());
    auto resultType = llvm::cast<mlir::RankedTensorType>(op.getType());
    int64_t dim = int64_t(op.getGatherAxis().getZExtValue());
    mlir::Value send = c.copyOf(input);
    mlir::Value recv;
    if (dim == 0) {
      // The received blocks are the result (its other dims the operand's).
      llvm::SmallVector<mlir::Value> dynamic;
      for (int64_t d = 1; d < resultType.getRank(); ++d)
        if (resultType.isDynamicDim(d))
          dynamic.push_back(
              rewriter.create<mlir::tensor::DimOp>(c.loc, input, d));
      recv = c.alloc(resultType, dynamic);
    } else {
      // Static shapes (meshCollectiveRefusal()): the group's size is the
      // growth.
      llvm::SmallVector<int64_t> blocks = {resultType.getDimSize(dim) /
                                           type.getDimSize(dim)};
      llvm::append_range(blocks, type.getShape());
      recv = c.alloc(mlir::RankedTensorType::get(blocks, type.getElementType()),
                     {});
    }
    c.moveBlocks(kAllGatherCall, send, recv, c.count(type, input),
                 type.getElementType(), axisOf(op));
    mlir::Value received = c.asTensor(recv);
    rewriter.replaceOp(
        op, dim == 0 ? received : c.concatenated(received, dim, resultType));
    return mlir::success();
  }
};

/// all_to_all: the operand's split dim cut into the group's n chunks, moved
/// to the front ([n, block with d_s/n]) so that chunk r is the contiguous
/// piece `ein_comm_all_to_all` sends to rank r; the n received pieces (rank
/// order) are then placed along the concat dim as an all-gather's are.
struct AllToAllToCall : mlir::OpRewritePattern<mlir::mesh::AllToAllOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult
  matchAndRewrite(mlir::mesh::AllToAllOp op,
                  mlir::PatternRewriter &rewriter) const override {
    Calls c{rewriter, op.getLoc()};
    mlir::Value input = op.getInput();
    auto type = llvm::cast<mlir::RankedTensorType>(input.getType());
    auto resultType = llvm::cast<mlir::RankedTensorType>(op.getType());
    int64_t split = int64_t(op.getSplitAxis().getZExtValue());
    int64_t concat = int64_t(op.getConcatAxis().getZExtValue());
    int64_t rank = type.getRank();
    // Static shapes, split != concat (meshCollectiveRefusal()): the concat dim
    // grows by the group's size; the verifier checks that it divides d_s.
    int64_t n = resultType.getDimSize(concat) / type.getDimSize(concat);
    // [.., d_s, ..] -> [.., n, d_s/n, ..] -> [n, .., d_s/n, ..]
    llvm::SmallVector<int64_t> chunked, piece(type.getShape());
    llvm::SmallVector<mlir::ReassociationIndices> groups;
    for (int64_t i = 0, j = 0; i < rank; ++i) {
      if (i == split) {
        chunked.append({n, type.getDimSize(i) / n});
        groups.push_back({j, j + 1});
        j += 2;
        continue;
      }
      chunked.push_back(type.getDimSize(i));
      groups.push_back({j++});
    }
    piece[size_t(split)] /= n;
    mlir::Value expanded = rewriter.create<mlir::tensor::ExpandShapeOp>(
        c.loc, mlir::RankedTensorType::get(chunked, type.getElementType()),
        input, groups);
    llvm::SmallVector<int64_t> front = {split};
    for (int64_t i = 0; i <= rank; ++i)
      if (i != split)
        front.push_back(i);
    mlir::Value chunks = split == 0 ? expanded : c.permuted(expanded, front);
    auto pieceType = mlir::RankedTensorType::get(piece, type.getElementType());
    llvm::SmallVector<int64_t> received = {n};
    llvm::append_range(received, piece);
    mlir::Value send = c.copyOf(chunks);
    mlir::Value recv = c.alloc(
        mlir::RankedTensorType::get(received, type.getElementType()), {});
    c.moveBlocks(kAllToAllCall, send, recv, c.count(pieceType, input),
                 type.getElementType(), axisOf(op));
    rewriter.replaceOp(op,
                       c.concatenated(c.asTensor(recv), concat, resultType));
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
      if (!isLowered(op)) {
        op->emitError() << "ein-mesh-to-calls lowers mesh.all_reduce, "
                           "mesh.reduce_scatter, mesh.all_gather and "
                           "mesh.all_to_all; "
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
    patterns.add<AllReduceToCall, ReduceScatterToCall, AllGatherToCall,
                 AllToAllToCall>(&getContext());
    // Only the collectives (and the ops their patterns make) are rewritten:
    // a program without them leaves the pass as it came.
    mlir::GreedyRewriteConfig config;
    config.strictMode = mlir::GreedyRewriteStrictness::ExistingAndNewOps;
    if (!collectives.empty() && mlir::failed(mlir::applyOpPatternsAndFold(
                                    collectives, std::move(patterns), config)))
      return signalPassFailure();
    bool left = false;
    module.walk([&](mlir::Operation *op) {
      if (isLowered(op)) {
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
