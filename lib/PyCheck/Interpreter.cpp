// The abstract interpreter's statements and expressions: parameters from
// annotations, assignments, control flow made sound (a branch's stores are
// unknown after it; code under an undecided condition on shapes reports
// nothing), calls dispatched to the einops and torch rules, and returns
// checked against the result annotation.
#include "Interpreter.h"
#include "ein/Sema/Suggestions.h"

#include <fmt/format.h>

#include <regex>

namespace ein::pycheck {

FunctionInterp::FunctionInterp(FileContext &cx, Node def, ClassInfo *cls,
                               std::string qualifiedName)
    : cx(cx), def(def), cls(cls), name(std::move(qualifiedName)),
      builder(fn) {
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
  return AbsVal::tensor(builder.param(TensorType{std::move(shape), DType::F32}));
}

SizeExpr FunctionInterp::namedUnknownSize(const std::string &text) {
  auto it = namedSizes.find(text);
  if (it != namedSizes.end())
    return it->second;
  // An anonymous name (Shape.h's isAnonymousName): a size nobody declared,
  // which the shape rules only ever require equal to another by an entry
  // check, never refuse.
  std::string anon = "_anon" + std::to_string(anonCounter++);
  display[anon] = text;
  return namedSizes[text] = SizeExpr::symbol(anon);
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
  SourceLoc loc = nodeLoc(expr);
  std::string text = cx.file.lineText(loc.line).substr(
      loc.col - 1, nodeLength(expr, cx.file));
  return namedUnknownSize(text);
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
  std::string verdict =
      at == std::string::npos ? "" : message.substr(at, message.find(" (", at) - at);
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
        {loc, "error", "not reported: the code is under a condition on shapes "
                       "that the checker does not decide (" + text + ")"});
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
    if (auto inside = pattern ? stringContentLoc(pattern, cx.file)
                              : std::nullopt) {
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
      length = static_cast<unsigned>(
          stringField(keywords[s.index], "arg").size());
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
        declaredAt[dim] = {nodeLoc(a.literal),
                           nodeLength(a.literal, cx.file)};
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
        for (auto &s : d.isPack() ? std::set<std::string>{d.pack}
                                  : d.size.symbols())
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
  if (resultTuple && !std::any_of(results.begin(), results.end(),
                                  [](const AnnotationRead &r) {
                                    return r.kind ==
                                           AnnotationRead::Kind::Array;
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
  for (auto &c : fn.ctx.constraints)
    cx.report.entryChecks.push_back(name + ": " + displayName(c.str()));
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

static void collectStored(Node n, std::set<std::string> &out) {
  if (!n)
    return;
  if (isa(n, "Name") && isa(child(n, "ctx"), "Store"))
    out.insert(stringField(n, "id"));
  if (isa(n, "FunctionDef") || isa(n, "ClassDef") ||
      isa(n, "AsyncFunctionDef"))
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
  if (!isa(test, "Compare") || children(test, "ops").size() != 1)
    return std::nullopt;
  AbsVal lhs = eval(child(test, "left"));
  AbsVal rhs = eval(children(test, "comparators")[0]);
  if (lhs.kind != AbsVal::Kind::Size || rhs.kind != AbsVal::Kind::Size)
    return std::nullopt;
  std::string op = nodeType(children(test, "ops")[0]);
  auto a = lhs.size.constantValue(), b = rhs.size.constantValue();
  if (a && b) {
    if (op == "Eq") return *a == *b;
    if (op == "NotEq") return *a != *b;
    if (op == "Lt") return *a < *b;
    if (op == "LtE") return *a <= *b;
    if (op == "Gt") return *a > *b;
    if (op == "GtE") return *a >= *b;
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
    for (Node target : children(s, "targets"))
      assign(target, v, topLevel);
  } else if (t == "AnnAssign") {
    Node value = child(s, "value");
    Node target = child(s, "target");
    AnnotationRead read =
        readAnnotation(child(s, "annotation"), cx.names, &anonCounter);
    AbsVal v = value ? eval(value) : AbsVal::unknown();
    if (read.kind == AnnotationRead::Kind::Array && value && v.isTensor())
      checkAgainst(value, v, read.array, "value");
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
    auto decided = mentionsShapes(test) ? decide(test) : std::nullopt;
    if (!decided)
      eval(test);
    if (decided) {
      // Only the branch the shapes take runs: the other is dead code here.
      block(children(s, *decided ? "body" : "orelse"), false);
      return;
    }
    bool shapey = mentionsShapes(test);
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
    for (Node item : children(s, "items")) {
      eval(child(item, "context_expr"));
      forgetStored(child(item, "optional_vars"));
    }
    block(children(s, "body"), topLevel);
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
  if (isa(target, "Attribute") && isInit && topLevel && !selfName.empty() &&
      isa(child(target, "value"), "Name") &&
      stringField(child(target, "value"), "id") == selfName) {
    std::string attr = stringField(target, "attr");
    if (!cls->unstable.count(attr) && !v.isTensor())
      cls->attrs[attr] = v;
  }
}

void FunctionInterp::checkAgainst(Node at, const AbsVal &v,
                                  const ArrayAnnotation &declared,
                                  const std::string &what) {
  Shape actual = fn.ctx.expand(shapeOf(v));
  Shape expected = declared.shape;
  // jaxtyping checks each `...` (and `*_`) against nothing else, and binds a
  // `*name` first written here to what it meets: where the value holds a
  // pack at the same place, such a declared pack is that pack.
  if (expected.size() == actual.size())
    for (size_t i = 0; i < expected.size(); ++i)
      if (expected[i].isPack() && actual[i].isPack() &&
          (isAnonymousName(expected[i].pack) ||
           !paramDims.count(expected[i].pack)))
        expected[i].pack = actual[i].pack;
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
  auto ok = checkShapeMatches(fn.ctx, expected, actual);
  ++cx.report.returnsChecked;
  if (!ok)
    error(at, what + " has shape \"" + shapeStr(actual) +
                  "\" but the function declares \"" + declared.spec +
                  "\": " + ok.error().message);
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
                     "returned value " + std::to_string(i));
    }
    return;
  }
  if (results[0].kind != AnnotationRead::Kind::Array)
    return;
  if (!v.isTensor()) {
    skip(value ? value : def, "return", "the returned value's shape is unknown");
    return;
  }
  checkAgainst(value, v, results[0].array, "returned value");
}

// ---- expressions --------------------------------------------------------

AbsVal FunctionInterp::eval(Node e) {
  std::string t = nodeType(e);
  if (t == "Name") {
    std::string id = stringField(e, "id");
    if (auto it = env.find(id); it != env.end())
      return it->second;
    if (auto it = cx.globals.find(id); it != cx.globals.end())
      return it->second;
    return AbsVal::unknown();
  }
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
    auto decided = mentionsShapes(test) ? decide(test) : std::nullopt;
    if (decided)
      return eval(child(e, *decided ? "body" : "orelse"));
    bool shapey = mentionsShapes(test);
    quiet += shapey;
    eval(test);
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
  // Lambda, comprehensions (their own names may shadow ours), Yield, ...
  return AbsVal::unknown();
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
  bool numeric = [](const AbsVal &v) {
    return v.kind == AbsVal::Kind::Size || v.kind == AbsVal::Kind::Number;
  }(lhs) && (rhs.kind == AbsVal::Kind::Size ||
             rhs.kind == AbsVal::Kind::Number);
  return numeric ? AbsVal::number() : AbsVal::unknown();
}

AbsVal FunctionInterp::attribute(Node e) {
  Node base = child(e, "value");
  std::string attr = stringField(e, "attr");
  if (isa(base, "Name") && !selfName.empty() &&
      stringField(base, "id") == selfName && cls) {
    if (cls->unstable.count(attr))
      return AbsVal::unknown();
    auto it = cls->attrs.find(attr);
    return it == cls->attrs.end() ? AbsVal::unknown() : it->second;
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
      return AbsVal::tuple(b > a ? std::vector<AbsVal>(v.items.begin() + a,
                                                       v.items.begin() + b)
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
  }
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
  for (Node a : args(e))
    eval(a);
  for (Node k : children(e, "keywords"))
    eval(child(k, "value"));
  return AbsVal::unknown();
}

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
