// The CUDA target: ein IR (after ein-split-einsums) to one CUDA C++ source.
//
// Every op becomes one call of the runtime (lib/Target/CUDA/Runtime) on
// strided views: an op's elementary axes are a view of its operand
// (`ein_split`), any permutation, diagonal or broadcast of them another one
// (`ein_pick`), so that rearrange and repeat are views until a merge of axes
// needs a copy (`ein_merge`, decided at run time, when strides are known),
// reductions are `ein_reduce`, pairwise einsums `ein_contract` (cuBLASLt),
// pack and unpack copies into and views of slices, and each tree of
// elementwise ops one `ein_map` with a generated functor. See docs/cuda.md.
//
// This file is the emitter's core: the module and function walk, the entry
// point and main(). What each op becomes is its registry row's emit
// function (FunctionEmitter::emit<Kind>, FunctionEmitter.h), in its
// family's file Ops/<Family>.cpp beside the row's describe function.
#include "ein/Target/CUDA/EmitCUDA.h"

#include "FunctionEmitter.h"

#include "ein/Compile/Compile.h"
#include "ein/Compile/SourceOps.h"

#include "ein/MLIRGen/MLIRGen.h"
#include "ein/Shape/SizeReads.h"
#include "ein/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <algorithm>
#include <functional>

