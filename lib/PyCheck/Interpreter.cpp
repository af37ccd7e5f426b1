// The abstract interpreter of one function: parameters from annotations,
// statements (control flow made sound: a branch's stores are unknown after
// it; code under an undecided condition on shapes reports nothing), returns
// checked against the result annotation, and the diagnostics with their
// notes.
#include "Interpreter.h"
#include "ein/Sema/Suggestions.h"

#include <fmt/format.h>

#include <regex>

namespace ein::pycheck {

FunctionInterp::FunctionInterp(FileContext &cx, Node def, ClassInfo *cls,
                               std::string qualifiedName)
    : cx(cx), def(def), cls(cls), name(std::move(qualifiedName)), builder(fn) {
  fn.name = name;
  fn.loc = nodeLoc(def);
  isInit = cls && stringField(def, "name") == "__init__";
}

std::vector<Node> FunctionInterp::args(Node call) {
  return children(call, "args");
}

Node FunctionInterp::keyword(Node call, const char *kw) {
  for (Node k : children(call, "keywords"))
    if (stringField(k, "arg") == kw)
      return child(k, "value");
  return nullptr;
}

const Shape &FunctionInterp::shapeOf(const AbsVal &tensor) const {
  return fn.values[tensor.id].type.shape;
}

AbsVal FunctionInterp::newTensor(Shape shape) {
  return AbsVal::tensor(
      builder.param(TensorType{std::move(shape), DType::F32}));
}

AbsVal FunctionInterp::syntheticInput(const PatternSide &side) {
  Shape shape;
  for (auto &g : side.groups) {
    std::string anon = "_anon" + std::to_string(anonCounter++);
    synthetic.insert(anon);
    bool ellipsis = !g.parenthesized && g.axes.size() == 1 &&
                    g.axes[0].kind == PatternAxis::Kind::Ellipsis;
    shape.push_back(ellipsis ? Dim::ofPack(anon)
                             : Dim::ofSize(SizeExpr::symbol(anon)));
  }
  return newTensor(shape);
}

SizeExpr FunctionInterp::namedUnknownSize(const std::string &key,
                                          const std::string &shown) {
  auto it = namedSizes.find(key);
  if (it != namedSizes.end())
    return it->second;
  // An anonymous name (Shape.h's isAnonymousName): a size nobody declared,
  // which the shape rules only ever require equal to another by an entry
  // check, never refuse.
  std::string anon = "_anon" + std::to_string(anonCounter++);
  display[anon] = shown.empty() ? key : shown;
  return namedSizes[key] = SizeExpr::symbol(anon);
}

std::string FunctionInterp::textOf(Node expr) const {
  SourceLoc loc = nodeLoc(expr);
  std::string line = cx.file.lineText(loc.line);
  return loc.col - 1 < line.size()
             ? line.substr(loc.col - 1, nodeLength(expr, cx.file))
             : "";
}

SizeExpr FunctionInterp::initSize(Node expr) {
  if (auto i = intConstant(expr))
    return SizeExpr::constant(*i);
  if (isa(expr, "Name"))
    if (auto g = cx.globals.find(stringField(expr, "id"));
        g != cx.globals.end() && g->second.kind == AbsVal::Kind::Size)
      return g->second.size;
  // `3 * dim`, `inner + 1`: the same arithmetic over __init__'s sizes, so
  // that `chunk(3)` of a Linear's `3 * dim` outputs is `dim` again and
  // checks over them fold (integer + and * are exact).
  if (isa(expr, "BinOp")) {
    std::string op = nodeType(child(expr, "op"));
    if (op == "Mult" || op == "Add") {
      SizeExpr lhs = initSize(child(expr, "left")),
               rhs = initSize(child(expr, "right"));
      return op == "Mult" ? lhs * rhs : lhs + rhs;
    }
  }
  // Shown as `__init__.heads`, `__init__.(inner // 3)`: not the function's
  // own `heads`.
  std::string text = textOf(expr);
  bool name = isa(expr, "Name") || isa(expr, "Attribute");
  return namedUnknownSize("init:" + text,
                          "__init__." + (name ? text : "(" + text + ")"));
}

std::optional<SizeExpr> FunctionInterp::sizeArg(Node expr) {
  if (isNumberLiteral(expr) && !intConstant(expr))
    return std::nullopt;
  AbsVal v = eval(expr);
  if (v.kind == AbsVal::Kind::Size)
    return v.size;
  if (v.kind == AbsVal::Kind::Tensor || v.kind == AbsVal::Kind::Tuple ||
      v.kind == AbsVal::Kind::Layer)
    return std::nullopt;
  return namedUnknownSize(textOf(expr));
}

std::string FunctionInterp::displayName(const std::string &message) const {
  static const std::regex anon("_anon[0-9]+(_[0-9]+)?");
  std::string out;
  auto begin = std::sregex_iterator(message.begin(), message.end(), anon);
  size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    out += message.substr(last, it->position() - last);
    auto d = display.find(it->str());
    out += d != display.end() ? d->second : "_";
    last = it->position() + it->length();
  }
  return out + message.substr(last);
}

