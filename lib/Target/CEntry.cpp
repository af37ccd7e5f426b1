// The C entry points every target writes around its compiled code; see
// CEntry.h.
#include "ein/Target/CEntry.h"
#include "ein/Shape/SizeReads.h"
#include "ein/Support/Hash.h"
#include "ein/Syntax/Unicode.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <iterator>

namespace ein {

const char *cType(DType t) { return dtypeInfo(t).cType; }

/// The ASCII C spelling of an ein name: ASCII characters stay, every other
/// code point becomes `_uXXXX` (or `_UXXXXXXXX` above U+FFFF), hex digits in
/// lowercase, so `α` becomes `_u03b1`. The same name is used for the object's
/// symbols, so the header and the object agree whatever the C compiler does
/// with non-ASCII identifiers.
std::string cName(const std::string &name) {
  std::string out;
  for (size_t i = 0; i < name.size();) {
    auto d = unicode::decodeUtf8(name, i);
    if (d.valid() && d.codePoint < 0x80)
      out += static_cast<char>(d.codePoint);
    else if (d.codePoint <= 0xFFFF)
      out += fmt::format("_u{:04x}", static_cast<uint32_t>(d.codePoint));
    else
      out += fmt::format("_U{:08x}", static_cast<uint32_t>(d.codePoint));
    i += d.size;
  }
  return out;
}

/// An error when two functions, or two parameters of one function, get the
/// same C name; empty when all are distinct.
std::string headerGuard(const std::string &prefix,
                        const std::string &headerPath,
                        const CheckedModule &module) {
  std::string guard = prefix;
  size_t slash = headerPath.rfind('/');
  for (char c : headerPath.substr(slash == std::string::npos ? 0 : slash + 1))
    guard +=
        std::isalnum(static_cast<unsigned char>(c))
            ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
            : '_';
  // FNV-1a: the same on every host and standard library (std::hash is not).
  uint64_t hash = fnv1aBasis;
  for (auto &fn : module.functions)
    hash = fnv1a(fn.name + '\n', hash);
  return fmt::format("{}_{:016X}", guard, hash);
}

std::string cNameClash(const CheckedModule &module) {
  std::map<std::string, std::string> functions;
  for (auto &fn : module.functions) {
    auto [it, fresh] = functions.emplace(cName(fn.name), fn.name);
    if (!fresh)
      return fmt::format(
          "functions '{}' and '{}' both have the C name 'ein_{}'; rename one\n",
          it->second, fn.name, it->first);
    std::map<std::string, std::string> params;
    for (unsigned id : fn.params) {
      auto [p, freshParam] =
          params.emplace(cName(fn.values[id].name), fn.values[id].name);
      if (!freshParam)
        return fmt::format(
            "parameters '{}' and '{}' of '{}' both have the C name '{}'; "
            "rename one\n",
            p->second, fn.values[id].name, fn.name, p->first);
    }
  }
  return "";
}

namespace {

/// A size literal (an overflow where it does not fit 64 bits).
std::string literal(Int v) {
  // Coefficients of sizes fit in 64 bits (larger ones overflowed at check
  // time); INT64_MIN has no literal, and no size needs it.
  if (v > Int(INT64_MAX) || v < -Int(INT64_MAX))
    return "(ovf = 1, 0)";
  return "INT64_C(" + toString(v) + ")";
}

} // namespace

std::string CSizeWriter::expr(const SizeExpr &e) const {
  if (auto c = e.constantValue())
    return literal(*c);
  std::string sum;
  for (auto &term : e.termList()) {
    std::string product;
    for (auto &f : term.factors) {
      std::string factor =
          f.num ? "ein_div_(" + expr(*f.num) + ", " + expr(*f.den) + ", &ovf)"
                : names.at(f.symbol);
      for (unsigned p = 0; p < f.power; ++p)
        product = product.empty()
                      ? factor
                      : "ein_mul_(" + product + ", " + factor + ", &ovf)";
    }
    std::string value = product.empty() ? literal(term.coefficient)
                        : term.coefficient == 1
                            ? product
                            : "ein_mul_(" + literal(term.coefficient) + ", " +
                                  product + ", &ovf)";
    sum = sum.empty() ? value : "ein_add_(" + sum + ", " + value + ", &ovf)";
  }
  return sum.empty() ? "0" : sum;
}

std::string cEntryPreamble() {
  return R"(#define EIN_OK 0
#define EIN_ERR_SIZE 1    /* sizes that do not fit the types, or a failed entry check */
#define EIN_ERR_STRIDE 2  /* a negative stride, or an output whose elements overlap */
#define EIN_ERR_NULL 3    /* a null data pointer of a non-empty tensor */
#define EIN_ERR_ALIAS 4   /* an output overlapping an input or another output */
#define EIN_ERR_RANK 5    /* a rank other than the compiled one (a variadic's rank is chosen at build time) */
#define EIN_ERR_INDEX 6   /* a take's id outside [0, size), negative included: found while running, so the outputs hold unspecified values */

static inline int64_t ein_add_(int64_t a, int64_t b, int *ovf) {
  int64_t r; if (__builtin_add_overflow(a, b, &r)) *ovf = 1; return r;
}
static inline int64_t ein_mul_(int64_t a, int64_t b, int *ovf) {
  int64_t r; if (__builtin_mul_overflow(a, b, &r)) *ovf = 1; return r;
}
static inline int64_t ein_div_(int64_t a, int64_t b, int *ovf) {
  if (b <= 0 || a < 0) { *ovf = 1; return 0; }
  return a / b;
}
/* The number of elements (0 for an empty tensor). */
static inline int64_t ein_count_(int64_t rank, const int64_t *sizes) {
  int64_t n = 1, i; int ovf = 0;
  for (i = 0; i < rank; ++i) n = ein_mul_(n, sizes[i], &ovf);
  return ovf ? -1 : n;
}
/* Checks the strides of a non-empty tensor: none negative; for an output,
 * no two elements at one address (sorted by stride, each stride exceeds
 * the span of the dims below it). Sets the address range [lo, hi). */
static inline int ein_strides_(int64_t rank, const int64_t *sizes,
    const int64_t *strides, int64_t bytes, const void *data, int output,
    uintptr_t *lo, uintptr_t *hi) {
  int64_t order[64], i, j, span = 0; int ovf = 0;
  if (rank > 64) return EIN_ERR_STRIDE;
  for (i = 0; i < rank; ++i) {
    if (strides[i] < 0) return EIN_ERR_STRIDE;
    span = ein_add_(span, ein_mul_(sizes[i] - 1, strides[i], &ovf), &ovf);
  }
  span = ein_mul_(ein_add_(span, 1, &ovf), bytes, &ovf);
  if (ovf) return EIN_ERR_STRIDE;
  *lo = (uintptr_t)data; *hi = *lo + (uintptr_t)span;
  if (!output) return EIN_OK;
  for (i = 0; i < rank; ++i) order[i] = i;
  for (i = 1; i < rank; ++i)
    for (j = i; j > 0 && strides[order[j]] < strides[order[j - 1]]; --j) {
      int64_t t = order[j]; order[j] = order[j - 1]; order[j - 1] = t;
    }
  span = 0;
  for (i = 0; i < rank; ++i) {
    int64_t d = order[i];
    if (sizes[d] == 1) continue;
    if (strides[d] <= span) return EIN_ERR_STRIDE;
    span = ein_add_(span, ein_mul_(sizes[d] - 1, strides[d], &ovf), &ovf);
    if (ovf) return EIN_ERR_STRIDE;
  }
  return EIN_OK;
}
)";
}

