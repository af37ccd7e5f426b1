// Tests ein_gemm_plan (lib/Target/CUDA/Runtime/ein_gemm_plan.h): random
// pairwise contractions over random strided views are planned, run through
// a column-major strided-batched GEMM that follows cuBLAS's definition, and
// compared with the contraction computed directly from the views.
#include "../lib/Target/CUDA/Runtime/ein_gemm_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace {

/// A strided operand owning its storage; `view()` is what the plan reads.
struct Operand {
  std::vector<int64_t> size, stride;
  std::vector<double> storage;
  EinGemmView view() const {
    return {static_cast<int>(size.size()), size.data(), stride.data()};
  }
  double &at(const std::vector<int64_t> &index) {
    int64_t offset = 0;
    for (size_t d = 0; d < index.size(); ++d)
      offset += index[d] * stride[d];
    return storage[offset];
  }
};

/// Calls `f(index)` for every index of `sizes`, the last axis fastest.
template <typename F>
void forEachIndex(const std::vector<int64_t> &sizes, F f) {
  for (int64_t s : sizes)
    if (s == 0)
      return;
  std::vector<int64_t> index(sizes.size(), 0);
  while (true) {
    f(index);
    int d = static_cast<int>(sizes.size()) - 1;
    for (; d >= 0; --d) {
      if (++index[d] < sizes[d])
        break;
      index[d] = 0;
    }
    if (d < 0)
      return;
  }
}

/// cuBLAS's column-major strided-batched GEMM: C (m x n, ldc) = op(A) op(B).
void referenceGemm(const EinGemmPlan &p, const double *a, const double *b,
                   double *c) {
  for (int64_t q = 0; q < p.batch; ++q)
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) {
        double sum = 0;
        for (int64_t l = 0; l < p.k; ++l) {
          double x = p.transa ? a[q * p.strideA + l + i * p.lda]
                              : a[q * p.strideA + i + l * p.lda];
          double y = p.transb ? b[q * p.strideB + j + l * p.ldb]
                              : b[q * p.strideB + l + j * p.ldb];
          sum += x * y;
        }
        c[q * p.strideC + i + j * p.ldc] = sum;
      }
}

/// One random contraction: roles, operand axis orders and sizes.
struct Case {
  EinGemmRoles roles{};
  std::vector<int64_t> roleSize[4]; // batch, m, n, k
  std::string text;
};

