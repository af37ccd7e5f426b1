// einops calls in Python code (rearrange, reduce, repeat, einsum, pack,
// unpack, parse_shape, and the einops.layers modules), checked through
// ein's ProgramBuilder: the same pattern rules and messages as a .ein file.
#include "Interpreter.h"
#include "ein/Sema/Suggestions.h"

#include <fmt/format.h>

#include <sstream>

namespace ein::pycheck {
namespace {

struct EinopsArgs {
  Node pattern = nullptr;
  std::optional<Pattern> parsed;
  std::vector<SizeArg> sizes;
  std::vector<Node> sizeNodes; // keyword nodes, one per size
  std::string unread;          // why the sizes or the pattern are not read
};

} // namespace

// Parses a pattern literal, reporting its syntax errors (einops raises on
// them too) inside the literal.
static std::optional<Pattern> readPattern(FunctionInterp &f, Node literal,
                                          PatternUse use, std::string &unread,
                                          Node call = nullptr,
                                          const std::string &what = "") {
  auto text = stringConstant(literal);
  if (!text) {
    unread = "its pattern is not a string literal";
    if (call)
      f.skip(call, what, unread);
    return std::nullopt;
  }
  auto parsed = parsePattern(*text, use);
  if (!parsed) {
    const ShapeError &e = parsed.error();
    auto inside = stringContentLoc(literal, f.file().file);
    if (inside)
      f.errorAt(inside->advanced(e.offset), std::max(1u, e.length), e.message);
    else
      f.error(literal, e.message);
    unread = "its pattern does not parse";
    return std::nullopt;
  }
  return *parsed;
}

// The keyword sizes of `call` (`h=8`, `h=self.heads`, `**parse_shape(...)`);
// `inInit`: the call was written in __init__ (an einops layer), whose
// names this function does not see.
static void readSizes(FunctionInterp &f, Node call, EinopsArgs &a, bool inInit,
                      const std::set<std::string> &skip = {}) {
  for (Node k : children(call, "keywords")) {
    std::string name = stringField(k, "arg");
    Node value = child(k, "value");
    if (skip.count(name))
      continue;
    if (name.empty()) {
      AbsVal d = f.eval(value);
      if (d.kind != AbsVal::Kind::ShapeDict) {
        a.unread = "its sizes are given with ** of what is not read";
        continue;
      }
      for (auto &[axis, size] : d.dict) {
        a.sizes.push_back({axis, size});
        a.sizeNodes.push_back(k);
      }
      continue;
    }
    std::optional<SizeExpr> size;
    if (inInit) {
      if (!isNumberLiteral(value) || intConstant(value))
        size = f.initSize(value);
    } else {
      size = f.sizeArg(value);
    }
    if (!size) {
      a.unread = "its size " + name + "= is not an integer";
      continue;
    }
    a.sizes.push_back({name, *size});
    a.sizeNodes.push_back(k);
  }
}

static std::optional<PatternUse> transformUse(const std::string &fname) {
  if (fname == "rearrange")
    return PatternUse::Rearrange;
  if (fname == "reduce")
    return PatternUse::Reduce;
  if (fname == "repeat")
    return PatternUse::Repeat;
  return std::nullopt;
}

static OpKind transformKind(PatternUse use) {
  switch (use) {
  case PatternUse::Rearrange:
    return OpKind::Rearrange;
  case PatternUse::Reduce:
    return OpKind::Reduce;
  case PatternUse::Repeat:
  case PatternUse::Einsum:
  case PatternUse::Pack:
    break;
  }
  return OpKind::Repeat;
}

// rearrange/reduce/repeat of `xNode` by the pattern `a`, or a layer's.
static AbsVal transform(FunctionInterp &f, Node call, const std::string &what,
                        PatternUse use, Node xNode, EinopsArgs &a,
                        ReduceKind how) {
  AbsVal x = f.eval(xNode);
  if (!a.parsed)
    return AbsVal::unknown();
  if (!a.unread.empty()) {
    f.skip(call, what, a.unread);
    return AbsVal::unknown();
  }
  if (isa(xNode, "List") || isa(xNode, "Tuple") ||
      x.kind == AbsVal::Kind::Tuple) {
    f.skip(call, what, "its input is a list of tensors");
    return AbsVal::unknown();
  }
  bool synthetic = !x.isTensor();
  if (synthetic) {
    // The input einops requires, of anonymous sizes: the pattern's own
    // rules still hold (an axis on one side only, sizes that cannot be
    // inferred), and the result has the rank the pattern gives it.
    f.skip(call, what, "its input's shape is unknown (its pattern is checked)");
    x = f.syntheticInput(a.parsed->inputs[0]);
  }
  f.build().setOrigin({nodeLoc(call)});
  auto r =
      f.build().transform(transformKind(use), x.id, *a.parsed, a.sizes, how);
  if (!r) {
    f.reportBuild(r.error(), call, a.pattern, {xNode}, a.sizeNodes);
    return AbsVal::unknown();
  }
  if (!synthetic)
    f.checkedEinops();
  // A synthetic `...` has no rank: a result holding it would refuse any
  // declared rank (`"... n -> ... (n r)"` returned as "n rot"). Its shape is
  // unknown.
  const Shape &result = f.shapeOf(AbsVal::tensor(*r));
  if (synthetic && std::any_of(result.begin(), result.end(),
                               [](const Dim &d) { return d.isPack(); }))
    return AbsVal::unknown();
  return AbsVal::tensor(*r);
}

static ReduceKind reductionOf(Node n) {
  // A callable or a name einops knows and ein does not: the shape is the
  // same; only max and min add their non-empty check.
  if (auto s = stringConstant(n))
    if (auto k = parseReduceKind(*s))
      return *k;
  return ReduceKind::Sum;
}

static bool isLayer(const std::string &q, std::string &fname) {
  if (q.rfind("einops.layers.", 0) != 0)
    return false;
  fname = lastComponent(q);
  return fname == "Rearrange" || fname == "Reduce";
}

std::optional<AbsVal> FunctionInterp::einopsCall(const std::string &q,
                                                 Node call) {
  std::string fname;
  std::vector<Node> a = args(call);
  if (isLayer(q, fname)) {
    // Built where it is written (einops parses the pattern there), applied
    // where it is called.
    EinopsArgs ea;
    if (a.empty())
      return AbsVal::unknown();
    ea.pattern = a[0];
    PatternUse use =
        fname == "Reduce" ? PatternUse::Reduce : PatternUse::Rearrange;
    ea.parsed = readPattern(*this, a[0], use, ea.unread);
    if (!ea.parsed)
      return AbsVal::unknown();
    // einops checks the pattern with its sizes when the layer is built.
    readSizes(*this, call, ea, true, {"reduction"});
    if (ea.unread.empty()) {
      build().setOrigin({nodeLoc(call)});
      size_t checks = ctx().constraints.size();
      auto r = build().transform(transformKind(use),
                                 syntheticInput(ea.parsed->inputs[0]).id,
                                 *ea.parsed, ea.sizes, ReduceKind::Sum);
      ctx().constraints.resize(checks);
      if (!r) {
        reportBuild(r.error(), call, ea.pattern, {}, ea.sizeNodes);
        return AbsVal::unknown();
      }
    }
    return AbsVal::built(AbsVal::Kind::Layer, call);
  }
  if (q.rfind("einops.", 0) != 0)
    return std::nullopt;
  fname = lastComponent(q);
  if (auto use = transformUse(fname)) {
    EinopsArgs ea;
    if (a.size() < 2) {
      skip(call, q, "its arguments are not read");
      return AbsVal::unknown();
    }
    ea.pattern = a[1];
    ea.parsed = readPattern(*this, a[1], *use, ea.unread, call, q);
    Node reduction = *use == PatternUse::Reduce
                         ? (a.size() > 2 ? a[2] : keyword(call, "reduction"))
                         : nullptr;
    readSizes(*this, call, ea, false, {"reduction"});
    return transform(*this, call, q, *use, a[0], ea, reductionOf(reduction));
  }
  if (fname == "einsum") {
    if (a.size() < 2) {
      skip(call, q, "its arguments are not read");
      return AbsVal::unknown();
    }
    EinopsArgs ea;
    ea.pattern = a.back();
    ea.parsed =
        readPattern(*this, a.back(), PatternUse::Einsum, ea.unread, call, q);
    std::vector<Node> operands(a.begin(), a.end() - 1);
    std::vector<AbsVal> values;
    for (Node o : operands)
      values.push_back(eval(o));
    if (!ea.parsed)
      return AbsVal::unknown();
    // An operand of unknown shape: the one its side of the pattern
    // requires, of anonymous sizes (as for rearrange).
    bool synthetic = false;
    std::vector<unsigned> ids;
    for (size_t i = 0; i < values.size(); ++i) {
      if (!values[i].isTensor()) {
        if (values.size() != ea.parsed->inputs.size()) {
          skip(call, q, "an operand's shape is unknown");
          return AbsVal::unknown();
        }
        values[i] = syntheticInput(ea.parsed->inputs[i]);
        synthetic = true;
      }
      ids.push_back(values[i].id);
    }
    if (synthetic)
      skip(call, q, "an operand's shape is unknown (its pattern is checked)");
    build().setOrigin({nodeLoc(call)});
    auto r = build().einsum(ids, *ea.parsed);
    if (!r) {
      reportBuild(r.error(), call, ea.pattern, operands, {});
      return AbsVal::unknown();
    }
    if (!synthetic)
      checkedEinops();
    // An axis summed on its own is usually a typo: .ein's warning.
    if (auto inside = stringContentLoc(ea.pattern, file().file);
        inside && reporting())
      for (const LoneAxis &lone : loneAxes(*ea.parsed))
        file().diags.warning(WarningKind::LoneAxis,
                             inside->advanced(lone.axis->offset),
                             loneAxisMessage(lone), lone.axis->length);
    return AbsVal::tensor(*r);
  }
  if (fname == "pack" || fname == "unpack") {
    bool packing = fname == "pack";
    if (a.size() != (packing ? 2u : 3u)) {
      skip(call, q, "its arguments are not read");
      return AbsVal::unknown();
    }
    EinopsArgs ea;
    ea.pattern = a.back();
    ea.parsed =
        readPattern(*this, a.back(), PatternUse::Pack, ea.unread, call, q);
    AbsVal x = eval(a[0]);
    AbsVal ps = packing ? AbsVal::unknown() : eval(a[1]);
    if (!ea.parsed)
      return AbsVal::unknown();
    build().setOrigin({nodeLoc(call)});
    if (packing) {
      std::vector<unsigned> ids;
      for (auto &item : x.items)
        if (item.isTensor())
          ids.push_back(item.id);
      if (x.kind != AbsVal::Kind::Tuple || ids.size() != x.items.size()) {
        skip(call, q, "a packed tensor's shape is unknown");
        return AbsVal::unknown();
      }
      auto r = build().pack(ids, *ea.parsed, DType::F32);
      if (!r) {
        reportBuild(r.error(), call, ea.pattern, children(a[0], "elts"), {});
        return AbsVal::unknown();
      }
      checkedEinops();
      AbsVal shapes;
      shapes.kind = AbsVal::Kind::PackedShapes;
      shapes.parts = fn.ops.back().packParts;
      return AbsVal::tuple({AbsVal::tensor(*r), shapes});
    }
    if (!x.isTensor() || ps.kind != AbsVal::Kind::PackedShapes) {
      skip(call, q,
           x.isTensor() ? "its packed shapes are not read"
                        : "its input's shape is unknown");
      return AbsVal::unknown();
    }
    auto r = build().unpack(x.id, *ea.parsed, ps.parts);
    if (!r) {
      reportBuild(r.error(), call, ea.pattern, {a[0]}, {});
      return AbsVal::unknown();
    }
    checkedEinops();
    std::vector<AbsVal> items;
    for (unsigned id : *r)
      items.push_back(AbsVal::tensor(id));
    return AbsVal::tuple(items);
  }
  if (fname == "parse_shape") {
    if (a.size() != 2)
      return AbsVal::unknown();
    AbsVal x = eval(a[0]);
    auto text = stringConstant(a[1]);
    if (!text || !x.isTensor()) {
      skip(call, q,
           text ? "its input's shape is unknown"
                : "its pattern is not a string literal");
      return AbsVal::unknown();
    }
    Shape shape = ctx().expand(shapeOf(x));
    bool packs = std::any_of(shape.begin(), shape.end(),
                             [](const Dim &d) { return d.isPack(); });
    std::vector<std::string> names;
    std::istringstream words(*text);
    for (std::string w; words >> w;)
      names.push_back(w);
    auto ellipsis = std::find(names.begin(), names.end(), "...");
    if (packs) {
      skip(call, q, "its input has a variadic dim");
      return AbsVal::unknown();
    }
    size_t named = names.size() - (ellipsis != names.end());
    if (ellipsis == names.end() ? named != shape.size()
                                : named > shape.size()) {
      error(a[1], fmt::format("parse_shape: the pattern \"{}\" names {} "
                              "dims but the tensor has shape \"{}\" (rank {})",
                              *text, named, shapeStr(shape), shape.size()));
      return AbsVal::unknown();
    }
    AbsVal d;
    d.kind = AbsVal::Kind::ShapeDict;
    size_t before = ellipsis - names.begin();
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == "..." || names[i] == "_")
        continue;
      size_t dim = i < before ? i : shape.size() - (names.size() - i);
      d.dict[names[i]] = shape[dim].size;
    }
    checkedEinops();
    return d;
  }
  return std::nullopt;
}

AbsVal FunctionInterp::applyLayer(const AbsVal &layer, Node call) {
  std::string q = file().names.qualified(child(layer.layer, "func")), fname;
  if (!isLayer(q, fname))
    return applyTorchModule(layer, call);
  std::vector<Node> ctor = args(layer.layer), a = args(call);
  if (a.size() != 1 || ctor.empty()) {
    for (Node x : a)
      eval(x);
    return AbsVal::unknown();
  }
  PatternUse use =
      fname == "Reduce" ? PatternUse::Reduce : PatternUse::Rearrange;
  EinopsArgs ea;
  ea.pattern = ctor[0];
  // Its syntax was reported where the layer was built.
  auto text = stringConstant(ctor[0]);
  if (text)
    if (auto p = parsePattern(*text, use))
      ea.parsed = *p;
  if (!text)
    ea.unread = "its pattern is not a string literal";
  Node reduction =
      use == PatternUse::Reduce
          ? (ctor.size() > 1 ? ctor[1] : keyword(layer.layer, "reduction"))
          : nullptr;
  readSizes(*this, layer.layer, ea, true, {"reduction"});
  return transform(*this, call, q, use, a[0], ea, reductionOf(reduction));
}

} // namespace ein::pycheck
