// MLIRGen: the one bridge from the checked AST to `ein` IR, with source
// locations.
#include "ein/MLIRGen/MLIRGen.h"
#include "ein/Dialect/DiagnosticText.h"
#include "ein/Dialect/EinDialect.h"
#include "ein/Dialect/OpRules.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

#include <set>

namespace ein {

namespace {

class Generator {
public:
  Generator(mlir::MLIRContext &context, const CheckedModule &module)
      : context(context), builder(&context), source(module) {}

  mlir::OwningOpRef<mlir::ModuleOp> run() {
    mlir::OwningOpRef<mlir::ModuleOp> module =
        mlir::ModuleOp::create(loc(SourceLoc{1, 1}));
    // Sizes the checker derived (a free name matched against a number) join
    // the declared ones, unless two functions derived different values.
    Bindings dims = source.dims;
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
    for (auto &fn : source.functions)
      emitFunction(fn);
    return module;
  }

private:
  mlir::MLIRContext &context;
  mlir::OpBuilder builder;
  const CheckedModule &source;

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
    for (auto &op : fn.ops)
      emitOp(fn, op, values);
    llvm::SmallVector<mlir::Value> returned;
    for (unsigned id : fn.returns)
      returned.push_back(values.at(id));
    builder.create<mlir::func::ReturnOp>(loc(fn.loc), returned);
    builder.setInsertionPointAfter(func);
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

void registerEinDialects(mlir::MLIRContext &context) {
  context.loadDialect<EinDialect, mlir::func::FuncDialect>();
}

mlir::OwningOpRef<mlir::ModuleOp> buildEinModule(mlir::MLIRContext &context,
                                                 const CheckedModule &module) {
  registerEinDialects(context);
  return Generator(context, module).run();
}

ErrorOr<mlir::OwningOpRef<mlir::ModuleOp>>
buildVerifiedEinModule(mlir::MLIRContext &context,
                       const CheckedModule &module) {
  auto ir = buildEinModule(context, module);
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

} // namespace ein
