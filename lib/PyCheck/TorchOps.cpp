// Everyday torch/numpy operations on tensors of known shape: matmul and `@`,
// elementwise arithmetic with numpy's broadcasting, and the tensor's
// attributes and methods (transpose, permute, view/reshape, flatten,
// unsqueeze, squeeze, softmax, sum/mean, chunk, .shape/.size(), .T) and
// indexing. A rule that cannot decide gives an unknown shape; an error only
// where the sizes provably disagree under ein's rules.
#include "Interpreter.h"

#include <fmt/format.h>

#include <set>

namespace ein::pycheck {

// ---- the rules TorchFunctions.cpp shares -------------------------------

bool hasPack(const Shape &s) {
  return std::any_of(s.begin(), s.end(),
                     [](const Dim &d) { return d.isPack(); });
}

Dim one() { return Dim::ofSize(SizeExpr::constant(1)); }

bool isOne(const Dim &d) { return d.size.constantValue() == Int(1); }

// A dim index of a tensor of rank `rank` (negative from the end).
std::optional<size_t> axisOf(long long d, size_t rank) {
  long long r = static_cast<long long>(rank);
  long long k = d < 0 ? d + r : d;
  if (k < 0 || k >= r)
    return std::nullopt;
  return static_cast<size_t>(k);
}

// Element-preserving methods and functions: the result has the operand's
// shape.
static const std::set<std::string> &sameShape() {
  static const std::set<std::string> names = {
      "contiguous", "float",      "half",       "double",
      "bfloat16",   "long",       "int",        "bool",
      "to",         "type",       "type_as",    "detach",
      "clone",      "cpu",        "cuda",       "abs",
      "exp",        "log",        "sqrt",       "rsqrt",
      "sigmoid",    "tanh",       "relu",       "gelu",
      "silu",       "neg",        "sin",        "cos",
      "sign",       "square",     "reciprocal", "requires_grad_",
      "relu_",      "exp_",       "dropout",    "erf",
      "softplus",   "leaky_relu", "elu",        "log1p",
      "expm1",      "floor",      "ceil",       "round",
      "clamp",      "clip",       "sigmoid_",   "tanh_",
      "mish",       "hardswish",  "logsigmoid", "nan_to_num",
      "zeros_like", "ones_like",  "empty_like", "rand_like",
      "randn_like", "full_like",  "layer_norm", "normalize",
      "float32",    "numpy",      "detach_"};
  return names;
}

// The broadcast of `a` and `b`, neither with a variadic; `shownA` and
// `shownB` are the shapes the messages name.
static std::optional<Shape> broadcastDims(FunctionInterp &f, Node at,
                                          const Shape &a, const Shape &b,
                                          const Shape &shownA,
                                          const Shape &shownB) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const Dim *x = i < a.size() ? &a[a.size() - 1 - i] : nullptr;
    const Dim *y = i < b.size() ? &b[b.size() - 1 - i] : nullptr;
    Dim &r = out[n - 1 - i];
    if (!x || isOne(*x)) {
      r = y ? *y : one();
      continue;
    }
    if (!y || isOne(*y)) {
      r = *x;
      continue;
    }
    auto ok = f.ctx().unify(x->size, y->size, "broadcast");
    if (!ok) {
      f.error(at, fmt::format("cannot broadcast \"{}\" with \"{}\": dim {} "
                              "from the right: {}",
                              shapeStr(shownA), shapeStr(shownB), i + 1,
                              ok.error().message));
      return std::nullopt;
    }
    r = *x;
  }
  return out;
}

std::optional<Shape> broadcast(FunctionInterp &f, Node at, const Shape &a,
                               const Shape &b) {
  if (!hasPack(a) && !hasPack(b))
    return broadcastDims(f, at, a, b, a, b);
  // A variadic on one side only, with at least as many dims after it as the
  // other side has: the other side does not reach it, so it and the dims
  // before it are kept, and only the dims after it broadcast.
  if (hasPack(a) && hasPack(b))
    return std::nullopt;
  const Shape &p = hasPack(a) ? a : b, &q = hasPack(a) ? b : a;
  size_t last = p.size() - 1;
  while (!p[last].isPack())
    --last;
  Shape tail(p.begin() + last + 1, p.end());
  if (q.size() > tail.size())
    return std::nullopt;
  auto r = hasPack(a) ? broadcastDims(f, at, tail, q, a, b)
                      : broadcastDims(f, at, q, tail, a, b);
  if (!r)
    return std::nullopt;
  Shape out(p.begin(), p.begin() + last + 1);
  out.insert(out.end(), r->begin(), r->end());
  return out;
}