/// A random layout for an operand of `sizes`: a random axis order, padding
/// between axes, sometimes a step (a sliced view), and for inputs sometimes
/// a size-1 axis where the role is larger (a broadcast).
Operand layout(std::mt19937 &rng, std::vector<int64_t> sizes) {
  Operand o;
  o.size = sizes;
  std::vector<int> order(sizes.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  o.stride.assign(sizes.size(), 0);
  int64_t s = 1 + (rng() % 4 == 0 ? 1 : 0); // sometimes every other element
  for (int i = static_cast<int>(order.size()) - 1; i >= 0; --i) {
    o.stride[order[i]] = s;
    s *= std::max<int64_t>(1, sizes[order[i]]) + (rng() % 5 == 0 ? 2 : 0);
  }
  o.storage.assign(static_cast<size_t>(s) + 1, 0.0);
  return o;
}

Case randomCase(std::mt19937 &rng) {
  Case c;
  int counts[4];
  for (int r = 0; r < 4; ++r) {
    counts[r] = static_cast<int>(rng() % 3);
    for (int j = 0; j < counts[r]; ++j)
      c.roleSize[r].push_back(rng() % 10 == 0 ? 0 : static_cast<int64_t>(rng() % 4) + 1);
  }
  c.roles.batch = counts[0], c.roles.m = counts[1], c.roles.n = counts[2],
  c.roles.k = counts[3];
  // Axis positions: each operand's role axes in a random order.
  auto place = [&](std::vector<int *> lists, std::vector<int> lengths) {
    int rank = 0;
    for (int l : lengths)
      rank += l;
    std::vector<int> positions(rank);
    std::iota(positions.begin(), positions.end(), 0);
    std::shuffle(positions.begin(), positions.end(), rng);
    int next = 0;
    for (size_t i = 0; i < lists.size(); ++i)
      for (int j = 0; j < lengths[i]; ++j)
        lists[i][j] = positions[next++];
  };
  place({c.roles.aBatch, c.roles.aM, c.roles.aK},
        {counts[0], counts[1], counts[3]});
  place({c.roles.bBatch, c.roles.bK, c.roles.bN},
        {counts[0], counts[3], counts[2]});
  place({c.roles.cBatch, c.roles.cM, c.roles.cN},
        {counts[0], counts[1], counts[2]});
  return c;
}

std::vector<int64_t> sizesOf(const Case &c, int operand) {
  const EinGemmRoles &r = c.roles;
  const int *lists[3][3] = {
      {r.aBatch, r.aM, r.aK}, {r.bBatch, r.bK, r.bN}, {r.cBatch, r.cM, r.cN}};
  const int roleOf[3][3] = {{0, 1, 3}, {0, 3, 2}, {0, 1, 2}};
  std::vector<int64_t> sizes;
  for (int l = 0; l < 3; ++l) {
    int role = roleOf[operand][l];
    for (size_t j = 0; j < c.roleSize[role].size(); ++j) {
      int axis = lists[operand][l][j];
      if (sizes.size() <= static_cast<size_t>(axis))
        sizes.resize(axis + 1, 0);
      sizes[axis] = c.roleSize[role][j];
    }
  }
  return sizes;
}

/// A copy of `from` read at `sizes` (size-1 axes broadcast) into a buffer
/// with `strides`.
Operand copyInto(const Operand &from, const int64_t *sizes,
                 const int64_t *strides, int64_t elements) {
  Operand to;
  to.size.assign(sizes, sizes + from.size.size());
  to.stride.assign(strides, strides + from.size.size());
  to.storage.assign(static_cast<size_t>(std::max<int64_t>(elements, 1)), 0.0);
  Operand source = from;
  forEachIndex(to.size, [&](const std::vector<int64_t> &index) {
    std::vector<int64_t> in = index;
    for (size_t d = 0; d < in.size(); ++d)
      if (from.size[d] == 1)
        in[d] = 0;
    to.at(index) = source.at(in);
  });
  return to;
}

/// Plans, copies what the plan asks, runs the reference GEMM and returns C
/// as a dense row-major array over C's sizes; `copies` gets the plan's bits.
std::vector<double> runPlanned(const Case &c, Operand a, Operand b,
                               Operand &out, int requireTN, int &copies) {
  EinGemmPlan plan;
  copies =
      ein_gemm_plan(&c.roles, a.view(), b.view(), out.view(), requireTN, &plan);
  EXPECT_EQ(copies, plan.copies);
  Operand cTemp;
  Operand *target = &out;
  if (copies) {
    if (copies & EIN_GEMM_COPY_A)
      a = copyInto(a, plan.roleSizes[0], plan.tempStrides[0],
                   plan.tempElements[0]);
    if (copies & EIN_GEMM_COPY_B)
      b = copyInto(b, plan.roleSizes[1], plan.tempStrides[1],
                   plan.tempElements[1]);
    if (copies & EIN_GEMM_COPY_C) {
      cTemp = copyInto(out, plan.roleSizes[2], plan.tempStrides[2],
                       plan.tempElements[2]);
      target = &cTemp;
    }
    EinGemmPlan again;
    EXPECT_EQ(ein_gemm_plan(&c.roles, a.view(), b.view(), target->view(),
                            requireTN, &again),
              0)
        << c.text << ": the copies do not plan without copies";
    plan = again;
  }
  if (requireTN) {
    EXPECT_TRUE(plan.transa == 1 && plan.transb == 0) << c.text;
  }
  // The loop around the GEMM over the batch axes that do not merge.
  std::vector<int64_t> outer(plan.outerSize, plan.outerSize + plan.outerCount);
  if (plan.m > 0 && plan.n > 0 && plan.batch > 0)
    forEachIndex(outer, [&](const std::vector<int64_t> &step) {
      int64_t offset[3] = {0, 0, 0};
      for (int o = 0; o < 3; ++o)
        for (size_t i = 0; i < step.size(); ++i)
          offset[o] += step[i] * plan.outerStride[o][i];
      const Operand &first = plan.swapped ? b : a;
      const Operand &second = plan.swapped ? a : b;
      referenceGemm(plan, first.storage.data() + offset[plan.swapped ? 1 : 0],
                    second.storage.data() + offset[plan.swapped ? 0 : 1],
                    target->storage.data() + offset[2]);
    });
  if (target != &out)
    forEachIndex(out.size, [&](const std::vector<int64_t> &index) {
      out.at(index) = target->at(index);
    });
  std::vector<double> dense;
  forEachIndex(out.size, [&](const std::vector<int64_t> &index) {
    dense.push_back(out.at(index));
  });
  return dense;
}

/// The contraction computed directly from the strided views.
std::vector<double> direct(const Case &c, Operand &a, Operand &b,
                           const Operand &out) {
  const EinGemmRoles &r = c.roles;
  std::vector<double> dense;
  forEachIndex(out.size, [&](const std::vector<int64_t> &ci) {
    double sum = 0;
    forEachIndex(c.roleSize[3], [&](const std::vector<int64_t> &ki) {
      std::vector<int64_t> ai(a.size.size()), bi(b.size.size());
      for (int j = 0; j < r.batch; ++j) {
        ai[r.aBatch[j]] = a.size[r.aBatch[j]] == 1 ? 0 : ci[r.cBatch[j]];
        bi[r.bBatch[j]] = b.size[r.bBatch[j]] == 1 ? 0 : ci[r.cBatch[j]];
      }
      for (int j = 0; j < r.m; ++j)
        ai[r.aM[j]] = ci[r.cM[j]];
      for (int j = 0; j < r.n; ++j)
        bi[r.bN[j]] = ci[r.cN[j]];
      for (int j = 0; j < r.k; ++j)
        ai[r.aK[j]] = bi[r.bK[j]] = ki[j];
      sum += a.at(ai) * b.at(bi);
    });
    dense.push_back(sum);
  });
  return dense;
}

TEST(GemmPlan, RandomContractionsMatchTheDirectSum) {
  std::mt19937 rng(12345);
  int inPlace = 0, total = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    Case c = randomCase(rng);
    Operand a = layout(rng, sizesOf(c, 0)), b = layout(rng, sizesOf(c, 1)),
            out = layout(rng, sizesOf(c, 2));
    // Broadcast: an input's batch axis of size 1 where the role is larger.
    for (int j = 0; j < c.roles.batch; ++j)
      if (c.roleSize[0][j] > 1 && rng() % 6 == 0)
        (rng() % 2 ? a.size[c.roles.aBatch[j]] : b.size[c.roles.bBatch[j]]) = 1;
    for (auto *o : {&a, &b})
      for (double &x : o->storage)
        x = static_cast<double>(static_cast<int>(rng() % 7) - 3);
    int requireTN = trial % 5 == 0;
    c.text = "trial " + std::to_string(trial);
    int copies = 0;
    std::vector<double> got = runPlanned(c, a, b, out, requireTN, copies);
    std::vector<double> want = direct(c, a, b, out);
    ASSERT_EQ(got, want) << c.text << " copies=" << copies;
    inPlace += copies == 0;
    ++total;
  }
  // Most random layouts are permutations that merge: read in place.
  EXPECT_GT(inPlace, total / 3);
}