void FunctionInterp::addNotes(const std::string &message) {
  static const std::regex word("[A-Za-z_][A-Za-z0-9_]*");
  // The two dims the rule could not prove equal (`cannot prove d == e`):
  // distinct names are distinct dims, so where each was declared is the
  // fact to show.
  std::vector<std::string> names;
  size_t at = message.find("cannot prove ");
  std::string verdict = at == std::string::npos
                            ? ""
                            : message.substr(at, message.find(" (", at) - at);
  for (auto it = std::sregex_iterator(verdict.begin(), verdict.end(), word);
       it != std::sregex_iterator(); ++it)
    if (declaredAt.count(it->str()) &&
        std::find(names.begin(), names.end(), it->str()) == names.end())
      names.push_back(it->str());
  for (size_t i = 0; i < names.size() && i < 2; ++i) {
    auto &[loc, length] = declaredAt[names[i]];
    cx.diags.note(loc, "'" + names[i] + "' declared here", length);
  }
}

void FunctionInterp::errorAt(SourceLoc loc, unsigned length,
                             const std::string &message) {
  std::string text = displayName(message);
  if (quiet) {
    cx.report.skipped.push_back(
        {loc, "error",
         "not reported: the code is under a condition on shapes "
         "that the checker does not decide, or meant to raise (" +
             text + ")"});
    ++skips;
    return;
  }
  cx.diags.error(loc, text, length);
  addNotes(message);
}

void FunctionInterp::error(Node at, const std::string &message) {
  errorAt(nodeLoc(at), nodeLength(at, cx.file), message);
}

void FunctionInterp::skip(Node at, const std::string &what,
                          const std::string &reason) {
  cx.report.skipped.push_back({nodeLoc(at), what, reason});
  ++skips;
}

void FunctionInterp::reportBuild(const BuildError &e, Node call, Node pattern,
                                 const std::vector<Node> &operands,
                                 const std::vector<Node> &keywords) {
  if (e.rule != BuildError::Rule::Shape) {
    skip(call, e.op, "dtypes are not checked");
    return;
  }
  SourceLoc loc = nodeLoc(call);
  unsigned length = nodeLength(call, cx.file);
  const ShapeError &s = e.error;
  switch (s.anchor) {
  case ShapeError::Anchor::Pattern:
    if (auto inside =
            pattern ? stringContentLoc(pattern, cx.file) : std::nullopt) {
      loc = inside->advanced(s.offset);
      length = std::max(1u, s.length);
    } else if (pattern) {
      loc = nodeLoc(pattern);
      length = nodeLength(pattern, cx.file);
    }
    break;
  case ShapeError::Anchor::Operand:
    if (s.index < operands.size()) {
      loc = nodeLoc(operands[s.index]);
      length = nodeLength(operands[s.index], cx.file);
    }
    break;
  case ShapeError::Anchor::Kwarg:
    if (s.index < keywords.size()) {
      loc = nodeLoc(keywords[s.index]);
      length =
          static_cast<unsigned>(stringField(keywords[s.index], "arg").size());
    }
    break;
  case ShapeError::Anchor::Op:
    break;
  }
  errorAt(loc, length, s.message);
  if (!e.spaced.empty() && !quiet)
    cx.diags.note(loc, spacedPatternNote(e.spaced), length);
}

