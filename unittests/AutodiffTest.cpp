// grad(): the backward ops the checker appends (lib/Sema/Autodiff.cpp), their
// phases, the saved activations, the refusals; the optimizer table and the
// liveness peak of a training step (lib/Analysis/Training.cpp).
#include "ein/Sema/Autodiff.h"
#include "ein/Analysis/Training.h"
#include "ein/Sema/Checker.h"
#include "ein/Syntax/Parser.h"

#include "CheckedSnippet.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

using namespace ein;

namespace {

using Checked = test::CheckedSnippet;

std::unique_ptr<Checked> check(const std::string &source,
                               CheckOptions options = {}) {
  return test::checkSnippet<Checked>(source, options);
}

const char *kMLP = R"ein(
def loss(x: f32["b d"], w1: f32["d h"], w2: f32["h k"], y: f32["b k"]) -> f32[""]:
    a = relu(einsum(x, w1, "b d, d h -> b h"))
    p = einsum(a, w2, "b h, h k -> b k")
    return reduce((p - y) ** 2, "b k ->", "mean")

def step(x: f32["b d"], w1: f32["d h"], w2: f32["h k"], y: f32["b k"]) -> (f32[""], f32["d h"], f32["h k"]):
    l = loss(x, w1, w2, y)
    dw1, dw2 = grad(l, wrt=[w1, w2])
    return l, dw1, dw2
)ein";

unsigned paramNamed(const CheckedFunction &fn, const std::string &name) {
  for (unsigned p : fn.params)
    if (fn.values[p].name == name)
      return p;
  ADD_FAILURE() << "no parameter " << name;
  return 0;
}

TEST(Autodiff, EinsumGradientsAreEinsumsByPhase) {
  auto c = check(kMLP);
  ASSERT_EQ(c->firstError(), "");
  const CheckedFunction &fn = *c->result.find("step");
  unsigned x = paramNamed(fn, "x"), w1 = paramNamed(fn, "w1"),
           w2 = paramNamed(fn, "w2");
  std::vector<std::string> einsums;
  for (const CheckedOp &op : fn.ops)
    if (op.kind == OpKind::Einsum && op.phase != GradPhase::Forward)
      einsums.push_back(std::string(gradPhaseName(op.phase)) + " " +
                        op.pattern);
  // dw2 = a^T dp (weight), da = dp w2^T (data), dw1 = x^T da (weight); x is
  // not differentiated for, so no einsum computes its gradient.
  EXPECT_EQ(einsums, (std::vector<std::string>{"data-grad b k, h k -> b h",
                                               "weight-grad b k, b h -> h k",
                                               "weight-grad b h, b d -> d h"}));
  for (const CheckedOp &op : fn.ops)
    EXPECT_NE(op.gradOf, static_cast<int>(x));
  EXPECT_EQ(fn.gradWrt, (std::vector<unsigned>{w1, w2}));
  // The gradients have their parameters' types.
  EXPECT_EQ(shapeStr(fn.values[fn.returns[1]].type.shape), "d h");
  EXPECT_EQ(shapeStr(fn.values[fn.returns[2]].type.shape), "h k");
  // Backward ops stand where the forward op they differentiate is, in the
  // callee, called from line 8.
  for (const CheckedOp &op : fn.ops)
    if (op.phase != GradPhase::Forward && op.kind == OpKind::Einsum) {
      EXPECT_GE(op.loc.line, 3u);
      EXPECT_LE(op.loc.line, 4u);
      EXPECT_EQ(op.callSite, 0);
    }
}

TEST(Autodiff, SavedActivationsAreTheForwardValuesTheBackwardReads) {
  auto c = check(kMLP);
  ASSERT_EQ(c->firstError(), "");
  const CheckedFunction &fn = *c->result.find("step");
  std::vector<unsigned> saved = savedForBackward(fn);
  auto has = [&](unsigned v) {
    return std::find(saved.begin(), saved.end(), v) != saved.end();
  };
  EXPECT_TRUE(has(paramNamed(fn, "x")));  // dw1 = x^T da
  EXPECT_TRUE(has(paramNamed(fn, "w2"))); // da = dp w2^T
  EXPECT_FALSE(has(paramNamed(fn, "y"))); // d(p - y)/dp needs no y
  EXPECT_FALSE(has(paramNamed(fn, "w1")));
}

