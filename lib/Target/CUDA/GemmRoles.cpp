// The roles of a contraction's axes on CUDA and the runtime's GEMM planner
// run on the host; see include/ein/Target/CUDA/GemmRoles.h.
#include "ein/Target/CUDA/GemmRoles.h"

#include "Runtime/ein_gemm_plan.h"

#include <algorithm>

namespace ein {

namespace {

bool has(const std::vector<std::string> &v, const std::string &x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::vector<std::string>
concat(std::initializer_list<const std::vector<std::string> *> parts) {
  std::vector<std::string> out;
  for (auto *part : parts)
    out.insert(out.end(), part->begin(), part->end());
  return out;
}

std::vector<int> range(size_t from, size_t count) {
  std::vector<int> out;
  for (size_t i = 0; i < count; ++i)
    out.push_back(static_cast<int>(from + i));
  return out;
}

/// `operand`'s sizes and strides in the order of `rows`.
void view(const GemmOperand &operand, const std::vector<std::string> &rows,
          const std::map<std::string, int64_t> &sizes,
          std::vector<int64_t> &size, std::vector<int64_t> &stride) {
  for (auto &x : rows) {
    int64_t s = 0;
    for (size_t i = 0; i < operand.axes.size(); ++i)
      if (operand.axes[i] == x)
        s += operand.strides[i];
    size.push_back(sizes.at(x));
    stride.push_back(s);
  }
}

} // namespace

std::vector<std::string> GemmRoles::rowsA() const {
  return concat({&batch, &m, &k});
}
std::vector<std::string> GemmRoles::rowsB() const {
  return concat({&batch, &k, &n});
}
std::vector<std::string> GemmRoles::rowsC() const {
  return concat({&batch, &m, &n});
}

std::vector<std::vector<int>> GemmRoles::positions() const {
  size_t nb = batch.size(), nm = m.size(), nn = n.size(), nk = k.size();
  return {range(0, nb), range(nb, nm), range(nb + nm, nk),
          range(0, nb), range(nb, nk), range(nb + nk, nn),
          range(0, nb), range(nb, nm), range(nb + nm, nn)};
}

GemmRoles splitGemmRoles(const std::vector<std::string> &aAxes,
                         const std::vector<std::string> &bAxes,
                         const std::vector<std::string> &outAxes) {
  GemmRoles r;
  for (auto &x : outAxes) {
    if (has(r.batch, x) || has(r.m, x) || has(r.n, x))
      continue;
    bool inA = has(aAxes, x), inB = has(bAxes, x);
    (inA && inB ? r.batch : inA ? r.m : r.n).push_back(x);
  }
  for (auto *axes : {&aAxes, &bAxes})
    for (auto &x : *axes)
      if (!has(outAxes, x) && !has(r.k, x))
        r.k.push_back(x);
  return r;
}

std::optional<GemmPlanSummary>
planGemm(const GemmRoles &roles, const GemmOperand &a, const GemmOperand &b,
         const GemmOperand &c, const std::map<std::string, int64_t> &sizes,
         bool requireTN) {
  std::vector<int64_t> za, ta, zb, tb, zc, tc;
  view(a, roles.rowsA(), sizes, za, ta);
  view(b, roles.rowsB(), sizes, zb, tb);
  view(c, roles.rowsC(), sizes, zc, tc);
  if (za.size() > EIN_GEMM_MAX_AXES || zb.size() > EIN_GEMM_MAX_AXES ||
      zc.size() > EIN_GEMM_MAX_AXES)
    return std::nullopt;
  EinGemmRoles r{};
  r.batch = static_cast<int>(roles.batch.size());
  r.m = static_cast<int>(roles.m.size());
  r.n = static_cast<int>(roles.n.size());
  r.k = static_cast<int>(roles.k.size());
  int *fields[9] = {r.aBatch, r.aM,     r.aK, r.bBatch, r.bK,
                    r.bN,     r.cBatch, r.cM, r.cN};
  std::vector<std::vector<int>> positions = roles.positions();
  for (int f = 0; f < 9; ++f)
    std::copy(positions[f].begin(), positions[f].end(), fields[f]);
  EinGemmView va{static_cast<int>(za.size()), za.data(), ta.data()};
  EinGemmView vb{static_cast<int>(zb.size()), zb.data(), tb.data()};
  EinGemmView vc{static_cast<int>(zc.size()), zc.data(), tc.data()};
  EinGemmPlan plan;
  GemmPlanSummary summary;
  summary.copies = ein_gemm_plan(&r, va, vb, vc, requireTN, &plan);
  summary.batchLoop = !summary.copies && plan.outerCount > 0;
  return summary;
}

} // namespace ein