// ---- the function -------------------------------------------------------

void FunctionInterp::run() {
  Node arguments = child(def, "args");
  std::vector<Node> params = children(arguments, "posonlyargs");
  for (Node p : children(arguments, "args"))
    params.push_back(p);
  size_t positional = params.size();
  for (Node p : children(arguments, "kwonlyargs"))
    params.push_back(p);
  std::vector<Node> defaults = children(arguments, "defaults");
  bool anyUnreadable = false, anyRead = false;
  std::string unreadableWhy;
  auto noteDeclared = [&](const ArrayAnnotation &a) {
    auto inside = stringContentLoc(a.literal, cx.file);
    for (auto &[dim, offset] : a.declared) {
      if (declaredAt.count(dim))
        continue;
      if (inside)
        declaredAt[dim] = {inside->advanced(offset),
                           static_cast<unsigned>(dim.size())};
      else
        declaredAt[dim] = {nodeLoc(a.literal), nodeLength(a.literal, cx.file)};
    }
  };
  for (size_t i = 0; i < params.size(); ++i) {
    Node p = params[i];
    std::string pname = stringField(p, "arg");
    if (i == 0 && cls && !child(p, "annotation")) {
      selfName = pname;
      continue;
    }
    AnnotationRead read =
        readAnnotation(child(p, "annotation"), cx.names, &anonCounter);
    switch (read.kind) {
    case AnnotationRead::Kind::Array: {
      anyRead = annotated = true;
      noteDeclared(read.array);
      for (auto &d : read.array.shape)
        for (auto &s :
             d.isPack() ? std::set<std::string>{d.pack} : d.size.symbols())
          paramDims.insert(s);
      env[pname] =
          AbsVal::tensor(builder.param({read.array.shape, DType::F32}, pname));
      break;
    }
    case AnnotationRead::Kind::Unreadable:
      anyUnreadable = annotated = true;
      unreadableWhy = "parameter '" + pname + "': " + read.reason;
      env[pname] = AbsVal::unknown();
      break;
    case AnnotationRead::Kind::None: {
      // A number: annotated int/float, or a numeric default (an
      // assumption the docs state: `heads=8` is a number).
      std::string ann = cx.names.qualified(child(p, "annotation"));
      size_t fromEnd = positional - i;
      Node dflt = i < positional && fromEnd <= defaults.size()
                      ? defaults[defaults.size() - fromEnd]
                      : nullptr;
      if (ann == "int" || ann == "float" || isNumberLiteral(dflt))
        env[pname] = AbsVal::number();
      else
        env[pname] = AbsVal::unknown();
      break;
    }
    }
  }
  Node returns = child(def, "returns");
  std::string rq = isa(returns, "Subscript")
                       ? cx.names.qualified(child(returns, "value"))
                       : "";
  std::vector<Node> resultNodes;
  if (rq == "tuple" || rq == "typing.Tuple") {
    resultTuple = true;
    Node slice = child(returns, "slice");
    resultNodes = isa(slice, "Tuple") ? children(slice, "elts")
                                      : std::vector<Node>{slice};
  } else if (returns) {
    resultNodes = {returns};
  }
  for (Node r : resultNodes) {
    results.push_back(readAnnotation(r, cx.names, &anonCounter));
    if (results.back().kind == AnnotationRead::Kind::Array) {
      anyRead = annotated = true;
      noteDeclared(results.back().array);
    } else if (results.back().kind == AnnotationRead::Kind::Unreadable) {
      anyUnreadable = annotated = true;
      unreadableWhy = "result: " + results.back().reason;
    }
  }
  if (resultTuple &&
      !std::any_of(results.begin(), results.end(), [](const AnnotationRead &r) {
        return r.kind == AnnotationRead::Kind::Array;
      }))
    results.clear();

  unsigned skipsBefore = static_cast<unsigned>(cx.report.skipped.size());
  block(children(def, "body"), true);
  if (!annotated)
    return;
  FunctionSummary summary;
  summary.name = name;
  summary.loc = nodeLoc(def);
  if (!anyRead) {
    summary.status = FunctionSummary::Status::Skipped;
    summary.reason = unreadableWhy;
  } else if (anyUnreadable || cx.report.skipped.size() > skipsBefore) {
    summary.status = FunctionSummary::Status::Partial;
  }
  cx.report.functions.push_back(summary);
  for (auto &c : fn.ctx.constraints) {
    // A relation with a size of an unknown input's (or only sizes nobody
    // named) says nothing a user can act on.
    std::set<std::string> names = c.lhs.symbols(), rhs = c.rhs.symbols();
    names.insert(rhs.begin(), rhs.end());
    auto pack = [](const std::string &n) { return n.substr(0, n.rfind('_')); };
    if (std::any_of(names.begin(), names.end(),
                    [&](const std::string &n) {
                      return synthetic.count(n) || synthetic.count(pack(n));
                    }) ||
        std::all_of(names.begin(), names.end(), [&](const std::string &n) {
          return isAnonymousName(n) && !display.count(n);
        }))
      continue;
    cx.report.entryChecks.emplace_back(name, displayName(c.str()));
  }
}

