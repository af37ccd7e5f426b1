// The static checker: binds dims across a function, infers every op's shape,
// and reports each mismatch at its source location. This file checks
// statements, types and results, and the module; expressions and pattern
// operations are checked in CheckExpressions.cpp and CheckPatternOps.cpp.
#include "CheckLayouts.h"
#include "FunctionChecker.h"
#include "Warnings.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <tuple>

namespace ein {

namespace sema {

void collectShapeNames(const std::string &shape, std::set<std::string> &out) {
  std::string cur;
  // The mesh axis of a layout (`batch@dp`) is not a dim of the shape.
  bool afterAt = false;
  for (char c : shape + " ") {
    // Bytes >= 0x80 only occur inside (Unicode) names: the shape has parsed.
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
        static_cast<unsigned char>(c) >= 0x80) {
      cur += c;
      continue;
    }
    if (!cur.empty() && !afterAt &&
        !std::isdigit(static_cast<unsigned char>(cur[0])))
      out.insert(cur);
    cur.clear();
    afterAt = c == '@';
  }
}

CheckedFunction FunctionChecker::run() {
  const unsigned errorsBefore = diags.errorCount();
  for (auto &p : fn.params) {
    if (vars.count(p.name)) {
      diags.error(p.loc, "duplicate parameter '" + p.name + "'",
                  static_cast<unsigned>(p.name.size()));
      continue;
    }
    auto type = checkType(p.type);
    if (!type)
      return std::move(out);
    for (auto &d : type->shape)
      if (d.isPack())
        fixPackRank(d.pack, packRankKey(p.name, d.pack));
    if (unitDims)
      if (auto it = unitDims->find(p.name); it != unitDims->end())
        for (size_t pos : it->second)
          specialiseUnitDim(type->shape, pos);
    unsigned id = builder(p.loc).param(*type, p.name);
    vars[p.name] = id;
    for (auto &d : type->shape) {
      if (d.isPack())
        paramNames.insert(d.pack);
      for (auto &s : d.size.symbols())
        paramNames.insert(s);
    }
  }
  for (auto &r : fn.results) {
    auto type = checkType(r);
    if (!type)
      return std::move(out);
    // A result-only variadic of given rank: its dims are result-only
    // names, bound to the returned value's (the rank is compared).
    for (auto &d : type->shape)
      if (d.isPack() && !isAnonymousName(d.pack))
        fixPackRank(d.pack, d.pack);
    results.push_back(*type);
  }
  // Only a function checked to its end: after an error, what is read
  // later was never looked at.
  if (checkBody() && diags.errorCount() == errorsBefore) {
    warnUnusedValues(fn, diags);
    // In a sharded module every value gets a layout and the collectives
    // are inferred (LayoutInference.cpp); the body checked first.
    if (!scope.meshAxes.empty())
      if (auto e = inferLayouts(out, scope.meshAxes))
        diags.error(e->loc, e->message, e->length);
  }
  return std::move(out);
}

bool FunctionChecker::checkBody() {
  bool returned = false;
  for (auto &stmt : fn.body) {
    if (returned) {
      diags.error(stmt.loc, "statement after 'return' is never executed");
      return false;
    }
    if (!checkStmt(stmt))
      return false;
    returned = stmt.kind == Stmt::Kind::Return;
  }
  if (!returned) {
    diags.error(fn.loc, "function '" + fn.name + "' has no 'return'",
                static_cast<unsigned>(fn.name.size()));
    return false;
  }
  return true;
}

void FunctionChecker::fixPackRank(const std::string &pack,
                                  const std::string &key) {
  auto it = packRanks.find(key);
  if (it != packRanks.end() && !out.ctx.packBindings.count(pack))
    out.ctx.packBindings[pack] = packDims(pack, it->second);
}

void FunctionChecker::specialiseUnitDim(Shape &shape, size_t pos) {
  const Dim unit = Dim::ofSize(SizeExpr::constant(1));
  for (size_t i = 0; i < shape.size(); ++i) {
    Dim &d = shape[i];
    auto bound = d.isPack() ? out.ctx.packBindings.find(d.pack)
                            : out.ctx.packBindings.end();
    size_t width =
        bound != out.ctx.packBindings.end() ? bound->second.size() : 1;
    if (pos >= width) {
      pos -= width;
      continue;
    }
    if (bound != out.ctx.packBindings.end()) {
      // A dim of an anonymous `...` (named variadics are shared between
      // parameters, so their dims stay).
      if (isAnonymousName(d.pack))
        bound->second[pos] = unit;
    } else if (!d.isPack() &&
               (d.broadcastable ||
                (d.size.asSymbol() && isAnonymousName(*d.size.asSymbol()))))
      d = unit;
    return;
  }
}

Shape FunctionChecker::bindResultNames(const Shape &declaredIn,
                                       const Shape &actualIn) {
  Shape declared = out.ctx.expand(declaredIn);
  Shape actual = out.ctx.expand(actualIn);
  std::vector<size_t> packs;
  for (size_t i = 0; i < declared.size(); ++i)
    if (declared[i].isPack() && !paramNames.count(declared[i].pack))
      packs.push_back(i);
  // Which dims are anonymous (`_`, or a dim of a `...`): they take the
  // returned value's dims, and its name's `shard` rule below.
  std::vector<bool> anonymous;
  for (const Dim &d : declared) {
    auto name =
        d.isPack() ? std::optional<std::string>(d.pack) : d.size.asSymbol();
    anonymous.push_back(name && isAnonymousName(*name));
  }
  if (packs.size() == 1 && actual.size() + 1 >= declared.size()) {
    size_t p = packs[0], covered = actual.size() + 1 - declared.size();
    out.ctx.packBindings[declared[p].pack] =
        Shape(actual.begin() + p, actual.begin() + p + covered);
    declared = out.ctx.expand(declared);
    bool packAnonymous = anonymous[p];
    anonymous.erase(anonymous.begin() + long(p));
    anonymous.insert(anonymous.begin() + long(p), covered, packAnonymous);
  }
  if (declared.size() != actual.size())
    return declared;
  // The dims a parameter's variadic stands for, once its rank is known,
  // belong to the parameters too: they are compared, not bound.
  std::set<std::string> fromParams = paramNames;
  for (auto &[pack, dims] : out.ctx.packBindings)
    if (paramNames.count(pack))
      for (auto &d : dims)
        for (auto &s : d.size.symbols())
          fromParams.insert(s);
  std::map<std::string, SizeExpr> &alias = resultAliases;
  for (size_t i = 0; i < declared.size(); ++i) {
    if (declared[i].isPack() || actual[i].isPack())
      continue;
    auto name = declared[i].size.asSymbol();
    if (name && !fromParams.count(*name) && !out.ctx.env.count(*name) &&
        !alias.count(*name))
      alias[*name] = actual[i].size;
  }
  for (auto &d : declared)
    if (!d.isPack())
      d.size = d.size.replaceSymbols(alias);
  // An anonymous dim of the function's own result whose size names a name
  // a `shard` rule splits (alone, or in a product or quotient) is split on
  // the rule's axis, as the name written would be; the value's layout says
  // through which factor (the run assembles the whole result). Only where
  // a parameter has the name split by the rule, so that its entry check
  // covers the divisibility, and one such name; a call's result keeps its
  // written layout (a demand on the caller).
  if (inlined())
    return declared;
  for (size_t i = 0; i < declared.size() && i < anonymous.size(); ++i) {
    Dim &d = declared[i];
    if (!anonymous[i] || d.isPack() || !d.meshAxis.empty())
      continue;
    std::vector<std::pair<std::string, std::string>> ruled;
    for (const std::string &name : d.size.symbols()) {
      auto rule = scope.shardRules.find(name);
      if (rule == scope.shardRules.end())
        continue;
      bool inParams = false;
      for (unsigned param : out.params)
        for (const Dim &pd : out.ctx.expand(out.values[param].type.shape))
          inParams |= !pd.isPack() && pd.size == SizeExpr::symbol(name) &&
                      pd.meshAxis == rule->second;
      if (inParams)
        ruled.push_back({name, rule->second});
    }
    if (ruled.size() != 1)
      continue;
    d.meshAxis = ruled[0].second;
    d.meshMajor = SizeExpr::symbol(ruled[0].first);
  }
  return declared;
}

std::optional<TensorType> FunctionChecker::checkType(const TypeAnnotation &t) {
  auto dtype = parseDType(t.dtype);
  if (!dtype) {
    diags.error(t.dtypeLoc,
                "unknown dtype '" + t.dtype + "'; expected one of " +
                    kDTypeList,
                static_cast<unsigned>(t.dtype.size()));
    return std::nullopt;
  }
  auto shape = parseShape(t.shape, &anonCounter);
  if (!shape) {
    diags.error(t.shapeLoc.advanced(1 + shape.error().offset),
                "in shape \"" + t.shape + "\": " + shape.error().message,
                shape.error().length);
    return std::nullopt;
  }
  // Carets go under the dim at fault, as written.
  auto spans = shapeDimSpans(t.shape);
  auto dimAt = [&](size_t i) -> std::pair<SourceLoc, unsigned> {
    if (i >= spans.size()) // cannot happen: one span per dim
      return {t.shapeLoc, static_cast<unsigned>(t.shape.size() + 2)};
    return {t.shapeLoc.advanced(1 + spans[i].first), spans[i].second};
  };
  auto written = [&](size_t i) {
    return i < spans.size() ? t.shape.substr(spans[i].first, spans[i].second)
                            : shape->at(i).str();
  };
  // Names like `_anon3` are the fresh names of `_` and `...`; written by
  // hand they would be taken for anonymous sizes, or for another `_`.
  for (size_t i = 0; i < shape->size(); ++i) {
    std::set<std::string> names;
    collectShapeNames(written(i), names);
    for (auto &name : names)
      if (isAnonymousName(name)) {
        auto [loc, length] = dimAt(i);
        diags.error(loc,
                    "in shape \"" + t.shape + "\": the name '" + name +
                        "' is reserved for the anonymous dims '_' and "
                        "'...'; choose another name",
                    length);
        return std::nullopt;
      }
  }
  for (size_t i = 0; i < shape->size(); ++i) {
    const Dim &d = (*shape)[i];
    if (d.isPack()) {
      packNames.insert(d.pack);
    } else {
      for (auto &s : d.size.symbols())
        dimNames.insert(s);
      // Size 0 is an empty tensor (as in numpy); only negative sizes are
      // meaningless.
      if (auto v = d.size.evaluate(typeEnv()); v && *v < 0) {
        auto [loc, length] = dimAt(i);
        diags.error(loc,
                    "in shape \"" + t.shape + "\": dim " + written(i) +
                        " has size " + toString(*v) +
                        "; sizes must not be negative",
                    length);
        return std::nullopt;
      }
    }
  }
  if (numElements(*shape).tooComplex()) {
    diags.error(t.shapeLoc,
                "in shape \"" + t.shape + "\": the number of elements is a " +
                    SizeExpr::tooComplexMessage(),
                static_cast<unsigned>(t.shape.size() + 2));
    return std::nullopt;
  }
  if (numElements(*shape).substitute(typeEnv()).overflowed()) {
    diags.error(t.shapeLoc,
                "in shape \"" + t.shape +
                    "\": the number of elements overflows 128 bits",
                static_cast<unsigned>(t.shape.size() + 2));
    return std::nullopt;
  }
  // A size written in the file beyond what compiled code takes would
  // check, then fail to compile (after the count above: an element count
  // that overflows is the first thing to say). Sizes bound by --dim are not
  // the file's: `report` takes any 128-bit size, the lowering refuses them.
  for (size_t i = 0; i < shape->size(); ++i) {
    const Dim &d = (*shape)[i];
    if (d.isPack())
      continue;
    if (auto v = d.size.constantValue(); v && *v > kMaxDimSize) {
      auto [loc, length] = dimAt(i);
      std::string what =
          written(i) == toString(*v)
              ? "size " + written(i)
              : "dim " + written(i) + " (size " + toString(*v) + ")";
      diags.error(loc,
                  "in shape \"" + t.shape + "\": " + what +
                      " is too large; compiled code takes sizes up to " +
                      maxDimSizeText(),
                  length);
      return std::nullopt;
    }
  }
  for (auto &p : packNames)
    if (dimNames.count(p)) {
      // Under this annotation's use of the name: the variadic `*p`, or the
      // first dim that mentions `p`.
      auto [loc, length] = dimAt(shape->size());
      for (size_t i = 0; i < shape->size(); ++i) {
        const Dim &d = (*shape)[i];
        if (d.isPack() ? d.pack == p : d.size.symbols().count(p) > 0) {
          std::tie(loc, length) = dimAt(i);
          break;
        }
      }
      diags.error(loc,
                  "'" + p + "' is used both as a variadic (*" + p +
                      ") and as a dim",
                  length);
      return std::nullopt;
    }
  // An inlined callee's types were checked where it was checked itself.
  if (!sema::checkLayouts(t, *shape, scope, typeEnv(),
                          inlined() ? nullptr : &out.ctx.constraints, diags))
    return std::nullopt;
  return TensorType{*shape, *dtype};
}

void FunctionChecker::report(const ShapeError &e, const Expr &call,
                             const Expr *patternExpr) {
  SourceLoc loc = call.loc;
  unsigned length = call.length;
  std::string message = e.message;
  switch (e.anchor) {
  case ShapeError::Anchor::Pattern:
    if (patternExpr) {
      loc = patternExpr->loc.advanced(1 + e.offset);
      length = e.length;
    }
    break;
  case ShapeError::Anchor::Operand: {
    std::vector<const Expr *> operands;
    for (auto &a : call.args)
      if (a->kind == Expr::Kind::List)
        for (auto &item : a->args)
          operands.push_back(item.get());
      else if (a->kind != Expr::Kind::String)
        operands.push_back(a.get());
    if (e.index < operands.size()) {
      loc = operands[e.index]->loc;
      length = operands[e.index]->length;
    }
    break;
  }
  case ShapeError::Anchor::Kwarg: {
    std::vector<const KeywordArg *> sizes;
    for (auto &k : call.keywords)
      if (k.name != "acc")
        sizes.push_back(&k);
    if (e.index < sizes.size()) {
      loc = sizes[e.index]->loc;
      length = static_cast<unsigned>(sizes[e.index]->name.size());
    }
    break;
  }
  case ShapeError::Anchor::Op:
    break;
  }
  diags.error(loc, message, length);
}

void FunctionChecker::pinTensorsReadBy(const Expr &e,
                                       const std::string &valueName) {
  if (e.kind == Expr::Kind::Name && vars.count(e.text))
    readByDeferred.emplace(e.text, valueName);
  for (auto &a : e.args)
    pinTensorsReadBy(*a, valueName);
  for (auto &k : e.keywords)
    pinTensorsReadBy(*k.value, valueName);
}

bool FunctionChecker::assignable(const std::string &name, SourceLoc loc) {
  if (isDimName(name)) {
    diags.error(loc, "'" + name + "' is a dim name; choose another name",
                static_cast<unsigned>(name.size()));
    return false;
  }
  if (auto pinned = readByDeferred.find(name); pinned != readByDeferred.end()) {
    // `m = where(c, 0.0, -1e9)` reads `c` again wherever `m` is used.
    diags.error(loc,
                fmt::format("'{}' is read by '{}', a value computed where it "
                            "is used (it takes the dtype of what it meets); "
                            "choose another name",
                            name, pinned->second),
                static_cast<unsigned>(name.size()));
    return false;
  }
  if (scalarVars.count(name)) {
    // A deferred value reads the names it was defined from when it is
    // evaluated: rebinding one would change it silently.
    diags.error(loc,
                "'" + name +
                    "' already names a value computed from sizes; choose "
                    "another name",
                static_cast<unsigned>(name.size()));
    return false;
  }
  return true;
}

bool FunctionChecker::checkStmt(const Stmt &stmt) {
  if (stmt.kind == Stmt::Kind::For)
    return checkFor(stmt);
  if (stmt.kind == Stmt::Kind::Return && !loops.empty()) {
    diags.error(stmt.loc,
                "'return' inside a for loop is not supported (the loop runs "
                "every iteration); return after the loop",
                6);
    return false;
  }
  auto value = eval(*stmt.values[0]);
  if (stmt.kind == Stmt::Kind::Return) {
    std::vector<std::pair<unsigned, const Expr *>> returned;
    for (auto &e : stmt.values) {
      auto v = &e == &stmt.values[0] ? std::move(value) : eval(*e);
      if (!v)
        return false;
      if (v->isLiteral) {
        diags.error(e->loc, "cannot return a bare number; return a tensor");
        return false;
      }
      if (v->isScalar()) {
        // A size or a function of sizes takes the declared result's dtype.
        if (returned.size() >= out.results.size()) {
          diags.error(e->loc, "a size or number returned beyond the declared "
                              "results needs a dtype; use astype");
          return false;
        }
        auto id = scalarAs(*v, out.results[returned.size()].dtype, *e);
        if (!id)
          return false;
        returned.push_back({*id, e.get()});
        continue;
      }
      for (unsigned id : v->values)
        returned.push_back({id, e.get()});
    }
    if (returned.size() != results.size()) {
      diags.error(stmt.loc,
                  "returns " + std::to_string(returned.size()) +
                      " value(s) but the function declares " +
                      std::to_string(results.size()),
                  6);
      return false;
    }
    for (size_t i = 0; i < returned.size(); ++i) {
      auto [id, expr] = returned[i];
      const TensorType &actual = typeOf(id);
      const TensorType &declared = results[i];
      if (out.values[id].isPackedShapes) {
        diags.error(expr->loc, "cannot return packed shapes", expr->length);
        return false;
      }
      if (actual.dtype != declared.dtype) {
        diags.error(expr->loc,
                    "returned value " + std::to_string(i) + " has dtype " +
                        dtypeName(actual.dtype) +
                        " but the function declares " +
                        dtypeName(declared.dtype) + "; use astype",
                    expr->length);
        return false;
      }
      results[i].shape = bindResultNames(declared.shape, actual.shape);
      auto ok = checkShapeMatches(out.ctx, declared.shape, actual.shape);
      if (!ok) {
        diags.error(expr->loc,
                    "returned value " + std::to_string(i) + " has shape \"" +
                        shapeStr(out.ctx.expand(actual.shape)) +
                        "\" but the function declares \"" +
                        shapeStr(declared.shape) + "\": " + ok.error().message,
                    expr->length);
        return false;
      }
      returns.push_back(id);
    }
    return true;
  }
  if (!value)
    return false;
  if (value->isLiteral) {
    diags.error(stmt.values[0]->loc,
                "a bare number cannot be assigned; use it in an expression");
    return false;
  }
  if (value->isScalar()) {
    // A size or a function of sizes: bound by name, it takes a dtype where
    // it is used.
    if (stmt.targets.size() != 1) {
      diags.error(stmt.loc, "cannot assign 1 value(s) to " +
                                std::to_string(stmt.targets.size()) +
                                " name(s)");
      return false;
    }
    auto &[name, loc] = stmt.targets[0];
    if (name == "_")
      return true;
    if (!assignable(name, loc) || !keepsLoopType(name, loc, *value, 0))
      return false;
    vars.erase(name);
    if (value->deferred)
      pinTensorsReadBy(*value->deferred, name);
    scalarVars[name] = *value;
    return true;
  }
  if (value->values.size() != stmt.targets.size()) {
    diags.error(stmt.loc, "cannot assign " +
                              std::to_string(value->values.size()) +
                              " value(s) to " +
                              std::to_string(stmt.targets.size()) + " name(s)");
    return false;
  }
  for (size_t i = 0; i < stmt.targets.size(); ++i) {
    auto &[name, loc] = stmt.targets[i];
    if (name == "_")
      continue;
    if (!assignable(name, loc) || !keepsLoopType(name, loc, *value, i))
      return false;
    vars[name] = value->values[i];
    if (out.values[value->values[i]].name.empty())
      out.values[value->values[i]].name = name;
  }
  return true;
}

} // namespace sema

