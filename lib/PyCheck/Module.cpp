// The module: its constants, its classes (the attributes __init__ stores,
// __init__ checked first) and its functions, each checked on its own; and
// calls of the file's own annotated functions, methods and modules, whose
// annotations give their results.
#include "Interpreter.h"

#include <fmt/format.h>

namespace ein::pycheck {
// ---- the module ---------------------------------------------------------

static void countStores(Node n, const std::string &self,
                        std::map<std::string, unsigned> &count) {
  if (!n)
    return;
  if (isa(n, "Attribute") && isa(child(n, "ctx"), "Store") &&
      isa(child(n, "value"), "Name") &&
      stringField(child(n, "value"), "id") == self)
    ++count[stringField(n, "attr")];
  for (auto &[key, value] : *n) {
    if (auto *o = value.getAsObject())
      countStores(o, self, count);
    else if (auto *list = value.getAsArray())
      for (auto &item : *list)
        countStores(item.getAsObject(), self, count);
  }
}

static void checkClass(FileContext &cx, Node classDef, const std::string &prefix) {
  ClassInfo info;
  info.name = prefix + stringField(classDef, "name");
  std::vector<Node> methods;
  for (Node s : children(classDef, "body"))
    if (isa(s, "FunctionDef") || isa(s, "AsyncFunctionDef"))
      methods.push_back(s);
  // Attributes stored in more than one place are not read.
  std::map<std::string, unsigned> stores;
  for (Node m : methods) {
    std::vector<Node> params = children(child(m, "args"), "args");
    if (!params.empty())
      countStores(m, stringField(params[0], "arg"), stores);
  }
  for (auto &[attr, n] : stores)
    if (n > 1)
      info.unstable.insert(attr);
  // __init__ first: the other methods read what it stores.
  std::stable_partition(methods.begin(), methods.end(), [](Node m) {
    return stringField(m, "name") == "__init__";
  });
  for (Node m : methods) {
    bool isStatic = false;
    for (Node d : children(m, "decorator_list"))
      if (cx.names.qualified(d) == "staticmethod" ||
          cx.names.qualified(d) == "classmethod")
        isStatic = true;
    FunctionInterp f(cx, m, isStatic ? nullptr : &info,
                     info.name + "." + stringField(m, "name"));
    f.run();
  }
  for (Node s : children(classDef, "body"))
    if (isa(s, "ClassDef"))
      checkClass(cx, s, info.name + ".");
}

void checkModule(FileContext &cx, Node module) {
  // Module-level names bound once to an integer literal.
  std::map<std::string, unsigned> stores;
  for (Node s : children(module, "body")) {
    std::set<std::string> here;
    collectStored(s, here);
    for (auto &n : here)
      ++stores[n];
  }
  for (Node s : children(module, "body"))
    if (isa(s, "Assign") && children(s, "targets").size() == 1 &&
        isa(children(s, "targets")[0], "Name")) {
      std::string id = stringField(children(s, "targets")[0], "id");
      if (auto v = intConstant(child(s, "value")); v && stores[id] == 1)
        cx.globals[id] = AbsVal::ofSize(SizeExpr::constant(*v));
    }
  for (Node s : children(module, "body")) {
    if (isa(s, "FunctionDef") || isa(s, "AsyncFunctionDef")) {
      FunctionInterp f(cx, s, nullptr, stringField(s, "name"));
      f.run();
    } else if (isa(s, "ClassDef")) {
      checkClass(cx, s, "");
    }
  }
}

} // namespace ein::pycheck