namespace ein {

namespace {

/// The runtime's files, in the order they are pasted (RuntimeText.inc is
/// generated from lib/Target/CUDA/Runtime by EmbedRuntime.cmake).
struct RuntimeFile {
  const char *name;
  const char *text;
};
const RuntimeFile runtimeFiles[] = {
#include "RuntimeText.inc"
};

} // namespace

namespace cuda {

// ------------------------------------------------------------- dispatch

void FunctionEmitter::emitOp(mlir::Operation *op) {
  if (fused.count(op) || inEpilogue.count(op) || inRows.count(op) ||
      emitMeshOp(op))
    return;
  if (auto group = rowGroups.find(op); group != rowGroups.end())
    return emitRowKernel(group->second);
#define EIN_OP(Kind, Name, OpClass)                                            \
  if (auto o = mlir::dyn_cast<OpClass>(op))                                    \
    return emit##Kind(o);
#include "ein/Sema/Ops.def"
  fail(op, fmt::format("the op '{}' has no CUDA lowering",
                       op->getName().getStringRef().str()));
}

void FunctionEmitter::plan() {
  mlir::Block &body = func.getBody().front();
  auto ret = mlir::cast<mlir::func::ReturnOp>(body.getTerminator());
  for (auto [k, v] : llvm::enumerate(ret.getOperands()))
    if (v.getDefiningOp() && !directOutput.count(v.getAsOpaquePointer()))
      directOutput[v.getAsOpaquePointer()] = k;
  planEpilogues();
  planRows();
  planFusion();
}

std::vector<std::pair<std::string, std::vector<mlir::Operation *>>>
FunctionEmitter::fusionGroups() {
  plan();
  std::vector<std::pair<std::string, std::vector<mlir::Operation *>>> groups;
  for (mlir::Operation &o : func.getBody().front().without_terminator()) {
    mlir::Operation *op = &o;
    std::set<mlir::Operation *> members;
    std::string kind;
    if (auto row = rowGroups.find(op); row != rowGroups.end()) {
      kind = "rows";
      for (auto &[member, root] : inRows)
        if (root == op)
          members.insert(member);
    } else if (auto epi = epilogues.find(op); epi != epilogues.end()) {
      kind = "epilogue";
      members.insert(epi->second.ops.begin(), epi->second.ops.end());
    } else if (isElementwise(op) && !fused.count(op) && !inEpilogue.count(op) &&
               !inRows.count(op)) {
      // A functor's root: the fused ops it inlines, transitively.
      kind = "elementwise";
      std::vector<mlir::Operation *> work = {op};
      while (!work.empty()) {
        mlir::Operation *o = work.back();
        work.pop_back();
        for (mlir::Value v : o->getOperands())
          if (mlir::Operation *def = v.getDefiningOp();
              def && fused.count(def) && members.insert(def).second)
            work.push_back(def);
      }
    }
    std::vector<mlir::Operation *> ops;
    for (mlir::Operation &m : func.getBody().front().without_terminator())
      if ((&m == op || members.count(&m)) && !mlir::isa<ConstantOp>(&m))
        ops.push_back(&m);
    if (ops.size() > 1)
      groups.push_back({kind, ops});
  }
  return groups;
}

std::string FunctionEmitter::emit() {
  std::vector<std::string> chunks;
  std::string head;
  chunk = &head;
  fmt::format_to(out(), "extern \"C\" {} {{\n{}", entry.signature,
                 entry.checks);
  // A function with a take counts its ids out of range on the device (and
  // a dropout with a run-time p a p outside [0, 1)); the entry then waits
  // for its stream to read the count (EIN_ERR_INDEX).
  if (fn.hasIndexStatus())
    *chunk += "  unsigned long long *ein_status = ein_status_begin(stream);\n";
  // Collectives need the host's communicators (Runtime/ein_cuda_comm.cuh).
  if (hasCollectives())
    *chunk += "  if (!ein_comm_installed()) return EIN_ERR_COMM;\n";
  mlir::Block &body = func.getBody().front();
  auto ret = mlir::cast<mlir::func::ReturnOp>(body.getTerminator());
  plan();
  // Views of the arguments (device pointers) and of the outputs.
  size_t nParams = fn.params.size();
  for (size_t i = 0; i < entry.tensors.size(); ++i) {
    bool isOut = i >= nParams;
    DType t = isOut ? fn.values[fn.returns[i - nParams]].type.dtype
                    : fn.values[fn.params[i]].type.dtype;
    const std::string &name = entry.tensors[i];
    std::string var = isOut ? fmt::format("o{}", i - nParams) : fresh("v");
    fmt::format_to(out(),
                   "  {0} {1} = ein_make_view<{2}{3}, {4}>(({2}{3} *){5}_data, "
                   "{5}_sizes, {5}_strides);\n",
                   viewType(t, entry.ranks[i], !isOut), var,
                   isOut ? "" : "const ", storageType(t), entry.ranks[i], name);
    if (!isOut) {
      ValueView v;
      v.name = var;
      v.dtype = t;
      v.rank = entry.ranks[i];
      values[body.getArgument(i).getAsOpaquePointer()] = v;
    }
  }
  std::vector<mlir::Operation *> ops;
  for (mlir::Operation &op : body.without_terminator())
    ops.push_back(&op);
  chunks.resize(ops.size() + 1);
  for (opIndex = 0; opIndex < ops.size(); ++opIndex) {
    chunk = &chunks[opIndex];
    emitOp(ops[opIndex]);
  }
  // Results not written in place: copies into the outputs.
  chunk = &chunks[ops.size()];
  for (auto [k, v] : llvm::enumerate(ret.getOperands())) {
    if (written.count(k))
      continue;
    const ValueView &value = view(v, ret);
    fmt::format_to(out(), "  ein_move(stream, o{}, {});\n", k, value.name);
  }
  // Temporaries are freed after their last reader.
  // An op inlined into a functor reads its operands where its root runs.
  std::map<mlir::Operation *, size_t> index;
  for (size_t i = 0; i < ops.size(); ++i)
    index[ops[i]] = i;
  // (An op computed in two functors reads them at the later one; an op of
  // a row kernel where its root runs.)
  std::function<size_t(mlir::Operation *)> readAt = [&](mlir::Operation *op) {
    if (auto row = inRows.find(op); row != inRows.end())
      return index.at(row->second);
    if (fused.count(op)) {
      size_t last = 0;
      for (mlir::Operation *user : op->getResult(0).getUsers())
        last = std::max(last, readAt(user));
      return last;
    }
    auto it = index.find(op);
    return it == index.end() ? ops.size() : it->second;
  };
  for (size_t i = 0; i < ops.size(); ++i)
    for (mlir::Value operand : ops[i]->getOperands())
      if (values.count(operand.getAsOpaquePointer()))
        for (int o : values[operand.getAsOpaquePointer()].owners)
          ownerLastUse[o] = std::max(ownerLastUse[o], readAt(ops[i]));
  for (mlir::Value operand : ret.getOperands())
    for (int o : values[operand.getAsOpaquePointer()].owners)
      ownerLastUse[o] = ops.size();
  std::string text = head;
  for (size_t i = 0; i <= ops.size(); ++i) {
    text += chunks[i];
    for (size_t o = 0; o < ownerLastUse.size(); ++o)
      if (ownerLastUse[o] == i || (i == ops.size() && ownerLastUse[o] > i))
        text += fmt::format("  ein_free(stream, t{});\n", o);
  }
  if (fn.hasIndexStatus())
    text += "  if (ein_status_end(stream, ein_status)) return EIN_ERR_INDEX;\n";
  text += "  return EIN_OK;\n}\n";
  return text;
}

} // namespace cuda

namespace {

std::string mainFunction(const CheckedFunction &fn, const CEntry &entry) {
  std::string s;
  auto out = std::back_inserter(s);
  size_t nParams = fn.params.size();
  std::vector<std::string> args, ranks, bytes;
  for (size_t i = 0; i < entry.tensors.size(); ++i) {
    bool isOut = i >= nParams;
    DType t = isOut ? fn.values[fn.returns[i - nParams]].type.dtype
                    : fn.values[fn.params[i]].type.dtype;
    args.push_back(fmt::format("({}{} *)data[{}], {}, sizes[{}], strides[{}]",
                               isOut ? "" : "const ", cType(t), i,
                               entry.ranks[i], i, i));
    ranks.push_back(std::to_string(entry.ranks[i]));
    bytes.push_back(std::to_string(dtypeBytes(t)));
  }
  fmt::format_to(
      out,
      "\nstatic int ein_main_call(void *const *data, const int64_t "
      "*const *sizes,\n    const int64_t *const *strides, "
      "cudaStream_t stream) {{\n  return ein_{}({}{}stream);\n}}\n\n"
      "int main(int argc, char **argv) {{\n"
      "  static const int ranks[] = {{{}{}0}}, bytes[] = {{{}{}0}};\n"
      "  EinMainSpec spec = {{\"{}\", {}, {}, ranks, bytes, "
      "ein_main_call}};\n  return ein_main(argc, argv, spec);\n}}\n",
      cName(fn.name), fmt::join(args, ",\n      "), args.empty() ? "" : ", ",
      fmt::join(ranks, ", "), ranks.empty() ? "" : ", ", fmt::join(bytes, ", "),
      bytes.empty() ? "" : ", ", cName(fn.name), nParams, fn.returns.size());
  return s;
}

/// Why size-generic code cannot know some size of `fn` at its entry (a name
/// that appears only in a product of free names, as `h*d`), if it cannot:
/// the entry point reads every size from its arguments.
std::optional<std::string> unreadableSize(const CheckedFunction &fn) {
  std::vector<Shape> params;
  for (unsigned id : fn.params)
    params.push_back(fn.ctx.expand(fn.values[id].type.shape));
  SizeReadPlan plan = planSizeReads(params, fn.ctx.env);
  if (!plan.unreadable.empty())
    return fmt::format("size-generic code cannot read '{}' from the arguments' "
                       "sizes (it appears only in {}); bind it with --dim",
                       plan.unreadable.front().first,
                       plan.unreadable.front().second);
  std::set<std::string> known;
  for (auto &r : plan.reads)
    known.insert(r.symbol);
  auto check = [&](const SizeExpr &e) -> std::optional<std::string> {
    for (const std::string &name : e.substitute(fn.ctx.env).symbols())
      if (!known.count(name))
        return fmt::format("size-generic code cannot compute '{}' from the "
                           "arguments' sizes; bind it with --dim",
                           name);
    return std::nullopt;
  };
  for (unsigned id : fn.returns)
    for (const Dim &d : fn.ctx.expand(fn.values[id].type.shape))
      if (auto why = d.isPack() ? std::nullopt : check(d.size))
        return why;
  for (const Constraint &c : fn.ctx.constraints) {
    if (auto why = check(c.lhs))
      return why;
    if (auto why = check(c.rhs))
      return why;
  }
  return std::nullopt;
}

/// The ein IR the emitter reads: `module` (with `options.mesh`, the local
/// program of its one function) after ein-split-einsums.
ErrorOr<mlir::OwningOpRef<mlir::ModuleOp>> cudaIR(mlir::MLIRContext &context,
                                                  const CheckedModule &module,
                                                  const CUDAOptions &options) {
  if (options.mesh && module.functions.size() != 1)
    return Error::program("cannot emit CUDA: a sharded local program is one "
                          "function");
  auto ir = options.mesh
                ? buildVerifiedShardedEinModule(context, module, *options.mesh)
                : buildVerifiedEinModule(context, module);
  if (!ir)
    return ir.error();
  mlir::PassManager pm(&context);
  pm.addPass(createSplitEinsums());
  if (mlir::failed(pm.run(**ir)))
    return Error::program("cannot emit CUDA: ein-split-einsums failed");
  return ir;
}

} // namespace

ErrorOr<std::vector<FusedLoopNest>>
cudaFusionGroups(const CheckedModule &module, const CheckedFunction &fn,
                 const CUDAOptions &options) {
  mlir::MLIRContext context;
  auto ir = cudaIR(context, withOnlyFunction(module, fn), options);
  if (!ir)
    return ir.error();
  auto func = (*ir)->lookupSymbol<mlir::func::FuncOp>(fn.name);
  if (!func)
    return Error::program(
        fmt::format("cannot emit CUDA: no IR for function '{}'", fn.name));
  std::string functors;
  int functorCount = 0;
  cuda::FunctionEmitter emitter(fn, func, options, functors, functorCount);
  SourceOps sources(module, fn);
  std::vector<FusedLoopNest> groups;
  for (auto &[kind, ops] : emitter.fusionGroups()) {
    std::set<size_t> members;
    for (mlir::Operation *op : ops)
      for (size_t i : sources.at(op->getLoc()))
        members.insert(i);
    groups.push_back({kind, {members.begin(), members.end()}});
  }
  return groups;
}

ErrorOr<std::string> emitCUDA(const CheckedModule &module,
                              const CUDAOptions &options) {
  if (std::string clash = cNameClash(module); !clash.empty())
    return Error::program("cannot emit CUDA: " + clash);
  mlir::MLIRContext context;
  auto ir = cudaIR(context, module, options);
  if (!ir)
    return ir.error();

  // The runtime comes first, the same text in every file (the module's
  // name follows it), so that scripts/gpu-check.sh can keep it once.
  std::string source =
      "// Generated by einc build --target=cuda: CUDA C++ for nvcc\n"
      "// (-std=c++17 -lcublasLt; --fmad=false for the CPU's roundings), or\n"
      "// for a host C++17 compiler, where the CUDA built-ins are emulated.\n";
  for (const RuntimeFile &file : runtimeFiles) {
    bool isMain = std::string(file.name) == "ein_cuda_main.h";
    if (isMain && options.mainFunction.empty())
      continue;
    source += fmt::format("\n// ---- {}\n", file.name);
    source += file.text;
  }
  // The module's part can follow another's in one translation unit (the
  // runtime has include guards; functors are named after their function).
  source += fmt::format("{}// {}\n#ifndef "
                        "EIN_ENTRY_PREAMBLE\n#define EIN_ENTRY_PREAMBLE\n",
                        kCUDAModuleMarker, module.path);
  source += cEntryPreamble();
  source += "#endif\n";
  std::string functors, functions;
  // A reduce-scattered result is its block (the entry's output).
  std::vector<CheckedFunction> emitted = module.functions;
  if (options.mesh)
    for (CheckedFunction &fn : emitted)
      fn = cuda::withMeshResults(fn, *options.mesh);
  for (const CheckedFunction &fn : emitted) {
    if (auto why = unreadableSize(fn))
      return Error::at(ErrorKind::Program, module.path, fn.loc.line, fn.loc.col,
                       *why);
    int functorCount = 0;
    auto func = (*ir)->lookupSymbol<mlir::func::FuncOp>(fn.name);
    if (!func)
      return Error::program(
          fmt::format("cannot emit CUDA: no IR for function '{}'", fn.name));
    cuda::FunctionEmitter emitter(fn, func, options, functors, functorCount);
    functions += "\n" + emitter.emit();
    if (const auto &e = emitter.error()) {
      // An op inlined from a call sits in a CallSiteLoc: report it where it
      // is written (maybe in an imported file) and name the outermost call.
      mlir::Location where = e->op->getLoc();
      std::optional<mlir::FileLineColLoc> call;
      while (auto site = mlir::dyn_cast<mlir::CallSiteLoc>(where)) {
        if (!call)
          call = mlir::dyn_cast<mlir::FileLineColLoc>(site.getCaller());
        where = site.getCallee();
      }
      if (auto loc = mlir::dyn_cast<mlir::FileLineColLoc>(where))
        return Error::at(
            ErrorKind::Program, loc.getFilename().str(), loc.getLine(),
            loc.getColumn(),
            fmt::format("cannot emit CUDA for '{}'{}: {}",
                        e->op->getName().getStringRef().str(),
                        call ? fmt::format(" (inlined into '{}' from the call "
                                           "at {}:{}:{})",
                                           fn.name, call->getFilename().str(),
                                           call->getLine(), call->getColumn())
                             : std::string(),
                        e->what));
      return Error::program(fmt::format("cannot emit CUDA for '{}' in '{}': {}",
                                        e->op->getName().getStringRef().str(),
                                        fn.name, e->what));
    }
  }
  source += functors;
  source += functions;
  if (!options.mainFunction.empty()) {
    auto fn = std::find_if(emitted.begin(), emitted.end(),
                           [&](const CheckedFunction &f) {
                             return f.name == options.mainFunction;
                           });
    if (fn == emitted.end())
      return Error::program(
          fmt::format("no function named '{}'", options.mainFunction));
    source += mainFunction(*fn, cEntry(*fn));
  }
  return source;
}

std::string cudaHeader(const CheckedModule &module, const std::string &guard) {
  std::string h = fmt::format(
      "/* Generated by einc build --target=cuda from {}: C entry points of\n"
      " * the CUDA source built with it. Each tensor is passed as (data, "
      "rank,\n"
      " * sizes, strides) with data a device pointer, strides in elements "
      "(any\n"
      " * non-negative values); the work is queued on `stream`. Every "
      "function\n"
      " * returns 0, or an EIN_ERR_* code before queuing anything, except\n"
      " * EIN_ERR_INDEX: a function with a take waits for its stream and\n"
      " * returns it when an id was out of range (the outputs then hold\n"
      " * unspecified values; nothing outside the tensors is read). */\n"
      "#ifndef {}\n#define {}\n\n#include <stdint.h>\n"
      "/* Under the source's CUDA emulation (a host compiler), its "
      "cudaStream_t. */\n"
      "#ifndef EIN_CUDA_EMU_H\n#include <cuda_runtime.h>\n#endif\n\n"
      "#ifdef __cplusplus\nextern \"C\" {{\n"
      "#endif\n\n#define EIN_OK 0\n#define EIN_ERR_SIZE 1\n"
      "#define EIN_ERR_STRIDE 2\n#define EIN_ERR_NULL 3\n#define EIN_ERR_ALIAS "
      "4\n"
      "#define EIN_ERR_RANK 5\n#define EIN_ERR_INDEX 6\n\n",
      module.path, guard, guard);
  for (const CheckedFunction &fn : module.functions)
    h += cEntry(fn, ",\n    cudaStream_t stream").signature + ";\n\n";
  h += "#ifdef __cplusplus\n}\n#endif\n\n#endif\n";
  return h;
}

} // namespace ein
