// The checker of calls of the file's own (or imported) functions: each call
// binds the callee's sizes afresh to its arguments, as jaxtyping binds per
// call, and inlines the callee's ops into the caller.
#include "FunctionChecker.h"

#include <fmt/format.h>

namespace ein::sema {

namespace {
/// --rank names the entry point's variadics; a callee's bind per call.
const std::map<std::string, size_t> kNoPackRanks;
} // namespace

FunctionChecker::FunctionChecker(const Function &callee,
                                 FunctionChecker &caller, int site)
    : fn(callee), knownNames(caller.knownNames), diags(caller.diags),
      unitDims(nullptr), packRanks(kNoPackRanks), scope(caller.scope),
      out(caller.out), results(callResults), returns(callReturns),
      anonCounter(caller.anonCounter), callStack(caller.callStack),
      callSite(site) {}

std::string FunctionChecker::freshName(const std::string &name) const {
  return fmt::format("_call{}_{}", callSite, name);
}

SizeExpr FunctionChecker::renamedSize(const SizeExpr &size) {
  std::map<std::string, SizeExpr> values;
  for (auto &name : size.symbols()) {
    auto it = sizeRenames.find(name);
    if (it == sizeRenames.end()) {
      // The file's dims are shared; `_` and `...` are fresh already.
      if (scope.declaredDims.count(name) || isAnonymousName(name))
        continue;
      it = sizeRenames.emplace(name, SizeExpr::symbol(freshName(name))).first;
    }
    values.emplace(name, it->second);
  }
  return size.replaceSymbols(values);
}

std::string FunctionChecker::renamedPack(const std::string &pack) {
  auto it = packRenames.find(pack);
  if (it != packRenames.end())
    return it->second;
  std::string name = isAnonymousName(pack) ? pack : freshName(pack);
  packRenames.emplace(pack, name);
  return name;
}

Shape FunctionChecker::renamedShape(const Shape &shape) {
  Shape renamed;
  for (auto &d : shape) {
    Dim r = d;
    if (d.isPack())
      r.pack = renamedPack(d.pack);
    else
      r.size = renamedSize(d.size);
    renamed.push_back(std::move(r));
  }
  return renamed;
}

void FunctionChecker::bindProductName(const SizeExpr &size,
                                      const SizeExpr &argument) {
  std::optional<std::string> unbound;
  for (auto &name : size.symbols()) {
    if (sizeRenames.count(name) || scope.declaredDims.count(name))
      continue;
    if (unbound)
      return; // two unknowns: nothing to solve for
    unbound = name;
  }
  if (!unbound || size.asSymbol())
    return;
  // `h*d` with h known: d is the argument's size over h (with an entry
  // check that it divides, when that is not known yet).
  SizeExpr factor = size.replaceSymbols({{*unbound, SizeExpr::constant(1)}});
  if (!(factor * SizeExpr::symbol(*unbound) == size))
    return;
  auto quotient = out.ctx.divide(argument, renamedSize(factor),
                                 "size " + argument.str() + " / " +
                                     renamedSize(factor).str());
  if (quotient)
    sizeRenames.emplace(*unbound, *quotient);
}

void FunctionChecker::bindParameterNames(const Shape &param,
                                         const Shape &argumentIn,
                                         bool products) {
  Shape argument = out.ctx.expand(argumentIn);
  // The parameter's dims as written, with a variadic seen before expanded
  // (its dims are the caller's already: `written` says which are not).
  Shape dims;
  std::vector<bool> written;
  std::optional<size_t> freePack;
  for (auto &d : param) {
    if (d.isPack()) {
      if (auto it = packRenames.find(d.pack); it != packRenames.end()) {
        for (auto &e : out.ctx.expand({Dim::ofPack(it->second)})) {
          dims.push_back(e);
          written.push_back(false);
        }
        continue;
      }
      freePack = dims.size();
    }
    dims.push_back(d);
    written.push_back(!d.isPack());
  }
  if (freePack) {
    size_t p = *freePack, fixed = dims.size() - 1;
    const std::string &pack = dims[p].pack;
    bool argumentHasPack = false;
    for (auto &d : argument)
      argumentHasPack |= d.isPack();
    if (argument.size() == dims.size() && argument[p].isPack()) {
      // The caller's variadic of unknown rank: the callee's is the same.
      packRenames.emplace(pack, argument[p].pack);
    } else if (!argumentHasPack && argument.size() >= fixed) {
      std::string name = renamedPack(pack);
      Shape covered(argument.begin() + p,
                    argument.begin() + p + (argument.size() - fixed));
      out.ctx.packBindings[name] = covered;
      dims.erase(dims.begin() + p);
      written.erase(written.begin() + p);
      dims.insert(dims.begin() + p, covered.begin(), covered.end());
      written.insert(written.begin() + p, covered.size(), false);
    } else {
      return; // a rank mismatch, reported when the shapes are compared
    }
  }
  if (dims.size() != argument.size())
    return;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (!written[i] || dims[i].isPack() || argument[i].isPack())
      continue;
    if (products) {
      bindProductName(dims[i].size, argument[i].size);
      continue;
    }
    auto name = dims[i].size.asSymbol();
    if (!name || sizeRenames.count(*name) || scope.declaredDims.count(*name))
      continue;
    // `#n` given 1 says nothing about n.
    if (dims[i].broadcastable && argument[i].size.constantValue() == Int(1))
      continue;
    sizeRenames.emplace(*name, argument[i].size);
  }
}