// ---- statements ---------------------------------------------------------

void FunctionInterp::block(const std::vector<Node> &body, bool topLevel) {
  // After a return (or a branch the shapes decide that returns) the rest
  // is dead code: not checked, as it never runs.
  for (Node s : body) {
    stmt(s, topLevel);
    if (stopped)
      return;
  }
}

void collectStored(Node n, std::set<std::string> &out) {
  if (!n)
    return;
  if (isa(n, "Name") && isa(child(n, "ctx"), "Store"))
    out.insert(stringField(n, "id"));
  if (isa(n, "FunctionDef") || isa(n, "ClassDef") || isa(n, "AsyncFunctionDef"))
    out.insert(stringField(n, "name"));
  for (auto &[key, value] : *n) {
    if (auto *o = value.getAsObject())
      collectStored(o, out);
    else if (auto *list = value.getAsArray())
      for (auto &item : *list)
        collectStored(item.getAsObject(), out);
  }
}

void FunctionInterp::forgetStored(Node region) {
  std::set<std::string> stored;
  collectStored(region, stored);
  for (auto &s : stored)
    env[s] = AbsVal::unknown();
}

void FunctionInterp::branch(const std::vector<Node> &body, Node region) {
  auto saved = env;
  block(body, false);
  stopped = false;
  env = std::move(saved);
  forgetStored(region);
}

bool FunctionInterp::mentionsShapes(Node n) {
  if (!n)
    return false;
  if (isa(n, "Attribute")) {
    std::string attr = stringField(n, "attr");
    if (attr == "shape" || attr == "ndim" || attr == "dim" || attr == "size")
      return true;
  }
  if (isa(n, "Name")) {
    std::string id = stringField(n, "id");
    if (id == "len" || id == "isinstance")
      return true;
    auto it = env.find(id);
    if (it != env.end() && it->second.kind == AbsVal::Kind::Size)
      return true;
  }
  for (auto &[key, value] : *n) {
    if (auto *o = value.getAsObject()) {
      if (mentionsShapes(o))
        return true;
    } else if (auto *list = value.getAsArray()) {
      for (auto &item : *list)
        if (mentionsShapes(item.getAsObject()))
          return true;
    }
  }
  return false;
}

