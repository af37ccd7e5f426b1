// The sharded `ein` IR of einc emit (docs/distributed.md §4): the library
// builds all-reduces and reduce-scatters and refuses the other collectives
// by name, never building one as another.
#include "CheckedSnippet.h"

#include "ein/MLIRGen/MLIRGen.h"
#include "ein/Sema/Layout.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <gtest/gtest.h>

using namespace ein;
using namespace ein::test;

namespace {

TEST(MeshIRTest, AllGatherIsRefusedByName) {
  CheckOptions options;
  options.meshSizes["tp"] = 2;
  auto c = checkSnippet(
      "mesh tp\n"
      "def g(x: f32[\"b d\"], w: f32[\"d f@tp\"]) -> f32[\"b f\"]:\n"
      "    return reshard(einsum(x, w, \"b d, d f -> b f\"), \"b f\")\n",
      options);
  ASSERT_EQ(c->firstError(), "");
  const CheckedFunction *fn = c->result.find("g");
  ASSERT_NE(fn, nullptr);
  ASSERT_EQ(fn->collectives.size(), 1u);
  ASSERT_EQ(fn->collectives[0].kind, CollectiveKind::AllGather);
  MeshProgram mesh;
  mesh.axes = {"tp"};
  mesh.sizes = {2};
  mesh.collectives = fn->collectives;
  mesh.points = {fn->ops.size() - 1};
  mesh.scatterDims = {-1};
  mlir::MLIRContext context;
  auto ir = buildVerifiedShardedEinModule(context, c->result, mesh);
  ASSERT_FALSE(bool(ir));
  EXPECT_NE(ir.error().message.find("einc emit of an all-gather over tp"),
            std::string::npos)
      << ir.error().message;
}

} // namespace
