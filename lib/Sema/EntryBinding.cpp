// Binds dims from input shapes: solves each dim expression for its one
// unknown name, then evaluates the function's entry checks.
#include "ein/Sema/EntryBinding.h"
#include "ein/Sema/Checker.h"

#include <fmt/format.h>

#include <map>
#include <set>

namespace ein {

namespace {
std::string shapeTuple(const std::vector<int64_t> &shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + (shape.size() == 1 ? ",)" : ")");
}

/// A variadic as written: `*batch`, or `...` for an anonymous one.
std::string variadicName(const Dim &pack) {
  return isAnonymousName(pack.pack) ? "..." : pack.str();
}

/// A dim as written: `_` and `...` rather than their fresh names.
std::string written(const Dim &d) {
  if (d.isPack())
    return variadicName(d);
  auto name = d.size.asSymbol();
  return name && isAnonymousName(*name) ? "_" : d.str();
}

std::string writtenShape(const Shape &shape) {
  std::string out;
  for (auto &d : shape)
    out += (out.empty() ? "" : " ") + written(d);
  return out;
}
} // namespace

std::optional<std::string> valueTooLarge(const CheckedFunction &fn,
                                         Int maxBytes) {
  std::map<unsigned, SourceLoc> madeAt;
  for (auto &op : fn.ops)
    for (unsigned id : op.results)
      madeAt[id] = op.loc;
  for (unsigned id = 0; id < fn.values.size(); ++id) {
    const TensorType &t = fn.values[id].type;
    Shape shape = fn.ctx.expand(t.shape);
    auto elements = numElements(shape).evaluate(fn.ctx.env);
    if (!elements)
      continue; // not every dim bound: nothing to measure
    auto bytes = checkedMul(*elements, Int(dtypeBytes(t.dtype)));
    if (bytes && *bytes <= maxBytes)
      continue;
    std::string what = !fn.values[id].name.empty()
                           ? "'" + fn.values[id].name + "'"
                           : "a value";
    if (auto it = madeAt.find(id); it != madeAt.end())
      what += " (computed at line " + std::to_string(it->second.line) + ")";
    std::string sizes;
    for (auto &d : shape)
      sizes += (sizes.empty() ? "" : ", ") +
               toString(*d.size.evaluate(fn.ctx.env));
    if (shape.size() == 1)
      sizes += ",";
    return "with these sizes, " + what + " of shape (" + sizes + ") and " +
           dtypeName(t.dtype) + " needs " +
           (bytes ? toString(*bytes) : std::string("over 2**127")) +
           " bytes, more than this machine's memory (" + toString(maxBytes) +
           " bytes)";
  }
  return std::nullopt;
}

EntryBinding bindEntryShapes(const CheckedFunction &fn,
                             const std::vector<std::string> &paramNames,
                             const std::vector<std::vector<int64_t>> &shapes) {
  EntryBinding result;
  Bindings env = fn.ctx.env;
  std::map<std::string, std::string> origin; // where each name got its value
  auto fail = [&](std::string message) {
    result.error = std::move(message);
    return result;
  };

  struct Pending {
    size_t param, dim;
    Dim spec;
    Int actual;
    std::string what; // "parameter 'x' dim 0 (n)"
  };
  std::vector<Pending> pending;
  std::vector<Pending> unit;           // `#` and anonymous dims given size 1
  std::set<std::string> unitAnonymous; // their names, for anonymous ones
  // A named variadic's dims where it was first met, and where.
  std::map<std::string, std::pair<std::vector<int64_t>, size_t>> variadics;
  for (size_t p = 0; p < fn.params.size(); ++p) {
    const std::string &param = paramNames[p];
    const Shape &declared = fn.values[fn.params[p]].type.shape;
    const auto &actual = shapes[p];
    // A variadic is expanded with the rank the body fixed, or the rank of
    // the input dims left by the others.
    size_t fixed = 0;
    const Dim *open = nullptr;
    for (auto &d : declared) {
      auto bound = d.isPack() ? fn.ctx.packBindings.find(d.pack)
                              : fn.ctx.packBindings.end();
      if (d.isPack() && bound == fn.ctx.packBindings.end())
        open = &d;
      else
        fixed += bound != fn.ctx.packBindings.end() ? bound->second.size() : 1;
    }
    if (open && actual.size() < fixed)
      return fail(fmt::format(
          "parameter '{}': expected at least {} dim(s) (\"{}\", where {} "
          "may stand for none), got {} with shape {}",
          param, fixed, writtenShape(declared), variadicName(*open),
          actual.size(), shapeTuple(actual)));
    Shape shape;
    std::vector<std::string> what;
    for (auto &d : declared) {
      if (!d.isPack()) {
        shape.push_back(d);
        what.push_back(written(d));
        continue;
      }
      auto bound = fn.ctx.packBindings.find(d.pack);
      Shape dims = bound != fn.ctx.packBindings.end()
                       ? bound->second
                       : packDims(d.pack, actual.size() - fixed);
      result.packRanks[packRankKey(param, d.pack)] = dims.size();
      size_t first = shape.size();
      for (size_t k = 0; k < dims.size(); ++k) {
        shape.push_back(dims[k]);
        what.push_back(fmt::format("dim {} of {}", k, variadicName(d)));
      }
      size_t after = declared.size() - (&d - declared.data()) - 1;
      if (isAnonymousName(d.pack) || shape.size() + after > actual.size())
        continue; // (a wrong rank is reported below)
      // A named variadic is the same dims wherever it appears.
      std::vector<int64_t> sizes(actual.begin() + first,
                                 actual.begin() + first + dims.size());
      auto [seen, isNew] = variadics.emplace(d.pack, std::make_pair(sizes, p));
      const auto &[before, where] = seen->second;
      if (isNew || before == sizes)
        continue;
      if (before.size() != sizes.size())
        return fail(fmt::format(
            "parameter '{}': variadic {} has rank {} here (sizes {}), but "
            "rank {} in parameter '{}' (sizes {})",
            param, d.str(), sizes.size(), shapeTuple(sizes), before.size(),
            paramNames[where], shapeTuple(before)));
      return fail(fmt::format("parameter '{}': variadic {} has sizes {} here, "
                              "but {} in parameter '{}'",
                              param, d.str(), shapeTuple(sizes),
                              shapeTuple(before), paramNames[where]));
    }
    if (shape.size() != actual.size()) {
      std::string rank;
      for (auto &d : declared)
        if (d.isPack())
          rank =
              fmt::format(", where the function's body fixes {} at rank {}",
                          variadicName(d), shape.size() + 1 - declared.size());
      return fail(fmt::format(
          "parameter '{}': expected {} dims (\"{}\"{}), got {} with shape {}",
          param, shape.size(), writtenShape(declared), rank, actual.size(),
          shapeTuple(actual)));
    }
    for (size_t d = 0; d < shape.size(); ++d) {
      std::string where =
          fmt::format("parameter '{}' dim {} ({})", param, d, what[d]);
      auto anonymous = shape[d].size.asSymbol();
      if (anonymous && !isAnonymousName(*anonymous))
        anonymous.reset();
      if ((shape[d].broadcastable || anonymous) && actual[d] == 1) {
        result.unitDims[param].insert(d);
        // `_` alone does not say which dim; a name or "dim 1 of ..." does.
        result.unitNotes.push_back(
            what[d] == "_" ? fmt::format("parameter '{}': _ (dim {})", param, d)
                           : fmt::format("parameter '{}': {}", param, what[d]));
        if (anonymous)
          unitAnonymous.insert(*anonymous);
        unit.push_back({p, d, shape[d], Int(1), where});
        continue;
      }
      pending.push_back({p, d, shape[d], Int(actual[d]), where});
    }
  }
  // Until nothing changes: check dims whose size is known, solve those with
  // one unknown name appearing linearly (n, 8*d, n+1).
  for (bool progress = true; progress && !pending.empty();) {
    progress = false;
    std::vector<Pending> next;
    for (auto &pd : pending) {
      SizeExpr e = pd.spec.size.substitute(env);
      if (auto v = e.constantValue()) {
        if (*v != pd.actual) {
          std::string from;
          for (auto &s : pd.spec.size.symbols())
            if (origin.count(s))
              from += "; " + s + " = " + toString(env.at(s)) + " from " +
                      origin[s];
          return fail(pd.what + ": expected " + toString(*v) + ", got " +
                      toString(pd.actual) + from);
        }
        progress = true;
        continue;
      }
      auto free = e.symbols();
      if (free.size() == 1) {
        const std::string &name = *free.begin();
        // e = a*name + b when it is linear in name.
        Bindings zero = env, one = env;
        zero[name] = 0;
        one[name] = 1;
        auto b = e.evaluate(zero), ab = e.evaluate(one);
        Bindings two = env;
        two[name] = 2;
        auto a2b = e.evaluate(two);
        if (b && ab && a2b && *a2b - *ab == *ab - *b && *ab != *b) {
          Int a = *ab - *b;
          Int num = pd.actual - *b;
          if (num % a != 0 || num / a < 0)
            return fail(pd.what + ": size " + toString(pd.actual) +
                        " gives no non-negative integer " + name);
          env[name] = num / a;
          origin[name] = pd.what;
          progress = true;
          continue;
        }
      }
      next.push_back(pd);
    }
    pending = next;
  }
  // A name seen only in broadcast dims of size 1 is 1.
  for (auto &pd : unit)
    for (auto &name : pd.spec.size.symbols())
      if (!env.count(name)) {
        env[name] = 1;
        origin[name] = pd.what;
      }
  if (!pending.empty()) {
    auto &pd = pending.front();
    return fail(pd.what +
                ": cannot determine its names from the input shapes; bind "
                "them with --dim");
  }
  for (auto &c : fn.ctx.constraints) {
    // `A == B` on an anonymous size given 1: the specialised check decides
    // (it broadcasts in elementwise arithmetic and einsum's `...`).
    if (c.kind == Constraint::Kind::Equal) {
      bool broadcasts = false;
      for (auto *side : {&c.lhs, &c.rhs})
        for (auto &name : side->symbols())
          broadcasts |= unitAnonymous.count(name) > 0;
      if (broadcasts)
        continue;
    }
    auto l = c.lhs.evaluate(env), r = c.rhs.evaluate(env);
    if (!l || !r)
      continue;
    bool holds = false;
    switch (c.kind) {
    case Constraint::Kind::Divisible:
      holds = *r != 0 && *l % *r == 0;
      break;
    case Constraint::Kind::Equal:
      holds = *l == *r;
      break;
    case Constraint::Kind::NonEmpty:
      holds = *l >= 1;
      break;
    case Constraint::Kind::LessEq:
      holds = *l <= *r;
      break;
    }
    if (!holds) {
      std::string values;
      std::set<std::string> names = c.lhs.symbols();
      for (auto &s : c.rhs.symbols())
        names.insert(s);
      for (auto &s : names)
        values += (values.empty() ? " with " : ", ") + s + " = " +
                  toString(env.at(s)) +
                  (origin.count(s) ? " from " + origin[s] : "");
      std::string why;
      if (c.kind == Constraint::Kind::NonEmpty ||
          c.kind == Constraint::Kind::LessEq)
        why = ": " + c.reason;
      else if (c.kind == Constraint::Kind::Divisible && *r == 0)
        why = ": division by a size of 0";
      return fail("entry check " + c.str() + " fails" + values + why);
    }
  }
  result.ok = true;
  result.dims = env;
  return result;
}

CheckOptions boundCheckOptions(const CheckOptions &symbolic,
                               const CheckedFunction &fn,
                               const EntryBinding &binding) {
  CheckOptions bound = symbolic;
  bound.entryDims = binding.dims;
  for (auto &[name, value] : binding.dims)
    if (!fn.ctx.env.count(name))
      bound.entryNames.insert(name);
  bound.entryUnitDims = binding.unitDims;
  bound.packRanks = binding.packRanks;
  return bound;
}

} // namespace ein