std::optional<bool> FunctionInterp::decide(Node test) {
  // Evaluates `test` once, whatever it decides.
  if (!isa(test, "Compare") || children(test, "ops").size() != 1) {
    eval(test);
    return std::nullopt;
  }
  AbsVal lhs = eval(child(test, "left"));
  AbsVal rhs = eval(children(test, "comparators")[0]);
  if (lhs.kind != AbsVal::Kind::Size || rhs.kind != AbsVal::Kind::Size)
    return std::nullopt;
  std::string op = nodeType(children(test, "ops")[0]);
  auto a = lhs.size.constantValue(), b = rhs.size.constantValue();
  if (a && b) {
    if (op == "Eq")
      return *a == *b;
    if (op == "NotEq")
      return *a != *b;
    if (op == "Lt")
      return *a < *b;
    if (op == "LtE")
      return *a <= *b;
    if (op == "Gt")
      return *a > *b;
    if (op == "GtE")
      return *a >= *b;
    return std::nullopt;
  }
  if (op != "Eq" && op != "NotEq")
    return std::nullopt;
  switch (fn.ctx.prove(lhs.size, rhs.size)) {
  case InferContext::Proof::Equal:
    return op == "Eq";
  case InferContext::Proof::NotEqual:
    return op != "Eq";
  case InferContext::Proof::Unknown:
    return std::nullopt;
  }
  return std::nullopt;
}

void FunctionInterp::stmt(Node s, bool topLevel) {
  std::string t = nodeType(s);
  if (t == "Expr") {
    eval(child(s, "value"));
  } else if (t == "Assign") {
    AbsVal v = eval(child(s, "value"));
    std::vector<Node> targets = children(s, "targets");
    if (targets.size() == 1 && storesAttribute(targets[0], topLevel) &&
        !v.known())
      v = initParameter(child(s, "value")).value_or(v);
    for (Node target : targets)
      assign(target, v, topLevel);
  } else if (t == "AnnAssign") {
    Node value = child(s, "value");
    Node target = child(s, "target");
    AnnotationRead read =
        readAnnotation(child(s, "annotation"), cx.names, &anonCounter);
    AbsVal v = value ? eval(value) : AbsVal::unknown();
    if (value && storesAttribute(target, topLevel) && !v.known())
      v = initParameter(value).value_or(v);
    if (read.kind == AnnotationRead::Kind::Array && value && v.isTensor())
      checkAgainst(value, v, read.array, "value", "");
    if (read.kind == AnnotationRead::Kind::Array &&
        storesAttribute(target, topLevel))
      cls->annotated[stringField(target, "attr")] = child(s, "annotation");
    if (value)
      assign(target, v, topLevel);
  } else if (t == "AugAssign") {
    Node target = child(s, "target");
    AbsVal lhs = eval(target), rhs = eval(child(s, "value"));
    AbsVal v = binaryOp(s, lhs, rhs);
    assign(target, v, topLevel);
  } else if (t == "Return") {
    checkReturn(child(s, "value"));
    stopped = true;
  } else if (t == "Raise" || t == "Break" || t == "Continue") {
    stopped = true;
  } else if (t == "If") {
    Node test = child(s, "test");
    bool shapey = mentionsShapes(test);
    auto decided = shapey ? decide(test) : (eval(test), std::nullopt);
    if (decided) {
      // Only the branch the shapes take runs: the other is dead code here.
      block(children(s, *decided ? "body" : "orelse"), false);
      return;
    }
    quiet += shapey;
    branch(children(s, "body"), s);
    branch(children(s, "orelse"), s);
    quiet -= shapey;
  } else if (t == "For" || t == "AsyncFor" || t == "While") {
    if (t == "While")
      eval(child(s, "test"));
    else
      eval(child(s, "iter"));
    forgetStored(s);
    branch(children(s, "body"), s);
    branch(children(s, "orelse"), s);
  } else if (t == "With" || t == "AsyncWith") {
    // `with pytest.raises(...)`: the body is meant to fail; its errors are
    // not reported.
    bool raises = false;
    for (Node item : children(s, "items")) {
      Node ctxExpr = child(item, "context_expr");
      std::string callee =
          lastComponent(cx.names.qualified(child(ctxExpr, "func")));
      raises |= isa(ctxExpr, "Call") &&
                (callee == "raises" || callee == "assertRaises" ||
                 callee == "assertRaisesRegex");
      eval(ctxExpr);
      forgetStored(child(item, "optional_vars"));
    }
    quiet += raises;
    block(children(s, "body"), topLevel);
    quiet -= raises;
  } else if (t == "Try" || t == "TryStar") {
    // The body may stop anywhere: the handlers see what it may have stored
    // as unknown.
    branch(children(s, "body"), s);
    for (Node h : children(s, "handlers"))
      branch(children(h, "body"), s);
    branch(children(s, "orelse"), s);
    block(children(s, "finalbody"), false);
  } else if (t == "FunctionDef" || t == "AsyncFunctionDef") {
    // A nested function is checked on its own (what it captures unknown).
    FunctionInterp inner(cx, s, nullptr, name + "." + stringField(s, "name"));
    inner.run();
    env[stringField(s, "name")] = AbsVal::unknown();
  } else if (t == "Assert") {
    eval(child(s, "test"));
  } else {
    // Match, Delete, Global, ClassDef, Import, ...: not modelled; the names
    // they may bind are unknown.
    forgetStored(s);
  }
}

