// The abstract interpreter's expressions: names, constants, arithmetic of
// sizes, attributes, subscripts, and calls dispatched to the einops rules,
// the torch rules, annotated functions of the file, or unknown.
#include "Interpreter.h"

namespace ein::pycheck {
// ---- expressions --------------------------------------------------------

AbsVal FunctionInterp::lookup(const std::string &id) const {
  if (auto it = env.find(id); it != env.end())
    return it->second;
  if (auto it = cx.globals.find(id); it != cx.globals.end())
    return it->second;
  return AbsVal::unknown();
}

AbsVal FunctionInterp::eval(Node e) {
  std::string t = nodeType(e);
  if (t == "Name")
    return lookup(stringField(e, "id"));
  if (t == "Constant") {
    if (auto i = intConstant(e))
      return AbsVal::ofSize(SizeExpr::constant(*i));
    if (isNumberLiteral(e))
      return AbsVal::number();
    return AbsVal::unknown();
  }
  if (t == "UnaryOp") {
    AbsVal v = eval(child(e, "operand"));
    std::string op = nodeType(child(e, "op"));
    if (op == "USub" && v.kind == AbsVal::Kind::Size)
      return AbsVal::ofSize(SizeExpr() - v.size);
    if ((op == "USub" || op == "UAdd") &&
        (v.isTensor() || v.kind == AbsVal::Kind::Number))
      return v;
    return AbsVal::unknown();
  }
  if (t == "BinOp") {
    AbsVal lhs = eval(child(e, "left")), rhs = eval(child(e, "right"));
    return binaryOp(e, lhs, rhs);
  }
  if (t == "Call")
    return call(e);
  if (t == "Attribute")
    return attribute(e);
  if (t == "Subscript")
    return subscript(e);
  if (t == "Tuple" || t == "List") {
    std::vector<AbsVal> items;
    for (Node x : children(e, "elts")) {
      if (isa(x, "Starred")) {
        eval(x);
        return AbsVal::unknown();
      }
      items.push_back(eval(x));
    }
    return AbsVal::tuple(std::move(items));
  }
  if (t == "NamedExpr") {
    AbsVal v = eval(child(e, "value"));
    assign(child(e, "target"), v, false);
    return v;
  }
  if (t == "IfExp") {
    Node test = child(e, "test");
    bool shapey = mentionsShapes(test);
    auto decided = shapey ? decide(test) : (eval(test), std::nullopt);
    if (decided)
      return eval(child(e, *decided ? "body" : "orelse"));
    quiet += shapey;
    eval(child(e, "body"));
    eval(child(e, "orelse"));
    quiet -= shapey;
    return AbsVal::unknown();
  }
  if (t == "BoolOp" || t == "Compare") {
    for (auto &[key, value] : *e) {
      if (auto *o = value.getAsObject(); o && !isa(o, "And") && !isa(o, "Or"))
        eval(o);
      else if (auto *list = value.getAsArray())
        for (auto &item : *list)
          if (auto *o = item.getAsObject(); o && nodeType(o) != "Eq")
            eval(o);
    }
    return AbsVal::unknown();
  }
  if (t == "Starred" || t == "Await" || t == "JoinedStr" || t == "Dict" ||
      t == "Set") {
    // Reads its parts for the calls in them; what it builds is not modelled.
    for (auto &[key, value] : *e) {
      if (auto *o = value.getAsObject())
        eval(o);
      else if (auto *list = value.getAsArray())
        for (auto &item : *list)
          eval(item.getAsObject());
    }
    return AbsVal::unknown();
  }
  if (t == "GeneratorExp" || t == "ListComp") {
    // `(f(t) for t in (q, k, v))` over a tuple the checker knows: one value
    // per item, the loop variable bound to it.
    std::vector<Node> gens = children(e, "generators");
    if (gens.size() == 1 && children(gens[0], "ifs").empty() &&
        isa(child(gens[0], "target"), "Name")) {
      AbsVal items = eval(child(gens[0], "iter"));
      if (items.kind == AbsVal::Kind::Tuple)
        return mapOver(stringField(child(gens[0], "target"), "id"),
                       child(e, "elt"), items);
    }
  }
  // Lambda, other comprehensions (their own names may shadow ours), ...
  return AbsVal::unknown();
}

AbsVal FunctionInterp::mapOver(const std::string &var, Node body,
                               const AbsVal &items) {
  auto saved = env.find(var) != env.end() ? std::optional<AbsVal>(env[var])
                                          : std::nullopt;
  std::vector<AbsVal> out;
  for (auto &item : items.items) {
    env[var] = item;
    out.push_back(eval(body));
  }
  if (saved)
    env[var] = *saved;
  else
    env.erase(var);
  return AbsVal::tuple(out);
}

AbsVal FunctionInterp::sizeArithmetic(Node e, const AbsVal &lhs,
                                      const AbsVal &rhs) {
  std::string op = nodeType(child(e, "op"));
  if (lhs.kind == AbsVal::Kind::Size && rhs.kind == AbsVal::Kind::Size) {
    if (op == "Add")
      return AbsVal::ofSize(lhs.size + rhs.size);
    if (op == "Sub")
      return AbsVal::ofSize(lhs.size - rhs.size);
    if (op == "Mult")
      return AbsVal::ofSize(lhs.size * rhs.size);
    if (op == "FloorDiv") {
      auto a = lhs.size.constantValue(), b = rhs.size.constantValue();
      if (b && *b == Int(0))
        return AbsVal::unknown();
      if (a && b && *a >= Int(0) && *b > Int(0))
        return AbsVal::ofSize(SizeExpr::constant(*a / *b));
      if (auto exact = lhs.size.divideExact(rhs.size))
        return AbsVal::ofSize(*exact);
      return AbsVal::ofSize(SizeExpr::quotient(lhs.size, rhs.size));
    }
    if (op == "Pow") {
      auto a = lhs.size.constantValue(), b = rhs.size.constantValue();
      if (a && b && *b >= Int(0) && *b <= Int(62)) {
        Int r = 1;
        for (Int i = 0; i < *b; i = i + Int(1))
          r = r * *a;
        return AbsVal::ofSize(SizeExpr::constant(r));
      }
    }
    return AbsVal::number();
  }
  bool numeric =
      [](const AbsVal &v) {
        return v.kind == AbsVal::Kind::Size || v.kind == AbsVal::Kind::Number;
      }(lhs) &&
      (rhs.kind == AbsVal::Kind::Size || rhs.kind == AbsVal::Kind::Number);
  return numeric ? AbsVal::number() : AbsVal::unknown();
}

AbsVal FunctionInterp::attribute(Node e) {
  Node base = child(e, "value");
  std::string attr = stringField(e, "attr");
  if (isa(base, "Name") && !selfName.empty() &&
      stringField(base, "id") == selfName && cls) {
    if (cls->unstable.count(attr))
      return AbsVal::unknown();
    // An annotated attribute: a tensor of its rank, each named dim a size
    // of its own (`W_U.d_model`): jaxtyping never checks it, so its names
    // are not the method's.
    if (auto a = cls->annotated.find(attr); a != cls->annotated.end()) {
      AnnotationRead read = readAnnotation(a->second, cx.names, &anonCounter);
      if (read.kind != AnnotationRead::Kind::Array || hasPack(read.array.shape))
        return AbsVal::unknown();
      Shape shape = read.array.shape;
      for (auto &d : shape) {
        std::map<std::string, SizeExpr> soft;
        for (auto &sym : d.size.symbols())
          if (!isAnonymousName(sym))
            soft[sym] =
                namedUnknownSize("attr:" + attr + ":" + sym, attr + "." + sym);
        d.size = d.size.replaceSymbols(soft);
      }
      return newTensor(shape);
    }
    auto it = cls->attrs.find(attr);
    if (it == cls->attrs.end())
      return AbsVal::unknown();
    return it->second.kind == AbsVal::Kind::Parameter
               ? parameterTensor(it->second)
               : it->second;
  }
  AbsVal v = eval(base);
  if (v.isTensor())
    return tensorAttribute(v, attr, e);
  return AbsVal::unknown();
}

AbsVal FunctionInterp::subscript(Node e) {
  AbsVal v = eval(child(e, "value"));
  Node index = child(e, "slice");
  if (v.isTensor())
    return subscriptTensor(v, e);
  if (v.kind == AbsVal::Kind::Tuple) {
    if (auto i = intConstant(index)) {
      long long n = static_cast<long long>(v.items.size());
      long long k = *i < 0 ? *i + n : *i;
      return k >= 0 && k < n ? v.items[k] : AbsVal::unknown();
    }
    if (isa(index, "Slice") && !child(index, "step")) {
      auto lo = child(index, "lower") ? intConstant(child(index, "lower"))
                                      : std::optional<long long>(0);
      auto hi = child(index, "upper")
                    ? intConstant(child(index, "upper"))
                    : std::optional<long long>(v.items.size());
      if (!lo || !hi)
        return AbsVal::unknown();
      long long n = static_cast<long long>(v.items.size());
      long long a = std::clamp(*lo < 0 ? *lo + n : *lo, 0LL, n);
      long long b = std::clamp(*hi < 0 ? *hi + n : *hi, 0LL, n);
      return AbsVal::tuple(
          b > a ? std::vector<AbsVal>(v.items.begin() + a, v.items.begin() + b)
                : std::vector<AbsVal>{});
    }
    eval(index);
    return AbsVal::unknown();
  }
  if (v.kind == AbsVal::Kind::ShapeDict) {
    if (auto key = stringConstant(index))
      if (auto it = v.dict.find(*key); it != v.dict.end())
        return AbsVal::ofSize(it->second);
    return AbsVal::unknown();
  }
  eval(index);
  return AbsVal::unknown();
}

AbsVal FunctionInterp::call(Node e) {
  Node func = child(e, "func");
  // A local name (a parameter, a variable) is not the import it shadows.
  Node root = func;
  while (isa(root, "Attribute"))
    root = child(root, "value");
  // A chain rooted in anything but a name (`f(x).view(...)`) is a value's.
  bool local = !isa(root, "Name") || env.count(stringField(root, "id")) ||
               stringField(root, "id") == selfName;
  bool funcRead = false;
  if (isa(func, "Attribute")) {
    Node base = child(func, "value");
    std::string method = stringField(func, "attr");
    // `self.layer(x)`: an einops layer built in __init__.
    if (local && isa(base, "Name") && stringField(base, "id") == selfName) {
      AbsVal attr = attribute(func);
      if (attr.kind == AbsVal::Kind::Layer)
        return applyLayer(attr, e);
      if (attr.kind == AbsVal::Kind::Instance)
        return callModule(attr, e);
      // `self.helper(x)`: a method of this class.
      if (cls && !attr.known() && !cls->attrs.count(method) &&
          !cls->unstable.count(method))
        if (auto m = cls->methods.find(method); m != cls->methods.end())
          return callAnnotated(m->second, e, true);
    } else if (local) {
      AbsVal self = eval(base);
      funcRead = true;
      if (self.isTensor())
        if (auto r = tensorMethod(self, method, e))
          return *r;
    }
  }
  if (isa(func, "Name") && local) {
    AbsVal callee = eval(func);
    if (callee.kind == AbsVal::Kind::Layer)
      return applyLayer(callee, e);
    if (callee.kind == AbsVal::Kind::Instance)
      return callModule(callee, e);
  }
  // map(lambda t: ..., items), tuple(items), list(items) of a known tuple.
  if (!local && isa(func, "Name")) {
    std::string id = stringField(func, "id");
    std::vector<Node> a = args(e);
    if (id == "map" && cx.names.qualified(func) == "map" && a.size() == 2 &&
        isa(a[0], "Lambda")) {
      std::vector<Node> params = children(child(a[0], "args"), "args");
      AbsVal items = eval(a[1]);
      if (params.size() == 1 && items.kind == AbsVal::Kind::Tuple)
        return mapOver(stringField(params[0], "arg"), child(a[0], "body"),
                       items);
      return AbsVal::unknown();
    }
    if ((id == "tuple" || id == "list") && cx.names.qualified(func) == id &&
        a.size() == 1) {
      AbsVal items = eval(a[0]);
      return items.kind == AbsVal::Kind::Tuple ? items : AbsVal::unknown();
    }
  }
  // A function or class of this file (not an import of the same name).
  if (!local && isa(func, "Name") &&
      cx.names.qualified(func) == stringField(func, "id")) {
    std::string id = stringField(func, "id");
    if (auto f = cx.functions.find(id); f != cx.functions.end())
      return callAnnotated(f->second, e, false);
    if (auto c = cx.classes.find(id); c != cx.classes.end()) {
      evalArgs(e);
      return AbsVal::built(AbsVal::Kind::Instance, c->second);
    }
  }
  if (!local)
    if (auto m = torchModule(cx.names.qualified(func), e))
      return *m;
  if (!local) {
    std::string q = cx.names.qualified(func);
    if (!q.empty()) {
      if (auto r = einopsCall(q, e))
        return *r;
      if (auto r = torchFunction(q, e))
        return *r;
    }
  }
  // Not understood: its arguments are still read (the calls in them are
  // checked), its result is unknown.
  if (!funcRead && !isa(func, "Name"))
    eval(func);
  evalArgs(e);
  return AbsVal::unknown();
}

void FunctionInterp::evalArgs(Node call) {
  for (Node a : args(call))
    eval(a);
  for (Node k : children(call, "keywords"))
    eval(child(k, "value"));
}

} // namespace ein::pycheck
