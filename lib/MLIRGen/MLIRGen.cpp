// MLIRGen: the one bridge from the checked AST to `ein` IR, with source
// locations.
#include "ein/MLIRGen/MLIRGen.h"
#include "ein/Dialect/DiagnosticText.h"
#include "ein/Dialect/EinDialect.h"
#include "ein/Dialect/MeshReduction.h"
#include "ein/Dialect/OpRules.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Mesh/IR/MeshDialect.h"
#include "mlir/Dialect/Mesh/IR/MeshOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>

namespace ein {

namespace {

/// The whole of a dim gathered from blocks `block` over a mesh axis of `n`
/// ranks (-1: unknown): the product, a number where `dims` gives the
/// block's size and n is known, by the axis's name where n is not.
Dim gatheredWhole(const Dim &block, int64_t n, const std::string &axis,
                  const Bindings &dims) {
  auto size = block.size.evaluate(dims);
  if (size && n > 0)
    return Dim::ofSize(SizeExpr::constant(*size * n));
  if (n > 0)
    return Dim::ofSize(block.size * SizeExpr::constant(n));
  return Dim::ofSize(block.size * SizeExpr::symbol(axis));
}

/// The size of mesh axis `axis` in `mesh` (-1 where open or not an axis).
int64_t axisSizeOf(const MeshProgram &mesh, const std::string &axis) {
  for (size_t i = 0; i < mesh.axes.size(); ++i)
    if (mesh.axes[i] == axis)
      return mesh.sizes[i];
  return -1;
}

/// The dim collective `k` of `mesh` cuts as an all-to-all, or -1.
int64_t splitDimOf(const MeshProgram &mesh, size_t k) {
  return k < mesh.splitDims.size() ? mesh.splitDims[k] : -1;
}

class Generator {
public:
  Generator(mlir::MLIRContext &context, const CheckedModule &module,
            const MeshProgram *mesh = nullptr)
      : context(context), builder(&context), source(module), mesh(mesh) {}

  mlir::OwningOpRef<mlir::ModuleOp> run() {
    mlir::OwningOpRef<mlir::ModuleOp> module =
        mlir::ModuleOp::create(loc(SourceLoc{1, 1}));
    // Sizes the checker derived (a free name matched against a number) join
    // the declared ones, unless two functions derived different values.
    dims = source.dims;
    std::set<std::string> conflicting;
    for (auto &fn : source.functions)
      for (auto &[name, value] : fn.ctx.inferred) {
        auto [it, added] = dims.emplace(name, value);
        if (!added && it->second != value && !source.dims.count(name))
          conflicting.insert(name);
      }
    for (auto &name : conflicting)
      dims.erase(name);
    setModuleDims(*module, dims);
    builder.setInsertionPointToEnd(module->getBody());
    if (mesh) {
      llvm::SmallVector<int64_t> shape;
      for (int64_t n : mesh->sizes)
        shape.push_back(n < 0 ? mlir::ShapedType::kDynamic : n);
      builder.create<mlir::mesh::MeshOp>(loc(SourceLoc{1, 1}), "mesh", shape);
    }
    for (auto &fn : source.functions)
      emitFunction(fn);
    return module;
  }

private:
  mlir::MLIRContext &context;
  mlir::OpBuilder builder;
  const CheckedModule &source;
  const MeshProgram *mesh;
  Bindings dims; // the module's sizes: a builtin tensor's static dims

  mlir::Location loc(SourceLoc l) {
    return mlir::FileLineColLoc::get(&context, source.pathOf(l), l.line, l.col);
  }

  /// An inlined op is at its line in the callee, called from each call
  /// site in turn (so a diagnostic still points at the callee's line).
  mlir::Location loc(const CheckedFunction &fn, const CheckedOp &op) {
    mlir::Location l = loc(op.loc);
    for (int site = op.callSite; site >= 0; site = fn.callSites[site].parent)
      l = mlir::CallSiteLoc::get(l, loc(fn.callSites[site].loc));
    return l;
  }

  mlir::Type typeOf(const CheckedFunction &fn, unsigned id) {
    const TensorType &t = fn.values[id].type;
    // Packs whose rank became known later in the function are expanded.
    return toMLIRType(&context, TensorType{fn.ctx.expand(t.shape), t.dtype});
  }

