// The builder of checked programs (Sema/ProgramBuilder.h): the types it
// infers, beside the checker's for the same program written as .ein text;
// its errors, anchored in the caller's pattern; its dtype rules.
#include "ein/Sema/ProgramBuilder.h"

#include "CheckedSnippet.h"

#include <cmath>
#include <gtest/gtest.h>

#include <set>

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

// Tests that take puts the ids' dims in place of the table's dim of the
// size named, keeps the table's dtype, and that scatter_add (its adjoint)
// has the table's type.
TEST(ProgramBuilderTest, TakeGathersAlongTheDimOfItsSize) {
  CheckedFunction fn;
  ProgramBuilder b(fn);
  unsigned table = b.param(tensor(DType::BF16, {"d", "vocab", "e"}));
  unsigned ids = b.param(tensor(DType::I32, {"b", "s"}));
  auto y = b.take(table, ids, Dim::ofSize(SizeExpr::symbol("vocab")));
  ASSERT_TRUE(y) << y.error().str();
  EXPECT_EQ(shapeStr(b.type(*y).shape), "d b s e");
  EXPECT_EQ(b.type(*y).dtype, DType::BF16);
  EXPECT_EQ(fn.ops.back().kind, OpKind::Take);
  EXPECT_EQ(fn.ops.back().axis, 1u);
  auto back = b.scatterAdd(ids, *y, b.type(table), 1);
  ASSERT_TRUE(back) << back.error().str();
  EXPECT_EQ(shapeStr(b.type(*back).shape), "d vocab e");
  EXPECT_EQ(fn.ops.back().kind, OpKind::ScatterAdd);
}

// Tests take's refusals and their anchors: float ids at operand 1, an
// unknown axis in the axis as written, with the close name suggested.
TEST(ProgramBuilderTest, TakeRefusesWithAnchors) {
  CheckedFunction fn;
  ProgramBuilder b(fn);
  unsigned table = b.param(tensor(DType::F32, {"vocab", "d"}));
  unsigned floats = b.param(tensor(DType::F32, {"s"}));
  unsigned ids = b.param(tensor(DType::I64, {"s"}));
  auto bad = b.take(table, floats, Dim::ofSize(SizeExpr::symbol("vocab")));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().error.anchor, ShapeError::Anchor::Operand);
  EXPECT_EQ(bad.error().error.index, 1u);
  EXPECT_EQ(bad.error().error.message,
            "take's ids must be integers (i32 or i64), not f32");
  auto typo = b.take(table, ids, Dim::ofSize(SizeExpr::symbol("vocabb")));
  ASSERT_FALSE(typo);
  EXPECT_EQ(typo.error().error.anchor, ShapeError::Anchor::Pattern);
  EXPECT_EQ(typo.error().pattern, "vocabb");
  EXPECT_EQ(typo.error().error.message,
            "take's axis \"vocabb\" is not a dim of the table (shape "
            "\"vocab d\"); did you mean \"vocab\"?");
  EXPECT_EQ(fn.ops.size(), 0u);
}

