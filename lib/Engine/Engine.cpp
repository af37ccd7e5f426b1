// The engine: check, bind, compile (cached by signature) and call.
#include "ein/Engine/Engine.h"
#include "ein/Engine/ObjectCache.h"
#include "ein/Syntax/DiagnosticError.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace ein {

namespace {

/// What makes two compilations the same: the source, the function, every
/// number compiled in (module dims, the function's bound dims, variadic
/// ranks) and the code-generation options.
std::string signatureKey(const SourceFile &file, const CheckedModule &checked,
                         const std::string &function,
                         const CPUOptions &options) {
  std::string key = fmt::format("{}\n{}\n{}\n", file.path, file.text.size(),
                                std::hash<std::string>()(file.text));
  key += function + "\n" + options.tiles.str() + "\n";
  const CheckedFunction *fn = checked.find(function);
  if (!fn)
    return key;
  for (auto &[name, value] : fn->ctx.env)
    key += name + "=" + toString(value) + ";";
  key += "\n";
  for (unsigned id : fn->params) {
    const TensorType &t = fn->values[id].type;
    key += dtypeName(t.dtype) + std::string("[") +
           shapeStr(fn->ctx.expand(t.shape)) + "];";
  }
  return key;
}

} // namespace

ErrorOr<CheckedModule> Engine::check(const SourceFile &file,
                                     const Module &module,
                                     const CheckOptions &options,
                                     const std::string &function) const {
  CheckOptions symbolic = options;
  symbolic.onlyFunction = function;
  DiagnosticEngine diags(file);
  CheckedModule checked = checkModule(module, symbolic, diags);
  if (diags.hadError())
    return errorFromDiagnostics(diags);
  if (!checked.find(function))
    return Error::inFile(ErrorKind::Program, file.path,
                         fmt::format("no function named '{}'", function));
  return checked;
}

ErrorOr<std::shared_ptr<JITFunction>>
Engine::compile(const SourceFile &file, const CheckedModule &checked,
                const std::string &function) {
  std::string key = signatureKey(file, checked, function, cpu);
  if (auto it = cache.find(key); it != cache.end())
    return it->second;
  bool fromDisk = false;
  ErrorOr<std::unique_ptr<JITFunction>> executable = [&] {
    if (!diskCache)
      return JITFunction::compile(checked, function, cpu, jit);
    // The disk key holds the whole text of the file and its imports.
    std::string diskKey = "module " + file.path + "\n" + file.text + "\n";
    for (size_t i = 1; i < checked.files.size(); ++i) {
      std::ifstream in(checked.files[i], std::ios::binary);
      std::stringstream text;
      text << in.rdbuf();
      diskKey += "import " + checked.files[i] + "\n" + text.str() + "\n";
    }
    return ObjectCache::compileOrLoad(diskKey + key, checked, function, cpu,
                                      jit, &fromDisk);
  }();
  if (!executable)
    return executable.error().inFileNamed(file.path);
  std::shared_ptr<JITFunction> shared(std::move(*executable));
  cache.emplace(key, shared);
  ++(fromDisk ? loaded : compiled);
  return shared;
}

ErrorOr<BoundCall> Engine::bind(const SourceFile &file, const Module &module,
                                const CheckOptions &options,
                                const CheckedModule &checked,
                                const std::string &function,
                                const std::vector<std::vector<int64_t>> &shapes,
                                Specialisation specialisation,
                                bool compileForCPU) {
  CheckOptions symbolic = options;
  symbolic.onlyFunction = function;
  const CheckedFunction *fn = checked.find(function);
  if (!fn)
    return Error::inFile(ErrorKind::Program, file.path,
                         fmt::format("no function named '{}'", function));
  std::vector<std::string> paramNames;
  for (unsigned id : fn->params)
    paramNames.push_back(fn->values[id].name);
  if (shapes.size() != paramNames.size())
    return Error::usage(fmt::format("'{}' takes {} input(s), got {}",
                                    function, paramNames.size(),
                                    shapes.size()));

  // Sizes from the inputs; entry checks.
  EntryBinding binding = bindEntryShapes(*fn, paramNames, shapes);
  if (!binding.ok)
    return Error::usage(binding.error);

  // The function again with every dim bound.
  CheckOptions bound = symbolic;
  bound.entryDims = binding.dims;
  for (auto &[name, value] : binding.dims)
    if (!fn->ctx.env.count(name))
      bound.entryNames.insert(name);
  bound.entryUnitDims = binding.unitDims;
  bound.packRanks = binding.packRanks;
  DiagnosticEngine boundDiags(file);
  BoundCall call;
  call.concrete = checkModule(module, bound, boundDiags);
  if (boundDiags.hadError()) {
    Error error = Error::usage(fmt::format(
        "with the sizes of these inputs, '{}' does not check:", function));
    error.context = errorFromDiagnostics(boundDiags).rendered;
    for (auto &dim : binding.unitNotes)
      error.withNote(fmt::format(
          "{} has size 1 in the input, so the function is checked with it as "
          "1 (elementwise arithmetic and einsum's '...' broadcast it)",
          dim));
    return error;
  }
  const CheckedFunction *cfn = call.concrete.find(function);
  if (auto why = valueTooLarge(*cfn, Int(runtime::hostMemoryBytes())))
    return Error::usage(*why);
  for (unsigned id : cfn->returns) {
    std::vector<int64_t> shape;
    for (auto &d : cfn->ctx.expand(cfn->values[id].type.shape))
      shape.push_back(static_cast<int64_t>(*d.size.evaluate(cfn->ctx.env)));
    call.resultShapes.push_back(std::move(shape));
  }

  // Compiled from the specialised check, or (size-generic) from the
  // symbolic one where only `#` dims given size 1 are numbers (they must
  // broadcast in the body).
  const CheckedModule *source = &call.concrete;
  CheckedModule generic;
  if (specialisation == Specialisation::Generic) {
    CheckOptions unitOnly = symbolic;
    unitOnly.entryUnitDims = binding.unitDims;
    unitOnly.packRanks = binding.packRanks;
    DiagnosticEngine genericDiags(file);
    generic = checkModule(module, unitOnly, genericDiags);
    if (genericDiags.hadError())
      return errorFromDiagnostics(genericDiags);
    source = &generic;
  }
  call.dims = binding.dims;
  if (!compileForCPU) {
    call.source = *source;
    return call;
  }
  auto executable = compile(file, *source, function);
  if (!executable)
    return executable.error();
  call.executable = *executable;
  call.dims = binding.dims;
  return call;
}

} // namespace ein
