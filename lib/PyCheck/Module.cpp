// The module: its constants, its classes (the attributes __init__ stores,
// __init__ checked first) and its functions, each checked on its own; and
// calls of the file's own annotated functions, methods and modules, whose
// annotations give their results.
#include "Interpreter.h"

#include <fmt/format.h>

#include <set>

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

static void checkClass(FileContext &cx, Node classDef,
                       const std::string &prefix) {
  ClassInfo info;
  info.name = prefix + stringField(classDef, "name");
  std::vector<Node> methods;
  for (Node s : children(classDef, "body"))
    if (isa(s, "FunctionDef") || isa(s, "AsyncFunctionDef")) {
      methods.push_back(s);
      auto [it, fresh] = info.methods.emplace(stringField(s, "name"), s);
      if (!fresh)
        it->second = nullptr; // defined twice: which one runs is not read
    }
  for (auto it = info.methods.begin(); it != info.methods.end();)
    it = it->second ? std::next(it) : info.methods.erase(it);
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
      if (stores[id] == 1)
        cx.decoratorAliases[id] = child(s, "value");
      if (auto v = intConstant(child(s, "value")); v && stores[id] == 1)
        cx.globals[id] = AbsVal::ofSize(SizeExpr::constant(*v));
    }
  // Top-level functions and classes stored once: calls of them read their
  // annotations.
  for (Node s : children(module, "body")) {
    std::string name = stringField(s, "name");
    if ((isa(s, "FunctionDef") || isa(s, "ClassDef")) && stores[name] == 1)
      (isa(s, "ClassDef") ? cx.classes : cx.functions)[name] = s;
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

// ---- calls of the file's own functions ----------------------------------

AbsVal FunctionInterp::callModule(const AbsVal &object, Node call) {
  for (Node s : children(object.layer, "body"))
    if ((isa(s, "FunctionDef") && stringField(s, "name") == "forward") ||
        (isa(s, "FunctionDef") && stringField(s, "name") == "__call__"))
      return callAnnotated(s, call, true);
  evalArgs(call);
  return AbsVal::unknown();
}

// Whether the decorators of `def` leave its signature and result as
// annotated: none, or only checkers and caches (jaxtyped, beartype,
// torch.no_grad, functools.cache, ...), also through a module-level alias
// (`checked = jaxtyped(typechecker=beartype)`). Any other decorator may
// return anything: its calls are not read.
static bool transparentDecorators(const FileContext &cx, Node def) {
  static const std::set<std::string> known = {
      "jaxtyped",       "beartype",     "typechecked", "no_grad",
      "inference_mode", "enable_grad",  "cache",       "lru_cache",
      "wraps",          "staticmethod", "classmethod", "compile",
      "autocast",       "final",        "override",    "jit"};
  auto isKnown = [&](Node d) {
    if (isa(d, "Call"))
      d = child(d, "func");
    return known.count(lastComponent(cx.names.qualified(d))) > 0;
  };
  for (Node d : children(def, "decorator_list")) {
    if (isKnown(d))
      continue;
    auto alias = isa(d, "Name") ? cx.decoratorAliases.find(stringField(d, "id"))
                                : cx.decoratorAliases.end();
    if (alias == cx.decoratorAliases.end() || !isKnown(alias->second))
      return false;
  }
  return true;
}

AbsVal FunctionInterp::callAnnotated(Node def, Node call, bool bound) {
  std::string callee = stringField(def, "name");
  if (!transparentDecorators(cx, def)) {
    evalArgs(call);
    skip(call, callee, "its decorators may change what it returns");
    return AbsVal::unknown();
  }
  Node arguments = child(def, "args");
  std::vector<Node> positional = children(arguments, "posonlyargs");
  for (Node p : children(arguments, "args"))
    positional.push_back(p);
  if (bound && !positional.empty())
    positional.erase(positional.begin());
  std::vector<Node> a = args(call);
  // Each parameter's argument, evaluated in the caller's order.
  std::map<std::string, std::pair<Node, AbsVal>> given;
  bool spread = false;
  for (size_t i = 0; i < a.size(); ++i) {
    AbsVal v = eval(a[i]);
    spread |= isa(a[i], "Starred");
    if (i < positional.size())
      given[stringField(positional[i], "arg")] = {a[i], v};
  }
  for (Node k : children(call, "keywords")) {
    AbsVal v = eval(child(k, "value"));
    std::string name = stringField(k, "arg");
    spread |= name.empty();
    given[name] = {child(k, "value"), v};
  }
  if (spread)
    return AbsVal::unknown();
  std::vector<Node> params = positional;
  for (Node p : children(arguments, "kwonlyargs"))
    params.push_back(p);
  // The callee's names in the caller's sizes, bound as jaxtyping binds them:
  // by the first argument that has one.
  std::map<std::string, SizeExpr> bind;
  bool annotated = false;
  for (Node p : params) {
    std::string pname = stringField(p, "arg");
    auto arg = given.find(pname);
    if (arg == given.end() || !arg->second.second.isTensor())
      continue;
    AnnotationRead read =
        readAnnotation(child(p, "annotation"), cx.names, &anonCounter);
    if (read.kind != AnnotationRead::Kind::Array)
      continue;
    annotated = true;
    Shape declared = read.array.shape;
    Shape actual = ctx().expand(shapeOf(arg->second.second));
    if (hasPack(declared) || hasPack(actual))
      return AbsVal::unknown();
    Node at = arg->second.first;
    auto refuse = [&](const std::string &why) {
      error(at, fmt::format("argument '{}' of {} has shape \"{}\" but {} "
                            "declares \"{}\": {}",
                            pname, callee, shapeStr(actual), callee,
                            read.array.spec, why));
      if (!quiet)
        cx.diags.note(nodeLoc(read.array.literal),
                      fmt::format("parameter '{}' of '{}' is declared here",
                                  pname, callee),
                      nodeLength(read.array.literal, cx.file));
      noteOrigin(arg->second.second);
      return AbsVal::unknown();
    };
    if (declared.size() != actual.size())
      return refuse(
          fmt::format("rank {} against {}", actual.size(), declared.size()));
    for (size_t i = 0; i < declared.size(); ++i) {
      const SizeExpr &d = declared[i].size;
      if (mentionsAnonymous(d))
        continue;
      if (auto s = d.asSymbol(); s && !bind.count(*s)) {
        bind[*s] = actual[i].size;
        continue;
      }
      auto ok = ctx().unify(d.replaceSymbols(bind), actual[i].size,
                            fmt::format("dim {} of '{}'", i, pname));
      if (!ok)
        return refuse(ok.error().message);
    }
  }
  // The result: its names in the caller's sizes; a name no argument bound
  // is a size of this call.
  Node returns = child(def, "returns");
  std::string rq = isa(returns, "Subscript")
                       ? cx.names.qualified(child(returns, "value"))
                       : "";
  bool tuple = rq == "tuple" || rq == "typing.Tuple";
  std::vector<Node> results =
      tuple ? (isa(child(returns, "slice"), "Tuple")
                   ? children(child(returns, "slice"), "elts")
                   : std::vector<Node>{child(returns, "slice")})
            : std::vector<Node>{returns};
  std::vector<AbsVal> out;
  SourceLoc here = nodeLoc(call);
  for (Node r : results) {
    AnnotationRead read = readAnnotation(r, cx.names, &anonCounter);
    if (read.kind != AnnotationRead::Kind::Array || hasPack(read.array.shape)) {
      out.push_back(AbsVal::unknown());
      continue;
    }
    annotated = true;
    Shape shape = read.array.shape;
    for (auto &dim : shape) {
      std::map<std::string, SizeExpr> values = bind;
      for (auto &s : dim.size.symbols())
        if (!values.count(s) && !isAnonymousName(s))
          values[s] =
              namedUnknownSize(fmt::format("{}:{}:{}", s, here.line, here.col),
                               callee + "." + s);
      dim.size = dim.size.replaceSymbols(values);
    }
    out.push_back(newTensor(shape));
    resultOrigin[out.back().id] = {read.array.literal, callee};
  }
  cx.report.callsChecked += annotated;
  return tuple ? AbsVal::tuple(out) : out[0];
}

} // namespace ein::pycheck
