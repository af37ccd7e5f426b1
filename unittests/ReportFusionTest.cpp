// The targets' columns of `einc report` (Target::describe): the CPU's fused
// column (ein::analyzeFusion and the report's table and JSON), which ops the
// CPU pipeline's fusion passes group, and the CUDA plan, asked of the
// registered targets.
#include "CheckedSnippet.h"

#include "ein/Engine/Engine.h"
#include "ein/Report/Report.h"
#include "ein/Target/CPU/DescribeCPU.h"
#include "ein/Target/TargetRegistry.h"

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
  for (size_t i = 0; i < fn.ops.size(); ++i) {
    if (fn.ops[i].kind != OpKind::Constant) {
      EXPECT_EQ(f.groups[i], "rows#1") << "op " << i;
    }
  }
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
  std::map<std::string, TargetColumn> columns;
  columns.emplace("unranked", fusionColumn(*c->result.find("unranked"),
                                           fusion.at("unranked")));
  ReportOptions options;
  options.function = "unranked";
  options.targetColumns = &columns;
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

TEST(ReportFusionTest, TheCPUTargetDescribesItsFusion) {
  auto c = test::checkSnippet(kProgram);
  auto cpu = lookupTarget("cpu", TargetUse::Report);
  ASSERT_TRUE(bool(cpu));
  auto columns = Engine().describe(**cpu, c->result, "softmax",
                                   Described::Function, TargetOptions{});
  ASSERT_EQ(columns.size(), 1u);
  const TargetColumn &column = columns.at("softmax");
  EXPECT_EQ(column.heading, "fused");
  EXPECT_EQ(column.functionField, "fusion");
  EXPECT_EQ(column.functionValue, "cpu");
  const CheckedFunction &fn = *c->result.find("softmax");
  ASSERT_EQ(column.cells.size(), fn.ops.size());
  for (size_t i = 0; i < fn.ops.size(); ++i) {
    if (fn.ops[i].kind != OpKind::Constant) {
      EXPECT_EQ(column.cells[i], "rows#1") << "op " << i;
    }
  }
  // A training step is not the function the CPU pipeline compiles.
  EXPECT_TRUE(Engine()
                  .describe(**cpu, c->result, "softmax",
                            Described::TrainingStep, TargetOptions{})
                  .empty());
}

TEST(ReportFusionTest, TheCUDATargetDescribesEachOp) {
  auto c = test::checkSnippet(kProgram);
  auto cuda = lookupTarget("cuda", TargetUse::Report);
  ASSERT_TRUE(bool(cuda));
  auto columns = Engine().describe(**cuda, c->result, "", Described::Function,
                                   TargetOptions{});
  EXPECT_EQ(columns.size(), 3u);
  const TargetColumn &softmax = columns.at("softmax");
  EXPECT_EQ(softmax.heading, "CUDA");
  EXPECT_EQ(softmax.field, "cuda");
  // softmax is one row kernel (lib/Target/CUDA/RowKernels.cpp); without
  // fusion its max is an ein_reduce.
  EXPECT_EQ(softmax.cells[0], "ein_rows rows#1");
  EXPECT_EQ(softmax.functionValue, "cuda");
  TargetOptions apart;
  apart.cpu.fusion = false;
  const TargetColumn off =
      Engine()
          .describe(**cuda, c->result, "softmax", Described::Function, apart)
          .at("softmax");
  EXPECT_EQ(off.cells[0], "ein_reduce max");
  EXPECT_EQ(off.functionValue, "off");
  // An m k, k n -> m n product of row-major operands needs no permute.
  EXPECT_EQ(columns.at("matmul").cells[0], "cuBLASLt matmul");
  EXPECT_EQ(columns.at("matmul").values[0],
            std::optional<std::string>("cuBLASLt matmul"));
  EXPECT_TRUE(columns.at("matmul").notes.empty());
}

} // namespace
} // namespace ein
