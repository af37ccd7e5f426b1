// grad()'s first step on an einsum of three or more operands: the forward op
// becomes the chain of pairwise einsums it executes (the contraction order of
// lib/Shape/ContractionOrder.cpp, built as ein-split-einsums builds it), so
// that the backward is a chain of two-operand gradients that reuses the
// forward's intermediates and computes each shared intermediate's gradient
// once (docs/autodiff.md, "Contractions of three or more operands").
#include "SplitContractions.h"

#include "ein/Sema/ProgramBuilder.h"
#include "ein/Shape/ContractionOrder.h"

namespace ein {

namespace {

/// The accumulator rule of the einsum lowering (EinToLinalg/Contractions.cpp,
/// mirrored by ein-split-einsums): floats narrower than 32 bits accumulate in
/// f32.
bool isLowPrecisionFloat(DType t) { return isFloat(t) && dtypeBytes(t) < 4; }

/// Builds the chain (pairwiseChain) at the end of `fn.ops`; its last value,
/// or none when a step does not build.
std::optional<unsigned> buildChain(ProgramBuilder &b, const CheckedOp &op,
                                   const Bindings &env) {
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
  auto chain = pairwiseChain(*op.einsum, op.parsed, op.sizes, env);
  if (!chain)
    return std::nullopt;
  std::vector<unsigned> live(op.operands.begin(), op.operands.end());
  for (const PairwiseStep &step : *chain) {
    // An operand of the einsum that meets a product (in `acc`) is cast to it
    // first: the conversion the einsum applies to each of its elements.
    std::vector<unsigned> operands;
    for (unsigned k : step.at) {
      unsigned v = live[k];
      if (step.withProduct && fn.values[v].type.dtype != acc)
        v = b.cast(v, acc);
      operands.push_back(v);
    }
    auto product = b.einsum(operands, step.pattern, step.sizes, stepAcc);
    if (!product)
      return std::nullopt;
    live = afterContracting(live, step.at[0], step.at.back(), *product);
  }
  if (live.size() != 1)
    return std::nullopt;
  unsigned result = live[0];
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