/// The roles of `b h s d, b h t d -> b h s t` (attention scores).
EinGemmRoles scoresRoles() {
  EinGemmRoles r{};
  r.batch = 2, r.m = 1, r.n = 1, r.k = 1;
  r.aBatch[0] = 0, r.aBatch[1] = 1, r.aM[0] = 2, r.aK[0] = 3;
  r.bBatch[0] = 0, r.bBatch[1] = 1, r.bN[0] = 2, r.bK[0] = 3;
  r.cBatch[0] = 0, r.cBatch[1] = 1, r.cM[0] = 2, r.cN[0] = 3;
  return r;
}

TEST(GemmPlan, AttentionScoresReadInPlace) {
  EinGemmRoles r = scoresRoles();
  const int64_t qs[] = {16, 16, 2048, 128},
                qst[] = {16 * 2048 * 128, 2048 * 128, 128, 1};
  const int64_t cs[] = {16, 16, 2048, 2048},
                cst[] = {16 * 2048 * 2048, 2048 * 2048, 2048, 1};
  EinGemmPlan p;
  ASSERT_EQ(ein_gemm_plan(&r, {4, qs, qst}, {4, qs, qst}, {4, cs, cst}, 0, &p),
            0);
  // C row-major (t contiguous): computed as C^T = K Q^T, both read k-major.
  EXPECT_EQ(p.swapped, 1);
  EXPECT_EQ(p.transa, 1);
  EXPECT_EQ(p.transb, 0);
  EXPECT_EQ(p.m, 2048);
  EXPECT_EQ(p.n, 2048);
  EXPECT_EQ(p.k, 128);
  EXPECT_EQ(p.batch, 256);
  EXPECT_EQ(p.lda, 128);
  EXPECT_EQ(p.ldb, 128);
  EXPECT_EQ(p.ldc, 2048);
  EXPECT_EQ(p.strideA, 2048 * 128);
  EXPECT_EQ(p.strideC, 2048 * 2048);
  EXPECT_EQ(p.outerCount, 0);
  // With q and k given as `b s h d` views (heads split in place): no copy;
  // b and h do not merge, so b is a loop of 16 around GEMMs batched over h.
  const int64_t vst[] = {2048 * 16 * 128, 128, 16 * 128, 1};
  EXPECT_EQ(ein_gemm_plan(&r, {4, qs, vst}, {4, qs, vst}, {4, cs, cst}, 0, &p),
            0);
  EXPECT_EQ(p.lda, 16 * 128);
  EXPECT_EQ(p.batch, 16);
  EXPECT_EQ(p.strideA, 128);
  ASSERT_EQ(p.outerCount, 1);
  EXPECT_EQ(p.outerSize[0], 16);
  EXPECT_EQ(p.outerStride[0][0], 2048 * 16 * 128);
  EXPECT_EQ(p.outerStride[2][0], 16 * 2048 * 2048);
}

