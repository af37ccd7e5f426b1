// The builder of checked programs (Sema/ProgramBuilder.h): the types it
// infers, beside the checker's for the same program written as .ein text;
// its errors, anchored in the caller's pattern; its dtype rules.
#include "ein/Sema/ProgramBuilder.h"

#include "CheckedSnippet.h"

#include <gtest/gtest.h>

using namespace ein;

namespace {

TensorType tensor(DType dtype, std::vector<std::string> dims) {
  TensorType t;
  t.dtype = dtype;
  for (auto &d : dims)
    t.shape.push_back(Dim::ofSize(SizeExpr::symbol(d)));
  return t;
}

// Tests that a built attention-like program has the types the checker gives
// the same program written as text.
TEST(ProgramBuilderTest, TypesMatchTheCheckersForTheSameProgram) {
  CheckedFunction fn;
  fn.name = "f";
  ProgramBuilder b(fn);
  unsigned q = b.param(tensor(DType::F32, {"b", "s", "hd"}), "q");
  unsigned k = b.param(tensor(DType::F32, {"b", "t", "hd"}), "k");
  auto qh =
      b.rearrange(q, "b s (h d) -> b h s d", {{"h", SizeExpr::constant(4)}});
  ASSERT_TRUE(qh) << qh.error().str();
  auto kh =
      b.rearrange(k, "b t (h d) -> b h t d", {{"h", SizeExpr::constant(4)}});
  ASSERT_TRUE(kh) << kh.error().str();
  auto s = b.einsum({*qh, *kh}, "b h s d, b h t d -> b h s t");
  ASSERT_TRUE(s) << s.error().str();
  auto e = b.elementwise(ElementwiseFn::Exp, {*s});
  ASSERT_TRUE(e) << e.error().str();
  auto m = b.reduce(*e, "b h s t -> b s", ReduceKind::Max);
  ASSERT_TRUE(m) << m.error().str();
  b.ret({*m});

  auto c = test::checkSnippet(R"ein(
def f(q: f32["b s hd"], k: f32["b t hd"]) -> f32["b s"]:
    qh = rearrange(q, "b s (h d) -> b h s d", h=4)
    kh = rearrange(k, "b t (h d) -> b h t d", h=4)
    return reduce(exp(einsum(qh, kh, "b h s d, b h t d -> b h s t")), "b h s t -> b s", "max")
)ein");
  ASSERT_EQ(c->firstError(), "");
  const CheckedFunction &want = c->result.functions[0];
  ASSERT_EQ(fn.ops.size(), want.ops.size());
  for (size_t i = 0; i < fn.ops.size(); ++i) {
    EXPECT_EQ(fn.ops[i].kind, want.ops[i].kind) << i;
    const TensorType &got = fn.values[fn.ops[i].results[0]].type;
    const TensorType &ref = want.values[want.ops[i].results[0]].type;
    EXPECT_EQ(got.dtype, ref.dtype) << i;
    EXPECT_EQ(fn.ctx.expand(got.shape).size(),
              want.ctx.expand(ref.shape).size())
        << i;
  }
  EXPECT_EQ(fn.results.size(), 1u);
  EXPECT_EQ(fn.values[fn.returns[0]].type.shape.size(), 2u);
}

// Tests that a pattern error points into the caller's pattern: the offset
// of the offending axis, and a caret under it.
TEST(ProgramBuilderTest, PatternErrorsPointIntoThePattern) {
  CheckedFunction fn;
  ProgramBuilder b(fn);
  unsigned x = b.param(tensor(DType::F32, {"a", "b"}));
  auto r = b.rearrange(x, "a b -> a c");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().op, "rearrange");
  EXPECT_EQ(r.error().pattern, "a b -> a c");
  EXPECT_EQ(r.error().error.anchor, ShapeError::Anchor::Pattern);
  EXPECT_EQ(r.error().error.offset, 2u) << r.error().str(); // `b`: dropped
  EXPECT_EQ(r.error().caret(), "    a b -> a c\n      ^");
  EXPECT_TRUE(fn.ops.empty()) << "a failed step appends nothing";
}

// Tests that dtypes come from the dtype table: a mean of an integer tensor
// is refused, an acc= sets the result's dtype, operands must agree.
TEST(ProgramBuilderTest, DTypesFollowTheTable) {
  CheckedFunction fn;
  ProgramBuilder b(fn);
  unsigned i = b.param(tensor(DType::I32, {"a", "b"}));
  unsigned f = b.param(tensor(DType::F16, {"a", "b"}));
  auto mean = b.reduce(i, "a b -> a", ReduceKind::Mean);
  ASSERT_FALSE(mean);
  EXPECT_EQ(mean.error().error.anchor, ShapeError::Anchor::Operand);
  auto sum = b.reduce(f, "a b -> a", ReduceKind::Sum, {}, DType::F32);
  ASSERT_TRUE(sum) << sum.error().str();
  EXPECT_EQ(b.type(*sum).dtype, DType::F32);
  auto mixed = b.einsum({f, i}, "a b, a b -> a");
  ASSERT_FALSE(mixed);
  EXPECT_EQ(mixed.error().error.index, 1u);
  auto added = b.elementwise(ElementwiseFn::Add, {f, i});
  ASSERT_FALSE(added);
  EXPECT_EQ(b.cast(f, DType::F16), f) << "a cast to its own dtype is itself";
  auto notTransform = b.transform(OpKind::Einsum, f, "a b -> a", {});
  ASSERT_FALSE(notTransform);
  EXPECT_EQ(notTransform.error().error.message,
            "transform builds rearrange, repeat or reduce, not einsum");
}

// Tests that every built op carries the builder's origin.
TEST(ProgramBuilderTest, OpsCarryTheOrigin) {
  CheckedFunction fn;
  ProgramBuilder b(fn);
  unsigned x = b.param(tensor(DType::F32, {"a"}));
  b.setOrigin({SourceLoc{3, 5, 0}, 2, GradPhase::WeightGrad, int(x)});
  auto y = b.repeat(x, "a -> a r", {{"r", SizeExpr::constant(3)}});
  ASSERT_TRUE(y) << y.error().str();
  ASSERT_EQ(fn.ops.size(), 1u);
  EXPECT_EQ(fn.ops[0].loc.line, 3u);
  EXPECT_EQ(fn.ops[0].callSite, 2);
  EXPECT_EQ(fn.ops[0].phase, GradPhase::WeightGrad);
  EXPECT_EQ(fn.ops[0].gradOf, int(x));
}

} // namespace
