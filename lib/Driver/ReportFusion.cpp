// `einc report`'s fused column: which source ops the CPU pipeline's fusion
// passes put in one loop nest, read from the IR after them.
#include "ein/Conversion/CPU/Fusion.h"
#include "ein/Conversion/CPU/Pipelines.h"
#include "ein/Driver/Report.h"
#include "ein/MLIRGen/MLIRGen.h"
#include "ein/Sema/Checker.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <fmt/format.h>

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

/// The groups of one function's IR after fusion, in IR order: every op
/// inside a row-tile loop (whatever it is: a contraction fused there later
/// counts too), and each op on tensors ein-fuse-elementwise made outside
/// them.
/// Constants are left out: the canonicalizer merges equal ones of several
/// ops and hoists them out of loops.
std::vector<std::pair<std::string, std::set<std::string>>>
fusedGroups(mlir::ModuleOp module) {
  std::vector<std::pair<std::string, std::set<std::string>>> groups;
  module->walk<mlir::WalkOrder::PreOrder>([&](mlir::Operation *op) {
    if (op->hasAttr(kRowTilesAttr)) {
      std::set<std::string> keys;
      op->walk([&](mlir::Operation *inner) {
        if (!inner->hasTrait<mlir::OpTrait::ConstantLike>())
          appendSources(inner->getLoc(), keys);
      });
      groups.push_back({"rows", std::move(keys)});
      return mlir::WalkResult::skip();
    }
    // A loop nest on tensors (its body's scalar ops keep the locations of
    // the ops they were cloned from).
    bool tensors = llvm::any_of(op->getResultTypes(), [](mlir::Type t) {
      return llvm::isa<mlir::TensorType>(t);
    });
    if (tensors && !op->hasTrait<mlir::OpTrait::ConstantLike>() &&
        isFusedByElementwise(op->getLoc())) {
      std::set<std::string> keys;
      appendSources(op->getLoc(), keys);
      groups.push_back({"elementwise", std::move(keys)});
      return mlir::WalkResult::skip();
    }
    return mlir::WalkResult::advance();
  });
  return groups;
}

FunctionFusion fusionOf(const CheckedModule &module, const CheckedFunction &fn,
                        const CPUOptions &cpu) {
  FunctionFusion result;
  result.groups.resize(fn.ops.size());
  if (!cpu.fusion) {
    result.off = true;
    return result;
  }
  // Lowering gives every tensor a fixed rank (as `einc build`).
  if (auto pack = variadicOfUnknownRank(fn)) {
    result.unknown =
        fmt::format("the rank of variadic {} is not fixed (--rank {}=N)", *pack,
                    *pack == "..." ? "PARAM..." : *pack);
    return result;
  }
  // The function alone, so that another one that does not compile does not
  // hide its fusion (calls are inlined: it needs no other).
  CheckedModule single;
  single.path = module.path;
  single.files = module.files;
  single.dims = module.dims;
  single.functions.push_back(fn);
  mlir::MLIRContext context;
  auto ir = buildVerifiedEinModule(context, single);
  if (!ir) {
    result.unknown = "its ein IR does not verify";
    return result;
  }
  if (auto lowered = lowerToStage(**ir, CPUStage::Fused, cpu); !lowered) {
    result.unknown = "the CPU pipeline fails on it";
    // Its first diagnostic, without the location (the table says where).
    std::string first = lowered.error().context;
    first = first.substr(0, first.find('\n'));
    if (size_t at = first.find("error: "); at != std::string::npos)
      result.unknown += ": " + first.substr(at + 7);
    return result;
  }
  std::map<std::string, std::vector<size_t>> opsAt;
  for (size_t i = 0; i < fn.ops.size(); ++i)
    opsAt[keyOfOp(module, fn, fn.ops[i])].push_back(i);
  std::map<std::string, int> counts;
  for (auto &[kind, keys] : fusedGroups(**ir)) {
    std::set<size_t> members;
    for (auto &key : keys)
      if (auto it = opsAt.find(key); it != opsAt.end())
        members.insert(it->second.begin(), it->second.end());
    // A loop computing one source op (its fill and its generic) is that
    // op's own loop nest.
    if (members.size() < 2)
      continue;
    std::string name = fmt::format("{}#{}", kind, ++counts[kind]);
    for (size_t i : members) {
      std::string &label = result.groups[i];
      label += (label.empty() ? "" : ",") + name;
    }
  }
  return result;
}

} // namespace

std::map<std::string, FunctionFusion> analyzeFusion(const CheckedModule &module,
                                                    const std::string &function,
                                                    const CPUOptions &cpu) {
  std::map<std::string, FunctionFusion> byName;
  for (auto &fn : module.functions)
    if (function.empty() || fn.name == function)
      byName[fn.name] = fusionOf(module, fn, cpu);
  return byName;
}

} // namespace ein
