// Binds dims from input shapes: solves each dim expression for its one
// unknown name, then evaluates the function's entry checks.
#include "ein/Sema/EntryBinding.h"

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
  auto where = [&](size_t p, size_t d, const Dim &dim) {
    return "parameter '" + paramNames[p] + "' dim " + std::to_string(d) +
           " (" + dim.str() + ")";
  };
  auto fail = [&](std::string message) {
    result.error = std::move(message);
    return result;
  };

  struct Pending {
    size_t param, dim;
    Dim spec;
    Int actual;
  };
  std::vector<Pending> pending;
  std::vector<Pending> unit; // `#` dims given size 1
  for (size_t p = 0; p < fn.params.size(); ++p) {
    const Shape &declared = fn.values[fn.params[p]].type.shape;
    Shape shape = fn.ctx.expand(declared);
    const auto &actual = shapes[p];
    for (auto &d : shape)
      if (d.isPack())
        return fail("parameter '" + paramNames[p] + "' has variadic " +
                    d.str() + ", which einc run cannot bind yet");
    if (shape.size() != actual.size())
      return fail("parameter '" + paramNames[p] + "': expected " +
                  std::to_string(shape.size()) + " dims (\"" +
                  shapeStr(shape) + "\"), got " +
                  std::to_string(actual.size()) + " with shape " +
                  shapeTuple(actual));
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d].broadcastable && actual[d] == 1) {
        // The position in the declared shape: a `...` before it stands
        // for (expanded - declared + 1) dims.
        size_t pos = d;
        for (size_t k = 0; k < declared.size() && k < d; ++k)
          if (declared[k].isPack()) {
            pos = d - (shape.size() - declared.size());
            break;
          }
        result.unitDims[paramNames[p]].insert(pos);
        unit.push_back({p, d, shape[d], Int(1)});
        continue;
      }
      pending.push_back({p, d, shape[d], Int(actual[d])});
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
          return fail(where(pd.param, pd.dim, pd.spec) + ": expected " +
                      toString(*v) + ", got " + toString(pd.actual) + from);
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
            return fail(where(pd.param, pd.dim, pd.spec) + ": size " +
                        toString(pd.actual) +
                        " gives no non-negative integer " + name);
          env[name] = num / a;
          origin[name] = where(pd.param, pd.dim, pd.spec);
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
        origin[name] = where(pd.param, pd.dim, pd.spec);
      }
  if (!pending.empty()) {
    auto &pd = pending.front();
    return fail(where(pd.param, pd.dim, pd.spec) +
                ": cannot determine its names from the input shapes; bind "
                "them with --dim");
  }
  for (auto &c : fn.ctx.constraints) {
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
      if (c.kind == Constraint::Kind::NonEmpty)
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

} // namespace ein
