// The checker's readers of pattern operations' arguments (rearrange, reduce,
// repeat, einsum, pack, unpack): the pattern, acc= and keyword sizes, and
// the reports of the builder's refusals. Each op's call is checked in its
// family file (lib/Sema/Ops).
#include "FunctionChecker.h"
#include "ein/Sema/Suggestions.h"

namespace ein::sema {

const Expr *FunctionChecker::patternArg(const Expr &e, size_t index,
                                        const char *what) {
  if (e.args.size() <= index || e.args[index]->kind != Expr::Kind::String) {
    const Expr *at = e.args.size() > index ? e.args[index].get() : &e;
    diags.error(at->loc, e.text + " expects " + what, at->length);
    return nullptr;
  }
  return e.args[index].get();
}

std::optional<Pattern> FunctionChecker::parsePatternAt(const Expr &str,
                                                       PatternUse use) {
  auto p = parsePattern(str.text, use);
  if (!p) {
    diags.error(str.loc.advanced(1 + p.error().offset), p.error().message,
                p.error().length);
    return std::nullopt;
  }
  return *p;
}

std::optional<FunctionChecker::AccArg> FunctionChecker::accArg(const Expr &e,
                                                               OpKind kind) {
  AccArg acc;
  for (auto &k : e.keywords) {
    if (k.name != "acc")
      continue;
    if (kind != OpKind::Einsum && kind != OpKind::Reduce) {
      diags.error(k.loc,
                  "acc= only applies to einsum and reduce (it sets the "
                  "accumulation and result dtype)",
                  3);
      return std::nullopt;
    }
    std::optional<DType> dtype;
    if (k.value->kind == Expr::Kind::Name)
      dtype = parseDType(k.value->text);
    if (!dtype) {
      diags.error(k.value->loc,
                  "acc= expects a dtype (" + std::string(kDTypeList) + ")",
                  k.value->length);
      return std::nullopt;
    }
    acc = AccArg{dtype, k.value.get()};
  }
  return acc;
}

void FunctionChecker::reportBuild(const BuildError &error, const Expr &call,
                                  const Expr *patternExpr, const AccArg &acc,
                                  const Expr *reduction) {
  const Expr *at = nullptr;
  switch (error.rule) {
  case BuildError::Rule::AccDType:
    at = acc.at;
    break;
  case BuildError::Rule::OperandDType:
    at = reduction;
    break;
  case BuildError::Rule::Shape:
    break;
  }
  if (at)
    diags.error(at->loc, error.error.message, at->length);
  else
    report(error.error, call, patternExpr);
}

std::optional<std::vector<SizeArg>> FunctionChecker::sizeArgs(const Expr &e) {
  std::vector<SizeArg> sizes;
  for (auto &k : e.keywords) {
    if (k.name == "acc")
      continue;
    auto s = sizeOf(*k.value);
    if (!s)
      return std::nullopt;
    sizes.push_back({k.name, *s});
  }
  return sizes;
}

void FunctionChecker::noteSpacedPattern(const BuildError &error,
                                        const Expr &patExpr) {
  if (!error.spaced.empty())
    diags.note(patExpr.loc, spacedPatternNote(error.spaced), patExpr.length);
}

} // namespace ein::sema
