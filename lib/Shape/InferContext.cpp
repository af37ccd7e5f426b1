// InferContext: proofs about symbolic sizes, unification, entry checks and
// exact division shared by every shape rule (include/ein/Shape/Infer.h).
#include "ein/Shape/Infer.h"

#include <algorithm>

namespace ein {

//===----------------------------------------------------------------------===//
// InferContext
//===----------------------------------------------------------------------===//

namespace {
/// "hidden" or "hidden (= 30)" when the number is known.
std::string describe(const SizeExpr &e, const Bindings &env) {
  std::string text = e.str();
  if (!e.isConstant())
    if (auto v = e.evaluate(env))
      text += " (= " + toString(*v) + ")";
  return text;
}
} // namespace

InferContext::Proof InferContext::prove(const SizeExpr &a,
                                        const SizeExpr &b) const {
  return proveWith(a, b, env);
}

InferContext::Proof InferContext::proveStatic(const SizeExpr &a,
                                              const SizeExpr &b) const {
  return proveWith(a, b, staticEnv());
}

InferContext::Proof InferContext::proveWith(const SizeExpr &a,
                                            const SizeExpr &b,
                                            const Bindings &known) const {
  if (a == b)
    return Proof::Equal;
  SizeExpr sa = a.substitute(known), sb = b.substitute(known);
  if (sa == sb)
    return Proof::Equal;
  SizeExpr diff = sa - sb;
  if (diff.isConstant())
    return Proof::NotEqual;
  if (simplify(a - b).isZero() || simplify(diff).isZero())
    return Proof::Equal;
  // A quotient `n/c` exists only where `n % c == 0` is an entry check, so
  // writing n = c*q (and n/c = q) is sound: c*(n/c) == n becomes provable.
  std::map<std::string, SizeExpr> split;
  for (auto *e : {&sa, &sb})
    for (auto &[num, den] : e->quotients()) {
      auto name = num.asSymbol();
      auto c = den.constantValue();
      if (name && c && *c > 0 && !split.count(*name))
        split[*name] = SizeExpr::constant(*c) *
                       SizeExpr::symbol(*name + "/" + toString(*c));
    }
  if (!split.empty() && sa.replaceSymbols(split) == sb.replaceSymbols(split))
    return Proof::Equal;
  return Proof::Unknown;
}

Bindings InferContext::staticEnv() const {
  if (entryNames.empty())
    return env;
  Bindings fixed;
  for (auto &[name, value] : env)
    if (!entryNames.count(name))
      fixed.emplace(name, value);
  return fixed;
}

bool InferContext::exactQuotient(const SizeExpr &num,
                                 const SizeExpr &den) const {
  return std::any_of(constraints.begin(), constraints.end(),
                     [&](const Constraint &c) {
                       return c.kind == Constraint::Kind::Divisible &&
                              c.lhs == num && c.rhs == den;
                     });
}

SizeExpr InferContext::simplify(const SizeExpr &e) const {
  return e.cancelQuotients([this](const SizeExpr &num, const SizeExpr &den) {
    return exactQuotient(num, den);
  });
}

Expected<bool> InferContext::unify(const SizeExpr &a, const SizeExpr &b,
                                   const std::string &what) {
  if (a.tooComplex() || b.tooComplex())
    return ShapeError::atOp(what + ": " + SizeExpr::tooComplexMessage());
  if (a.substitute(env).overflowed() || b.substitute(env).overflowed())
    return ShapeError::atOp(what + ": size overflows 128 bits");
  switch (prove(a, b)) {
  case Proof::Equal:
    return true;
  case Proof::NotEqual:
    return ShapeError::atOp(what + ": expected size " + describe(a, env) +
                            ", got " + describe(b, env));
  case Proof::Unknown:
    break;
  }
  SizeExpr sa = a.substitute(env), sb = b.substitute(env);
  auto bindIfFree = [&](const SizeExpr &name, const SizeExpr &value) {
    auto sym = name.asSymbol();
    auto v = value.constantValue();
    if (!sym || !v || packBindings.count(*sym))
      return false;
    env[*sym] = *v;
    inferred[*sym] = *v;
    return true;
  };
  if (bindIfFree(sa, sb) || bindIfFree(sb, sa))
    return true;
  if (mentionsAnonymous(sa) || mentionsAnonymous(sb)) {
    requireEqualAtEntry(sa, sb, what);
    return true;
  }
  return ShapeError::atOp("cannot prove " + sa.str() + " == " + sb.str() +
                          " (" + what + ")");
}

void InferContext::requireEqualAtEntry(const SizeExpr &a, const SizeExpr &b,
                                       const std::string &what) {
  for (auto &c : constraints)
    if (c.kind == Constraint::Kind::Equal &&
        ((c.lhs == a && c.rhs == b) || (c.lhs == b && c.rhs == a)))
      return;
  constraints.push_back({Constraint::Kind::Equal, a, b, what});
}

Expected<SizeExpr> InferContext::divide(const SizeExpr &num,
                                        const SizeExpr &den,
                                        const std::string &what) {
  if (num.tooComplex() || den.tooComplex())
    return ShapeError::atOp(what + ": " + SizeExpr::tooComplexMessage());
  // A divisor of 0 first: `n / n` is 1 symbolically, but with n = 0 the
  // quotient is undetermined (einops: "integer modulo by zero").
  SizeExpr sn = num.substitute(env), sd = den.substitute(env);
  if (sd.constantValue() == Int(0))
    return ShapeError::atOp(what + ": division by a size of 0");
  if (auto exact = num.divideExact(den))
    return *exact;
  // Folded with the sizes known without the call's inputs only: with them,
  // the quotient stays (and its entry check holds, or fails, below).
  Bindings fixed = staticEnv();
  SizeExpr fn = num.substitute(fixed), fd = den.substitute(fixed);
  if (auto exact = fn.divideExact(fd))
    return *exact;
  auto n = sn.constantValue(), d = sd.constantValue();
  if (n && d) {
    if (*n % *d != 0)
      return ShapeError::atOp(what + ": size " + describe(num, env) +
                              " is not divisible by " + describe(den, env));
    if (fn.isConstant() && fd.isConstant())
      return SizeExpr::constant(*n / *d);
  }
  // One entry check per distinct division: `e / 2` written three times
  // needs `e % 2 == 0` checked once.
  bool known = std::any_of(constraints.begin(), constraints.end(),
                           [&](const Constraint &c) {
                             return c.kind == Constraint::Kind::Divisible &&
                                    c.lhs == num && c.rhs == den;
                           });
  if (!known)
    constraints.push_back(
        {Constraint::Kind::Divisible, num, den, what + " must divide evenly"});
  return SizeExpr::quotient(num, den);
}

Shape InferContext::expand(const Shape &shape) const {
  Shape out;
  for (auto &d : shape) {
    auto it = d.isPack() ? packBindings.find(d.pack) : packBindings.end();
    if (it == packBindings.end())
      out.push_back(d);
    else
      out.insert(out.end(), it->second.begin(), it->second.end());
  }
  return out;
}

Shape packDims(const std::string &pack, size_t rank) {
  Shape dims;
  for (size_t i = 0; i < rank; ++i)
    dims.push_back(Dim::ofSize(
        SizeExpr::symbol(rank == 1 ? pack : pack + "_" + std::to_string(i))));
  return dims;
}

} // namespace ein