bool FunctionInterp::storesAttribute(Node target, bool topLevel) const {
  return isa(target, "Attribute") && isInit && topLevel && !selfName.empty() &&
         isa(child(target, "value"), "Name") &&
         stringField(child(target, "value"), "id") == selfName;
}

void FunctionInterp::assign(Node target, const AbsVal &v, bool topLevel) {
  if (isa(target, "Name")) {
    env[stringField(target, "id")] = v;
    return;
  }
  if (isa(target, "Tuple") || isa(target, "List")) {
    std::vector<Node> elts = children(target, "elts");
    bool starred = std::any_of(elts.begin(), elts.end(),
                               [](Node e) { return isa(e, "Starred"); });
    for (size_t i = 0; i < elts.size(); ++i)
      assign(elts[i],
             !starred && v.kind == AbsVal::Kind::Tuple &&
                     v.items.size() == elts.size()
                 ? v.items[i]
                 : AbsVal::unknown(),
             topLevel);
    return;
  }
  if (isa(target, "Starred")) {
    forgetStored(target);
    return;
  }
  // `self.X = v` at the top level of __init__: an attribute the methods
  // read, when it is stored nowhere else. A tensor belongs to __init__'s
  // own function: not kept.
  if (storesAttribute(target, topLevel)) {
    std::string attr = stringField(target, "attr");
    if (!cls->unstable.count(attr) && !v.isTensor())
      cls->attrs[attr] = v;
  }
}

