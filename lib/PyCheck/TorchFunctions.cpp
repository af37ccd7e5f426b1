// torch/numpy functions (torch.matmul, F.linear, torch.cat/stack,
// torch.einsum, torch.X(x, ...) as x.X(...)) and torch.nn modules built in
// __init__ (nn.Linear, nn.LayerNorm, activations), on tensors of known
// shape; unknown otherwise.
#include "Interpreter.h"

#include <fmt/format.h>

#include <set>

namespace ein::pycheck {

// torch.einsum's pattern ("bhid,bhjd->bhij"): one letter per axis, spaced
// out for ein; `map` sends each offset of the spaced text to the original.
static std::string spacedEinsum(const std::string &text,
                                std::vector<unsigned> &map) {
  std::string out;
  auto put = [&](const std::string &s, unsigned from) {
    for (char c : s) {
      out += c;
      map.push_back(from);
    }
  };
  for (unsigned i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (std::isalpha(static_cast<unsigned char>(c)))
      put(std::string(1, c) + " ", i);
    else if (text.compare(i, 3, "...") == 0) {
      put("... ", i);
      i += 2;
    } else if (text.compare(i, 2, "->") == 0) {
      put("-> ", i);
      ++i;
    } else if (c == ',')
      put(", ", i);
    else if (!std::isspace(static_cast<unsigned char>(c)))
      put(std::string(1, c), i);
  }
  map.push_back(static_cast<unsigned>(text.size()));
  return out;
}

std::optional<AbsVal> FunctionInterp::torchFunction(const std::string &q,
                                                    Node call) {
  static const std::vector<std::string> prefixes = {
      "torch.nn.functional.", "torch.", "numpy.", "jax.numpy.", "jax.nn."};
  std::string prefix;
  for (auto &p : prefixes)
    if (q.rfind(p, 0) == 0) {
      prefix = p;
      break;
    }
  if (prefix.empty())
    return std::nullopt;
  std::string name = q.substr(prefix.size());
  if (name.find('.') != std::string::npos)
    return std::nullopt;
  bool numpy = prefix == "numpy." || prefix == "jax.numpy.";
  std::vector<Node> a = args(call);
  if (name == "matmul" || name == "mm" || name == "bmm") {
    if (a.size() != 2)
      return std::nullopt;
    AbsVal l = eval(a[0]), r = eval(a[1]);
    return matmul(*this, call, l, r, q);
  }
  if (name == "linear" && prefix == "torch.nn.functional.") {
    if (a.size() < 2)
      return std::nullopt;
    AbsVal x = eval(a[0]), w = eval(a[1]);
    for (size_t i = 2; i < a.size(); ++i)
      eval(a[i]);
    if (!x.isTensor() || !w.isTensor()) {
      skip(call, q, "an operand's shape is unknown");
      return AbsVal::unknown();
    }
    Shape xs = ctx().expand(shapeOf(x)), ws = ctx().expand(shapeOf(w));
    if (hasPack(xs) || ws.size() != 2 || hasPack(ws) || xs.empty()) {
      skip(call, q, "its operands' ranks are not read");
      return AbsVal::unknown();
    }
    auto ok = ctx().unify(xs.back().size, ws[1].size, "linear");
    if (!ok) {
      error(call, fmt::format("{}: the input \"{}\" has {} features but the "
                              "weight \"{}\" takes {}: {}",
                              q, shapeStr(xs), xs.back().str(), shapeStr(ws),
                              ws[1].str(), ok.error().message));
      return AbsVal::unknown();
    }
    xs.back() = ws[0];
    checkedTorch();
    return newTensor(xs);
  }
  if ((name == "cat" || name == "concatenate" || name == "stack") &&
      !a.empty()) {
    AbsVal list = eval(a[0]);
    Node dn = a.size() > 1 ? a[1] : keyword(call, numpy ? "axis" : "dim");
    auto d = dn ? intConstant(dn) : std::optional<long long>(0);
    if (list.kind != AbsVal::Kind::Tuple || list.items.empty() || !d ||
        !std::all_of(list.items.begin(), list.items.end(),
                     [](const AbsVal &v) { return v.isTensor(); })) {
      skip(call, q, "its tensors' shapes are not all known");
      return AbsVal::unknown();
    }
    Shape first = ctx().expand(shapeOf(list.items[0]));
    if (hasPack(first))
      return AbsVal::unknown();
    bool stack = name == "stack";
    auto k = axisOf(*d, first.size() + stack);
    if (!k) {
      error(dn ? dn : call, fmt::format("{}: dim {} is out of range for "
                                        "tensors of shape \"{}\"",
                                        q, *d, shapeStr(first)));
      return AbsVal::unknown();
    }
    SizeExpr total = stack ? SizeExpr() : first[*k].size;
    std::vector<Node> elts = children(a[0], "elts");
    for (size_t i = 1; i < list.items.size(); ++i) {
      Shape s = ctx().expand(shapeOf(list.items[i]));
      Node at = i < elts.size() ? elts[i] : call;
      if (hasPack(s))
        return AbsVal::unknown();
      if (s.size() != first.size()) {
        error(at, fmt::format("{}: tensor {} has shape \"{}\", of rank {}, "
                              "but tensor 0 has shape \"{}\"",
                              q, i, shapeStr(s), s.size(), shapeStr(first)));
        return AbsVal::unknown();
      }
      for (size_t j = 0; j < s.size(); ++j) {
        if (!stack && j == *k) {
          total = total + s[j].size;
          continue;
        }
        auto ok = ctx().unify(first[j].size, s[j].size, name);
        if (!ok) {
          error(at, fmt::format("{}: tensor {} has shape \"{}\" but tensor 0 "
                                "has shape \"{}\": dim {}: {}",
                                q, i, shapeStr(s), shapeStr(first), j,
                                ok.error().message));
          return AbsVal::unknown();
        }
      }
    }
    Shape out = first;
    if (stack)
      out.insert(out.begin() + *k,
                 Dim::ofSize(SizeExpr::constant(
                     static_cast<long long>(list.items.size()))));
    else
      out[*k] = Dim::ofSize(total);
    checkedTorch();
    return newTensor(out);
  }
  if (name == "einsum" && !numpy && !a.empty()) {
    auto text = stringConstant(a[0]);
    std::vector<Node> operands(a.begin() + 1, a.end());
    if (operands.size() == 1 && isa(operands[0], "List"))
      operands = children(operands[0], "elts");
    std::vector<unsigned> ids;
    for (Node o : operands) {
      AbsVal v = eval(o);
      if (v.isTensor())
        ids.push_back(v.id);
    }
    if (!text || ids.size() != operands.size()) {
      skip(call, q,
           text ? "an operand's shape is unknown"
                : "its pattern is not a string literal");
      return AbsVal::unknown();
    }
    std::vector<unsigned> map;
    std::string spaced = spacedEinsum(*text, map);
    auto parsed = parsePattern(spaced, PatternUse::Einsum);
    if (!parsed) {
      skip(call, q, "ein does not read its pattern");
      return AbsVal::unknown();
    }
    build().setOrigin({nodeLoc(call)});
    auto r = build().einsum(ids, *parsed);
    if (!r) {
      BuildError e = r.error();
      if (e.error.anchor == ShapeError::Anchor::Pattern) {
        unsigned end = e.error.offset + std::max(1u, e.error.length) - 1;
        e.error.offset = map[std::min<size_t>(e.error.offset, map.size() - 1)];
        e.error.length =
            map[std::min<size_t>(end, map.size() - 1)] - e.error.offset + 1;
      }
      reportBuild(e, call, a[0], operands, {});
      return AbsVal::unknown();
    }
    checkedTorch();
    return AbsVal::tensor(*r);
  }
  if (numpy)
    return std::nullopt;
  // torch.X(x, ...) and F.X(x, ...) as x.X(...).
  if (a.empty())
    return std::nullopt;
  AbsVal x = eval(a[0]);
  if (!x.isTensor())
    return std::nullopt;
  std::vector<Node> rest(a.begin() + 1, a.end());
  // A Call node with the first argument dropped: the method's view of it.
  llvm::json::Object shifted = *call;
  llvm::json::Array restArgs;
  for (Node n : rest)
    restArgs.push_back(llvm::json::Object(*n));
  shifted["args"] = std::move(restArgs);
  if (auto r = tensorMethod(x, name, &shifted))
    return r;
  // Not a rule of ours: its other arguments are still read, once.
  for (Node n : rest)
    eval(n);
  for (Node k : children(call, "keywords"))
    eval(child(k, "value"));
  return AbsVal::unknown();
}

// torch.nn modules whose output has their input's shape.
static bool shapePreservingModule(const std::string &q) {
  static const std::set<std::string> names = {
      "LayerNorm", "RMSNorm", "Dropout",  "GELU",    "ReLU", "SiLU",
      "Tanh",      "Sigmoid", "Identity", "Softmax", "Mish", "LeakyReLU"};
  return q.rfind("torch.nn.", 0) == 0 &&
         names.count(q.substr(std::string("torch.nn.").size()));
}

// nn.Conv1d/Conv2d: the number of spatial dims, 0 for anything else.
static size_t convSpatialDims(const std::string &q) {
  return q == "torch.nn.Conv1d" ? 1 : q == "torch.nn.Conv2d" ? 2 : 0;
}

std::optional<AbsVal> FunctionInterp::torchModule(const std::string &q,
                                                  Node call) {
  if (q != "torch.nn.Linear" && q != "torch.nn.Embedding" &&
      !convSpatialDims(q) && !shapePreservingModule(q))
    return std::nullopt;
  evalArgs(call);
  return AbsVal::built(AbsVal::Kind::Layer, call);
}

AbsVal FunctionInterp::applyTorchModule(const AbsVal &module, Node call) {
  std::string q = file().names.qualified(child(module.layer, "func"));
  std::vector<Node> a = args(call), ctor = args(module.layer);
  AbsVal x = a.size() == 1 ? eval(a[0]) : AbsVal::unknown();
  if (a.size() != 1 || !children(call, "keywords").empty() || !x.isTensor()) {
    for (size_t i = 1; i < a.size(); ++i)
      eval(a[i]);
    skip(call, q, "its input's shape is unknown");
    return AbsVal::unknown();
  }
  Shape s = ctx().expand(shapeOf(x));
  // The argument of the constructor at `pos` or named `kw`.
  auto ctorArg = [&](size_t pos, const char *kw) -> Node {
    return ctor.size() > pos ? ctor[pos] : keyword(module.layer, kw);
  };
  if (q == "torch.nn.Embedding") {
    // Any index tensor: one vector of embedding_dim per index.
    Node dim = ctorArg(1, "embedding_dim");
    if (!dim || hasPack(s))
      return AbsVal::unknown();
    s.push_back(Dim::ofSize(initSize(dim)));
    checkedTorch();
    return newTensor(s);
  }
  if (size_t spatial = convSpatialDims(q))
    return applyConv(module, call, s, spatial);
  bool linear = q == "torch.nn.Linear",
       norm = q == "torch.nn.LayerNorm" || q == "torch.nn.RMSNorm";
  if (!linear && !norm) {
    checkedTorch();
    return x;
  }
  // The features it was built for, against the input's last dim.
  Node in = ctor.empty() ? keyword(module.layer,
                                   linear ? "in_features" : "normalized_shape")
                         : ctor[0];
  if (!in || s.empty() || s.back().isPack() || isa(in, "Tuple") ||
      isa(in, "List")) {
    skip(call, q, "its features are not read");
    return AbsVal::unknown();
  }
  SizeExpr features = initSize(in);
  auto ok = ctx().unify(features, s.back().size,
                        linear ? "in_features" : "normalized_shape");
  if (!ok) {
    error(a[0], fmt::format("{} built for {} features (at line {}) is given "
                            "\"{}\": {}",
                            q, textOf(in), nodeLoc(module.layer).line,
                            shapeStr(s), ok.error().message));
    return AbsVal::unknown();
  }
  checkedTorch();
  if (!linear)
    return x;
  Node out = ctor.size() > 1 ? ctor[1] : keyword(module.layer, "out_features");
  if (!out)
    return AbsVal::unknown();
  s.back() = Dim::ofSize(initSize(out));
  return newTensor(s);
}

// One int literal per spatial dim: a lone literal for all, or a tuple of
// them; `dflt` when the argument is absent. nullopt for anything else.
static std::optional<std::vector<long long>>
perSpatialDim(Node n, size_t spatial, long long dflt) {
  if (!n)
    return std::vector<long long>(spatial, dflt);
  if (auto v = intConstant(n))
    return std::vector<long long>(spatial, *v);
  std::vector<long long> out;
  for (Node e : isa(n, "Tuple") ? children(n, "elts") : std::vector<Node>{})
    if (auto v = intConstant(e))
      out.push_back(*v);
  if (out.size() != spatial)
    return std::nullopt;
  return out;
}

AbsVal FunctionInterp::applyConv(const AbsVal &module, Node call, Shape s,
                                 size_t spatial) {
  std::string q = file().names.qualified(child(module.layer, "func"));
  std::vector<Node> ctor = args(module.layer);
  auto ctorArg = [&](size_t pos, const char *kw) -> Node {
    return ctor.size() > pos ? ctor[pos] : keyword(module.layer, kw);
  };
  Node in = ctorArg(0, "in_channels"), out = ctorArg(1, "out_channels");
  // Exact only with stride 1: each spatial size grows by 2 * padding and
  // shrinks by dilation * (kernel - 1); "same" keeps it, "valid" is 0.
  Node padding = ctorArg(4, "padding");
  auto kernel = perSpatialDim(ctorArg(2, "kernel_size"), spatial, -1);
  auto stride = perSpatialDim(ctorArg(3, "stride"), spatial, 1);
  auto dilation = perSpatialDim(ctorArg(5, "dilation"), spatial, 1);
  auto mode = padding ? stringConstant(padding) : std::nullopt;
  auto pad = mode ? std::optional<std::vector<long long>>(
                        std::vector<long long>(spatial, 0))
                  : perSpatialDim(padding, spatial, 0);
  bool readable = in && out && kernel && stride && dilation && pad &&
                  (!mode || *mode == "same" || *mode == "valid") &&
                  !hasPack(s) &&
                  (s.size() == spatial + 1 || s.size() == spatial + 2) &&
                  std::all_of(stride->begin(), stride->end(),
                              [](long long v) { return v == 1; }) &&
                  std::all_of(kernel->begin(), kernel->end(),
                              [](long long v) { return v >= 1; });
  if (!readable) {
    skip(call, q, "its sizes are not read (a stride, a padding mode)");
    return AbsVal::unknown();
  }
  size_t c = s.size() - spatial - 1;
  SizeExpr channels = initSize(in);
  auto ok = ctx().unify(channels, s[c].size, "in_channels");
  if (!ok) {
    error(args(call)[0],
          fmt::format("{} built for {} channels (at line {}) is given \"{}\": "
                      "{}",
                      q, textOf(in), nodeLoc(module.layer).line, shapeStr(s),
                      ok.error().message));
    return AbsVal::unknown();
  }
  s[c] = Dim::ofSize(initSize(out));
  for (size_t i = 0; i < spatial; ++i) {
    long long change =
        mode && *mode == "same"
            ? 0
            : 2 * (*pad)[i] - (*dilation)[i] * ((*kernel)[i] - 1);
    s[c + 1 + i] = Dim::ofSize(s[c + 1 + i].size + SizeExpr::constant(change));
  }
  checkedTorch();
  return newTensor(s);
}

} // namespace ein::pycheck
