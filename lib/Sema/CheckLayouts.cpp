// The mesh, its `shard` rules and the layouts of parameter and result types
// (`batch@dp`): the static checks of docs/distributed.md §2.
#include "CheckLayouts.h"

#include "ein/Support/Spelling.h"

#include <fmt/format.h>

#include <map>

namespace ein::sema {

namespace {

std::string joinNames(const std::vector<std::string> &names) {
  std::string out;
  for (auto &n : names)
    out += (out.empty() ? "" : ", ") + n;
  return out;
}

/// "'tpp' is not a mesh axis (...)", with the closest axis when one is a
/// typo away.
std::string notAnAxis(const std::string &name,
                      const std::vector<std::string> &axes) {
  if (axes.empty())
    return fmt::format("'{}' is not a mesh axis: this file declares no mesh "
                       "(write `mesh {}` at the top level)",
                       name, name);
  std::string message = fmt::format("'{}' is not a mesh axis (the mesh has {})",
                                    name, joinNames(axes));
  if (auto close = closestName(name, axes, name.size() / 2 + 1))
    message += fmt::format("; did you mean '{}'?", *close);
  return message;
}

} // namespace

std::string divisorList(Int n) {
  if (n <= 0)
    return "any size";
  constexpr size_t kShown = 6;
  // Divisors in increasing order: the small ones up to sqrt(n), then the
  // cofactors of those, largest small one first; the trial division is
  // bounded, so a huge prime-like size lists what it found.
  std::vector<Int> small, large;
  Int i = 1;
  for (; i * i <= n && i <= 1000000 && small.size() <= kShown; ++i)
    if (n % i == 0) {
      small.push_back(i);
      if (i * i != n)
        large.push_back(n / i);
    }
  bool complete = i * i > n;
  std::vector<Int> all = small;
  if (complete)
    for (auto it = large.rbegin(); it != large.rend(); ++it)
      all.push_back(*it);
  std::string out;
  for (size_t k = 0; k < all.size() && k < kShown; ++k)
    out += (k ? ", " : "") + toString(all[k]);
  if (!complete || all.size() > kShown)
    out += ", ...";
  return out;
}

bool checkMesh(const Module &module, const CheckOptions &options,
               ModuleScope &scope, std::set<std::string> &knownNames,
               DiagnosticEngine &diags) {
  std::map<std::string, SourceLoc> axisLoc;
  for (size_t m = 0; m < module.meshes.size(); ++m) {
    const MeshDecl &mesh = module.meshes[m];
    if (m > 0) {
      diags.error(mesh.loc,
                  fmt::format("a file has one mesh; the first is declared at "
                              "line {}",
                              module.meshes[0].loc.line),
                  4);
      return false;
    }
    for (auto &[name, loc] : mesh.axes) {
      if (!axisLoc.emplace(name, loc).second) {
        diags.error(loc, fmt::format("mesh axis '{}' is named twice", name),
                    static_cast<unsigned>(name.size()));
        return false;
      }
      scope.meshAxes.push_back(name);
      knownNames.insert(name);
    }
  }
  // Types are global shapes: an axis used as a dim would be a size of a
  // tensor and a number of devices at once.
  for (auto *functions : {&module.functions, &module.importedFunctions})
    for (const Function &f : *functions) {
      std::vector<const TypeAnnotation *> types;
      for (auto &p : f.params)
        types.push_back(&p.type);
      for (auto &r : f.results)
        types.push_back(&r);
      for (const TypeAnnotation *t : types) {
        std::set<std::string> names;
        collectShapeNames(t->shape, names);
        for (auto &[axis, loc] : axisLoc)
          if (names.count(axis)) {
            diags.error(
                loc,
                fmt::format("mesh axis '{}' is also used as a dim, in the "
                            "type \"{}\" of function '{}' (line {}); types "
                            "are global shapes: write a layout (d@{}) or "
                            "rename the axis",
                            axis, t->shape, f.name, t->shapeLoc.line, axis),
                static_cast<unsigned>(axis.size()));
            return false;
          }
      }
    }
  for (auto &[name, value] : options.meshSizes) {
    if (!axisLoc.count(name)) {
      diags.error({}, fmt::format("--mesh {}={}: {}", name, toString(value),
                                  notAnAxis(name, scope.meshAxes)));
      return false;
    }
    if (auto it = options.dimOverrides.find(name);
        it != options.dimOverrides.end() && it->second != value) {
      diags.error({}, fmt::format("--mesh {}={} and --dim {}={} disagree", name,
                                  toString(value), name, toString(it->second)));
      return false;
    }
  }
  for (const ShardRule &r : module.shardRules) {
    if (!axisLoc.count(r.axis)) {
      diags.error(r.axisLoc,
                  "in `shard " + r.dim + " -> " + r.axis +
                      "`: " + notAnAxis(r.axis, scope.meshAxes),
                  static_cast<unsigned>(r.axis.size()));
      return false;
    }
    if (axisLoc.count(r.dim)) {
      diags.error(r.dimLoc,
                  fmt::format("'{}' is a mesh axis, not a dim a rule can "
                              "shard",
                              r.dim),
                  static_cast<unsigned>(r.dim.size()));
      return false;
    }
    auto [it, added] = scope.shardRules.emplace(r.dim, r.axis);
    if (!added) {
      diags.error(r.dimLoc,
                  fmt::format("'{}' has a shard rule already (-> {}); a dim "
                              "has one rule",
                              r.dim, it->second),
                  static_cast<unsigned>(r.dim.size()));
      return false;
    }
  }
  return true;
}

bool checkMeshSizes(const Module &module, const Bindings &dims,
                    DiagnosticEngine &diags) {
  for (const MeshDecl &mesh : module.meshes)
    for (auto &[name, loc] : mesh.axes)
      if (auto it = dims.find(name); it != dims.end() && it->second < 1) {
        diags.error(loc,
                    fmt::format("mesh axis '{}' has size {}; a mesh axis "
                                "spans at least 1 device",
                                name, toString(it->second)),
                    static_cast<unsigned>(name.size()));
        return false;
      }
  return true;
}

bool checkLayouts(const TypeAnnotation &t, Shape &shape,
                  const ModuleScope &scope, const Bindings &env,
                  std::vector<Constraint> *entryChecks,
                  DiagnosticEngine &diags) {
  auto spans = shapeDimSpans(t.shape);
  auto fail = [&](size_t i, const std::string &message) {
    SourceLoc loc = t.shapeLoc;
    unsigned length = static_cast<unsigned>(t.shape.size() + 2);
    if (i < spans.size()) {
      loc = t.shapeLoc.advanced(1 + spans[i].first);
      length = spans[i].second;
    }
    diags.error(loc, "in shape \"" + t.shape + "\": " + message, length);
    return false;
  };
  auto written = [&](size_t i) {
    return i < spans.size() ? t.shape.substr(spans[i].first, spans[i].second)
                            : shape[i].str();
  };
  std::map<std::string, size_t> axisOwner;
  for (size_t i = 0; i < shape.size(); ++i) {
    Dim &d = shape[i];
    if (d.isPack())
      continue;
    std::string how = written(i);
    if (d.meshAxis.empty()) {
      // A rule applies to a dim written as the rule's name alone.
      auto name = d.size.asSymbol();
      if (!name || d.broadcastable)
        continue;
      auto rule = scope.shardRules.find(*name);
      if (rule == scope.shardRules.end())
        continue;
      d.meshAxis = rule->second;
      d.meshMajor = d.size;
      how = *name + "@" + rule->second + " (by the rule `shard " + *name +
            " -> " + rule->second + "`)";
    } else if (std::find(scope.meshAxes.begin(), scope.meshAxes.end(),
                         d.meshAxis) == scope.meshAxes.end()) {
      diags.error(t.shapeLoc.advanced(1 + d.meshAxisOffset),
                  "in shape \"" + t.shape +
                      "\": " + notAnAxis(d.meshAxis, scope.meshAxes),
                  static_cast<unsigned>(d.meshAxis.size()));
      return false;
    }
    auto [owner, first] = axisOwner.emplace(d.meshAxis, i);
    if (!first)
      return fail(i,
                  fmt::format("mesh axis '{}' splits two dims of this "
                              "tensor ({} and {}); a tensor is split "
                              "along a mesh axis at most once",
                              d.meshAxis, written(owner->second), written(i)));
    // Divisibility: every rank holds an equal block.
    SizeExpr axisSize = SizeExpr::symbol(d.meshAxis);
    auto blocks = axisSize.evaluate(env);
    auto major = d.meshMajor.evaluate(env);
    if (blocks && major) {
      if (*blocks >= 1 && *major % *blocks != 0) {
        std::string what = d.meshMajor.isConstant() || d.meshMajor == d.size
                               ? toString(*major)
                               : d.meshMajor.str() + " = " + toString(*major);
        return fail(i, fmt::format("{} splits {} into {} blocks, which does "
                                   "not divide; {} may be {} (the divisors "
                                   "of {})",
                                   how, what, toString(*blocks), d.meshAxis,
                                   divisorList(*major), toString(*major)));
      }
      continue;
    }
    if (!entryChecks)
      continue;
    bool known = std::any_of(entryChecks->begin(), entryChecks->end(),
                             [&](const Constraint &c) {
                               return c.kind == Constraint::Kind::Divisible &&
                                      c.lhs == d.meshMajor && c.rhs == axisSize;
                             });
    if (!known)
      entryChecks->push_back(
          {Constraint::Kind::Divisible, d.meshMajor, axisSize,
           how + ": the dim must split into " + d.meshAxis + " equal blocks"});
  }
  return true;
}

} // namespace ein::sema
