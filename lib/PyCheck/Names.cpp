// The module's imports, read once: the qualified name of a Name or an
// attribute chain.
#include "ein/PyCheck/Names.h"

namespace ein::pycheck {

ModuleNames::ModuleNames(Node module) { addImports(module); }

void ModuleNames::bind(const std::string &local, const std::string &target) {
  auto [it, inserted] = alias.emplace(local, target);
  if (!inserted && it->second != target)
    it->second = ""; // imported as two things: names nothing for sure
}

void ModuleNames::addImports(Node n) {
  if (!n)
    return;
  if (isa(n, "Import")) {
    for (Node a : children(n, "names")) {
      std::string name = stringField(a, "name"), as = stringField(a, "asname");
      if (!as.empty())
        bind(as, name);
      else
        bind(name.substr(0, name.find('.')), name.substr(0, name.find('.')));
    }
    return;
  }
  if (isa(n, "ImportFrom")) {
    std::string from = stringField(n, "module");
    // A relative import (`from . import x`) names the package's own code.
    if (n->getInteger("level").value_or(0) > 0)
      from = "." + from;
    for (Node a : children(n, "names")) {
      std::string name = stringField(a, "name"), as = stringField(a, "asname");
      if (name != "*")
        bind(as.empty() ? name : as, from + "." + name);
    }
    return;
  }
  for (auto &[key, value] : *n) {
    if (auto *o = value.getAsObject())
      addImports(o);
    else if (auto *list = value.getAsArray())
      for (auto &item : *list)
        addImports(item.getAsObject());
  }
}

std::string ModuleNames::qualified(Node expr) const {
  if (isa(expr, "Name")) {
    std::string id = stringField(expr, "id");
    auto it = alias.find(id);
    return it == alias.end() ? id : it->second;
  }
  if (isa(expr, "Attribute")) {
    std::string base = qualified(child(expr, "value"));
    return base.empty() ? "" : base + "." + stringField(expr, "attr");
  }
  return "";
}

std::string lastComponent(const std::string &qualified) {
  size_t dot = qualified.rfind('.');
  return dot == std::string::npos ? qualified : qualified.substr(dot + 1);
}

} // namespace ein::pycheck
