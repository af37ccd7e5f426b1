// The fused column of `einc report` (ein::analyzeFusion and the report's
// table and JSON): which ops the CPU pipeline's fusion passes group.
#include "CheckedSnippet.h"

#include "ein/Report/Report.h"

#include <gtest/gtest.h>

namespace ein {
namespace {

const char *kProgram = R"(def softmax(x: f32["b s t"]) -> f32["b s t"]:
    m = reduce(x, "b s t -> b s", "max")
    e = exp(x - m)
    return e / reduce(e, "b s t -> b s", "sum")

def matmul(a: f32["m k"], w: f32["k n"]) -> f32["m n"]:
    return einsum(a, w, "m k, k n -> m n")

def unranked(x: f32["*batch d"]) -> f32["*batch d"]:
    return exp(x) * 2.0
)";

TEST(ReportFusionTest, SoftmaxIsOneRowTileLoop) {
  auto c = test::checkSnippet(kProgram);
  ASSERT_EQ(c->firstError(), "");
  auto fusion = analyzeFusion(c->result, "softmax", CPUOptions{});
  ASSERT_EQ(fusion.size(), 1u);
  const FunctionFusion &f = fusion.at("softmax");
  EXPECT_EQ(f.unknown, "");
  EXPECT_FALSE(f.off);
  const CheckedFunction &fn = *c->result.find("softmax");
  ASSERT_EQ(f.groups.size(), fn.ops.size());
  for (size_t i = 0; i < fn.ops.size(); ++i)
    if (fn.ops[i].kind != OpKind::Constant)
      EXPECT_EQ(f.groups[i], "rows#1") << "op " << i;
}

TEST(ReportFusionTest, MatmulIsItsOwnLoopNest) {
  auto c = test::checkSnippet(kProgram);
  auto fusion = analyzeFusion(c->result, "", CPUOptions{});
  EXPECT_EQ(fusion.size(), 3u);
  for (auto &g : fusion.at("matmul").groups)
    EXPECT_EQ(g, "");
}

TEST(ReportFusionTest, NoFusionMarksNothing) {
  auto c = test::checkSnippet(kProgram);
  CPUOptions cpu;
  cpu.fusion = false;
  const FunctionFusion f =
      analyzeFusion(c->result, "softmax", cpu).at("softmax");
  EXPECT_TRUE(f.off);
  for (auto &g : f.groups)
    EXPECT_EQ(g, "");
}

TEST(ReportFusionTest, UncompilableFunctionIsUnknownNotAnError) {
  auto c = test::checkSnippet(kProgram);
  auto fusion = analyzeFusion(c->result, "", CPUOptions{});
  EXPECT_NE(fusion.at("unranked").unknown.find("variadic batch"),
            std::string::npos);
  // The others still have theirs.
  EXPECT_EQ(fusion.at("softmax").unknown, "");
  ReportOptions options;
  options.function = "unranked";
  options.fusion = &fusion;
  std::string table = reportTable(c->result, options);
  EXPECT_NE(table.find("fused: unknown ("), std::string::npos) << table;
  std::string json = reportJSON(c->result, options);
  EXPECT_NE(json.find("\"fused\": null"), std::string::npos) << json;
}

TEST(ReportFusionTest, NoColumnWithoutFusion) {
  auto c = test::checkSnippet(kProgram);
  ReportOptions options;
  std::string table = reportTable(c->result, options);
  EXPECT_EQ(table.find("fused"), std::string::npos) << table;
  EXPECT_EQ(reportJSON(c->result, options).find("fused"), std::string::npos);
}

} // namespace
} // namespace ein
