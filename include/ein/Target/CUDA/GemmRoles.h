// The roles of a pairwise contraction's axes on CUDA (batch, m, n, k) and
// what the runtime's GEMM planner (Runtime/ein_gemm_plan.h) does with them:
// the one home that EmitCUDA (the code it writes) and the report's CUDA
// column both call.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ein {

/// The axes of C = A x B by role, each in the order first met (the
/// result's axes, then A's, then B's): batch (in A, B and the result), m (A
/// and the result), n (B and the result), k (summed: in A or B only).
struct GemmRoles {
  std::vector<std::string> batch, m, n, k;
  /// The operands as the generated code views them: A as [batch, m, k], B
  /// as [batch, k, n], the result as [batch, m, n].
  std::vector<std::string> rowsA() const;
  std::vector<std::string> rowsB() const;
  std::vector<std::string> rowsC() const;
  /// Each role's positions in those views, in EinGemmRoles' field order:
  /// aBatch, aM, aK, bBatch, bK, bN, cBatch, cM, cN.
  std::vector<std::vector<int>> positions() const;
};

GemmRoles splitGemmRoles(const std::vector<std::string> &aAxes,
                         const std::vector<std::string> &bAxes,
                         const std::vector<std::string> &outAxes);

/// One operand's axes, each with its stride in elements.
struct GemmOperand {
  std::vector<std::string> axes;
  std::vector<int64_t> strides;
};

/// What ein_gemm_plan decides for these operands at these sizes.
struct GemmPlanSummary {
  int copies = 0;         // operands permuted first: 1 A, 2 B, 4 the result
  bool batchLoop = false; // batch axes that do not merge loop around it
};

/// Runs the runtime's planner on the roles over operands laid out as given,
/// every axis of `sizes` (strides summed over an axis repeated in one
/// operand, a diagonal); `requireTN` as for fp8. nullopt when a view has
/// more axes than the planner takes (EIN_GEMM_MAX_AXES).
std::optional<GemmPlanSummary>
planGemm(const GemmRoles &roles, const GemmOperand &a, const GemmOperand &b,
         const GemmOperand &c, const std::map<std::string, int64_t> &sizes,
         bool requireTN);

} // namespace ein
