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
  // The assignment each target of a statement made (a loop body is walked
  // twice: its second walk reads what the first iteration assigned).
  std::map<std::pair<const Stmt *, size_t>, size_t> made;
  std::function<void(const std::vector<Stmt> &, bool)> walk = [&](const std::
                                                                      vector<
                                                                          Stmt>
                                                                          &body,
                                                                  bool again) {
    for (const Stmt &stmt : body) {
      // The right side reads the values assigned before this
      // statement.
      for (const ExprPtr &value : stmt.values)
        forEachName(*value, [&](const Expr &name) {
          if (auto it = current.find(name.text); it != current.end())
            assignments[it->second].used = true;
        });
      if (stmt.kind == Stmt::Kind::For) {
        walk(stmt.body, again);
        walk(stmt.body, true);
        continue;
      }
      if (stmt.kind != Stmt::Kind::Assign)
        continue;
      for (size_t t = 0; t < stmt.targets.size(); ++t) {
        const auto &[name, loc] = stmt.targets[t];
        if (name == "_")
          continue;
        if (auto done = made.find({&stmt, t}); again && done != made.end()) {
          current[name] = done->second;
          continue;
        }
        if (auto it = current.find(name); it != current.end())
          assignments[it->second].reassignedOnLine = loc.line;
        current[name] = assignments.size();
        made[{&stmt, t}] = assignments.size();
        assignments.push_back({name, loc, false, stmt.targets.size() > 1, 0});
      }
    }
  };
  walk(fn.body, false);
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
  // A `dim` binding a mesh axis sizes the mesh.
  for (const MeshDecl &mesh : module.meshes)
    for (auto &axis : mesh.axes)
      used.insert(axis.first);
  for (const Function &f : module.functions) {
    for (const Param &p : f.params)
      collectShapeNames(p.type.shape, used);
    for (const TypeAnnotation &r : f.results)
      collectShapeNames(r.shape, used);
    std::function<void(const std::vector<Stmt> &)> walk =
        [&](const std::vector<Stmt> &body) {
          for (const Stmt &stmt : body) {
            for (const ExprPtr &value : stmt.values) {
              forEachName(*value, useName);
              forEachString(*value, useStringNames);
            }
            walk(stmt.body);
          }
        };
    walk(f.body);
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