  void emitFunction(const CheckedFunction &fn) {
    llvm::SmallVector<mlir::Type> params, results;
    for (unsigned id : fn.params)
      params.push_back(typeOf(fn, id));
    // The returned values' types, which the checker proved equal to the
    // declared ones (func.return needs them identical, not just equal).
    for (unsigned id : fn.returns)
      results.push_back(typeOf(fn, id));
    auto func = builder.create<mlir::func::FuncOp>(
        loc(fn.loc), fn.name, builder.getFunctionType(params, results));
    llvm::SmallVector<mlir::Attribute> checks;
    for (auto &c : fn.ctx.constraints)
      checks.push_back(builder.getStringAttr(c.str()));
    for (auto &[name, value] : fn.ctx.inferred)
      checks.push_back(builder.getStringAttr(name + " == " + toString(value)));
    if (!checks.empty())
      func->setAttr("ein.entry_checks", builder.getArrayAttr(checks));
    if (fn.hasIndexStatus())
      func->setAttr(kIndexStatusAttr, builder.getUnitAttr());
    mlir::Block *entry = func.addEntryBlock();
    mlir::OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(entry);

    std::map<unsigned, mlir::Value> values;
    for (size_t i = 0; i < fn.params.size(); ++i)
      values[fn.params[i]] = entry->getArgument(i);
    for (size_t i = 0; i < fn.ops.size(); ++i) {
      emitOp(fn, fn.ops[i], values);
      if (mesh)
        for (size_t k = 0; k < mesh->collectives.size(); ++k)
          if (mesh->points[k] == i)
            emitCollective(fn, k, values);
    }
    llvm::SmallVector<mlir::Value> returned;
    llvm::SmallVector<mlir::Type> returnedTypes;
    for (unsigned id : fn.returns) {
      returned.push_back(values.at(id));
      returnedTypes.push_back(values.at(id).getType());
    }
    builder.create<mlir::func::ReturnOp>(loc(fn.loc), returned);
    // A reduce-scattered result is a block of the value the ops made.
    if (mesh)
      func.setType(builder.getFunctionType(params, returnedTypes));
    builder.setInsertionPointAfter(func);
  }

  /// The builtin tensor of an `ein` tensor: a dim of unknown size is `?`.
  mlir::RankedTensorType builtinOf(EinTensorType t) {
    llvm::SmallVector<int64_t> shape;
    for (const Dim &d : t.getShape()) {
      auto n = d.size.evaluate(dims);
      shape.push_back(n ? int64_t(*n) : mlir::ShapedType::kDynamic);
    }
    return mlir::RankedTensorType::get(shape, t.getElementType());
  }

  mlir::Value cast(mlir::Location l, mlir::Value v, mlir::Type to) {
    return builder.create<mlir::UnrealizedConversionCastOp>(l, to, v).getResult(
        0);
  }

  /// Collective `k` of the mesh on its value: an all-reduce keeps the
  /// block's shape; a reduce-scatter keeps one n-th of its scatter dim; an
  /// all-gather (of a result) grows its gathered dim n-fold. A
  /// mean is MLIR's `average` (the group's mean: the sum over the group's
  /// size, what the sharded run computes).
  void emitCollective(const CheckedFunction &fn, size_t k,
                      std::map<unsigned, mlir::Value> &values) {
    const InferredCollective &c = mesh->collectives[k];
    mlir::Location l = loc(c.loc);
    int16_t axis = 0;
    for (size_t i = 0; i < mesh->axes.size(); ++i)
      if (mesh->axes[i] == c.axis)
        axis = int16_t(i);
    mlir::Value in = values.at(c.value);
    auto einType = mlir::cast<EinTensorType>(in.getType());
    mlir::RankedTensorType type = builtinOf(einType);
    mlir::Value tensor = cast(l, in, type);
    mlir::Value out;
    EinTensorType outType = einType;
    if (c.kind == CollectiveKind::AllGather ||
        c.kind == CollectiveKind::AllToAll) {
      // The gathered (concat) dim grows n-fold; an all-to-all's split dim
      // keeps one n-th.
      int64_t j = mesh->scatterDims[k], s = splitDimOf(*mesh, k);
      int64_t n = mesh->sizes[size_t(axis)];
      Shape shape = einType.getShape();
      shape[size_t(j)] = gatheredWhole(shape[size_t(j)], n, c.axis, dims);
      if (c.kind == CollectiveKind::AllToAll)
        shape[size_t(s)] = scatteredBlock(shape[size_t(s)], n, c.axis, dims);
      outType = einType.withShape(shape);
      mlir::RankedTensorType resultType = builtinOf(outType);
      if (c.kind == CollectiveKind::AllGather)
        out = builder.create<mlir::mesh::AllGatherOp>(
            l, resultType, "mesh", llvm::ArrayRef<int16_t>{axis}, tensor,
            llvm::APInt(64, uint64_t(j)));
      else
        out = builder.create<mlir::mesh::AllToAllOp>(
            l, resultType, "mesh", llvm::ArrayRef<int16_t>{axis}, tensor,
            llvm::APInt(64, uint64_t(splitDimOf(*mesh, k))),
            llvm::APInt(64, uint64_t(j)));
      values[c.value] = cast(l, out, outType);
      return;
    }
    mlir::mesh::ReductionKind reduction =
        meshReduction(*compiledReduction(c.reduction));
    if (c.kind == CollectiveKind::ReduceScatter) {
      int64_t j = mesh->scatterDims[k];
      int64_t n = mesh->sizes[size_t(axis)];
      Shape shape = einType.getShape();
      llvm::SmallVector<int64_t> sizes(type.getShape());
      shape[size_t(j)] = scatteredBlock(shape[size_t(j)], n, c.axis, dims);
      auto block = shape[size_t(j)].size.evaluate(dims);
      sizes[size_t(j)] = block ? int64_t(*block) : mlir::ShapedType::kDynamic;
      outType = einType.withShape(shape);
      out = builder.create<mlir::mesh::ReduceScatterOp>(
          l, mlir::RankedTensorType::get(sizes, type.getElementType()), "mesh",
          llvm::ArrayRef<int16_t>{axis}, tensor, reduction,
          llvm::APInt(64, uint64_t(j)));
    } else {
      assert(c.kind == CollectiveKind::AllReduce &&
             "buildVerifiedShardedEinModule refuses the others");
      out = builder.create<mlir::mesh::AllReduceOp>(
          l, type, "mesh", llvm::ArrayRef<int16_t>{axis}, tensor, reduction);
    }
    values[c.value] = cast(l, out, outType);
  }

