// Plans how size-generic code reads its free sizes from argument shapes.
#include "ein/Shape/SizeReads.h"

#include <map>
#include <set>

namespace ein {

SizeReadPlan planSizeReads(const std::vector<Shape> &params,
                           const Bindings &env) {
  SizeReadPlan plan;
  std::set<std::string> known;
  for (auto &[name, value] : env)
    known.insert(name);
  auto freeNames = [&](const SizeExpr &e) {
    std::set<std::string> out;
    for (auto &s : e.symbols())
      if (!known.count(s))
        out.insert(s);
    return out;
  };
  // Until nothing changes: a dim with exactly one unknown name, linear in it
  // with a constant coefficient, gives that name.
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t p = 0; p < params.size(); ++p)
      for (size_t d = 0; d < params[p].size(); ++d) {
        const Dim &dim = params[p][d];
        if (dim.isPack())
          continue;
        SizeExpr e = dim.size.substitute(env);
        auto free = freeNames(e);
        if (free.size() != 1)
          continue;
        const std::string &name = *free.begin();
        auto at = [&](Int v) {
          return e.replaceSymbols({{name, SizeExpr::constant(v)}});
        };
        SizeExpr b = at(0), ab = at(1), a2b = at(2);
        auto a = (ab - b).constantValue();
        auto a2 = (a2b - ab).constantValue();
        if (!a || !a2 || *a != *a2 || *a <= 0 || b.overflowed() ||
            b.tooComplex())
          continue;
        // b may not contain quotients of `name` (it does not: name is gone).
        plan.reads.push_back({name, p, d, *a, b});
        known.insert(name);
        progress = true;
      }
  }
  std::set<std::string> reported;
  for (size_t p = 0; p < params.size(); ++p)
    for (size_t d = 0; d < params[p].size(); ++d) {
      const Dim &dim = params[p][d];
      if (dim.isPack())
        continue;
      for (auto &name : freeNames(dim.size.substitute(env)))
        if (reported.insert(name).second)
          plan.unreadable.push_back(
              {name, "parameter " + std::to_string(p) + " dim " +
                         std::to_string(d) + " (" + dim.str() + ")"});
    }
  return plan;
}

} // namespace ein
