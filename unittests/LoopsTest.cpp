// Loops over layers: the parser's `for` statement and `w[l]`, and the
// checker's unrolling (lib/Sema/CheckLoops.cpp): call sites per iteration,
// one unpack per stacked tensor, carried values, the symbolic pass, and the
// errors (table-driven).
#include "ein/Syntax/AST.h"

#include "CheckedSnippet.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace ein;

namespace {

std::unique_ptr<test::CheckedSnippet> check(const std::string &source,
                                            CheckOptions options = {}) {
  return test::checkSnippet(source, options);
}

CheckOptions withLayers(int64_t n) {
  CheckOptions o;
  o.dimOverrides["layers"] = Int(n);
  return o;
}

size_t countOps(const CheckedFunction &fn, OpKind kind) {
  return static_cast<size_t>(
      std::count_if(fn.ops.begin(), fn.ops.end(),
                    [&](const CheckedOp &op) { return op.kind == kind; }));
}

const char *kResidual = R"ein(
def f(w: f32["layers d d"], g: f32["layers d"], x: f32["b d"]) -> f32["b d"]:
    for l in range(layers):
        h = einsum(x, w[l], "b d, d e -> b e")
        x = x + h * g[l]
    return x
)ein";

TEST(LoopParser, ForStatementAndIndex) {
  SourceFile file{"t.ein", kResidual};
  DiagnosticEngine diags(file);
  Module m = parseModule(file, diags);
  ASSERT_FALSE(diags.hadError());
  const Stmt &loop = m.functions.at(0).body.at(0);
  ASSERT_EQ(loop.kind, Stmt::Kind::For);
  EXPECT_EQ(loop.targets.at(0).first, "l");
  EXPECT_EQ(exprToString(*loop.values.at(0)), "range(layers)");
  ASSERT_EQ(loop.body.size(), 2u);
  const Expr &einsum = *loop.body[0].values.at(0);
  const Expr &index = *einsum.args.at(1);
  EXPECT_EQ(index.kind, Expr::Kind::Index);
  EXPECT_EQ(exprToString(index), "w[l]");
  EXPECT_EQ(index.loc.col, 24u); // the '['
  EXPECT_EQ(m.functions[0].body.at(1).kind, Stmt::Kind::Return);
}

TEST(LoopParser, ForIsStillANameWhenAssigned) {
  auto c = check("def f(x: f32[\"n\"]) -> f32[\"n\"]:\n    for = x * 2\n"
                 "    return for\n");
  EXPECT_EQ(c->firstError(), "");
}

TEST(Loops, UnrolledWithOneCallSitePerIteration) {
  auto c = check(kResidual, withLayers(3));
  ASSERT_EQ(c->firstError(), "");
  const CheckedFunction &fn = c->result.functions.at(0);
  ASSERT_EQ(fn.callSites.size(), 3u);
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(fn.callSites[i].callee, "for l in range(layers)");
    EXPECT_EQ(fn.callSites[i].iteration, i);
    EXPECT_EQ(fn.callSites[i].parent, -1);
  }
  // One unpack per stacked tensor, of the loop (no call site); 3 einsums,
  // muls and adds, one per iteration.
  EXPECT_EQ(countOps(fn, OpKind::Unpack), 2u);
  EXPECT_EQ(countOps(fn, OpKind::Einsum), 3u);
  for (const CheckedOp &op : fn.ops) {
    if (op.kind == OpKind::Unpack)
      EXPECT_EQ(op.callSite, -1);
    else
      EXPECT_GE(op.callSite, 0);
  }
  const CheckedOp &unpack = fn.ops.front();
  ASSERT_EQ(unpack.kind, OpKind::Unpack);
  EXPECT_EQ(unpack.results.size(), 3u);
  EXPECT_EQ(fn.values[unpack.results[2]].name, "w[2]");
  EXPECT_EQ(shapeStr(fn.values[unpack.results[2]].type.shape), "d d");
  // The returned x is the last iteration's.
  const CheckedOp &last = fn.ops.back();
  EXPECT_EQ(last.results.at(0), fn.returns.at(0));
  EXPECT_EQ(last.callSite, 2);
}

TEST(Loops, EmptyLoopLeavesCarriedValues) {
  auto c = check(kResidual, withLayers(0));
  ASSERT_EQ(c->firstError(), "");
  const CheckedFunction &fn = c->result.functions.at(0);
  EXPECT_TRUE(fn.ops.empty());
  EXPECT_EQ(fn.returns.at(0), fn.params.at(2));
}

TEST(Loops, UnknownCountIsSymbolicOnlyWhenAllowed) {
  auto refused = check(kResidual);
  EXPECT_NE(refused->firstError().find(
                "3:5: 'for l in range(layers)' is unrolled when it is "
                "compiled, so the size 'layers' must be known then: give it "
                "with --dim layers=N"),
            std::string::npos)
      << refused->firstError();
  CheckOptions symbolic;
  symbolic.loopsMayStaySymbolic = true;
  auto kept = check(kResidual, symbolic);
  ASSERT_EQ(kept->firstError(), "");
  const CheckedFunction &fn = kept->result.functions.at(0);
  ASSERT_EQ(fn.symbolicLoops.size(), 1u);
  EXPECT_EQ(fn.symbolicLoops[0].first.line, 3u);
  EXPECT_TRUE(fn.ops.empty()); // what the symbolic pass built is dropped
  EXPECT_TRUE(fn.callSites.empty());
}