  /// Builds `op` with its registry row's `buildFooOp` (ein/Dialect/OpRules.h,
  /// beside the op's verifier), chosen by a switch generated from the
  /// registry: MLIRGen names no op.
  void emitOp(const CheckedFunction &fn, const CheckedOp &op,
              std::map<unsigned, mlir::Value> &values) {
    llvm::SmallVector<mlir::Value> operands;
    for (unsigned id : op.operands)
      operands.push_back(values.at(id));
    llvm::SmallVector<mlir::Type> results;
    for (unsigned id : op.results)
      results.push_back(typeOf(fn, id));
    mlir::Operation *built = build(loc(fn, op), results, operands, op);
    for (size_t i = 0; i < op.results.size(); ++i)
      values[op.results[i]] = built->getResult(i);
  }

  mlir::Operation *build(mlir::Location l, mlir::TypeRange results,
                         mlir::ValueRange operands, const CheckedOp &op) {
    switch (op.kind) {
#define EIN_OP(Kind, Name, OpClass)                                            \
  case OpKind::Kind:                                                           \
    return build##OpClass(builder, l, results, operands, op);
#include "ein/Sema/Ops.def"
    }
    llvm_unreachable("every OpKind is a row of Ops.def");
  }
};

} // namespace

Dim scatteredBlock(const Dim &whole, int64_t n, const std::string &axis,
                   const Bindings &dims) {
  auto size = whole.size.evaluate(dims);
  if (size && n > 0)
    return Dim::ofSize(SizeExpr::constant(*size / n));
  return Dim::ofSize(SizeExpr::quotient(whole.size, SizeExpr::symbol(axis)));
}

std::vector<TensorType> meshResultTypes(const CheckedFunction &fn,
                                        const MeshProgram &mesh) {
  std::vector<TensorType> types;
  for (unsigned id : fn.returns) {
    const TensorType &t = fn.values[id].type;
    TensorType type{fn.ctx.expand(t.shape), t.dtype};
    for (size_t k = 0; k < mesh.collectives.size(); ++k) {
      const InferredCollective &c = mesh.collectives[k];
      if (c.value != id || mesh.scatterDims[k] < 0)
        continue;
      int64_t n = axisSizeOf(mesh, c.axis);
      Dim &d = type.shape[size_t(mesh.scatterDims[k])];
      if (c.kind == CollectiveKind::ReduceScatter)
        d = scatteredBlock(d, n, c.axis, fn.ctx.env);
      else if (c.kind == CollectiveKind::AllGather ||
               c.kind == CollectiveKind::AllToAll)
        d = gatheredWhole(d, n, c.axis, fn.ctx.env);
      if (c.kind == CollectiveKind::AllToAll && splitDimOf(mesh, k) >= 0) {
        Dim &cut = type.shape[size_t(splitDimOf(mesh, k))];
        cut = scatteredBlock(cut, n, c.axis, fn.ctx.env);
      }
    }
    types.push_back(std::move(type));
  }
  return types;
}

void registerEinDialects(mlir::MLIRContext &context) {
  context.loadDialect<EinDialect, mlir::func::FuncDialect,
                      mlir::mesh::MeshDialect>();
}

mlir::OwningOpRef<mlir::ModuleOp> buildEinModule(mlir::MLIRContext &context,
                                                 const CheckedModule &module) {
  registerEinDialects(context);
  return Generator(context, module).run();
}

namespace {
ErrorOr<mlir::OwningOpRef<mlir::ModuleOp>>
verified(mlir::MLIRContext &context, mlir::OwningOpRef<mlir::ModuleOp> ir) {
  std::string diagnostics;
  llvm::raw_string_ostream errors(diagnostics);
  // The message and its location, not a dump of the operation.
  context.printOpOnDiagnostic(false);
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    errors << diagnosticText(d);
    return mlir::success();
  });
  if (mlir::failed(mlir::verify(*ir)))
    return Error::program("the ein IR does not verify")
        .withContext(std::move(diagnostics));
  return std::move(ir);
}
} // namespace