void FunctionInterp::checkAgainst(Node at, const AbsVal &v,
                                  const ArrayAnnotation &declared,
                                  const std::string &what,
                                  const std::string &declaredNote) {
  Shape actual = fn.ctx.expand(shapeOf(v));
  Shape expected = declared.shape;
  // A name first written in this annotation binds to what it meets, as
  // jaxtyping binds it.
  bool packs = std::any_of(expected.begin(), expected.end(),
                           [](const Dim &d) { return d.isPack(); }) ||
               std::any_of(actual.begin(), actual.end(),
                           [](const Dim &d) { return d.isPack(); });
  if (!packs && expected.size() == actual.size()) {
    std::map<std::string, SizeExpr> bind;
    for (size_t i = 0; i < expected.size(); ++i)
      if (auto s = expected[i].size.asSymbol();
          s && !paramDims.count(*s) && !bind.count(*s))
        bind[*s] = actual[i].size;
    for (auto &d : expected)
      d.size = d.size.replaceSymbols(bind);
  }
  // A variadic first written here (or `...`) binds to what it meets, as
  // jaxtyping binds it: to the value's one variadic in the same place;
  // anything else about it is not decided here.
  auto freePack = [&](const Dim &d) {
    return d.isPack() && (isAnonymousName(d.pack) || !paramDims.count(d.pack));
  };
  auto packAt = [](const Shape &s) -> std::optional<size_t> {
    std::optional<size_t> at;
    for (size_t i = 0; i < s.size(); ++i)
      if (s[i].isPack()) {
        if (at)
          return std::nullopt;
        at = i;
      }
    return at;
  };
  if (std::any_of(expected.begin(), expected.end(), freePack)) {
    auto ie = packAt(expected), ia = packAt(actual);
    if (ie && ia && *ie == *ia && expected.size() == actual.size()) {
      expected[*ie] = actual[*ia];
    } else if (std::any_of(actual.begin(), actual.end(),
                           [](const Dim &d) { return d.isPack(); })) {
      skip(at, what,
           "a variadic dim of the value is not matched to the "
           "annotation's");
      return;
    }
  }
  auto ok = checkShapeMatches(fn.ctx, expected, actual);
  ++cx.report.returnsChecked;
  if (ok)
    return;
  error(at, what + " has shape \"" + shapeStr(actual) +
                "\" but the function declares \"" + declared.spec +
                "\": " + ok.error().message);
  // Either side may be the bug: where the result is declared, and where
  // the value's shape was declared when a call of the file gave it.
  if (!reporting())
    return;
  if (!declaredNote.empty())
    cx.diags.note(nodeLoc(declared.literal), declaredNote,
                  nodeLength(declared.literal, cx.file));
  noteOrigin(v);
}

void FunctionInterp::noteOrigin(const AbsVal &v) {
  auto it = v.isTensor() ? resultOrigin.find(v.id) : resultOrigin.end();
  if (it == resultOrigin.end() || !reporting())
    return;
  cx.diags.note(nodeLoc(it->second.first),
                "the result of '" + it->second.second + "' is declared here",
                nodeLength(it->second.first, cx.file));
}

void FunctionInterp::checkReturn(Node value) {
  AbsVal v = value ? eval(value) : AbsVal::unknown();
  if (results.empty())
    return;
  if (resultTuple) {
    if (v.kind != AbsVal::Kind::Tuple || v.items.size() != results.size() ||
        !isa(value, "Tuple")) {
      skip(value ? value : def, "return", "the returned tuple is not read");
      return;
    }
    std::vector<Node> elts = children(value, "elts");
    for (size_t i = 0; i < results.size(); ++i) {
      if (results[i].kind != AnnotationRead::Kind::Array)
        continue;
      if (!v.items[i].isTensor())
        skip(elts[i], "return", "the returned value's shape is unknown");
      else
        checkAgainst(elts[i], v.items[i], results[i].array,
                     "returned value " + std::to_string(i),
                     fmt::format("result {} of '{}' is declared here", i,
                                 stringField(def, "name")));
    }
    return;
  }
  if (results[0].kind != AnnotationRead::Kind::Array)
    return;
  if (!v.isTensor()) {
    skip(value ? value : def, "return",
         "the returned value's shape is unknown");
    return;
  }
  checkAgainst(value, v, results[0].array, "returned value",
               "the result of '" + stringField(def, "name") +
                   "' is declared here");
}

} // namespace ein::pycheck
