// grad()'s first step on an einsum of three or more operands: the forward op
// becomes the chain of pairwise einsums it executes (the contraction order of
// lib/Shape/ContractionOrder.cpp, built as ein-split-einsums builds it), so
// that the backward is a chain of two-operand gradients that reuses the
// forward's intermediates and computes each shared intermediate's gradient
// once (docs/autodiff.md, "Contractions of three or more operands").
#include "SplitContractions.h"

#include "ein/Sema/ProgramBuilder.h"
#include "ein/Shape/ContractionOrder.h"
#include "ein/Syntax/Pattern.h"

#include <algorithm>
#include <set>

namespace ein {

namespace {

bool isEllipsisAxis(const std::string &axis) {
  return axis.rfind("...", 0) == 0;
}

/// The accumulator rule of the einsum lowering (EinToLinalg/Contractions.cpp,
/// mirrored by ein-split-einsums): floats narrower than 32 bits accumulate in
/// f32.
bool isLowPrecisionFloat(DType t) { return isFloat(t) && dtypeBytes(t) < 4; }

/// One live operand of the chain: an operand of the einsum or the product of
/// a step.
struct Term {
  unsigned value;
  std::string side;              // its side of a step's pattern
  std::vector<std::string> axes; // elementary axes, as EinsumInfo names them
  bool original;
  bool hasEllipsis; // some operand it comes from has `...`
};

/// The pattern side of a product holding `axes`: the named axes in order and
/// one `...` for the ellipsis dims (where the first of them is, else first),
/// as ein-split-einsums writes it.
std::string productSide(const std::vector<std::string> &axes,
                        bool hasEllipsis) {
  std::vector<std::string> parts;
  bool dots = false;
  for (auto &a : axes) {
    if (!isEllipsisAxis(a))
      parts.push_back(a);
    else if (!dots)
      parts.push_back("...");
    dots |= isEllipsisAxis(a);
  }
  if (hasEllipsis && !dots)
    parts.insert(parts.begin(), "...");
  std::string side;
  for (auto &p : parts)
    side += (side.empty() ? "" : " ") + p;
  return side;
}

/// Builds the chain at the end of `fn.ops`; its last value, or none when a
/// step does not build.
std::optional<unsigned> buildChain(ProgramBuilder &b, const CheckedOp &op,
                                   const Bindings &env) {
  const EinsumInfo &info = *op.einsum;
  const Pattern &pattern = op.parsed;
  CheckedFunction &fn = b.function();
  DType resultType = fn.values[op.results[0]].type.dtype;
  DType acc = op.acc                            ? *op.acc
              : isLowPrecisionFloat(resultType) ? DType::F32
                                                : resultType;
  DType operandType = fn.values[op.operands[0]].type.dtype;
  // Every step names the accumulator unless it is the operands' type and
  // was not asked for (then no step needs it).
  std::optional<DType> stepAcc;
  if (op.acc || acc != operandType)
    stepAcc = acc;
  std::vector<Term> live;
  for (size_t k = 0; k < op.operands.size(); ++k)
    live.push_back(Term{op.operands[k], pattern.inputs[k].str(),
                        info.operandAxes[k], true,
                        pattern.inputs[k].hasEllipsis()});
  std::vector<ContractionStep> order = contractionOrder(info, env);
  for (const ContractionStep &at : order) {
    unsigned i = at[0], j = at.back(); // j == i: one operand
    // The axes of the step's operands, in order, that the output or another
    // live operand still needs.
    std::set<std::string> needed(info.outputAxes.begin(),
                                 info.outputAxes.end());
    for (size_t k = 0; k < live.size(); ++k)
      if (k != i && k != j)
        needed.insert(live[k].axes.begin(), live[k].axes.end());
    std::vector<std::string> keep;
    bool hasEllipsis = false, withProduct = false;
    std::string in;
    for (unsigned k : at) {
      for (auto &a : live[k].axes)
        if (needed.count(a) &&
            std::find(keep.begin(), keep.end(), a) == keep.end())
          keep.push_back(a);
      hasEllipsis |= live[k].hasEllipsis;
      withProduct |= !live[k].original;
      in += (k == at[0] ? "" : ", ") + live[k].side; // a scalar's is ""
    }
    bool last = live.size() == at.size();
    std::string out =
        last ? pattern.output.str() : productSide(keep, hasEllipsis);
    auto stepPattern = parsePattern(in + " -> " + out, PatternUse::Einsum);
    if (!stepPattern)
      return std::nullopt;
    // An operand of the einsum that meets a product (in `acc`) is cast to it
    // first: the conversion the einsum applies to each of its elements.
    std::vector<unsigned> operands;
    for (unsigned k : at) {
      unsigned v = live[k].value;
      if (withProduct && fn.values[v].type.dtype != acc)
        v = b.cast(v, acc);
      operands.push_back(v);
    }
    std::set<std::string> named; // the sizes of the axes this step names
    for (auto &side : stepPattern->inputs)
      for (auto *a : side.namedAxes())
        named.insert(a->name);
    for (auto *a : stepPattern->output.namedAxes())
      named.insert(a->name);
    std::vector<SizeArg> sizes;
    for (auto &s : op.sizes)
      if (named.count(s.name))
        sizes.push_back(s);
    auto product = b.einsum(operands, *stepPattern, sizes, stepAcc);
    if (!product)
      return std::nullopt;
    live = afterContracting(live, i, j,
                            Term{*product, productSide(keep, hasEllipsis), keep,
                                 false, hasEllipsis});
  }
  if (live.size() != 1)
    return std::nullopt;
  unsigned result = live[0].value;
  if (fn.values[result].type.dtype != resultType)
    result = b.cast(result, resultType);
  return result;
}

} // namespace

size_t splitContraction(CheckedFunction &fn, size_t index) {
  const CheckedOp op = fn.ops[index]; // a copy: fn.ops grows below
  if (op.kind != OpKind::Einsum || op.operands.size() < 3 || !op.einsum ||
      op.results.size() != 1)
    return 1;
  size_t opsBefore = fn.ops.size(), valuesBefore = fn.values.size();
  ProgramBuilder b(fn);
  b.setOrigin(BuildOrigin{op.loc, op.callSite, op.phase, op.gradOf});
  std::optional<unsigned> last = buildChain(b, op, fn.ctx.env);
  // The chain's last value is the einsum's own: its op writes the einsum's
  // result, typed as written.
  bool ok = last && *last + 1 == fn.values.size() &&
            fn.ops.size() > opsBefore &&
            fn.ops.back().results == std::vector<unsigned>{*last} &&
            fn.values[*last].type.dtype == fn.values[op.results[0]].type.dtype;
  if (!ok) {
    // A step that did not build (a pattern ein-split-einsums would leave
    // whole too): the einsum stays as written, with its n-ary gradient.
    fn.ops.resize(opsBefore);
    fn.values.resize(valuesBefore);
    return 1;
  }
  std::vector<CheckedOp> chain(fn.ops.begin() + opsBefore, fn.ops.end());
  fn.ops.resize(opsBefore);
  fn.values.pop_back();
  chain.back().results = op.results;
  if (chain.back().einsum)
    chain.back().einsum->result = fn.values[op.results[0]].type.shape;
  fn.ops.erase(fn.ops.begin() + index);
  fn.ops.insert(fn.ops.begin() + index, chain.begin(), chain.end());
  return chain.size();
}

} // namespace ein