// Tests that dropout keeps x's type and its p, and refuses (anchored) a
// non-float input, a key that is not an i64 scalar and p outside [0, 1).
TEST(ProgramBuilderTest, DropoutKeepsTheInputsTypeAndRefusesBadOperands) {
  CheckedFunction fn;
  ProgramBuilder b(fn);
  unsigned x = b.param(tensor(DType::F16, {"b", "d"}));
  unsigned key = b.param(tensor(DType::I64, {}));
  auto y = b.dropout(x, 0.125, key);
  ASSERT_TRUE(y) << y.error().str();
  EXPECT_EQ(shapeStr(b.type(*y).shape), "b d");
  EXPECT_EQ(b.type(*y).dtype, DType::F16);
  EXPECT_EQ(fn.ops.back().kind, OpKind::Dropout);
  EXPECT_EQ(fn.ops.back().constant, 0.125);
  size_t ops = fn.ops.size();
  unsigned ints = b.param(tensor(DType::I32, {"b", "d"}));
  auto notFloat = b.dropout(ints, 0.1, key);
  ASSERT_FALSE(notFloat);
  EXPECT_EQ(notFloat.error().error.index, 0u);
  EXPECT_EQ(notFloat.error().error.message,
            "dropout's input must be a float tensor, not i32; convert it "
            "with astype");
  unsigned vectorKey = b.param(tensor(DType::I64, {"b"}));
  auto badKey = b.dropout(x, 0.1, vectorKey);
  ASSERT_FALSE(badKey);
  EXPECT_EQ(badKey.error().error.index, 1u);
  EXPECT_EQ(badKey.error().error.message,
            "dropout's key must be an i64 scalar tensor (i64[\"\"]), not "
            "i64[\"b\"]");
  EXPECT_FALSE(b.dropout(x, 1.0, key));
  EXPECT_FALSE(b.dropout(x, -0.1, key));
  EXPECT_FALSE(b.dropout(x, std::nan(""), key));
  EXPECT_EQ(fn.ops.size(), ops);
}

// Tests that dropout with a run-time p takes it as operand 2 (after the
// key), checks it at run time (checksIds, so the function has an index
// status), and refuses (anchored at operand 2) a p that is not a rank-0
// float tensor.
TEST(ProgramBuilderTest, DropoutTakesARunTimeRate) {
  CheckedFunction fn;
  ProgramBuilder b(fn);
  unsigned x = b.param(tensor(DType::F32, {"b", "d"}));
  unsigned key = b.param(tensor(DType::I64, {}));
  unsigned p = b.param(tensor(DType::F32, {}));
  EXPECT_FALSE(fn.hasIndexStatus());
  auto y = b.dropout(x, p, key);
  ASSERT_TRUE(y) << y.error().str();
  EXPECT_EQ(b.type(*y).dtype, DType::F32);
  EXPECT_EQ(fn.ops.back().operands, (std::vector<unsigned>{x, key, p}));
  EXPECT_TRUE(fn.ops.back().checksDropoutRate());
  EXPECT_TRUE(fn.hasIndexStatus());
  size_t ops = fn.ops.size();
  for (const TensorType &bad :
       {tensor(DType::F32, {"b"}), tensor(DType::I64, {})}) {
    auto refused = b.dropout(x, b.param(bad), key);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().error.index, 2u);
    EXPECT_EQ(refused.error().error.message.rfind(
                  "dropout's p must be a number or a rank-0 float tensor", 0),
              0u)
        << refused.error().error.message;
  }
  EXPECT_EQ(fn.ops.size(), ops);
}