namespace {

using sema::collectShapeNames;
using sema::FunctionChecker;
using sema::ModuleScope;

/// Evaluates a `dim` declaration's value from earlier declarations.
std::optional<Int> evalDim(const Expr &e, const Bindings &dims,
                           DiagnosticEngine &diags) {
  switch (e.kind) {
  case Expr::Kind::Int:
    if (auto v = parseInt(e.text))
      return *v;
    diags.error(e.loc, "size " + e.text + " is too large", e.length);
    return std::nullopt;
  case Expr::Kind::Name:
    if (auto it = dims.find(e.text); it != dims.end())
      return it->second;
    diags.error(e.loc, "unknown dim '" + e.text + "'", e.length);
    return std::nullopt;
  case Expr::Kind::Binary: {
    auto l = evalDim(*e.args[0], dims, diags);
    if (!l)
      return std::nullopt;
    auto r = evalDim(*e.args[1], dims, diags);
    if (!r)
      return std::nullopt;
    std::optional<Int> v;
    if (e.text == "+")
      v = checkedAdd(*l, *r);
    else if (e.text == "-")
      v = checkedAdd(*l, -*r);
    else if (e.text == "*")
      v = checkedMul(*l, *r);
    else if (e.text == "/" && *r != 0 && *l % *r == 0)
      v = *l / *r;
    else if (e.text == "/") {
      diags.error(e.loc, "dim division must be exact", e.length);
      return std::nullopt;
    }
    if (!v) {
      diags.error(e.loc, "dim value overflows", e.length);
      return std::nullopt;
    }
    return v;
  }
  case Expr::Kind::Float:
  case Expr::Kind::String:
  case Expr::Kind::Call:
  case Expr::Kind::Neg:
  case Expr::Kind::Not:
  case Expr::Kind::List:
  case Expr::Kind::Index:
    diags.error(e.loc, "a dim value must be an integer expression", e.length);
    return std::nullopt;
  }
  return std::nullopt; // every case returns: for GCC's -Wreturn-type
}

} // namespace