bool FunctionChecker::signatureHasLayouts() const {
  // A layout written in a parameter or result type, or a dim a shard rule
  // splits (as checkLayouts applies them).
  auto has = [&](const TypeAnnotation &t) {
    auto shape = parseShape(t.shape);
    if (!shape)
      return false;
    for (const Dim &d : *shape) {
      if (!d.meshAxis.empty())
        return true;
      auto name = d.size.asSymbol();
      if (name && !d.broadcastable && scope.shardRules.count(*name))
        return true;
    }
    return false;
  };
  for (const Param &p : fn.params)
    if (has(p.type))
      return true;
  for (const TypeAnnotation &r : fn.results)
    if (has(r))
      return true;
  return false;
}

bool FunctionChecker::inlineBody(const std::vector<unsigned> &args,
                                 const Expr &call) {
  std::vector<TensorType> declared;
  for (auto &p : fn.params) {
    if (vars.count(p.name)) {
      diags.error(p.loc, "duplicate parameter '" + p.name + "'",
                  static_cast<unsigned>(p.name.size()));
      return false;
    }
    auto type = checkType(p.type);
    if (!type)
      return false;
    declared.push_back(*type);
    vars[p.name] = 0; // seen; set to the argument below
  }
  // Lone names first, over all parameters, so that `f(x: "n*2", y: "n")`
  // binds n from y before x's size is compared.
  for (size_t i = 0; i < declared.size(); ++i)
    bindParameterNames(declared[i].shape, typeOf(args[i]).shape, false);
  // Then names in products (`(heads e)`), from the names bound.
  for (size_t i = 0; i < declared.size(); ++i)
    bindParameterNames(declared[i].shape, typeOf(args[i]).shape, true);
  for (size_t i = 0; i < declared.size(); ++i) {
    const Param &p = fn.params[i];
    const Expr &arg = *call.args[i];
    const TensorType &actual = typeOf(args[i]);
    Shape shape = renamedShape(declared[i].shape);
    auto noteParam = [&]() {
      diags.note(p.loc,
                 fmt::format("parameter '{}' of '{}' is declared here", p.name,
                             fn.name),
                 static_cast<unsigned>(p.name.size()));
    };
    if (actual.dtype != declared[i].dtype) {
      diags.error(arg.loc,
                  fmt::format("argument {} of '{}' has dtype {} but parameter "
                              "'{}' is {}; use astype",
                              i + 1, fn.name, dtypeName(actual.dtype), p.name,
                              dtypeName(declared[i].dtype)),
                  arg.length);
      noteParam();
      badArgument = true;
      return false;
    }
    auto ok = checkShapeMatches(out.ctx, shape, actual.shape);
    if (!ok) {
      diags.error(arg.loc,
                  fmt::format("argument {} of '{}' has shape \"{}\" but "
                              "parameter '{}' is \"{}\": {}",
                              i + 1, fn.name,
                              shapeStr(out.ctx.expand(actual.shape)), p.name,
                              p.type.shape, ok.error().message),
                  arg.length);
      noteParam();
      badArgument = true;
      return false;
    }
    vars[p.name] = args[i];
    // In a sharded module the argument must have the parameter's layout
    // where the callee's first op reads it (LayoutInference.cpp), when the
    // callee's types speak of layouts; a helper whose signature names none
    // (rmsnorm, dense) takes its arguments' layouts as they come.
    if (!scope.meshAxes.empty() && signatureHasLayouts())
      out.layoutDemands.push_back(
          {args[i], TensorType{shape, declared[i].dtype}, out.ops.size(),
           call.loc,
           fmt::format("argument {} of '{}' (parameter '{}')", i + 1, fn.name,
                       p.name)});
    for (auto &d : out.ctx.expand(shape)) {
      if (d.isPack())
        paramNames.insert(d.pack);
      for (auto &s : d.size.symbols())
        paramNames.insert(s);
    }
    for (auto &d : shape)
      if (d.isPack())
        paramNames.insert(d.pack);
  }
  for (auto &r : fn.results) {
    auto type = checkType(r);
    if (!type)
      return false;
    type->shape = renamedShape(type->shape);
    results.push_back(*type);
  }
  return checkBody();
}

