// Reading the CPU pipeline's fusion back to source ops: which ops of a
// checked function its fusion passes compute in one loop nest (for the
// fused column of `einc report`).
#include "ein/Compile/Compile.h"
#include "ein/Compile/SourceOps.h"
#include "ein/Conversion/CPU/Fusion.h"
#include "ein/MLIRGen/MLIRGen.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <fmt/format.h>

#include <map>
#include <set>

namespace ein {

namespace {

/// A source location as text, "FILE:LINE:COL", followed by "@FILE:LINE:COL"
/// for each call it was inlined through, innermost first: what MLIRGen
/// builds (a FileLineColLoc in CallSiteLocs), read back from either side.
std::string sourceKey(const std::string &file, unsigned line, unsigned col) {
  return fmt::format("{}:{}:{}", file, line, col);
}

std::string keyOfOp(const CheckedModule &module, const CheckedFunction &fn,
                    const CheckedOp &op) {
  std::string key = sourceKey(module.pathOf(op.loc), op.loc.line, op.loc.col);
  for (int site = op.callSite; site >= 0; site = fn.callSites[site].parent) {
    SourceLoc l = fn.callSites[site].loc;
    key += "@" + sourceKey(module.pathOf(l), l.line, l.col);
  }
  return key;
}

std::optional<std::string> keyOfLocation(mlir::Location loc) {
  if (auto file = llvm::dyn_cast<mlir::FileLineColLoc>(loc))
    return sourceKey(file.getFilename().str(), file.getLine(),
                     file.getColumn());
  if (auto name = llvm::dyn_cast<mlir::NameLoc>(loc))
    return keyOfLocation(name.getChildLoc());
  if (auto call = llvm::dyn_cast<mlir::CallSiteLoc>(loc)) {
    auto callee = keyOfLocation(call.getCallee());
    auto caller = keyOfLocation(call.getCaller());
    if (callee && caller)
      return *callee + "@" + *caller;
  }
  return std::nullopt;
}

/// The source locations an op computes: a fused location's parts,
/// recursively (whatever their metadata), else the location itself.
void appendSources(mlir::Location loc, std::set<std::string> &keys) {
  if (auto fused = llvm::dyn_cast<mlir::FusedLoc>(loc)) {
    for (mlir::Location part : fused.getLocations())
      appendSources(part, keys);
    return;
  }
  if (auto key = keyOfLocation(loc))
    keys.insert(*key);
}

/// Whether `loc` is the location ein-fuse-elementwise gives a fused op.
bool isFusedByElementwise(mlir::Location loc) {
  auto fused = llvm::dyn_cast<mlir::FusedLoc>(loc);
  auto tag = fused
                 ? llvm::dyn_cast_or_null<mlir::StringAttr>(fused.getMetadata())
                 : nullptr;
  return tag && tag.getValue() == kFusedLocationTag;
}

/// The loop nests of the IR after fusion, in IR order, as the locations of
/// their ops:
/// every op inside a row-tile loop (whatever it is: a contraction fused
/// there later counts too), and each op on tensors ein-fuse-elementwise
/// made outside them. Constants are left out: the canonicalizer merges
/// equal ones of several ops and hoists them out of loops.
std::vector<std::pair<std::string, std::vector<mlir::Location>>>
loopNests(mlir::ModuleOp module) {
  std::vector<std::pair<std::string, std::vector<mlir::Location>>> nests;
  module->walk<mlir::WalkOrder::PreOrder>([&](mlir::Operation *op) {
    if (op->hasAttr(kRowTilesAttr)) {
      std::vector<mlir::Location> locs;
      op->walk([&](mlir::Operation *inner) {
        if (!inner->hasTrait<mlir::OpTrait::ConstantLike>())
          locs.push_back(inner->getLoc());
      });
      nests.push_back({"rows", std::move(locs)});
      return mlir::WalkResult::skip();
    }
    // A loop nest on tensors (its body's scalar ops keep the locations of
    // the ops they were cloned from).
    bool tensors = llvm::any_of(op->getResultTypes(), [](mlir::Type t) {
      return llvm::isa<mlir::TensorType>(t);
    });
    if (tensors && !op->hasTrait<mlir::OpTrait::ConstantLike>() &&
        isFusedByElementwise(op->getLoc())) {
      nests.push_back({"elementwise", {op->getLoc()}});
      return mlir::WalkResult::skip();
    }
    return mlir::WalkResult::advance();
  });
  return nests;
}

} // namespace

CheckedModule withOnlyFunction(const CheckedModule &module,
                               const CheckedFunction &fn) {
  CheckedModule single;
  single.path = module.path;
  single.files = module.files;
  single.dims = module.dims;
  single.functions.push_back(fn);
  return single;
}

SourceOps::SourceOps(const CheckedModule &module, const CheckedFunction &fn) {
  for (size_t i = 0; i < fn.ops.size(); ++i)
    opsAt[keyOfOp(module, fn, fn.ops[i])].push_back(i);
}

std::vector<size_t> SourceOps::at(mlir::Location loc) const {
  std::set<std::string> keys;
  appendSources(loc, keys);
  std::set<size_t> members;
  for (auto &key : keys)
    if (auto it = opsAt.find(key); it != opsAt.end())
      members.insert(it->second.begin(), it->second.end());
  return {members.begin(), members.end()};
}

ErrorOr<std::vector<FusedLoopNest>> fusedLoopNests(const CheckedModule &module,
                                                   const CheckedFunction &fn,
                                                   const CPUOptions &options) {
  mlir::MLIRContext context;
  auto ir = buildVerifiedEinModule(context, withOnlyFunction(module, fn));
  if (!ir)
    return ir.error();
  if (auto lowered = lowerToStage(**ir, CPUStage::Fused, options); !lowered)
    return lowered.error();
  SourceOps sources(module, fn);
  std::vector<FusedLoopNest> nests;
  for (auto &[kind, locs] : loopNests(**ir)) {
    std::set<size_t> members;
    for (mlir::Location loc : locs)
      for (size_t i : sources.at(loc))
        members.insert(i);
    nests.push_back({kind, {members.begin(), members.end()}});
  }
  return nests;
}

} // namespace ein