TEST(Autodiff, UnreachedWrtGetsZeros) {
  auto c = check(R"ein(
def f(x: f32["n"], w: f32["n"], v: f32["m"]) -> (f32["n"], f32["m"]):
    l = reduce(x * w, "n ->", "sum")
    dw, dv = grad(l, wrt=[w, v])
    return dw, dv
)ein");
  ASSERT_EQ(c->firstError(), "");
  const CheckedFunction &fn = c->result.functions[0];
  const CheckedOp *producer = nullptr;
  for (const CheckedOp &op : fn.ops)
    for (unsigned r : op.results)
      if (r == fn.returns[1])
        producer = &op;
  ASSERT_NE(producer, nullptr);
  EXPECT_EQ(producer->kind, OpKind::Repeat); // a 0 spread over "m"
  EXPECT_EQ(shapeStr(fn.values[fn.returns[1]].type.shape), "m");
}

TEST(Autodiff, TakeGradientIsAScatterAddOfDyAtTheIds) {
  auto c = check(R"ein(
def f(t: f32["a v d"], ids: i32["s n"], r: f32["a s n d"]) -> f32["a v d"]:
    l = reduce(take(t, ids, "v") * r, "a s n d ->", "sum")
    return grad(l, wrt=[t])
)ein");
  ASSERT_EQ(c->firstError(), "");
  const CheckedFunction &fn = c->result.functions[0];
  unsigned t = paramNamed(fn, "t"), ids = paramNamed(fn, "ids");
  const CheckedOp *scatter = nullptr;
  for (const CheckedOp &op : fn.ops) {
    // The ids, integers, get no gradient.
    if (op.phase != GradPhase::Forward) {
      EXPECT_NE(op.gradOf, static_cast<int>(ids));
    }
    if (op.kind == OpKind::ScatterAdd)
      scatter = &op;
  }
  ASSERT_NE(scatter, nullptr);
  EXPECT_EQ(scatter->phase, GradPhase::WeightGrad);
  EXPECT_EQ(scatter->gradOf, static_cast<int>(t));
  EXPECT_EQ(scatter->loc.line, 3u); // at the take
  EXPECT_EQ(scatter->axis, 1u);
  ASSERT_EQ(scatter->operands.size(), 2u);
  EXPECT_EQ(scatter->operands[0], ids);
  EXPECT_EQ(shapeStr(fn.values[scatter->operands[1]].type.shape), "a s n d");
  // The result has the table's type and is the gradient returned.
  EXPECT_EQ(shapeStr(fn.values[scatter->results[0]].type.shape), "a v d");
  EXPECT_EQ(fn.values[scatter->results[0]].type.dtype, DType::F32);
  EXPECT_EQ(fn.returns[0], scatter->results[0]);
  EXPECT_STREQ(opKindName(OpKind::ScatterAdd), "scatter_add");
}

TEST(Autodiff, BroadcastOperandGradientIsSummed) {
  auto c = check(R"ein(
def f(x: f32["b n"], bias: f32["n"]) -> f32["n"]:
    l = reduce(x + bias, "b n ->", "sum")
    return grad(l, wrt=bias)
)ein");
  ASSERT_EQ(c->firstError(), "");
  const CheckedFunction &fn = c->result.functions[0];
  bool summed = false;
  for (const CheckedOp &op : fn.ops)
    summed |= op.kind == OpKind::Reduce && op.phase == GradPhase::WeightGrad;
  EXPECT_TRUE(summed);
}

// The gradient reaches x + w with its seq written window - 1 (t's, from
// the slice), and seq == d: the sum over w's broadcast dims once matched
// w's seq against both `window - 1` and `d` and refused ("no alignment").
// Every adjoint now has its value's type, names included.
TEST(Autodiff, GradientHasItsValuesTypeWhateverTheNamesItCameBy) {
  auto c = check(R"ein(
dim seq = 4
dim d = 4
dim window = seq + 1

def f(x: f32["b seq d"], w: f32["seq d"], r: f32["b window"]) -> (f32["b seq d"], f32["seq d"]):
    t = rearrange(slice(r, "window", 1, window), "b s -> b s 1")
    l = reduce(t * (x * w), "b s d ->", "sum")
    return grad(l, wrt=[x, w])
)ein");
  ASSERT_EQ(c->firstError(), "");
  const CheckedFunction &fn = c->result.functions[0];
  ASSERT_EQ(fn.returns.size(), 2u);
  EXPECT_EQ(shapeStr(fn.values[fn.returns[0]].type.shape), "b seq d");
  EXPECT_EQ(shapeStr(fn.values[fn.returns[1]].type.shape), "seq d");
}

struct Refusal {
  const char *source;
  const char *error;
};

class AutodiffRefusal : public ::testing::TestWithParam<Refusal> {};

TEST_P(AutodiffRefusal, SaysWhyAtTheOp) {
  auto c = check(GetParam().source);
  EXPECT_EQ(c->firstError(), GetParam().error);
}