// Tests that take_along's result has the ids' shape (x's without the axis)
// and x's dtype, and its refusals: ids whose shape is not x's without the
// axis (a missing dim, an extra one, another order), anchored at
// the ids; float ids; an unknown axis, anchored in the axis as written.
TEST(ProgramBuilderTest, TakeAlongPicksOneElementPerPosition) {
  CheckedFunction fn;
  ProgramBuilder b(fn);
  unsigned x = b.param(tensor(DType::BF16, {"b", "v", "s"}));
  unsigned ids = b.param(tensor(DType::I32, {"b", "s"}));
  auto y = b.takeAlong(x, ids, Dim::ofSize(SizeExpr::symbol("v")));
  ASSERT_TRUE(y) << y.error().str();
  EXPECT_EQ(shapeStr(b.type(*y).shape), "b s");
  EXPECT_EQ(b.type(*y).dtype, DType::BF16);
  EXPECT_EQ(fn.ops.back().kind, OpKind::TakeAlong);
  EXPECT_EQ(fn.ops.back().axis, 1u);
  size_t ops = fn.ops.size();
  auto refusal = [&](std::vector<std::string> idsShape, DType dtype,
                     const char *axis) {
    unsigned i = b.param(tensor(dtype, idsShape));
    auto bad = b.takeAlong(x, i, Dim::ofSize(SizeExpr::symbol(axis)));
    EXPECT_FALSE(bad);
    return bad ? BuildError{} : bad.error();
  };
  BuildError lacks = refusal({"b"}, DType::I64, "v");
  EXPECT_EQ(lacks.error.anchor, ShapeError::Anchor::Operand);
  EXPECT_EQ(lacks.error.index, 1u);
  EXPECT_EQ(lacks.error.message,
            "take_along's ids (shape \"b\") must have the input's shape "
            "without its axis v: \"b s\"; the ids lack the dim s");
  EXPECT_EQ(refusal({"b", "k", "s"}, DType::I64, "v").error.message,
            "take_along's ids (shape \"b k s\") must have the input's shape "
            "without its axis v: \"b s\"; the ids have the extra dim k");
  EXPECT_EQ(refusal({"s", "b"}, DType::I64, "v").error.message,
            "take_along's ids (shape \"s b\") must have the input's shape "
            "without its axis v: \"b s\"; the ids' dims are in another "
            "order; rearrange them to \"b s\"");
  EXPECT_EQ(refusal({"b", "s"}, DType::F32, "v").error.message,
            "take_along's ids must be integers (i32 or i64), not f32");
  BuildError typo = refusal({"b", "s"}, DType::I64, "vv");
  EXPECT_EQ(typo.error.anchor, ShapeError::Anchor::Pattern);
  EXPECT_EQ(typo.error.message,
            "take_along's axis \"vv\" is not a dim of the input (shape "
            "\"b v s\"); did you mean \"v\"?");
  EXPECT_EQ(fn.ops.size(), ops);
}

// Tests that slice cuts the dim of the size named to stop - start, and
// leaves to the entry only the bound the sizes do not prove (5 <= seq).
TEST(ProgramBuilderTest, SliceCutsTheAxisAndChecksTheRestAtEntry) {
  CheckedFunction fn;
  ProgramBuilder b(fn);
  unsigned x = b.param(tensor(DType::F16, {"b", "seq"}));
  auto y = b.slice(x, Dim::ofSize(SizeExpr::symbol("seq")),
                   SizeExpr::constant(2), SizeExpr::constant(5));
  ASSERT_TRUE(y) << y.error().str();
  EXPECT_EQ(shapeStr(b.type(*y).shape), "b 3");
  EXPECT_EQ(b.type(*y).dtype, DType::F16);
  EXPECT_EQ(fn.ops.back().sliceAxis, 1);
  ASSERT_EQ(fn.ctx.constraints.size(), 1u);
  EXPECT_EQ(fn.ctx.constraints[0].rhs.str(), "seq");

  auto negative = b.slice(x, Dim::ofSize(SizeExpr::symbol("seq")),
                          SizeExpr::constant(-1), SizeExpr::constant(5));
  ASSERT_FALSE(negative);
  EXPECT_EQ(negative.error().error.anchor, ShapeError::Anchor::Operand);
  EXPECT_EQ(negative.error().error.index, 1u);
  auto variadic = b.slice(x, Dim::ofPack("rest"), SizeExpr::constant(0),
                          SizeExpr::constant(1));
  ASSERT_FALSE(variadic);
  EXPECT_EQ(variadic.error().error.anchor, ShapeError::Anchor::Pattern);
}