TEST(Loops, NestedCallsAndLoopsNameTheirIteration) {
  CheckOptions sizes = withLayers(2);
  sizes.dimOverrides["k"] = 3;
  auto c = check(R"ein(
def step(x: f32["d"], w: f32["d"]) -> f32["d"]:
    return x * w
def f(w: f32["layers k d"], x: f32["d"]) -> f32["d"]:
    for l in range(layers):
        wl = w[l]
        for m in range(k):
            x = step(x, wl[m])
    return x
)ein",
                 sizes);
  ASSERT_EQ(c->firstError(), "");
  const CheckedFunction &fn = *c->result.find("f");
  // Per outer iteration: its site, then per inner iteration its site and
  // the call of step inside it.
  ASSERT_EQ(fn.callSites.size(), 2u * (1 + 3 * 2));
  int outer = 0;
  for (int l = 0; l < 2; ++l) {
    const CallSite &o = fn.callSites[outer];
    EXPECT_EQ(o.callee, "for l in range(layers)");
    EXPECT_EQ(o.iteration, l);
    EXPECT_EQ(o.parent, -1);
    for (int m = 0; m < 3; ++m) {
      const CallSite &inner = fn.callSites[outer + 1 + 2 * m];
      const CallSite &call = fn.callSites[outer + 2 + 2 * m];
      EXPECT_EQ(inner.callee, "for m in range(k)");
      EXPECT_EQ(inner.iteration, m);
      EXPECT_EQ(inner.parent, outer);
      EXPECT_EQ(call.callee, "step");
      EXPECT_EQ(call.parent, outer + 1 + 2 * m);
    }
    outer += 7;
  }
  // w is split once; each wl once, in its outer iteration.
  EXPECT_EQ(countOps(fn, OpKind::Unpack), 3u);
  EXPECT_EQ(countOps(fn, OpKind::Elementwise), 6u);
}

struct LoopError {
  const char *name;
  const char *source;
  const char *error; // "line:col: message" (a prefix)
};

class LoopErrors : public ::testing::TestWithParam<LoopError> {};

TEST_P(LoopErrors, ReportedAtTheirPlace) {
  bool hasLayers =
      std::string(GetParam().source).find("layers") != std::string::npos;
  auto c = check(GetParam().source, hasLayers ? withLayers(2) : CheckOptions{});
  EXPECT_EQ(c->firstError().rfind(GetParam().error, 0), 0u) << c->firstError();
}

INSTANTIATE_TEST_SUITE_P(
    Loops, LoopErrors,
    ::testing::Values(
        LoopError{"over_a_tensor",
                  "def f(x: f32[\"n\"]) -> f32[\"n\"]:\n    for v in x:\n"
                  "        x = x + v\n    return x\n",
                  "2:14: a for loop runs over range(N)"},
        LoopError{"negative",
                  "def f(x: f32[\"n\"]) -> f32[\"n\"]:\n    for l in "
                  "range(2 - 3):\n        x = x * 2\n    return x\n",
                  "2:22: the loop runs range(2 - 3) times, a negative "
                  "number (-1)"},
        LoopError{"index_outside",
                  "def f(w: f32[\"layers d\"]) -> f32[\"d\"]:\n    return "
                  "w[0]\n",
                  "2:13: a tensor is indexed only inside a for loop"},
        LoopError{"carried_dtype",
                  "def f(w: f32[\"layers d\"], x: f32[\"d\"]) -> f32[\"d\"]:\n"
                  "    for l in range(layers):\n        x = astype(x + w[l], "
                  "f16)\n    return x\n",
                  "3:9: 'x' is carried through the loop 'for l in "
                  "range(layers)' (it is bound before it), so it keeps its "
                  "type: it is f32[\"d\"] before the loop but f16[\"d\"] here"},
        LoopError{"carried_becomes_number",
                  "def f(w: f32[\"layers d\"], x: f32[\"d\"]) -> f32[\"d\"]:\n"
                  "    for l in range(layers):\n        x = 2.0 * layers\n"
                  "    return x\n",
                  "3:9: 'x' is carried through the loop"},
        LoopError{"loop_variable_is_a_dim",
                  "def f(w: f32[\"layers d\"], x: f32[\"d\"]) -> f32[\"d\"]:\n"
                  "    for d in range(layers):\n        x = x + w[d]\n"
                  "    return x\n",
                  "2:9: the loop variable 'd' already names a dim"},
        LoopError{"nested_too_large",
                  "def f(x: f32[\"n\"]) -> f32[\"n\"]:\n    for a in "
                  "range(1000):\n        for b in range(1000):\n"
                  "            x = x\n    return x\n",
                  "3:9: unrolling 'for b in range(1000)' makes 'f' larger "
                  "than 100000 operations or calls"},
        LoopError{"loop_variable_assigned",
                  "def f(w: f32[\"layers d\"], x: f32[\"d\"]) -> f32[\"d\"]:\n"
                  "    for l in range(layers):\n        l = x + w[l]\n"
                  "    return x\n",
                  "3:9: 'l' already names a value computed from sizes"}),
    [](const ::testing::TestParamInfo<LoopError> &info) {
      return std::string(info.param.name);
    });

} // namespace