ErrorOr<mlir::OwningOpRef<mlir::ModuleOp>>
buildVerifiedEinModule(mlir::MLIRContext &context,
                       const CheckedModule &module) {
  return verified(context, buildEinModule(context, module));
}

namespace {
/// Whether collective `k` is an all-gather (along scatterDims[k]) or an
/// all-to-all (from scatterDims[k] to splitDims[k]) of a result that no op
/// after it reads: its names are then whole (or blocked) only in the
/// result, and the local program checked at the other size holds it. One
/// read later needs the later ops at the new sizes (a local program per
/// phase: the sharded run cuts there).
bool movesAResult(const CheckedModule &local, const MeshProgram &mesh,
                  size_t k) {
  const InferredCollective &c = mesh.collectives[k];
  if (mesh.scatterDims[k] < 0)
    return false;
  if (c.kind == CollectiveKind::AllToAll &&
      (splitDimOf(mesh, k) < 0 || splitDimOf(mesh, k) == mesh.scatterDims[k]))
    return false;
  if (c.kind != CollectiveKind::AllGather && c.kind != CollectiveKind::AllToAll)
    return false;
  for (const CheckedFunction &fn : local.functions) {
    if (std::find(fn.returns.begin(), fn.returns.end(), c.value) ==
        fn.returns.end())
      return false;
    for (size_t i = mesh.points[k] + 1; i < fn.ops.size(); ++i)
      if (std::find(fn.ops[i].operands.begin(), fn.ops[i].operands.end(),
                    c.value) != fn.ops[i].operands.end())
        return false;
  }
  return true;
}
} // namespace

ErrorOr<mlir::OwningOpRef<mlir::ModuleOp>>
buildVerifiedShardedEinModule(mlir::MLIRContext &context,
                              const CheckedModule &local,
                              const MeshProgram &mesh) {
  // All-reduces, reduce-scatters, and all-gathers and all-to-alls of a
  // result are built;
  // the others are refused by name, never built as another collective.
  for (size_t k = 0; k < mesh.collectives.size(); ++k) {
    const InferredCollective &c = mesh.collectives[k];
    bool built = false;
    switch (c.kind) {
    case CollectiveKind::AllReduce:
    case CollectiveKind::ReduceScatter:
      built = true;
      break;
    case CollectiveKind::AllGather:
    case CollectiveKind::AllToAll:
      if (movesAResult(local, mesh, k))
        continue;
      break;
    case CollectiveKind::Broadcast:
      break;
    }
    if (built && !compiledReduction(c.reduction))
      return Error::at(
          ErrorKind::Program, local.pathOf(c.loc), c.loc.line, c.loc.col,
          fmt::format("einc emit of an {} of a {} over {} ({}) is "
                      "not built: sums, means, maxima and minima "
                      "are",
                      collectiveName(c.kind), reduceKindName(c.reduction),
                      c.axis, c.reason));
    if (!built)
      return Error::at(ErrorKind::Program, local.pathOf(c.loc), c.loc.line,
                       c.loc.col,
                       fmt::format("einc emit of an {} over {} ({}) is not "
                                   "built yet: the IR shows all-reduces, "
                                   "reduce-scatters, and all-gathers and "
                                   "all-to-alls of a result no later op "
                                   "reads",
                                   collectiveName(c.kind), c.axis, c.reason));
  }
  registerEinDialects(context);
  return verified(context, Generator(context, local, &mesh).run());
}

} // namespace ein
