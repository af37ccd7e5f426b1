// grad()'s driver: walks the ops from the loss back to the wrt values and
// calls each op's gradient rule (lib/Sema/Ops/<Family>.cpp, found through the
// op registry), with the builders of backward ops the rules share; and the
// passes over a differentiated function (saved values, recomputation).
#include "Differentiator.h"
#include "SplitContractions.h"

#include "ein/Syntax/Pattern.h"

#include <fmt/format.h>

#include <algorithm>

namespace ein {

using F = ElementwiseFn;

std::optional<Shape> Differentiator::shapeOf(unsigned id) {
  Shape shape = fn.ctx.expand(type(id).shape);
  for (const Dim &d : shape)
    if (d.isPack())
      return fail(fmt::format("grad needs every rank known; '...{}' has an "
                              "unknown rank here (give it with --rank)",
                              d.pack));
  return shape;
}

std::optional<unsigned> Differentiator::adjointOf(unsigned value) const {
  auto it = adjoint.find(value);
  if (it == adjoint.end())
    return std::nullopt;
  return it->second;
}

Failed Differentiator::fail(std::string message) {
  if (!error)
    error = GradientError{std::move(message), atLoc, atSite};
  return {};
}

Failed Differentiator::failBuilt(const std::string &what,
                                 const std::string &why) {
  return fail(fmt::format("the gradient of this {} needs {}, which does "
                          "not check ({}); please report this",
                          atWhat, what, why));
}

Failed Differentiator::builtFailure(const BuildError &e) {
  std::string what = e.op == "pack"     ? std::string("a pack")
                     : e.op == "unpack" ? std::string("an unpack")
                     : e.pattern.empty()
                         ? e.op
                         : fmt::format("{}(\"{}\")", e.op, e.pattern);
  return failBuilt(what, e.error.message);
}

void Differentiator::target(const CheckedOp &op, unsigned operand) {
  atLoc = op.loc;
  atSite = op.callSite;
  atTarget = static_cast<int>(operand);
  atPhase = params.count(operand) ? GradPhase::WeightGrad : GradPhase::DataGrad;
}

ProgramBuilder &Differentiator::build() {
  builder.setOrigin(BuildOrigin{atLoc, atSite, atPhase, atTarget});
  return builder;
}

std::string Differentiator::freshAxis() {
  return fmt::format("ad{}", freshAxes++);
}

unsigned Differentiator::constant(double value, DType dtype) {
  return build().constant(value, dtype);
}

std::optional<unsigned> Differentiator::count(const SizeExpr &n, DType dtype) {
  return built(build().size(n, dtype));
}

unsigned Differentiator::cast(unsigned x, DType dtype) {
  return build().cast(x, dtype);
}

std::optional<unsigned> Differentiator::ew(F f, std::vector<unsigned> xs) {
  return built(build().elementwise(f, std::move(xs)));
}

std::optional<unsigned> Differentiator::transform(OpKind kind, unsigned x,
                                                  const std::string &pattern,
                                                  std::vector<SizeArg> sizes,
                                                  ReduceKind reduction) {
  return built(
      build().transform(kind, x, pattern, std::move(sizes), reduction));
}

std::optional<unsigned> Differentiator::einsum(const std::vector<unsigned> &xs,
                                               const std::string &pattern,
                                               std::vector<SizeArg> sizes,
                                               std::optional<DType> acc) {
  return built(build().einsum(xs, pattern, std::move(sizes), acc));
}

std::optional<unsigned> Differentiator::zeros(unsigned like) {
  auto shape = shapeOf(like);
  if (!shape)
    return std::nullopt;
  return zerosOf(*shape, dtypeOf(like));
}

std::optional<unsigned> Differentiator::zerosOf(const Shape &shape,
                                                DType dtype) {
  unsigned zero = constant(0, dtype);
  if (shape.empty())
    return zero;
  std::vector<std::string> names;
  std::vector<SizeArg> sizes;
  for (const Dim &d : shape) {
    names.push_back(freshAxis());
    sizes.push_back(SizeArg{names.back(), d.size});
  }
  return transform(OpKind::Repeat, zero,
                   fmt::format(" -> {}", fmt::join(names, " ")), sizes);
}

std::optional<unsigned> Differentiator::pack(const std::vector<unsigned> &parts,
                                             const Pattern &pattern,
                                             DType dtype) {
  return built(build().pack(parts, pattern, dtype));
}

std::optional<unsigned> Differentiator::identity(const SizeExpr &n,
                                                 DType dtype) {
  auto positions = built(build().arange(n));
  if (!positions)
    return std::nullopt;
  auto column = transform(OpKind::Rearrange, *positions, "i -> i 1", {});
  auto row = transform(OpKind::Rearrange, *positions, "j -> 1 j", {});
  if (!column || !row)
    return std::nullopt;
  auto same = ew(F::Eq, {*column, *row});
  if (!same)
    return std::nullopt;
  return cast(*same, dtype);
}

std::optional<unsigned>
Differentiator::unbroadcast(unsigned g, unsigned operand, unsigned result) {
  // The operand is aligned against the forward result's type, as the
  // lowering aligns it (EinToLinalg): g's dims are the result's one by one,
  // but their size expressions may be others, provably equal (`window - 1`
  // for `seq`), and matching by those could pick another dim of equal size.
  auto gShape = shapeOf(g);
  auto yShape = shapeOf(result);
  auto xShape = shapeOf(operand);
  if (!gShape || !yShape || !xShape)
    return std::nullopt;
  if (gShape->size() != yShape->size())
    return failBuilt("a sum over its broadcast dims",
                     fmt::format("its gradient has rank {}, the result {}",
                                 gShape->size(), yShape->size()));
  InferContext scratch = fn.ctx;
  BroadcastAlignment align;
  if (auto joined = inferBroadcast(scratch, *yShape, *xShape, &align); !joined)
    return failBuilt("a sum over its broadcast dims", joined.error().message);
  bool identity = xShape->size() == yShape->size();
  for (size_t j = 0; j < xShape->size() && identity; ++j) {
    identity = align.rhs[j] == static_cast<int>(j);
    if (identity && (*xShape)[j].broadcastable &&
        fn.ctx.prove((*xShape)[j].size, (*yShape)[j].size) !=
            InferContext::Proof::Equal)
      return fail(fmt::format("grad through a '#' dim that may broadcast "
                              "({}) is not supported; give it its size",
                              (*xShape)[j].str()));
  }
  if (identity)
    return g;
  std::vector<std::string> names;
  for (size_t i = 0; i < gShape->size(); ++i)
    names.push_back(freshAxis());
  std::vector<std::string> kept;
  for (size_t j = 0; j < xShape->size(); ++j)
    kept.push_back(align.rhs[j] >= 0 ? names[align.rhs[j]] : "1");
  return transform(
      OpKind::Reduce, g,
      fmt::format("{} -> {}", fmt::join(names, " "), fmt::join(kept, " ")), {});
}

std::optional<unsigned> Differentiator::typedAs(unsigned g, unsigned value) {
  Shape want = type(value).shape; // a copy: building grows fn.values
  if (type(g).shape == want)
    return g;
  auto gShape = shapeOf(g);
  auto vShape = shapeOf(value);
  if (!gShape || !vShape)
    return std::nullopt;
  if (gShape->size() != vShape->size())
    return failBuilt("its operand's gradient",
                     fmt::format("the gradient has rank {}, the operand {}",
                                 gShape->size(), vShape->size()));
  // Only dims the checker proves equal are renamed; one it checks at entry
  // only (an anonymous dim) keeps g's name, as before.
  for (size_t i = 0; i < gShape->size(); ++i)
    if ((*gShape)[i].isPack() || (*vShape)[i].isPack() ||
        (*gShape)[i].broadcastable || (*vShape)[i].broadcastable ||
        fn.ctx.prove((*gShape)[i].size, (*vShape)[i].size) !=
            InferContext::Proof::Equal)
      return g;
  std::vector<std::string> names;
  for (size_t i = 0; i < gShape->size(); ++i)
    names.push_back(freshAxis());
  std::string side = fmt::format("{}", fmt::join(names, " "));
  auto renamed =
      transform(OpKind::Rearrange, g, fmt::format("{} -> {}", side, side), {});
  if (!renamed)
    return std::nullopt;
  // The identity rearrange's result, typed as the value (its dims provably
  // the same sizes: the verifier unifies them).
  fn.values[*renamed].type.shape = want;
  fn.ops.back().transform->result = want;
  return renamed;
}

bool Differentiator::accumulate(unsigned value, unsigned g) {
  g = cast(g, dtypeOf(value));
  // An adjoint has its value's type, dim names included: the rules combine
  // it with forward values, and broadcasting matches dims by name, so a dim
  // written otherwise (`window - 1` for `seq`) could match another of the
  // same size (`d_model`), or none.
  auto typed = typedAs(g, value);
  if (!typed)
    return false;
  g = *typed;
  auto it = adjoint.find(value);
  if (it == adjoint.end()) {
    adjoint.emplace(value, g);
    return true;
  }
  auto sum = ew(F::Add, {it->second, g});
  if (!sum)
    return false;
  it->second = *sum;
  return true;
}

std::string AxisNames::operator()(const std::string &axis) {
  auto it = names.find(axis);
  if (it != names.end())
    return it->second;
  std::string name = isValidAxisName(axis) ? axis : fresh();
  if (name != axis)
    sized.insert(axis);
  names.emplace(axis, name);
  return name;
}

std::vector<SizeArg>
AxisNames::sizeArgs(const std::vector<const Groups *> &sides,
                    const std::set<std::string> *bound) {
  std::set<std::string> want;
  for (const Groups *side : sides)
    for (const auto &group : *side)
      for (const auto &a : group)
        if (group.size() > 1 || sized.count(a) || (bound && !bound->count(a)))
          want.insert(a);
  std::vector<SizeArg> out;
  for (const auto &a : want)
    if (auto it = sizes.find(a); it != sizes.end())
      out.push_back(SizeArg{(*this)(a), it->second});
  return out;
}

std::string sideText(const Groups &groups, AxisNames &name) {
  std::vector<std::string> dims;
  for (const auto &group : groups) {
    if (group.empty()) {
      dims.push_back("1");
      continue;
    }
    std::vector<std::string> axes;
    for (const auto &a : group)
      axes.push_back(name(a));
    dims.push_back(
        axes.size() == 1 ? axes[0] : fmt::format("({})", fmt::join(axes, " ")));
  }
  return fmt::format("{}", fmt::join(dims, " "));
}

bool Differentiator::differentiate(const CheckedOp &op) {
  atLoc = op.loc;
  atSite = op.callSite;
  atWhat = op.kind == OpKind::Reduce
               ? fmt::format("reduce \"{}\"", reduceKindName(op.reduction))
               : std::string(opName(op.kind, op.fn));
  // Every row's rule is called, whichever of its results has an adjoint:
  // the rule reads the adjoints it needs (unpack's parts without one are
  // zeros).
  switch (op.kind) {
#define EIN_OP(Kind, Name, OpClass)                                            \
  case OpKind::Kind:                                                           \
    return gradientOf##Kind(*this, op);
#include "ein/Sema/Ops.def"
  }
  return fail(fmt::format("grad met an op kind outside the registry ({})",
                          static_cast<int>(op.kind)))
      .no();
}

CheckedOp recomputedCopy(CheckedFunction &fn, const CheckedOp &op,
                         std::map<unsigned, unsigned> &copyOf) {
  unsigned v = op.results[0];
  CheckedOp again = op;
  again.phase = GradPhase::Recompute;
  again.gradOf = static_cast<int>(v);
  for (unsigned &x : again.operands)
    if (auto c = copyOf.find(x); c != copyOf.end())
      x = c->second;
  fn.values.push_back(fn.values[v]);
  unsigned copy = static_cast<unsigned>(fn.values.size() - 1);
  again.results = {copy};
  copyOf[v] = copy;
  return again;
}

GradientResult Differentiator::run(unsigned loss,
                                   const std::vector<unsigned> &wrt,
                                   SourceLoc at) {
  GradientResult result;
  // The ops the gradient walks: those before the loss's, on a path from a
  // wrt value to it.
  size_t end = 0;
  for (size_t i = 0; i < fn.ops.size(); ++i)
    for (unsigned r : fn.ops[i].results)
      if (r == loss)
        end = i + 1;
  active = params;
  // The rows of a stacked parameter (the unpack `w[l]` reads, Sema's
  // loops) are parameters too: their gradients are weight gradients.
  for (size_t i = 0; i < end; ++i)
    if (fn.ops[i].kind == OpKind::Unpack && params.count(fn.ops[i].operands[0]))
      params.insert(fn.ops[i].results.begin(), fn.ops[i].results.end());
  auto isIn = [&](const CheckedOp &op) {
    return std::any_of(op.operands.begin(), op.operands.end(),
                       [&](unsigned v) { return active.count(v); });
  };
  for (size_t i = 0; i < end;) {
    // A forward einsum of 3+ operands becomes the pairwise einsums it runs
    // as, so the backward reuses their intermediates (SplitContractions.h).
    size_t split = isIn(fn.ops[i]) ? splitContraction(fn, i) : 1;
    end += split - 1;
    for (size_t next = i + split; i < next; ++i)
      if (isIn(fn.ops[i]))
        for (unsigned r : fn.ops[i].results)
          if (isFloat(dtypeOf(r)))
            active.insert(r);
  }
  atLoc = at;
  atPhase = GradPhase::DataGrad;
  atTarget = static_cast<int>(loss);
  if (active.count(loss))
    adjoint.emplace(loss, constant(1, dtypeOf(loss)));
  for (size_t i = end; i-- > 0;) {
    CheckedOp op = fn.ops[i]; // fn.ops grows below
    bool touched = std::any_of(op.results.begin(), op.results.end(),
                               [&](unsigned r) { return adjoint.count(r); });
    if (!touched)
      continue;
    if (!differentiate(op)) {
      result.error = error;
      return result;
    }
  }
  // A rule that failed inside a step it could not report through its
  // return value still leaves its error: never return gradients then.
  if (error) {
    result.error = error;
    return result;
  }
  for (unsigned w : wrt) {
    atLoc = at;
    atSite = -1;
    atPhase = GradPhase::WeightGrad;
    atTarget = static_cast<int>(w);
    auto it = adjoint.find(w);
    std::optional<unsigned> g =
        it != adjoint.end() ? std::optional<unsigned>(it->second) : zeros(w);
    if (!g) {
      result.error = error;
      return result;
    }
    result.grads.push_back(*g);
  }
  if (error)
    result.error = error;
  return result;
}

GradientResult appendGradient(CheckedFunction &fn, unsigned loss,
                              const std::vector<unsigned> &wrt, SourceLoc at) {
  GradientResult result = Differentiator(fn, wrt).run(loss, wrt, at);
  if (!result.error)
    recomputeSoftmax(fn);
  return result;
}

std::vector<unsigned> savedForBackward(const CheckedFunction &fn) {
  std::set<unsigned> backward, saved;
  for (const CheckedOp &op : fn.ops)
    if (op.phase != GradPhase::Forward)
      backward.insert(op.results.begin(), op.results.end());
  for (const CheckedOp &op : fn.ops)
    if (op.phase != GradPhase::Forward)
      for (unsigned v : op.operands)
        if (!backward.count(v))
          saved.insert(v);
  return {saved.begin(), saved.end()};
}

} // namespace ein

