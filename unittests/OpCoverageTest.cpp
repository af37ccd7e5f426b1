// Walks every op of the registry (Ops.def) and every elementwise function × the
// cost pass, grad(), the CPU lowering and the CUDA emitter: each handles it or
// refuses it by name.
#include "CheckedSnippet.h"

#include "ein/Compile/Compile.h"
#include "ein/Dialect/EinDialect.h"
#include "ein/MLIRGen/MLIRGen.h"
#include "ein/Sema/Autodiff.h"
#include "ein/Target/CUDA/EmitCUDA.h"
#include "ein/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace ein {
namespace {

/// A sample of one op: a checked function `f` whose ops include it, and a
/// function `g` taking a grad() through it (or why there is none).
struct OpSample {
  const char *forward;
  const char *gradient; // nullptr: `noGradient` says why
  const char *noGradient = "";
};

/// One row per op kind. A kind of Ops.def without a row fails
/// EveryOpHasASample: a new op must say how each target handles it.
const std::map<OpKind, OpSample> &samples() {
  static const std::map<OpKind, OpSample> table = {
      {OpKind::Rearrange,
       {"def f(x: f32[\"a b\"]) -> f32[\"b a\"]:\n"
        "    return rearrange(x, \"a b -> b a\")\n",
        "def g(x: f32[\"a b\"]) -> f32[\"a b\"]:\n"
        "    l = reduce(rearrange(x, \"a b -> b a\") ** 2, \"b a ->\", "
        "\"sum\")\n"
        "    gx = grad(l, wrt=[x])\n"
        "    return gx\n"}},
      {OpKind::Reduce,
       {"def f(x: f32[\"a b\"]) -> f32[\"a\"]:\n"
        "    return reduce(x, \"a b -> a\", \"var\")\n",
        "def g(x: f32[\"a b\"]) -> f32[\"a b\"]:\n"
        "    l = reduce(reduce(x, \"a b -> a\", \"var\"), \"a ->\", \"sum\")\n"
        "    gx = grad(l, wrt=[x])\n"
        "    return gx\n"}},
      {OpKind::Repeat,
       {"def f(x: f32[\"a\"]) -> f32[\"a 3\"]:\n"
        "    return repeat(x, \"a -> a r\", r=3)\n",
        "def g(x: f32[\"a\"]) -> f32[\"a\"]:\n"
        "    l = reduce(repeat(x, \"a -> a r\", r=3) ** 2, \"a r ->\", "
        "\"sum\")\n"
        "    gx = grad(l, wrt=[x])\n"
        "    return gx\n"}},
      {OpKind::Einsum,
       {"def f(x: f32[\"a b\"], y: f32[\"b c\"]) -> f32[\"a c\"]:\n"
        "    return einsum(x, y, \"a b, b c -> a c\")\n",
        "def g(x: f32[\"a b\"], y: f32[\"b c\"]) -> f32[\"a b\"]:\n"
        "    l = reduce(einsum(x, y, \"a b, b c -> a c\"), \"a c ->\", "
        "\"sum\")\n"
        "    gx = grad(l, wrt=[x])\n"
        "    return gx\n"}},
      {OpKind::Pack,
       {"def f(x: f32[\"a b\"], y: f32[\"a\"]) -> f32[\"a _\"]:\n"
        "    p, ps = pack([x, y], \"a *\")\n"
        "    return p\n",
        "def g(x: f32[\"a b\"], y: f32[\"a\"]) -> f32[\"a b\"]:\n"
        "    p, ps = pack([x, y], \"a *\")\n"
        "    l = reduce(p ** 2, \"a c ->\", \"sum\")\n"
        "    gx = grad(l, wrt=[x])\n"
        "    return gx\n"}},
      {OpKind::Unpack,
       {"def f(x: f32[\"a 5\"]) -> f32[\"a 2\"]:\n"
        "    u, v = unpack(x, [[2], [3]], \"a *\")\n"
        "    return u\n",
        "def g(x: f32[\"a 5\"]) -> f32[\"a 5\"]:\n"
        "    u, v = unpack(x, [[2], [3]], \"a *\")\n"
        "    l = reduce(u ** 2, \"a c ->\", \"sum\")\n"
        "    gx = grad(l, wrt=[x])\n"
        "    return gx\n"}},
      {OpKind::Elementwise,
       {"def f(x: f32[\"a\"], y: f32[\"a\"]) -> f32[\"a\"]:\n"
        "    return x * y\n",
        "def g(x: f32[\"a\"], y: f32[\"a\"]) -> f32[\"a\"]:\n"
        "    l = reduce(x * y, \"a ->\", \"sum\")\n"
        "    gx = grad(l, wrt=[x])\n"
        "    return gx\n"}},
      {OpKind::Cast,
       {"def f(x: f32[\"a\"]) -> f64[\"a\"]:\n"
        "    return astype(x, f64)\n",
        "def g(x: f32[\"a\"]) -> f32[\"a\"]:\n"
        "    l = reduce(astype(x, f64) ** 2, \"a ->\", \"sum\")\n"
        "    gx = grad(l, wrt=[x])\n"
        "    return gx\n"}},
      {OpKind::Constant,
       {"def f(x: f32[\"a\"]) -> f32[\"a\"]:\n"
        "    return x * 2.5\n",
        nullptr, "a constant has no operand to differentiate"}},
      {OpKind::Size,
       {"def f(x: f32[\"n\"]) -> f32[\"n\"]:\n"
        "    return x / n\n",
        nullptr, "a size read at run time has no operand to differentiate"}},
      {OpKind::Arange,
       {"def f(x: f32[\"n\"]) -> f32[\"n\"]:\n"
        "    return x + arange(n, dtype=f32)\n",
        nullptr, "arange has no operand to differentiate"}},
      {OpKind::Take,
       {"def f(t: f32[\"v d\"], ids: i32[\"s\"]) -> f32[\"s d\"]:\n"
        "    return take(t, ids, \"v\")\n",
        "def g(t: f32[\"v d\"], ids: i32[\"s\"]) -> f32[\"v d\"]:\n"
        "    l = reduce(take(t, ids, \"v\") ** 2, \"s d ->\", \"sum\")\n"
        "    gt = grad(l, wrt=[t])\n"
        "    return gt\n"}},
      {OpKind::Slice,
       {"dim n = 6\n"
        "def f(x: f32[\"a n\"]) -> f32[\"a 3\"]:\n"
        "    return slice(x, \"n\", 1, 4)\n",
        "dim n = 6\n"
        "def g(x: f32[\"a n\"]) -> f32[\"a n\"]:\n"
        "    l = reduce(slice(x, \"n\", 1, 4) ** 2, \"a c ->\", \"sum\")\n"
        "    gx = grad(l, wrt=[x])\n"
        "    return gx\n"}},
      {OpKind::TakeAlong,
       {"def f(x: f32[\"s v\"], ids: i64[\"s\"]) -> f32[\"s\"]:\n"
        "    return take_along(x, ids, \"v\")\n",
        "def g(x: f32[\"s v\"], ids: i64[\"s\"]) -> f32[\"s v\"]:\n"
        "    l = reduce(take_along(x, ids, \"v\") ** 2, \"s ->\", \"sum\")\n"
        "    gx = grad(l, wrt=[x])\n"
        "    return gx\n"}},
      {OpKind::Dropout,
       {"def f(x: f32[\"s v\"], key: i64[\"\"]) -> f32[\"s v\"]:\n"
        "    return dropout(x, 0.1, key)\n",
        "def g(x: f32[\"s v\"], key: i64[\"\"]) -> f32[\"s v\"]:\n"
        "    l = reduce(dropout(x, 0.1, key) ** 2, \"s v ->\", \"sum\")\n"
        "    gx = grad(l, wrt=[x])\n"
        "    return gx\n"}},
      // No surface syntax: grad() of take emits it, so the forward sample
      // is a gradient of take.
      {OpKind::ScatterAdd,
       {"def f(t: f32[\"v d\"], ids: i32[\"s\"]) -> f32[\"v d\"]:\n"
        "    l = reduce(take(t, ids, \"v\"), \"s d ->\", \"sum\")\n"
        "    gt = grad(l, wrt=[t])\n"
        "    return gt\n",
        nullptr, "take's adjoint: only grad() emits it, never differentiated"}},
  };
  return table;
}

std::vector<OpKind> registryKinds() {
  return {
#define EIN_OP(Kind, Name, OpClass) OpKind::Kind,
#include "ein/Sema/Ops.def"
  };
}

/// The IR name of each kind (`ein.cast` for astype), for refusals that name
/// the op as the IR does.
std::string irName(OpKind kind) {
  switch (kind) {
#define EIN_OP(Kind, Name, OpClass)                                            \
  case OpKind::Kind:                                                           \
    return OpClass::getOperationName().str();
#include "ein/Sema/Ops.def"
  }
  return "";
}

/// True when `message` names the op (its source or IR name).
bool namesOp(const std::string &message, OpKind kind) {
  return message.find(opKindName(kind)) != std::string::npos ||
         message.find(irName(kind)) != std::string::npos;
}

std::string errorText(const Error &e) { return e.str("einc"); }

TEST(OpCoverage, EveryOpHasASample) {
  EXPECT_EQ(registryKinds().size(), kNumOpKinds);
  for (OpKind kind : registryKinds())
    EXPECT_TRUE(samples().count(kind))
        << "op '" << opKindName(kind)
        << "' has no row in OpCoverageTest's samples(): add one";
}

class OpCoverage : public ::testing::TestWithParam<OpKind> {};

TEST_P(OpCoverage, CostGradientAndLoweringOnEveryTarget) {
  OpKind kind = GetParam();
  auto row = samples().find(kind);
  ASSERT_NE(row, samples().end()) << opKindName(kind);
  auto c = test::checkSnippet(row->second.forward);
  ASSERT_EQ(c->firstError(), "") << opKindName(kind);
  const CheckedFunction &fn = c->result.functions.front();
  bool has = false;
  for (const CheckedOp &op : fn.ops)
    has = has || op.kind == kind;
  ASSERT_TRUE(has) << "the sample of '" << opKindName(kind)
                   << "' has no such op";

  // Cost: ein-annotate-costs gives every ein op a cost, this one included.
  {
    mlir::MLIRContext context;
    registerEinDialects(context);
    auto module = buildVerifiedEinModule(context, c->result);
    ASSERT_TRUE(module) << errorText(module.error());
    mlir::PassManager pm(&context);
    pm.addPass(createAnnotateCosts());
    ASSERT_TRUE(mlir::succeeded(pm.run(**module))) << opKindName(kind);
    bool costed = false;
    (*module)->walk([&](CostOpInterface op) {
      EXPECT_TRUE(op->hasAttr("ein.cost")) << irName(op.getOpKind());
      costed = costed || op.getOpKind() == kind;
    });
    EXPECT_TRUE(costed) << opKindName(kind);
  }

  // CPU: ein-to-linalg lowers it, or refuses it naming the op.
  std::ostringstream linalg;
  auto cpu = emitIR(c->result, IRStage::Linalg, linalg);
  if (!cpu) {
    EXPECT_TRUE(namesOp(errorText(cpu.error()), kind))
        << "CPU: " << errorText(cpu.error());
  }

  // CUDA: the emitter emits it, or refuses it naming the op.
  auto cuda = emitCUDA(c->result);
  if (!cuda) {
    EXPECT_TRUE(namesOp(errorText(cuda.error()), kind))
        << "CUDA: " << errorText(cuda.error());
  }

  // Gradient: grad() through it checks, or is refused naming the op; a row
  // without a gradient sample says why.
  if (!row->second.gradient) {
    EXPECT_STRNE(row->second.noGradient, "") << opKindName(kind);
    return;
  }
  auto g = test::checkSnippet(row->second.gradient);
  std::string error = g->firstError();
  if (!error.empty()) {
    EXPECT_TRUE(namesOp(error, kind)) << "grad: " << error;
    return;
  }
  // The backward compiles on both targets too.
  std::ostringstream gradLinalg;
  auto gcpu = emitIR(g->result, IRStage::Linalg, gradLinalg);
  EXPECT_TRUE(gcpu) << (gcpu ? "" : errorText(gcpu.error()));
  auto gcuda = emitCUDA(g->result);
  EXPECT_TRUE(gcuda) << (gcuda ? "" : errorText(gcuda.error()));
}

INSTANTIATE_TEST_SUITE_P(
    Registry, OpCoverage, ::testing::ValuesIn(registryKinds()),
    [](const auto &info) {
      std::string name = opKindName(info.param);
      name.erase(std::remove(name.begin(), name.end(), '_'), name.end());
      return name;
    });

/// A call of `info` on f32 (or bool) tensors x, y, z of shape "a".
std::string callOf(const ElementwiseInfo &info) {
  std::vector<std::string> args = {"x", "y", "z"};
  args.resize(info.arity);
  if (info.firstIsCondition)
    args[0] = "c";
  if (!info.symbol.empty() && info.arity == 2)
    return args[0] + " " + std::string(info.symbol) + " " + args[1];
  if (!info.symbol.empty() && info.arity == 1)
    return std::string(info.symbol) + args[0];
  std::string call = std::string(info.name) + "(";
  for (size_t i = 0; i < args.size(); ++i)
    call += (i ? ", " : "") + args[i];
  return call + ")";
}

class ElementwiseCoverage : public ::testing::TestWithParam<ElementwiseInfo> {};

// Every function of the table: costed (its FLOPs), lowered on both targets,
// and differentiated as its gradient column says: a Rule or Zero row gives a
// gradient that compiles, a NotDifferentiable row is never asked.
TEST_P(ElementwiseCoverage, CostGradientAndLowering) {
  const ElementwiseInfo &info = GetParam();
  std::string t = info.operands == DTypeSet::Bool ? "bool" : "f32";
  std::string params = "x: " + t + "[\"a\"], y: " + t + "[\"a\"], z: " + t +
                       "[\"a\"], c: bool[\"a\"]";
  std::string result = info.boolResult || t == "bool" ? "bool" : "f32";
  std::string forward = "def f(" + params + ") -> " + result +
                        "[\"a\"]:\n    return " + callOf(info) + "\n";
  auto c = test::checkSnippet(forward);
  ASSERT_EQ(c->firstError(), "") << forward;
  EXPECT_GT(info.flops, 0u) << info.name;
  std::ostringstream linalg;
  auto cpu = emitIR(c->result, IRStage::Linalg, linalg);
  EXPECT_TRUE(cpu) << (cpu ? "" : errorText(cpu.error()));
  auto cuda = emitCUDA(c->result);
  EXPECT_TRUE(cuda) << (cuda ? "" : errorText(cuda.error()));

  switch (info.gradientRule) {
  case GradientRule::NotDifferentiable:
    EXPECT_NE(info.gradient, "") << info.name << ": say why";
    EXPECT_TRUE(result == "bool") << info.name << " has a float result";
    return;
  case GradientRule::Rule:
  case GradientRule::Zero:
    break;
  }
  std::string grad = "def g(" + params + ") -> f32[\"a\"]:\n    l = reduce(" +
                     callOf(info) +
                     ", \"a ->\", \"sum\")\n    gx = grad(l, wrt=[x])\n"
                     "    return gx\n";
  auto g = test::checkSnippet(grad);
  ASSERT_EQ(g->firstError(), "") << grad;
  auto gcpu = emitIR(g->result, IRStage::Linalg, linalg);
  EXPECT_TRUE(gcpu) << (gcpu ? "" : errorText(gcpu.error()));
}

INSTANTIATE_TEST_SUITE_P(
    Table, ElementwiseCoverage, ::testing::ValuesIn(elementwiseTable()),
    [](const auto &info) {
      std::string name(info.param.name);
      name.erase(std::remove(name.begin(), name.end(), '_'), name.end());
      return name;
    });

} // namespace
} // namespace ein
