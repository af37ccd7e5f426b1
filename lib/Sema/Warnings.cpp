// The checker's warnings about values and dims the program never uses.
#include "Warnings.h"
#include "FunctionChecker.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <tuple>

namespace ein::sema {

namespace {

/// Calls `visit` on every name expression in `e` (keyword values included).
void forEachName(const Expr &e,
                 const std::function<void(const Expr &)> &visit) {
  if (e.kind == Expr::Kind::Name)
    visit(e);
  for (const ExprPtr &arg : e.args)
    forEachName(*arg, visit);
  for (const KeywordArg &k : e.keywords)
    forEachName(*k.value, visit);
}

/// Calls `visit` on every string literal in `e`.
void forEachString(const Expr &e,
                   const std::function<void(const Expr &)> &visit) {
  if (e.kind == Expr::Kind::String)
    visit(e);
  for (const ExprPtr &arg : e.args)
    forEachString(*arg, visit);
  for (const KeywordArg &k : e.keywords)
    forEachString(*k.value, visit);
}

} // namespace

void warnUnusedValues(const Function &fn, DiagnosticEngine &diags) {
  struct Assignment {
    std::string name;
    SourceLoc loc;
    bool used = false;
    bool severalTargets = false;
    unsigned reassignedOnLine = 0;
  };
  std::vector<Assignment> assignments;
  std::map<std::string, size_t> current; // name -> its latest assignment
  for (const Stmt &stmt : fn.body) {
    // The right side reads the values assigned before this statement.
    for (const ExprPtr &value : stmt.values)
      forEachName(*value, [&](const Expr &name) {
        if (auto it = current.find(name.text); it != current.end())
          assignments[it->second].used = true;
      });
    if (stmt.kind != Stmt::Kind::Assign)
      continue;
    for (const auto &[name, loc] : stmt.targets) {
      if (name == "_")
        continue;
      if (auto it = current.find(name); it != current.end())
        assignments[it->second].reassignedOnLine = loc.line;
      current[name] = assignments.size();
      assignments.push_back({name, loc, false, stmt.targets.size() > 1, 0});
    }
  }
  for (const Assignment &a : assignments) {
    if (a.used)
      continue;
    std::string message =
        a.reassignedOnLine
            ? fmt::format("'{}' is assigned but never used before it is "
                          "assigned again on line {}",
                          a.name, a.reassignedOnLine)
            : fmt::format("'{}' is assigned but never used", a.name);
    if (a.severalTargets && !a.reassignedOnLine)
      message += "; assign it to '_' to discard it";
    diags.warning(WarningKind::UnusedValue, a.loc, message,
                  static_cast<unsigned>(a.name.size()));
  }
}

void warnUnusedDims(const Module &module, DiagnosticEngine &diags) {
  std::set<std::string> used;
  auto useName = [&](const Expr &e) { used.insert(e.text); };
  auto useStringNames = [&](const Expr &e) { collectShapeNames(e.text, used); };
  for (const Function &f : module.functions) {
    for (const Param &p : f.params)
      collectShapeNames(p.type.shape, used);
    for (const TypeAnnotation &r : f.results)
      collectShapeNames(r.shape, used);
    for (const Stmt &stmt : f.body)
      for (const ExprPtr &value : stmt.values) {
        forEachName(*value, useName);
        forEachString(*value, useStringNames);
      }
  }
  // A dim used only in the value of another dim is used; one used only in
  // its own (erroneous) value is not.
  for (const DimDecl &d : module.dims)
    forEachName(*d.value, [&](const Expr &e) {
      if (e.text != d.name)
        used.insert(e.text);
    });
  for (const DimDecl &d : module.dims)
    if (!used.count(d.name))
      diags.warning(WarningKind::UnusedDim, d.loc,
                    fmt::format("dim '{}' is declared but never used", d.name),
                    static_cast<unsigned>(d.name.size()));
}

} // namespace ein::sema