std::string packRankKey(const std::string &param, const std::string &pack) {
  return isAnonymousName(pack) ? param + "..." : pack;
}

std::optional<std::string> variadicOfUnknownRank(const CheckedFunction &fn) {
  for (unsigned id : fn.params)
    for (auto &d : fn.ctx.expand(fn.values[id].type.shape))
      if (d.isPack())
        return packRankKey(fn.values[id].name, d.pack);
  // A result's variadic is a parameter's (or fixed by the body), but for
  // an anonymous one written only in the result: it has no --rank key.
  for (auto &r : fn.results)
    for (auto &d : fn.ctx.expand(r.shape))
      if (d.isPack())
        return isAnonymousName(d.pack) ? "..." : d.pack;
  return std::nullopt;
}

CheckedModule checkModule(const Module &module, const CheckOptions &options,
                          DiagnosticEngine &diags) {
  CheckedModule result;
  result.path = diags.source().path;
  result.files.push_back(result.path);
  for (auto &f : module.importedFiles) {
    diags.addFile(f);
    result.files.push_back(f->path);
  }
  std::set<std::string> knownNames;
  ModuleScope scope;
  if (!sema::checkMesh(module, options, scope, knownNames, diags))
    return result;
  result.meshAxes = scope.meshAxes;
  // --mesh binds axes as --dim does (checkMesh refused any other name, and
  // a --dim that disagrees).
  std::map<std::string, Int> overrides = options.dimOverrides;
  overrides.insert(options.meshSizes.begin(), options.meshSizes.end());
  // The dims of imported files first: the file's own may use them.
  std::vector<const DimDecl *> dimDecls;
  for (auto &d : module.importedDims)
    dimDecls.push_back(&d);
  for (auto &d : module.dims)
    dimDecls.push_back(&d);
  for (const DimDecl *decl : dimDecls) {
    const DimDecl &d = *decl;
    if (result.dims.count(d.name)) {
      diags.error(d.loc, "dim '" + d.name + "' is declared twice",
                  static_cast<unsigned>(d.name.size()));
      return result;
    }
    knownNames.insert(d.name);
    if (auto it = overrides.find(d.name); it != overrides.end()) {
      result.dims[d.name] = it->second;
      continue;
    }
    auto v = evalDim(*d.value, result.dims, diags);
    if (!v)
      return result;
    if (*v < 0) {
      diags.error(d.value->loc,
                  "dim '" + d.name + "' must not be negative, got " +
                      toString(*v),
                  d.value->length);
      return result;
    }
    if (*v > kMaxDimSize) {
      diags.error(d.value->loc,
                  "dim '" + d.name + "' is too large (" + toString(*v) +
                      "); compiled code takes sizes up to " + maxDimSizeText(),
                  d.value->length);
      return result;
    }
    result.dims[d.name] = *v;
  }
  scope.declaredDims = result.dims;
  scope.loopsMayStaySymbolic = options.loopsMayStaySymbolic;
  const auto &builtins = sema::builtinFunctionNames();
  for (auto *functions : {&module.functions, &module.importedFunctions})
    for (auto &f : *functions) {
      // A call of the name would mean the built-in, silently.
      if (std::find(builtins.begin(), builtins.end(), f.name) !=
          builtins.end()) {
        diags.error(f.loc,
                    fmt::format("function '{}' has the name of a built-in "
                                "operation, which every call of '{}' means; "
                                "rename it",
                                f.name, f.name),
                    static_cast<unsigned>(f.name.size()));
        return result;
      }
      for (auto &p : f.params)
        collectShapeNames(p.type.shape, knownNames);
      for (auto &r : f.results)
        collectShapeNames(r.shape, knownNames);
      scope.functions.emplace(std::make_pair(f.loc.file, f.name), &f);
    }
  // An imported name means what it means in the file it comes from (whose
  // imports were resolved before).
  auto addImports = [&](const std::vector<Import> &imports) {
    for (auto &i : imports)
      for (auto &[name, loc] : i.names) {
        auto it = scope.functions.find({i.resolvedFile, name});
        if (it == scope.functions.end())
          continue;
        auto [at, added] =
            scope.functions.emplace(std::make_pair(loc.file, name), it->second);
        if (!added && at->second != it->second) {
          diags.error(loc,
                      "'" + name +
                          "' is imported here but this file has a function "
                          "of that name too",
                      static_cast<unsigned>(name.size()));
          return false;
        }
      }
    return true;
  };
  if (!addImports(module.importedImports) || !addImports(module.imports))
    return result;
  if (!options.packRanks.empty()) {
    // The variadics --rank may name: `*NAME` anywhere, `PARAM...` for a
    // parameter typed with `...`.
    std::set<std::string> variadics;
    for (auto &f : module.functions) {
      for (auto &p : f.params)
        if (auto shape = parseShape(p.type.shape))
          for (auto &d : *shape)
            if (d.isPack())
              variadics.insert(packRankKey(p.name, d.pack));
      for (auto &r : f.results)
        if (auto shape = parseShape(r.shape))
          for (auto &d : *shape)
            if (d.isPack() && !isAnonymousName(d.pack))
              variadics.insert(d.pack);
    }
    for (auto &[name, rank] : options.packRanks)
      if (!variadics.count(name)) {
        std::string known;
        for (auto &v : variadics)
          known += (known.empty() ? "" : ", ") + v;
        diags.error({},
                    "--rank " + name + "=" + std::to_string(rank) +
                        ": no variadic named '" + name + "' in this file (" +
                        (known.empty() ? "it has none" : "it has " + known) +
                        "; the '...' of parameter x is x...)");
        return result;
      }
    // The dims of a named variadic of given rank may be bound with --dim
    // (`--rank batch=2 --dim batch_0=4`).
    for (auto &[name, rank] : options.packRanks)
      if (name.find("...") == std::string::npos)
        for (auto &d : packDims(name, rank))
          knownNames.insert(*d.size.asSymbol());
  }
  for (auto &[name, value] : overrides) {
    if (!knownNames.count(name)) {
      diags.error({}, "--dim " + name + "=" + toString(value) +
                          ": no dim named '" + name + "' in this file");
      return result;
    }
    if (value < 0) {
      diags.error({}, "--dim " + name + " must not be negative");
      return result;
    }
    result.dims[name] = value;
  }
  if (!sema::checkMeshSizes(module, result.dims, diags))
    return result;
  for (auto &[name, value] : options.entryDims)
    result.dims[name] = value;
  std::set<std::string> seen;
  for (auto &f : module.functions) {
    if (!options.onlyFunction.empty() && f.name != options.onlyFunction)
      continue;
    if (!seen.insert(f.name).second) {
      diags.error(f.loc, "function '" + f.name + "' is defined twice",
                  static_cast<unsigned>(f.name.size()));
      return result;
    }
    result.functions.push_back(
        FunctionChecker(f, result.dims, options.entryNames, knownNames, diags,
                        f.name == options.onlyFunction ? &options.entryUnitDims
                                                       : nullptr,
                        options.packRanks, scope)
            .run());
  }
  sema::warnUnusedDims(module, diags);
  return result;
}

} // namespace ein