namespace ein {

size_t recomputeCheapValues(CheckedFunction &fn) {
  auto isBackward = [](const CheckedOp &op) {
    return op.phase != GradPhase::Forward;
  };
  std::vector<unsigned> savedList = savedForBackward(fn);
  std::set<unsigned> saved(savedList.begin(), savedList.end());
  std::set<unsigned> inputs(fn.params.begin(), fn.params.end());
  std::map<unsigned, size_t> producer;
  for (size_t i = 0; i < fn.ops.size(); ++i)
    for (unsigned r : fn.ops[i].results)
      producer[r] = i;
  auto isScalar = [&](unsigned v) {
    auto it = producer.find(v);
    return it != producer.end() &&
           (fn.ops[it->second].kind == OpKind::Constant ||
            fn.ops[it->second].kind == OpKind::Size);
  };
  // The candidates, in forward order: an elementwise op whose operands the
  // backward holds anyway (saved, inputs, numbers), or recomputes.
  std::map<unsigned, unsigned> copyOf; // forward value -> its recomputation
  std::vector<std::pair<size_t, CheckedOp>> inserts; // before op index
  for (unsigned v : savedList) {
    auto it = producer.find(v);
    if (it == producer.end())
      continue;
    const CheckedOp &op = fn.ops[it->second];
    if (op.kind != OpKind::Elementwise || isBackward(op))
      continue;
    bool cheap =
        std::all_of(op.operands.begin(), op.operands.end(), [&](unsigned x) {
          return saved.count(x) || inputs.count(x) || isScalar(x);
        });
    if (!cheap)
      continue;
    // Before the first backward op reading it.
    size_t first = fn.ops.size();
    for (size_t i = 0; i < fn.ops.size() && first == fn.ops.size(); ++i)
      if (isBackward(fn.ops[i]) &&
          std::count(fn.ops[i].operands.begin(), fn.ops[i].operands.end(), v))
        first = i;
    inserts.push_back({first, recomputedCopy(fn, op, copyOf)});
  }
  for (CheckedOp &op : fn.ops)
    if (isBackward(op))
      for (unsigned &x : op.operands)
        if (auto c = copyOf.find(x); c != copyOf.end())
          x = c->second;
  // A recomputation read by another one must come before that one's place
  // too (the readers come later in forward order: walk back).
  for (size_t k = inserts.size(); k-- > 0;)
    for (size_t j = k + 1; j < inserts.size(); ++j)
      if (std::count(inserts[j].second.operands.begin(),
                     inserts[j].second.operands.end(),
                     inserts[k].second.results[0]))
        inserts[k].first = std::min(inserts[k].first, inserts[j].first);
  // Insert each before its first reader, in forward order among equals.
  std::stable_sort(inserts.begin(), inserts.end(),
                   [](auto &a, auto &b) { return a.first < b.first; });
  for (size_t k = inserts.size(); k-- > 0;)
    fn.ops.insert(fn.ops.begin() + inserts[k].first,
                  std::move(inserts[k].second));
  return copyOf.size();
}

} // namespace ein