// Requires matmul's contracted dims `k1` (of `lhs`) and `k2` equal; false
// after reporting that they are not.
static bool contract(FunctionInterp &f, Node at, const AbsVal &lhs,
                     const AbsVal &rhs, const Dim &k1, const Dim &k2,
                     const std::string &what) {
  auto ok = f.ctx().unify(k1.size, k2.size, "matmul");
  if (!ok)
    f.error(at, fmt::format("{}: the contracted dims differ: \"{}\" @ \"{}\" "
                            "contracts {} with {}: {}",
                            what, shapeStr(f.shapeOf(lhs)),
                            shapeStr(f.shapeOf(rhs)), k1.str(), k2.str(),
                            ok.error().message));
  return static_cast<bool>(ok);
}

AbsVal matmul(FunctionInterp &f, Node at, const AbsVal &lhs, const AbsVal &rhs,
              const std::string &what) {
  if (!lhs.isTensor() || !rhs.isTensor()) {
    f.skip(at, what, "an operand's shape is unknown");
    return AbsVal::unknown();
  }
  Shape a = f.ctx().expand(f.shapeOf(lhs)), b = f.ctx().expand(f.shapeOf(rhs));
  // `"... k" @ "k m"`: whatever the variadic holds (nothing: a vector), the
  // result is the left side's leading dims and m.
  if (hasPack(a) && !a.back().isPack() && !hasPack(b) && b.size() == 2) {
    if (!contract(f, at, lhs, rhs, a.back(), b[0], what))
      return AbsVal::unknown();
    a.back() = b[1];
    f.checkedTorch();
    return f.newTensor(a);
  }
  if (hasPack(a) || hasPack(b) || a.empty() || b.empty()) {
    f.skip(at, what, "an operand has a variadic dim or is a scalar");
    return AbsVal::unknown();
  }
  bool vecA = a.size() == 1, vecB = b.size() == 1;
  if (vecA)
    a.insert(a.begin(), one());
  if (vecB)
    b.push_back(one());
  if (!contract(f, at, lhs, rhs, a.back(), b[b.size() - 2], what))
    return AbsVal::unknown();
  Shape batchA(a.begin(), a.end() - 2), batchB(b.begin(), b.end() - 2);
  auto batch = broadcast(f, at, batchA, batchB);
  if (!batch)
    return AbsVal::unknown();
  Shape out = *batch;
  if (!vecA)
    out.push_back(a[a.size() - 2]);
  if (!vecB)
    out.push_back(b.back());
  f.checkedTorch();
  return f.newTensor(out);
}

AbsVal FunctionInterp::binaryOp(Node e, const AbsVal &lhs, const AbsVal &rhs) {
  std::string op = nodeType(child(e, "op"));
  if (op == "MatMult")
    return matmul(*this, e, lhs, rhs, "@");
  bool tl = lhs.isTensor(), tr = rhs.isTensor();
  if (!tl && !tr)
    return sizeArithmetic(e, lhs, rhs);
  auto scalar = [](const AbsVal &v) {
    return v.kind == AbsVal::Kind::Size || v.kind == AbsVal::Kind::Number;
  };
  if (tl && scalar(rhs))
    return lhs;
  if (tr && scalar(lhs))
    return rhs;
  if (!tl || !tr)
    return AbsVal::unknown();
  auto out = broadcast(*this, e, ctx().expand(shapeOf(lhs)),
                       ctx().expand(shapeOf(rhs)));
  if (!out)
    return AbsVal::unknown();
  checkedTorch();
  return newTensor(*out);
}

AbsVal FunctionInterp::tensorAttribute(const AbsVal &x, const std::string &attr,
                                       Node) {
  Shape s = ctx().expand(shapeOf(x));
  if (hasPack(s))
    return AbsVal::unknown();
  if (attr == "shape") {
    std::vector<AbsVal> items;
    for (auto &d : s)
      items.push_back(AbsVal::ofSize(d.size));
    return AbsVal::tuple(items);
  }
  if (attr == "ndim")
    return AbsVal::ofSize(SizeExpr::constant(static_cast<long long>(s.size())));
  if (attr == "T" || attr == "mT") {
    if (attr == "T")
      std::reverse(s.begin(), s.end());
    else if (s.size() >= 2)
      std::swap(s[s.size() - 1], s[s.size() - 2]);
    else
      return AbsVal::unknown();
    checkedTorch();
    return newTensor(s);
  }
  return AbsVal::unknown();
}