CEntry cEntry(const CheckedFunction &fn, const std::string &extraParams) {
  CEntry entry;
  size_t n = fn.params.size() + fn.returns.size();
  auto idOf = [&](size_t i) {
    return i < fn.params.size() ? fn.params[i]
                                : fn.returns[i - fn.params.size()];
  };
  auto nameOf = [&](size_t i) {
    return i < fn.params.size() ? cName(fn.values[idOf(i)].name)
                                : fmt::format("out{}", i - fn.params.size());
  };
  std::vector<Shape> shapes;
  for (size_t i = 0; i < n; ++i)
    shapes.push_back(fn.ctx.expand(fn.values[idOf(i)].type.shape));
  std::vector<Shape> paramShapes(shapes.begin(),
                                 shapes.begin() + fn.params.size());
  SizeReadPlan plan = planSizeReads(paramShapes, fn.ctx.env);
  for (size_t k = 0; k < plan.reads.size(); ++k)
    entry.sizes.names[plan.reads[k].symbol] = fmt::format("ein_s{}", k);

  std::string fnName = cName(fn.name);
  auto sig = std::back_inserter(entry.signature);
  fmt::format_to(sig, "int ein_{}(", fnName);
  for (size_t i = 0; i < n; ++i) {
    bool isOut = i >= fn.params.size();
    fmt::format_to(sig,
                   "{0}{1}{2} *{3}_data, int64_t {3}_rank, const int64_t "
                   "*{3}_sizes, const int64_t *{3}_strides",
                   i ? ",\n    " : "", isOut ? "" : "const ",
                   cType(fn.values[idOf(i)].type.dtype), nameOf(i));
    entry.tensors.push_back(nameOf(i));
    entry.ranks.push_back(shapes[i].size());
  }
  fmt::format_to(sig, "{})", extraParams);

  auto out = std::back_inserter(entry.checks);
  const CSizeWriter &sizes = entry.sizes;
  size_t slots = std::max<size_t>(n, 1);
  fmt::format_to(out, "  int ovf = 0, rc;\n  uintptr_t lo[{0}], hi[{0}];\n",
                 slots);
  for (size_t k = 0; k < plan.reads.size(); ++k)
    fmt::format_to(out, "  int64_t ein_s{}; /* {} */\n", k,
                   plan.reads[k].symbol);
  // Ranks first: the sizes and strides arrays are only as long as the
  // rank the caller passed, so nothing is read before it matches.
  for (size_t i = 0; i < n; ++i)
    fmt::format_to(out, "  if ({}_rank != {}) return EIN_ERR_RANK;\n",
                   nameOf(i), shapes[i].size());
  // Sizes: negative ones are refused before any arithmetic.
  for (size_t i = 0; i < n; ++i)
    for (size_t d = 0; d < shapes[i].size(); ++d)
      fmt::format_to(out, "  if ({}_sizes[{}] < 0) return EIN_ERR_SIZE;\n",
                     nameOf(i), d);
  // Free names from the parameters' sizes, in the order the compiled code
  // reads them; then every size of every tensor against its type.
  for (size_t k = 0; k < plan.reads.size(); ++k) {
    const SizeRead &r = plan.reads[k];
    fmt::format_to(out,
                   "  ein_s{} = ein_div_(ein_add_({}_sizes[{}], -({}), "
                   "&ovf), INT64_C({}), &ovf);\n",
                   k, nameOf(r.param), r.dim, sizes.expr(r.offset),
                   toString(r.scale));
  }
  for (size_t i = 0; i < n; ++i)
    for (size_t d = 0; d < shapes[i].size(); ++d)
      fmt::format_to(out, "  if ({}_sizes[{}] != {}) return EIN_ERR_SIZE;\n",
                     nameOf(i), d,
                     sizes.expr(shapes[i][d].size.substitute(fn.ctx.env)));
  for (auto &c : fn.ctx.constraints) {
    SizeExpr l = c.lhs.substitute(fn.ctx.env), r = c.rhs.substitute(fn.ctx.env);
    std::string cond;
    switch (c.kind) {
    case Constraint::Kind::Divisible:
      cond = fmt::format("({}) % ({}) != 0", sizes.expr(l), sizes.expr(r));
      fmt::format_to(out, "  if ({} == 0) return EIN_ERR_SIZE;\n",
                     sizes.expr(r));
      break;
    case Constraint::Kind::Equal:
      cond = fmt::format("{} != {}", sizes.expr(l), sizes.expr(r));
      break;
    case Constraint::Kind::NonEmpty:
      cond = fmt::format("{} < 1", sizes.expr(l));
      break;
    case Constraint::Kind::LessEq:
      cond = fmt::format("{} > {}", sizes.expr(l), sizes.expr(r));
      break;
    }
    fmt::format_to(out, "  if ({}) return EIN_ERR_SIZE; /* {} */\n", cond,
                   c.str());
  }
  entry.checks += "  if (ovf) return EIN_ERR_SIZE;\n";
  // Pointers and strides of non-empty tensors; outputs overlap nothing.
  for (size_t i = 0; i < n; ++i) {
    bool isOut = i >= fn.params.size();
    fmt::format_to(
        out,
        "  lo[{0}] = hi[{0}] = 0;\n"
        "  if (ein_count_({1}, {2}_sizes) != 0) {{\n"
        "    if (!{2}_data) return EIN_ERR_NULL;\n"
        "    if ((rc = ein_strides_({1}, {2}_sizes, {2}_strides, {3}, "
        "{2}_data, {4}, &lo[{0}], &hi[{0}])) != EIN_OK) return rc;\n  }}\n",
        i, shapes[i].size(), nameOf(i),
        dtypeBytes(fn.values[idOf(i)].type.dtype), isOut ? 1 : 0);
  }
  if (!fn.returns.empty())
    fmt::format_to(out,
                   "  {{\n    int i, j;\n    for (i = {}; i < {}; ++i)\n"
                   "      for (j = 0; j < {}; ++j)\n"
                   "        if (j != i && lo[i] != hi[i] && lo[j] != hi[j] "
                   "&& lo[i] < hi[j] && lo[j] < hi[i])\n"
                   "          return EIN_ERR_ALIAS;\n  }}\n",
                   fn.params.size(), n, n);
  return entry;
}

} // namespace ein