// Tests the rules of literals, sizes and arange: an integer constant keeps
// its exact value; bool is refused for a size and for arange (at dtype=).
TEST(ProgramBuilderTest, ScalarsFollowTheDTypeRules) {
  CheckedFunction fn;
  ProgramBuilder b(fn);
  unsigned seven = b.constant(7, DType::I32);
  EXPECT_EQ(fn.ops.back().constantInt, 7);
  EXPECT_EQ(b.type(seven).dtype, DType::I32);
  NumberLiteral big;
  big.isInt = true;
  big.exact = 1000;
  big.value = 1000;
  EXPECT_FALSE(b.literal(big, DType::F8E4M3));
  EXPECT_TRUE(b.literal(big, DType::I32));
  EXPECT_FALSE(b.size(SizeExpr::symbol("n"), DType::Bool));
  auto counted = b.arange(SizeExpr::symbol("n"), DType::Bool);
  ASSERT_FALSE(counted);
  EXPECT_EQ(counted.error().error.anchor, ShapeError::Anchor::Kwarg);
  auto positions = b.arange(SizeExpr::symbol("n"), DType::F32);
  ASSERT_TRUE(positions);
  EXPECT_EQ(shapeStr(b.type(*positions).shape), "n");
}

// One checked function per op kind (the forward samples of
// OpCoverageTest.cpp), every kind of the registry among their ops.
const char *const everyKind[] = {
    "def f(x: f32[\"a b\"]) -> f32[\"b a\"]:\n"
    "    return rearrange(x, \"a b -> b a\")\n",
    "def f(x: f32[\"a b\"]) -> f64[\"a\"]:\n"
    "    return reduce(x, \"a b -> a\", \"var\", acc=f64)\n",
    "def f(x: f32[\"a\"]) -> f32[\"a 3\"]:\n"
    "    return repeat(x, \"a -> a r\", r=3)\n",
    "def f(x: f32[\"a b\"], y: f32[\"b c\"]) -> f32[\"a c\"]:\n"
    "    return einsum(x, y, \"a b, b c -> a c\")\n",
    "def f(x: f32[\"a b\"], y: f32[\"a\"]) -> f32[\"a _\"]:\n"
    "    p, ps = pack([x, y], \"a *\")\n"
    "    return p\n",
    "def f(x: f32[\"a 5\"]) -> f32[\"a 2\"]:\n"
    "    u, v = unpack(x, [[2], [3]], \"a *\")\n"
    "    return u\n",
    "def f(x: f32[\"a\"], y: f32[\"a\"]) -> f64[\"a\"]:\n"
    "    return astype(x * y, f64)\n",
    "def f(x: f32[\"a\"]) -> f32[\"a\"]:\n"
    "    return x * 2.5\n",
    "def f(x: i32[\"a\"]) -> i32[\"a\"]:\n"
    "    return x + 7\n",
    "def f(x: f32[\"n\"]) -> f32[\"n\"]:\n"
    "    return x / n + arange(n, dtype=f32)\n",
    "def f(t: f32[\"v d\"], ids: i32[\"s\"]) -> f32[\"v d\"]:\n"
    "    l = reduce(take(t, ids, \"v\"), \"s d ->\", \"sum\")\n"
    "    gt = grad(l, wrt=[t])\n"
    "    return gt\n",
    "dim n = 6\n"
    "def f(x: f32[\"a n\"]) -> f32[\"a 3\"]:\n"
    "    return slice(x, \"n\", 1, 4)\n",
    "def f(x: f32[\"b v s\"], ids: i32[\"b s\"]) -> f32[\"b s\"]:\n"
    "    return take_along(x, ids, \"v\")\n",
    "def f(x: bf16[\"b d\"], key: i64[\"\"]) -> bf16[\"b d\"]:\n"
    "    return dropout(x, 0.25, key)\n",
};