// Integer arguments of a call: the positional ones after `from` (or one
// tuple or list of them); nullopt when one is not a number literal.
static std::optional<std::vector<long long>> intArgs(const std::vector<Node> &a,
                                                     size_t from) {
  std::vector<Node> items(a.begin() + std::min(from, a.size()), a.end());
  if (items.size() == 1 && (isa(items[0], "Tuple") || isa(items[0], "List")))
    items = children(items[0], "elts");
  std::vector<long long> out;
  for (Node n : items) {
    auto v = intConstant(n);
    if (!v)
      return std::nullopt;
    out.push_back(*v);
  }
  return out;
}

// Whether `m` is a reduction method (`x.sum(dim=)`): without a dim it
// reduces every dim.
static bool reductionMethod(const std::string &m) {
  static const std::set<std::string> names = {"sum",  "mean", "amax", "amin",
                                              "prod", "var",  "std"};
  return names.count(m) > 0;
}

// Whether method `m` of a tensor of shape `s`, which has a variadic, only
// reads dims after its last variadic: each dim it is given is a negative
// literal that stays there (`sum(dim=-1)` of "... n d"). The rules below
// then hold with the variadic as one entry of `s`, which they keep in place.
// Methods whose rule reads the rank or every dim (view, permute, flatten,
// dim) are not among them, nor a dim left to its default (chunk's 0).
static bool tailDims(const Shape &s, const std::string &m, Node call) {
  static const std::set<std::string> methods = {
      "size",        "transpose", "swapaxes", "softmax",
      "log_softmax", "squeeze",   "chunk"};
  if (!methods.count(m) && !reductionMethod(m))
    return false;
  size_t tail = 0;
  while (tail < s.size() && !s[s.size() - 1 - tail].isPack())
    ++tail;
  std::vector<Node> dims = FunctionInterp::args(call);
  if (m == "chunk" && !dims.empty())
    dims.erase(dims.begin()); // the number of chunks
  for (const char *kw : {"dim", "axis", "dim0", "dim1"})
    if (Node k = FunctionInterp::keyword(call, kw))
      dims.push_back(k);
  // Without a dim these reduce everything or read every dim.
  if (dims.empty() && !reductionMethod(m))
    return false;
  for (Node d : dims) {
    std::vector<Node> items = isa(d, "Tuple") || isa(d, "List")
                                  ? children(d, "elts")
                                  : std::vector<Node>{d};
    for (Node n : items) {
      auto v = intConstant(n);
      if (!v || *v >= 0 || static_cast<size_t>(-*v) > tail)
        return false;
    }
  }
  return true;
}

