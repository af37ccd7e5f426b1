// Symbolic size polynomials: canonical form, arithmetic, substitution, division.
#include "ein/Shape/SizeExpr.h"

#include <algorithm>
#include <limits>

namespace ein {

namespace {
/// The most negative 128-bit value has no positive counterpart, so its
/// magnitude cannot be printed (or read back): it counts as an overflow.
constexpr Int kMinInt = std::numeric_limits<Int>::min();
} // namespace

/// An atom is a named size or an opaque floor quotient of two expressions.
struct SizeExpr::Atom {
  std::string name; // for a symbol
  std::shared_ptr<const SizeExpr> num, den; // for a quotient
  bool isQuotient() const { return num != nullptr; }
};

SizeExpr SizeExpr::constant(Int value) {
  SizeExpr e;
  if (value == kMinInt)
    e.overflow = true;
  else if (value != 0)
    e.terms[{}] = value;
  return e;
}

std::string maxDimSizeText() {
  static_assert(kMaxDimSize == (Int(1) << 62) - 1);
  return "2^62 - 1 (" + toString(kMaxDimSize) + ")";
}

std::string SizeExpr::tooComplexMessage() {
  return "size expression too complex (limits: " + std::to_string(kMaxTerms) +
         " terms, " + std::to_string(kMaxFactors) + " factors per term, " +
         std::to_string(kMaxQuotientText) + " characters per quotient)";
}

void SizeExpr::markTooComplex() {
  complex = true;
  terms.clear();
  atoms.clear();
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
  if (num.complex || den.complex) {
    SizeExpr e;
    e.markTooComplex();
    return e;
  }
  if (auto exact = num.divideExact(den))
    return *exact;
  auto n = num.constantValue(), d = den.constantValue();
  if (n && d && *d != 0)
    return constant(*n / *d);
  auto atom = std::make_shared<Atom>();
  atom->num = std::make_shared<SizeExpr>(num);
  atom->den = std::make_shared<SizeExpr>(den);
  // The key is the atom's text: an operand that is not a name or a
  // non-negative number is parenthesised, so that the text reads back as the
  // same quotient (`(-a + b)/2`, `n/(-2)`, `(a/2)/3`).
  auto wrap = [](const SizeExpr &e) {
    auto c = e.constantValue();
    bool plain = e.asSymbol() || (c && *c >= 0);
    return plain ? e.str() : "(" + e.str() + ")";
  };
  std::string key = wrap(num) + "/" + wrap(den);
  SizeExpr e;
  if (key.size() > kMaxQuotientText) {
    e.markTooComplex();
    return e;
  }
  e.terms[{{key, 1}}] = 1;
  e.atoms[key] = atom;
  e.overflow = num.overflow || den.overflow;
  return e;
}

void SizeExpr::addTerm(const Monomial &m, Int coeff) {
  if (complex)
    return;
  auto [it, inserted] = terms.try_emplace(m, 0);
  auto sum = checkedAdd(it->second, coeff);
  if (!sum || *sum == kMinInt) {
    overflow = true;
    if (inserted)
      terms.erase(it);
    return;
  }
  if (*sum == 0)
    terms.erase(it);
  else
    it->second = *sum;
  if (terms.size() > kMaxTerms)
    markTooComplex();
}

SizeExpr &SizeExpr::operator+=(const SizeExpr &rhs) {
  if (complex || rhs.complex) {
    markTooComplex();
    return *this;
  }
  overflow |= rhs.overflow;
  atoms.insert(rhs.atoms.begin(), rhs.atoms.end());
  for (auto &[m, c] : rhs.terms) {
    addTerm(m, c);
    if (complex)
      break;
  }
  return *this;
}

SizeExpr &SizeExpr::operator-=(const SizeExpr &rhs) {
  return *this += constant(-1) * rhs;
}

SizeExpr SizeExpr::operator+(const SizeExpr &rhs) const {
  SizeExpr r = *this;
  r += rhs;
  return r;
}

SizeExpr SizeExpr::operator-(const SizeExpr &rhs) const {
  SizeExpr r = *this;
  r -= rhs;
  return r;
}

SizeExpr SizeExpr::operator*(const SizeExpr &rhs) const {
  SizeExpr r;
  // Multiplying out does |lhs| * |rhs| term products; past the limit the
  // result would almost always be too complex anyway, so refuse the work.
  if (complex || rhs.complex || terms.size() * rhs.terms.size() > kMaxTerms) {
    r.markTooComplex();
    return r;
  }
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
      size_t degree = 0;
      for (auto &factor : m)
        degree += factor.second;
      if (degree > kMaxFactors) {
        r.markTooComplex();
        return r;
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
  // An expression whose arithmetic overflowed, or that grew too complex, has
  // lost terms: equal to none.
  return !overflow && !rhs.overflow && !complex && !rhs.complex &&
         terms == rhs.terms;
}

bool SizeExpr::operator<(const SizeExpr &rhs) const {
  if (complex != rhs.complex)
    return rhs.complex;
  if (overflow != rhs.overflow)
    return rhs.overflow;
  return terms < rhs.terms;
}

bool SizeExpr::isConstant() const {
  if (complex)
    return false;
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

SizeExpr SizeExpr::cancelQuotients(
    const std::function<bool(const SizeExpr &, const SizeExpr &)> &exact)
    const {
  // Each rewrite removes a quotient factor for its numerator, whose
  // quotients are nested one level deeper: the rounds are bounded by the
  // nesting, which the quotient text limit keeps small.
  constexpr unsigned kMaxRounds = 32;
  if (std::none_of(atoms.begin(), atoms.end(),
                   [](const auto &a) { return a.second->isQuotient(); }))
    return *this;
  SizeExpr current = *this;
  for (unsigned round = 0; round < kMaxRounds; ++round) {
    if (current.complex || current.overflow)
      return current;
    bool changed = false;
    SizeExpr next;
    for (auto &[m, c] : current.terms) {
      SizeExpr term;
      for (auto &[key, power] : m)
        term.atoms[key] = current.atoms.at(key);
      term.addTerm(m, c);
      std::optional<SizeExpr> cancelled;
      for (auto &[key, power] : m) {
        const auto &atom = current.atoms.at(key);
        if (!atom->isQuotient() || atom->den->terms.size() != 1 ||
            !exact(*atom->num, *atom->den))
          continue;
        SizeExpr q;
        q.terms[{{key, 1}}] = 1;
        q.atoms[key] = atom;
        if (auto rest = term.divideExact(*atom->den * q)) {
          cancelled = *rest * *atom->num;
          break;
        }
      }
      changed |= cancelled.has_value();
      next += cancelled ? *cancelled : term;
    }
    current = next;
    if (!changed)
      break;
  }
  return current;
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
  if (complex)
    return *this;
  SizeExpr result;
  result.overflow = overflow;
  for (auto &[m, c] : terms) {
    SizeExpr term = constant(c);
    for (auto &[key, power] : m) {
      if (term.complex)
        break;
      auto &atom = atoms.at(key);
      SizeExpr value;
      if (atom->isQuotient()) {
        value = quotient(atom->num->replaceSymbols(values),
                         atom->den->replaceSymbols(values));
      } else {
        auto it = values.find(atom->name);
        value = it == values.end() ? symbol(atom->name) : it->second;
      }
      for (unsigned p = 0; p < power && !term.complex; ++p)
        term = term * value;
    }
    result += term;
    if (result.complex)
      break;
  }
  return result;
}

std::vector<SizeExpr::Term> SizeExpr::termList() const {
  std::vector<Term> out;
  for (auto &[m, c] : terms) {
    Term term{c, {}};
    for (auto &[key, power] : m) {
      const Atom &atom = *atoms.at(key);
      Factor f;
      f.power = power;
      if (atom.isQuotient()) {
        f.num = atom.num.get();
        f.den = atom.den.get();
      } else {
        f.symbol = atom.name;
      }
      term.factors.push_back(f);
    }
    out.push_back(std::move(term));
  }
  return out;
}

std::optional<Int> SizeExpr::evaluate(const Bindings &env) const {
  return substitute(env).constantValue();
}

std::optional<SizeExpr> SizeExpr::divideExact(const SizeExpr &divisor) const {
  if (complex || divisor.complex)
    return std::nullopt;
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
  if (complex)
    return "<" + tooComplexMessage() + ">";
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
    else if (m->size() == 1 && (*m)[0].second == 1 &&
             (*m)[0].first.find('/') != std::string::npos)
      // A quotient alone is printed bare; with a coefficient it needs
      // parentheses: 2*(hidden/8), not 2*hidden/8, which is (2*hidden)/8.
      out += toString(mag) + "*(" + mono + ")";
    else
      out += toString(mag) + "*" + mono;
  }
  return out;
}

std::string Constraint::str() const {
  if (kind == Kind::Divisible) {
    // Parenthesised as in a quotient's text (`(s - 1) % 2 == 0`, not
    // `s - 1 % 2`), so that it reads back (the dialect's verifier reads the
    // divisibility facts from `ein.entry_checks`).
    auto wrap = [](const SizeExpr &e) {
      auto c = e.constantValue();
      bool plain = e.asSymbol() || (c && *c >= 0);
      return plain ? e.str() : "(" + e.str() + ")";
    };
    return wrap(lhs) + " % " + wrap(rhs) + " == 0";
  }
  if (kind == Kind::NonEmpty)
    return lhs.str() + " >= 1";
  if (kind == Kind::LessEq)
    return lhs.str() + " <= " + rhs.str();
  return lhs.str() + " == " + rhs.str();
}

} // namespace ein