TEST(GemmPlan, AnOutputWithNeitherAxisContiguousIsCopied) {
  EinGemmRoles r = scoresRoles();
  // c's s and t both have stride > 1 (every other element of a wider row):
  // cuBLAS writes a column-major matrix only, so C is computed in a copy.
  const int64_t qs[] = {2, 3, 4, 5}, qst[] = {60, 20, 5, 1};
  const int64_t cs[] = {2, 3, 4, 4}, cst[] = {96, 32, 8, 2};
  EinGemmPlan p;
  EXPECT_EQ(ein_gemm_plan(&r, {4, qs, qst}, {4, qs, qst}, {4, cs, cst}, 0, &p),
            EIN_GEMM_COPY_C);
}

TEST(GemmPlan, Fp8NeedsKContiguousOperands) {
  // m k, k n -> m n, all row-major: B has n contiguous, not k.
  EinGemmRoles r{};
  r.m = r.n = r.k = 1;
  r.aM[0] = 0, r.aK[0] = 1, r.bK[0] = 0, r.bN[0] = 1, r.cM[0] = 0, r.cN[0] = 1;
  const int64_t s[] = {64, 64}, st[] = {64, 1};
  EinGemmPlan p;
  // Without fp8: C^T = B^T A^T reads both in place.
  EXPECT_EQ(ein_gemm_plan(&r, {2, s, st}, {2, s, st}, {2, s, st}, 0, &p), 0);
  EXPECT_EQ(p.swapped, 1);
  // With fp8 (TN): the first operand (B^T, n x k) must be read transposed
  // with k contiguous; B is n-contiguous, so it is copied, and A is fine.
  EXPECT_EQ(ein_gemm_plan(&r, {2, s, st}, {2, s, st}, {2, s, st}, 1, &p),
            EIN_GEMM_COPY_B);
}

} // namespace