std::optional<AbsVal>
FunctionInterp::tensorMethod(const AbsVal &x, const std::string &m, Node call) {
  std::vector<Node> a = args(call);
  Shape s = ctx().expand(shapeOf(x));
  std::string what = "." + m;
  auto dimArg = [&](size_t pos, const char *kw) -> Node {
    if (a.size() > pos)
      return a[pos];
    return keyword(call, kw);
  };
  auto outOfRange = [&](Node at, long long d) {
    error(at, fmt::format("{}: dim {} is out of range for a tensor of shape "
                          "\"{}\" (rank {})",
                          what, d, shapeStr(s), s.size()));
    return AbsVal::unknown();
  };
  if (sameShape().count(m)) {
    for (Node n : a)
      eval(n);
    checkedTorch();
    return x;
  }
  // `x.pow(2)`: a number exponent keeps the shape (a tensor one broadcasts).
  if (m == "pow" && a.size() == 1 && children(call, "keywords").empty()) {
    AbsVal e = eval(a[0]);
    if (e.kind != AbsVal::Kind::Size && e.kind != AbsVal::Kind::Number)
      return AbsVal::unknown();
    checkedTorch();
    return x;
  }
  if (hasPack(s) && !tailDims(s, m, call)) {
    skip(call, what, "its operand has a variadic dim");
    return AbsVal::unknown();
  }
  if (m == "size" || m == "dim" || m == "ndimension") {
    if (m != "size")
      return AbsVal::ofSize(
          SizeExpr::constant(static_cast<long long>(s.size())));
    if (a.empty())
      return tensorAttribute(x, "shape", call);
    auto d = intConstant(a[0]);
    if (!d)
      return AbsVal::unknown();
    auto k = axisOf(*d, s.size());
    if (!k)
      return outOfRange(a[0], *d);
    return AbsVal::ofSize(s[*k].size);
  }
  if (m == "transpose" || m == "swapaxes" || m == "permute") {
    auto dims = intArgs(a, 0);
    if (!dims) {
      skip(call, what, "its dims are not integer literals");
      return AbsVal::unknown();
    }
    std::vector<size_t> perm(s.size());
    for (size_t i = 0; i < perm.size(); ++i)
      perm[i] = i;
    if (m != "permute" && dims->size() == 2) {
      auto i = axisOf((*dims)[0], s.size()), j = axisOf((*dims)[1], s.size());
      if (!i || !j)
        return outOfRange(call, !i ? (*dims)[0] : (*dims)[1]);
      std::swap(perm[*i], perm[*j]);
    } else {
      if (dims->size() != s.size()) {
        error(call, fmt::format("{}: {} dims given for a tensor of shape "
                                "\"{}\" (rank {})",
                                what, dims->size(), shapeStr(s), s.size()));
        return AbsVal::unknown();
      }
      std::set<size_t> seen;
      for (size_t i = 0; i < dims->size(); ++i) {
        auto k = axisOf((*dims)[i], s.size());
        if (!k)
          return outOfRange(call, (*dims)[i]);
        if (!seen.insert(*k).second) {
          error(call, fmt::format("{}: dim {} is repeated", what, (*dims)[i]));
          return AbsVal::unknown();
        }
        perm[i] = *k;
      }
    }
    Shape out;
    for (size_t i : perm)
      out.push_back(s[i]);
    checkedTorch();
    return newTensor(out);
  }
  if (m == "view" || m == "reshape") {
    std::vector<Node> items = a;
    if (items.size() == 1 && (isa(items[0], "Tuple") || isa(items[0], "List")))
      items = children(items[0], "elts");
    Shape out;
    std::optional<size_t> inferred;
    // The sizes given: their numbers and their symbolic part apart, so
    // that `view(b, n, 5, -1)` of "b n 12" divides b*n out first and finds
    // that 12 is not a multiple of 5.
    SizeExpr known = SizeExpr::constant(1), numbers = SizeExpr::constant(1),
             symbolic = SizeExpr::constant(1);
    for (Node n : items) {
      if (intConstant(n) == -1LL && !inferred) {
        inferred = out.size();
        out.push_back(one());
        continue;
      }
      if (isa(n, "Starred") ||
          (isa(n, "Name") && eval(n).kind == AbsVal::Kind::Tuple)) {
        skip(call, what, "its sizes are not read one by one");
        return AbsVal::unknown();
      }
      auto size = sizeArg(n);
      if (!size) {
        skip(call, what, "a size is not an integer");
        return AbsVal::unknown();
      }
      out.push_back(Dim::ofSize(*size));
      known = known * *size;
      (size->isConstant() ? numbers : symbolic) =
          (size->isConstant() ? numbers : symbolic) * *size;
    }
    SizeExpr total = numElements(s);
    std::string spelled = shapeStr(s);
    if (inferred) {
      auto rest = total.divideExact(symbolic);
      auto q = rest ? ctx().divide(*rest, numbers,
                                   what + " of \"" + spelled + "\" with -1")
                    : ctx().divide(total, known,
                                   what + " of \"" + spelled + "\" with -1");
      if (!q) {
        error(call, q.error().message);
        return AbsVal::unknown();
      }
      out[*inferred] = Dim::ofSize(ctx().simplify(*q));
    } else {
      auto ok = ctx().unify(ctx().simplify(known), total,
                            what + " of \"" + spelled + "\"");
      if (!ok) {
        error(call, fmt::format("{}: \"{}\" has {} elements, \"{}\" has {}: {}",
                                what, spelled, total.str(), shapeStr(out),
                                known.str(), ok.error().message));
        return AbsVal::unknown();
      }
    }
    checkedTorch();
    return newTensor(out);
  }
  if (m == "flatten") {
    auto start = dimArg(0, "start_dim"), end = dimArg(1, "end_dim");
    auto i = start ? intConstant(start) : std::optional<long long>(0);
    auto j = end ? intConstant(end) : std::optional<long long>(-1);
    if (!i || !j)
      return AbsVal::unknown();
    if (s.empty())
      return AbsVal::unknown();
    auto a0 = axisOf(*i, s.size()), a1 = axisOf(*j, s.size());
    if (!a0 || !a1)
      return outOfRange(call, !a0 ? *i : *j);
    if (*a0 > *a1)
      return AbsVal::unknown();
    Shape out(s.begin(), s.begin() + *a0);
    SizeExpr merged = SizeExpr::constant(1);
    for (size_t k = *a0; k <= *a1; ++k)
      merged = merged * s[k].size;
    out.push_back(Dim::ofSize(merged));
    out.insert(out.end(), s.begin() + *a1 + 1, s.end());
    checkedTorch();
    return newTensor(out);
  }
  if (m == "unsqueeze" || m == "squeeze") {
    Node dn = dimArg(0, "dim");
    auto d = dn ? intConstant(dn) : std::nullopt;
    if (m == "unsqueeze") {
      if (!d)
        return AbsVal::unknown();
      auto k = axisOf(*d, s.size() + 1);
      if (!k)
        return outOfRange(dn, *d);
      Shape out = s;
      out.insert(out.begin() + *k, one());
      checkedTorch();
      return newTensor(out);
    }
    if (!d) {
      if (dn)
        return AbsVal::unknown();
      Shape out;
      for (auto &dim : s) {
        if (!dim.size.isConstant())
          return AbsVal::unknown(); // a named dim may be 1
        if (!isOne(dim))
          out.push_back(dim);
      }
      checkedTorch();
      return newTensor(out);
    }
    auto k = axisOf(*d, s.size());
    if (!k)
      return outOfRange(dn, *d);
    if (!isOne(s[*k]))
      return AbsVal::unknown(); // torch keeps a dim that is not 1
    Shape out = s;
    out.erase(out.begin() + *k);
    checkedTorch();
    return newTensor(out);
  }
  if (m == "softmax" || m == "log_softmax") {
    Node dn = dimArg(0, "dim");
    auto d = dn ? intConstant(dn) : std::nullopt;
    if (!d)
      return AbsVal::unknown();
    if (!axisOf(*d, s.size()))
      return outOfRange(dn, *d);
    checkedTorch();
    return x;
  }
  // `norm`'s first positional argument is p: only its keyword dim is read.
  if (reductionMethod(m) || (m == "norm" && a.empty())) {
    Node dn = dimArg(0, "dim");
    if (!dn)
      dn = keyword(call, "axis");
    Node kd = keyword(call, "keepdim");
    if (!kd)
      kd = keyword(call, "keepdims");
    bool keep = false;
    if (kd) {
      auto *v = isa(kd, "Constant") ? kd->getObject("value") : nullptr;
      if (!v || v->getString("k") != llvm::StringRef("bool"))
        return AbsVal::unknown();
      keep = v->getBoolean("v").value_or(false);
    }
    if (!dn) {
      if (a.size() > 1 || (!children(call, "keywords").empty() && !kd))
        return AbsVal::unknown();
      checkedTorch();
      return newTensor({});
    }
    std::optional<std::vector<long long>> dims;
    if (isa(dn, "Tuple") || isa(dn, "List"))
      dims = intArgs({dn}, 0);
    else if (auto d = intConstant(dn))
      dims = std::vector<long long>{*d};
    if (!dims)
      return AbsVal::unknown();
    std::set<size_t> reduced;
    for (long long d : *dims) {
      auto k = axisOf(d, s.size());
      if (!k)
        return outOfRange(dn, d);
      reduced.insert(*k);
    }
    Shape out;
    for (size_t k = 0; k < s.size(); ++k)
      if (!reduced.count(k))
        out.push_back(s[k]);
      else if (keep)
        out.push_back(one());
    checkedTorch();
    return newTensor(out);
  }
  if (m == "chunk") {
    // chunk(n, dim): n equal parts when n divides the dim (the entry check
    // says so), as the code that unpacks them expects.
    long long n = 0;
    if (!a.empty())
      n = intConstant(a[0]).value_or(0);
    Node dn = dimArg(1, "dim");
    auto d = dn ? intConstant(dn) : std::optional<long long>(0);
    if (n < 1 || !d)
      return AbsVal::unknown();
    auto k = axisOf(*d, s.size());
    if (!k)
      return outOfRange(dn, *d);
    auto part =
        ctx().divide(s[*k].size, SizeExpr::constant(n),
                     fmt::format("chunk({}) of \"{}\"", n, shapeStr(s)));
    if (!part)
      return AbsVal::unknown(); // a smaller last chunk: not modelled
    Shape out = s;
    out[*k] = Dim::ofSize(*part);
    AbsVal t = newTensor(out);
    checkedTorch();
    return AbsVal::tuple(std::vector<AbsVal>(static_cast<size_t>(n), t));
  }
  if (m == "matmul")
    return a.size() == 1 ? matmul(*this, call, x, eval(a[0]), what)
                         : AbsVal::unknown();
  if (m == "masked_fill" || m == "add" || m == "sub" || m == "mul" ||
      m == "div") {
    if (a.empty())
      return AbsVal::unknown();
    AbsVal other = eval(a[0]);
    for (size_t i = 1; i < a.size(); ++i)
      eval(a[i]);
    if (!other.isTensor())
      return m == "masked_fill" || other.kind == AbsVal::Kind::Number ||
                     other.kind == AbsVal::Kind::Size
                 ? x
                 : AbsVal::unknown();
    auto out = broadcast(*this, call, s, ctx().expand(shapeOf(other)));
    if (!out)
      return AbsVal::unknown();
    checkedTorch();
    // masked_fill keeps its tensor's shape; the mask broadcasts to it.
    return m == "masked_fill" ? x : newTensor(*out);
  }
  return std::nullopt;
}