INSTANTIATE_TEST_SUITE_P(
    Autodiff, AutodiffRefusal,
    ::testing::Values(
        Refusal{R"ein(
def f(x: f32["n"]) -> f32["n"]:
    return grad(x, wrt=[x])
)ein",
                "3:17: grad needs a scalar loss (rank 0), got shape \"n\"; "
                "reduce it first, e.g. reduce(x, \"n ->\", \"mean\")"},
        Refusal{R"ein(
def f(x: f32["n"]) -> f32["n"]:
    l = reduce(x, "n ->", "prod")
    return grad(l, wrt=[x])
)ein",
                "3:9: cannot differentiate: grad of reduce \"prod\" is not "
                "supported (its gradient divides by the inputs, which may be "
                "0); write it as exp(reduce(log(x), ..., \"sum\")) for "
                "positive inputs"},
        Refusal{R"ein(
def f(x: f32["n"]) -> (f32["n"], f32["n"]):
    l = reduce(x, "n ->", "sum")
    return grad(l, wrt=[x, x])
)ein",
                "4:28: 'x' is named twice in wrt="},
        Refusal{R"ein(
def f(x: f32["n"], k: i64["n"]) -> f32["n"]:
    l = reduce(x * astype(k, f32), "n ->", "sum")
    return grad(l, wrt=[k])
)ein",
                "4:25: 'k' is i64: only float tensors have gradients"},
        Refusal{R"ein(
def f(x: f32["n"]) -> f32["n"]:
    l = reduce(x, "n ->", "sum")
    return grad(l, by=[x])
)ein",
                "4:20: grad takes no keyword argument 'by'; grad expects "
                "(loss, wrt=[w1, w2], recompute=False): the gradient of a "
                "scalar loss with respect to tensors of this function"}));

TEST(Training, OptimizerTableMatchesTorchOptimUpdates) {
  // States per parameter as torch.optim keeps them; FLOPs per element of
  // torch.optim's single-tensor code, as docs/autodiff.md derives them.
  struct Row {
    const char *name;
    unsigned states, flops;
  };
  for (Row row :
       {Row{"sgd", 0, 2}, Row{"momentum", 1, 4}, Row{"adagrad", 1, 7},
        Row{"rmsprop", 1, 9}, Row{"adam", 2, 13}, Row{"adamw", 2, 14}}) {
    const OptimizerSpec *spec = findOptimizer(row.name);
    ASSERT_NE(spec, nullptr) << row.name;
    EXPECT_EQ(spec->states, row.states) << row.name;
    EXPECT_EQ(spec->flopsPerElement, row.flops) << row.name;
  }
  EXPECT_EQ(findOptimizer("lion"), nullptr);
}

TEST(Training, PeakLiveBytesFreesAfterLastUse) {
  // a = x + 1 (4 elements), b = a * 2, c = b - 1: each temporary dies after
  // its reader, so at most the input, two temporaries and the constants
  // are live at once.
  auto c = check(R"ein(
def f(x: f32["4"]) -> f32["4"]:
    a = x + 1.0
    b = a * 2.0
    return b - 1.0
)ein");
  ASSERT_EQ(c->firstError(), "");
  const CheckedFunction &fn = c->result.functions[0];
  auto bytes = [&](unsigned v) -> std::optional<Int> {
    auto n = numElements(fn.values[v].type.shape).constantValue();
    return n ? std::optional<Int>(*n * 4) : std::nullopt;
  };
  auto noViews = [](size_t) { return false; };
  // x 16 and the result's output buffer 16 throughout; constant 1.0 (4)
  // and a (16) -> 52; a's constant is freed, then 2.0 (4) and b (16) while
  // a is live -> 32 + 16 + 4 + 16 = 68; b - 1.0 is computed into the output
  // buffer, allocating nothing.
  EXPECT_EQ(peakLiveBytes(fn, noViews, bytes), Int(68));
}

TEST(Autodiff, LogSoftmaxSavesItsOutputAlone) {
  // As torch's log_softmax: dz = dy - exp(y) * sum(dy) reads y, so neither
  // x nor exp(x - max) is saved (the per-op rules save the exponentials).
  auto c = check(R"ein(
def f(x: f32["b s t"], r: f32["b s t"]) -> f32["b s t"]:
    shifted = x - reduce(x, "b s t -> b s 1", "max")
    y = shifted - log(reduce(exp(shifted), "b s t -> b s 1", "sum"))
    l = reduce(y * r, "b s t ->", "sum")
    return grad(l, wrt=x)
)ein");
  ASSERT_EQ(c->firstError(), "");
  const CheckedFunction &fn = c->result.functions[0];
  std::vector<std::string> saved;
  for (unsigned v : savedForBackward(fn))
    if (fn.values[v].type.shape.size() == 3)
      saved.push_back(fn.values[v].name);
  EXPECT_EQ(saved, (std::vector<std::string>{"r", "y"}));
}