std::optional<Operand> FunctionChecker::callFunction(const Expr &e,
                                                     const Function &callee) {
  auto defined = [&]() {
    diags.note(callee.loc, fmt::format("'{}' is defined here", callee.name),
               static_cast<unsigned>(callee.name.size()));
  };
  if (!e.keywords.empty()) {
    diags.error(e.keywords[0].loc,
                fmt::format("'{}' takes no keyword arguments; pass its "
                            "tensors in order",
                            callee.name),
                static_cast<unsigned>(e.keywords[0].name.size()));
    return std::nullopt;
  }
  if (e.args.size() != callee.params.size()) {
    diags.error(e.loc,
                fmt::format("'{}' takes {} tensor(s), got {}", callee.name,
                            callee.params.size(), e.args.size()),
                e.length);
    defined();
    return std::nullopt;
  }
  for (size_t i = 0; i < callStack.size(); ++i)
    if (callStack[i] == &callee) {
      std::string cycle;
      for (size_t j = i; j < callStack.size(); ++j)
        cycle += callStack[j]->name + " -> ";
      diags.error(e.loc,
                  fmt::format("recursive call of '{}' ({}{}): a function "
                              "cannot call itself, directly or through others",
                              callee.name, cycle, callee.name),
                  e.length);
      return std::nullopt;
    }
  if (callStack.size() >= kMaxCallDepth) {
    diags.error(e.loc,
                fmt::format("calls nested more than {} deep", kMaxCallDepth),
                e.length);
    return std::nullopt;
  }
  if (out.ops.size() > kMaxInlinedOps ||
      out.callSites.size() > kMaxInlinedOps) {
    diags.error(e.loc,
                fmt::format("inlining this call of '{}' makes '{}' larger "
                            "than {} operations or calls",
                            callee.name, out.name, kMaxInlinedOps),
                e.length);
    return std::nullopt;
  }
  std::vector<unsigned> args;
  for (auto &a : e.args) {
    auto id = tensorOf(*a);
    if (!id)
      return std::nullopt;
    args.push_back(*id);
  }
  int site = static_cast<int>(out.callSites.size());
  out.callSites.push_back({callee.name, e.loc, callSite});
  size_t firstOp = out.ops.size();
  callStack.push_back(&callee);
  FunctionChecker inner(callee, *this, site);
  bool ok = inner.inlineBody(args, e);
  callStack.pop_back();
  // Ops of calls inside the callee already name theirs.
  for (size_t i = firstOp; i < out.ops.size(); ++i)
    if (out.ops[i].callSite < 0)
      out.ops[i].callSite = site;
  if (!ok) {
    // An argument that does not fit is reported at the call already.
    if (!inner.badArgument)
      diags.note(e.loc, fmt::format("in call to '{}' from here", callee.name),
                 e.length);
    return std::nullopt;
  }
  // The callee's results have their declared layouts after its last op
  // (where its types speak of layouts, as for its arguments).
  if (!scope.meshAxes.empty() && inner.signatureHasLayouts())
    for (size_t k = 0; k < inner.returns.size() && k < inner.results.size();
         ++k)
      out.layoutDemands.push_back(
          {inner.returns[k], inner.results[k], out.ops.size(), e.loc,
           fmt::format("result {} of '{}'", k + 1, callee.name)});
  Operand result;
  result.values = inner.returns;
  return result;
}

} // namespace ein::sema