AbsVal FunctionInterp::subscriptTensor(const AbsVal &x, Node e) {
  Node index = child(e, "slice");
  Shape s = ctx().expand(shapeOf(x));
  if (hasPack(s)) {
    eval(index);
    return AbsVal::unknown();
  }
  std::vector<Node> items =
      isa(index, "Tuple") ? children(index, "elts") : std::vector<Node>{index};
  size_t consumed = 0, ellipses = 0;
  for (Node n : items) {
    auto *v = isa(n, "Constant") ? n->getObject("value") : nullptr;
    bool isNone = v && v->getString("k") == llvm::StringRef("none");
    bool isEllipsis = v && v->getString("k") == llvm::StringRef("ellipsis");
    if (isEllipsis)
      ++ellipses;
    else if (!isNone)
      ++consumed;
  }
  if (ellipses > 1 || consumed > s.size())
    return AbsVal::unknown();
  Shape out;
  size_t dim = 0;
  for (Node n : items) {
    auto *v = isa(n, "Constant") ? n->getObject("value") : nullptr;
    auto kind = v ? v->getString("k") : std::nullopt;
    if (kind && *kind == "none") {
      out.push_back(one());
      continue;
    }
    if (kind && *kind == "ellipsis") {
      size_t span = s.size() - consumed;
      for (size_t k = 0; k < span; ++k)
        out.push_back(s[dim++]);
      continue;
    }
    if (intConstant(n)) {
      ++dim; // an integer index drops the dim
      continue;
    }
    if (isa(n, "Slice")) {
      Node lo = child(n, "lower"), hi = child(n, "upper");
      if (child(n, "step")) {
        eval(n);
        return AbsVal::unknown();
      }
      if (!lo && !hi) {
        out.push_back(s[dim++]);
        continue;
      }
      // `x[..., :n]`: n when it provably fits (a number below a number),
      // else unknown.
      auto l = lo ? intConstant(lo) : std::optional<long long>(0);
      auto h = hi ? sizeArg(hi) : std::optional<SizeExpr>(s[dim].size);
      auto len = s[dim].size.constantValue();
      auto hv = h ? h->constantValue() : std::nullopt;
      if (l && *l >= 0 && h && hv && len && *hv >= Int(0) && *hv <= *len &&
          Int(*l) <= *hv) {
        out.push_back(Dim::ofSize(SizeExpr::constant(*hv - Int(*l))));
      } else if (l && *l == 0 && h && !hi) {
        out.push_back(s[dim]);
      } else {
        return AbsVal::unknown();
      }
      ++dim;
      continue;
    }
    eval(n); // a tensor index, a list: not modelled
    return AbsVal::unknown();
  }
  for (; dim < s.size(); ++dim)
    out.push_back(s[dim]);
  checkedTorch();
  return newTensor(out);
}

} // namespace ein::pycheck