// Tests that ProgramBuilder::build, given each op the checker built (its
// CheckedOp as the attributes, the result dtype as CheckedOp::dtype where
// no operand gives it), builds the types the checker gave: the one entry
// the dialect's verifiers use agrees with the checker, op by op.
TEST(ProgramBuilderTest, BuildOfEveryCheckedOpHasTheCheckersTypes) {
  std::set<OpKind> seen;
  for (const char *source : everyKind) {
    auto c = test::checkSnippet(source);
    ASSERT_EQ(c->firstError(), "") << source;
    const CheckedFunction &checked = c->result.functions[0];
    for (const CheckedOp &op : checked.ops) {
      seen.insert(op.kind);
      CheckedFunction scratch = checked;
      ProgramBuilder b(scratch);
      CheckedOp attributes = op;
      attributes.dtype = checked.values[op.results[0]].type.dtype;
      auto built = b.build(attributes, op.operands);
      ASSERT_TRUE(built) << opKindName(op.kind) << ": " << built.error().str();
      ASSERT_EQ((*built).size(), op.results.size()) << opKindName(op.kind);
      for (size_t i = 0; i < op.results.size(); ++i) {
        const TensorType &got = scratch.values[(*built)[i]].type;
        const TensorType &want = checked.values[op.results[i]].type;
        EXPECT_EQ(got.dtype, want.dtype) << opKindName(op.kind);
        EXPECT_EQ(shapeStr(scratch.ctx.expand(got.shape)),
                  shapeStr(checked.ctx.expand(want.shape)))
            << opKindName(op.kind);
      }
      EXPECT_EQ(scratch.ops.back().kind, op.kind);
    }
  }
  EXPECT_EQ(seen.size(), kNumOpKinds);
}

// Tests build's types against types written by hand, and its refusals of
// what the attributes do not say.
TEST(ProgramBuilderTest, BuildHasTheTypesWrittenByHand) {
  CheckedFunction fn;
  ProgramBuilder b(fn);
  unsigned x = b.param(tensor(DType::F32, {"a", "n"}), "x");
  unsigned t = b.param(tensor(DType::F32, {"v", "d"}), "t");
  unsigned ids = b.param(tensor(DType::I32, {"s"}), "ids");
  auto typeOf = [&](const CheckedOp &attributes,
                    std::vector<unsigned> operands) -> std::string {
    auto built = b.build(attributes, operands);
    if (!built)
      return "error: " + built.error().error.message;
    const TensorType &type = b.type((*built)[0]);
    return std::string(dtypeName(type.dtype)) + "[\"" + shapeStr(type.shape) +
           "\"]";
  };
  CheckedOp op;
  op.kind = OpKind::Rearrange;
  op.pattern = "a n -> n a";
  EXPECT_EQ(typeOf(op, {x}), "f32[\"n a\"]");
  op = CheckedOp{};
  op.kind = OpKind::Take;
  op.axis = 0;
  EXPECT_EQ(typeOf(op, {t, ids}), "f32[\"s d\"]");
  op = CheckedOp{};
  op.kind = OpKind::ScatterAdd;
  op.axis = 0;
  op.sizeValue = SizeExpr::symbol("v");
  unsigned updates = b.param(tensor(DType::F32, {"s", "d"}), "u");
  EXPECT_EQ(typeOf(op, {ids, updates}), "f32[\"v d\"]");
  op = CheckedOp{};
  op.kind = OpKind::Slice;
  op.sliceAxis = -1;
  op.sliceStart = SizeExpr::constant(1);
  op.sliceStop = SizeExpr::symbol("n");
  EXPECT_EQ(typeOf(op, {x}), "f32[\"a n-1\"]");
  op = CheckedOp{};
  op.kind = OpKind::Arange;
  op.sizeValue = SizeExpr::symbol("n");
  EXPECT_EQ(typeOf(op, {}),
            "error: arange's result dtype is not given (CheckedOp::dtype)");
  op.dtype = DType::I64;
  EXPECT_EQ(typeOf(op, {}), "i64[\"n\"]");
  op = CheckedOp{};
  op.kind = OpKind::Cast;
  op.dtype = DType::F64;
  EXPECT_EQ(typeOf(op, {x}), "f64[\"a n\"]");
  op = CheckedOp{};
  op.kind = OpKind::Einsum;
  op.pattern = "a n, v d -> a d";
  EXPECT_EQ(typeOf(op, {x}).rfind("error: ", 0), 0u); // one operand short
}

} // namespace
