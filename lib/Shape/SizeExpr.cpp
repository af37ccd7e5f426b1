// Symbolic size polynomials: canonical form, arithmetic, substitution, division.
#include "ein/Shape/SizeExpr.h"

#include <algorithm>

namespace ein {

/// An atom is a named size or an opaque floor quotient of two expressions.
struct SizeExpr::Atom {
  std::string name; // for a symbol
  std::shared_ptr<const SizeExpr> num, den; // for a quotient
  bool isQuotient() const { return num != nullptr; }
};

SizeExpr SizeExpr::constant(Int value) {
  SizeExpr e;
  if (value != 0)
    e.terms[{}] = value;
  return e;
}

SizeExpr SizeExpr::symbol(const std::string &name) {
  SizeExpr e;
  e.terms[{{name, 1}}] = 1;
  auto atom = std::make_shared<Atom>();
  atom->name = name;
  e.atoms[name] = atom;
  return e;
}

SizeExpr SizeExpr::quotient(const SizeExpr &num, const SizeExpr &den) {
  if (auto exact = num.divideExact(den))
    return *exact;
  auto n = num.constantValue(), d = den.constantValue();
  if (n && d && *d != 0)
    return constant(*n / *d);
  auto atom = std::make_shared<Atom>();
  atom->num = std::make_shared<SizeExpr>(num);
  atom->den = std::make_shared<SizeExpr>(den);
  auto wrap = [](const SizeExpr &e) {
    return e.asSymbol() || e.isConstant() ? e.str() : "(" + e.str() + ")";
  };
  std::string key = wrap(num) + "/" + wrap(den);
  SizeExpr e;
  e.terms[{{key, 1}}] = 1;
  e.atoms[key] = atom;
  e.overflow = num.overflow || den.overflow;
  return e;
}

void SizeExpr::addTerm(const Monomial &m, Int coeff) {
  auto it = terms.find(m);
  Int current = it == terms.end() ? 0 : it->second;
  auto sum = checkedAdd(current, coeff);
  if (!sum) {
    overflow = true;
    return;
  }
  if (*sum == 0) {
    if (it != terms.end())
      terms.erase(it);
  } else {
    terms[m] = *sum;
  }
}

SizeExpr SizeExpr::operator+(const SizeExpr &rhs) const {
  SizeExpr r = *this;
  r.overflow |= rhs.overflow;
  r.atoms.insert(rhs.atoms.begin(), rhs.atoms.end());
  for (auto &[m, c] : rhs.terms)
    r.addTerm(m, c);
  return r;
}

SizeExpr SizeExpr::operator-(const SizeExpr &rhs) const {
  return *this + constant(-1) * rhs;
}

SizeExpr SizeExpr::operator*(const SizeExpr &rhs) const {
  SizeExpr r;
  r.overflow = overflow || rhs.overflow;
  r.atoms = atoms;
  r.atoms.insert(rhs.atoms.begin(), rhs.atoms.end());
  for (auto &[m1, c1] : terms) {
    for (auto &[m2, c2] : rhs.terms) {
      Monomial m;
      size_t i = 0, j = 0;
      while (i < m1.size() || j < m2.size()) {
        if (j == m2.size() || (i < m1.size() && m1[i].first < m2[j].first))
          m.push_back(m1[i++]);
        else if (i == m1.size() || m2[j].first < m1[i].first)
          m.push_back(m2[j++]);
        else {
          m.push_back({m1[i].first, m1[i].second + m2[j].second});
          ++i, ++j;
        }
      }
      auto c = checkedMul(c1, c2);
      if (!c) {
        r.overflow = true;
        continue;
      }
      r.addTerm(m, *c);
    }
  }
  return r;
}

bool SizeExpr::operator==(const SizeExpr &rhs) const {
  // An expression whose arithmetic overflowed has lost terms: equal to none.
  return !overflow && !rhs.overflow && terms == rhs.terms;
}

bool SizeExpr::isConstant() const {
  return terms.empty() || (terms.size() == 1 && terms.begin()->first.empty());
}

std::optional<Int> SizeExpr::constantValue() const {
  if (overflow || !isConstant())
    return std::nullopt;
  return terms.empty() ? 0 : terms.begin()->second;
}

std::optional<std::string> SizeExpr::asSymbol() const {
  if (terms.size() != 1)
    return std::nullopt;
  auto &[m, c] = *terms.begin();
  if (c != 1 || m.size() != 1 || m[0].second != 1)
    return std::nullopt;
  auto atom = atoms.at(m[0].first);
  if (atom->isQuotient())
    return std::nullopt;
  return atom->name;
}

std::set<std::string> SizeExpr::symbols() const {
  std::set<std::string> out;
  for (auto &[m, c] : terms)
    for (auto &[key, p] : m) {
      auto &atom = atoms.at(key);
      if (!atom->isQuotient()) {
        out.insert(atom->name);
        continue;
      }
      for (auto &s : atom->num->symbols())
        out.insert(s);
      for (auto &s : atom->den->symbols())
        out.insert(s);
    }
  return out;
}

SizeExpr SizeExpr::substitute(const Bindings &env) const {
  std::map<std::string, SizeExpr> values;
  for (auto &name : symbols())
    if (auto it = env.find(name); it != env.end())
      values[name] = constant(it->second);
  return replaceSymbols(values);
}

std::vector<std::pair<SizeExpr, SizeExpr>> SizeExpr::quotients() const {
  std::vector<std::pair<SizeExpr, SizeExpr>> out;
  for (auto &[key, atom] : atoms)
    if (atom->isQuotient())
      out.push_back({*atom->num, *atom->den});
  return out;
}

SizeExpr
SizeExpr::replaceSymbols(const std::map<std::string, SizeExpr> &values) const {
  SizeExpr result;
  result.overflow = overflow;
  for (auto &[m, c] : terms) {
    SizeExpr term = constant(c);
    for (auto &[key, power] : m) {
      auto &atom = atoms.at(key);
      SizeExpr value;
      if (atom->isQuotient()) {
        value = quotient(atom->num->replaceSymbols(values),
                         atom->den->replaceSymbols(values));
      } else {
        auto it = values.find(atom->name);
        value = it == values.end() ? symbol(atom->name) : it->second;
      }
      for (unsigned p = 0; p < power; ++p)
        term = term * value;
    }
    result = result + term;
  }
  return result;
}

std::optional<Int> SizeExpr::evaluate(const Bindings &env) const {
  return substitute(env).constantValue();
}

std::optional<SizeExpr> SizeExpr::divideExact(const SizeExpr &divisor) const {
  if (divisor.terms.size() != 1) {
    if (*this == divisor)
      return constant(1);
    if (isZero())
      return SizeExpr();
    return std::nullopt;
  }
  auto &[dm, dc] = *divisor.terms.begin();
  SizeExpr result;
  result.overflow = overflow;
  for (auto &[m, c] : terms) {
    if (c % dc != 0)
      return std::nullopt;
    Monomial q;
    size_t j = 0;
    for (auto &[key, power] : m) {
      unsigned sub = 0;
      if (j < dm.size() && dm[j].first == key)
        sub = dm[j++].second;
      if (sub > power)
        return std::nullopt;
      if (power > sub)
        q.push_back({key, power - sub});
    }
    if (j != dm.size())
      return std::nullopt;
    for (auto &[key, p] : q)
      result.atoms[key] = atoms.at(key);
    result.addTerm(q, c / dc);
  }
  return result;
}

std::string SizeExpr::monomialStr(const Monomial &m) {
  std::string out;
  for (auto &[key, power] : m)
    for (unsigned p = 0; p < power; ++p) {
      if (!out.empty())
        out += "*";
      // A quotient inside a product needs parentheses: floor division does
      // not commute with multiplication.
      bool quotientAtom = key.find('/') != std::string::npos;
      bool alone = m.size() == 1 && power == 1;
      out += quotientAtom && !alone ? "(" + key + ")" : key;
    }
  return out;
}

std::string SizeExpr::str() const {
  if (terms.empty())
    return "0";
  // Highest degree first, the constant last: "n*n + 2*n + 1".
  std::vector<std::pair<const Monomial *, Int>> ordered;
  for (auto &[m, c] : terms)
    ordered.push_back({&m, c});
  std::stable_sort(ordered.begin(), ordered.end(), [](auto &a, auto &b) {
    unsigned da = 0, db = 0;
    for (auto &f : *a.first)
      da += f.second;
    for (auto &f : *b.first)
      db += f.second;
    return da > db;
  });
  std::string out;
  bool first = true;
  for (auto &[m, c] : ordered) {
    Int mag = c < 0 ? -c : c;
    if (first)
      out += c < 0 ? "-" : "";
    else
      out += c < 0 ? " - " : " + ";
    first = false;
    std::string mono = monomialStr(*m);
    if (mono.empty())
      out += toString(mag);
    else if (mag == 1)
      out += mono;
    else if (mono.find('/') != std::string::npos && mono[0] != '(')
      out += toString(mag) + "*(" + mono + ")"; // 2*(hidden/8), not 2*hidden/8
    else
      out += toString(mag) + "*" + mono;
  }
  return out;
}

std::string Constraint::str() const {
  if (kind == Kind::Divisible)
    return lhs.str() + " % " + rhs.str() + " == 0";
  if (kind == Kind::NonEmpty)
    return lhs.str() + " >= 1";
  return lhs.str() + " == " + rhs.str();
}

} // namespace ein