// A softmax (exp(z - max) / sum over the same dims, each step read by the
// next alone) is differentiated by one rule and its probabilities are
// recomputed in the backward (lib/Sema/SoftmaxGrad.cpp); anything else that
// looks like one keeps the per-op rules, which save the steps.
struct SoftmaxCase {
  const char *name;
  const char *body; // y from x: f32["b s t"] (and r, of x's shape)
  bool fused;
};

class SoftmaxMatch : public ::testing::TestWithParam<SoftmaxCase> {};

TEST_P(SoftmaxMatch, FusedOnlyForASoftmax) {
  const SoftmaxCase &row = GetParam();
  std::string source = std::string(R"ein(
def f(x: f32["b s t"], r: f32["b s t"]) -> f32["b s t"]:
)ein") + row.body + R"ein(
    l = reduce(y * r, "b s t ->", "sum")
    return grad(l, wrt=x)
)ein";
  auto c = check(source);
  ASSERT_EQ(c->firstError(), "") << row.name;
  const CheckedFunction &fn = c->result.functions[0];
  bool recomputes = std::any_of(fn.ops.begin(), fn.ops.end(), [](auto &op) {
    return op.phase == GradPhase::Recompute;
  });
  EXPECT_EQ(recomputes, row.fused) << row.name;
  // Fused, the backward saves no float of x's size but x and the loss's r
  // (the per-op rules save the exponentials).
  size_t square = 0;
  for (unsigned v : savedForBackward(fn))
    if (shapeStr(fn.values[v].type.shape) == "b s t" &&
        isFloat(fn.values[v].type.dtype) && v != paramNamed(fn, "x") &&
        v != paramNamed(fn, "r"))
      ++square;
  EXPECT_EQ(square == 0, row.fused) << row.name;
}

INSTANTIATE_TEST_SUITE_P(
    Autodiff, SoftmaxMatch,
    ::testing::Values(
        SoftmaxCase{"kept dims",
                    "    e = exp(x - reduce(x, \"b s t -> b s 1\", \"max\"))\n"
                    "    y = e / reduce(e, \"b s t -> b s 1\", \"sum\")\n",
                    true},
        SoftmaxCase{"dims dropped",
                    "    m = reduce(x, \"b s t -> b s\", \"max\")\n"
                    "    e = exp(x - m)\n"
                    "    y = e / reduce(e, \"b s t -> b s\", \"sum\")\n",
                    true},
        SoftmaxCase{"masked",
                    "    z = where(x > 0.0, x, -1e9)\n"
                    "    e = exp(z - reduce(z, \"b s t -> b s 1\", \"max\"))\n"
                    "    y = e / reduce(e, \"b s t -> b s 1\", \"sum\")\n",
                    true},
        // The sum over another dim than the max: not a softmax.
        SoftmaxCase{"other dims",
                    "    e = exp(x - reduce(x, \"b s t -> b s 1\", \"max\"))\n"
                    "    y = e / reduce(e, \"b s t -> b 1 t\", \"sum\")\n",
                    false},
        // Over s: `b t` meets x's dims by name.
        SoftmaxCase{"columns",
                    "    m = reduce(x, \"b s t -> b t\", \"max\")\n"
                    "    e = exp(x - m)\n"
                    "    y = e / reduce(e, \"b s t -> b t\", \"sum\")\n",
                    true},
        SoftmaxCase{"exponentials read again",
                    "    e = exp(x - reduce(x, \"b s t -> b s 1\", \"max\"))\n"
                    "    y = e / reduce(e, \"b s t -> b s 1\", \"sum\") + e\n",
                    false},
        SoftmaxCase{"reversed",
                    "    e = exp(reduce(x, \"b s t -> b s 1\", \"max\") - x)\n"
                    "    y = e / reduce(e, \"b s t -> b s 1\", \"sum\")\n",
                    false},
        SoftmaxCase{"max of another value",
                    "    e = exp(x - reduce(r, \"b s t -> b s 1\", \"max\"))\n"
                    "    y = e / reduce(e, \"b s t -> b s 1\", \"sum\")\n",
                    false}),
    [](const ::testing::TestParamInfo<SoftmaxCase> &info) {
      std::string name = info.param.name;
      std::replace(name.begin(), name.end(), ' ', '_');
      return name;
    });

} // namespace
