/* Maps a pairwise contraction over strided views onto one column-major,
 * strided-batched GEMM (the problem cuBLASLt solves), or says which operands
 * must first be copied into a layout it can read. Host code in plain C++:
 * pasted into every generated .cu, compiled by nvcc and by a host compiler
 * alike, and unit-tested on its own (unittests/GemmPlanTest.cpp).
 *
 * The contraction is C[batch.., m.., n..] = sum_k A[batch.., m.., k..] *
 * B[batch.., k.., n..], each operand's axes in any order and with any
 * non-negative strides (a size-1 axis of an operand broadcasts). A role
 * (batch, m, n, k) can be one GEMM dimension only when, in every operand
 * that has it, its axes merge into one strided dimension in one common
 * order: then transposition flags, leading dimensions and batch strides
 * absorb any permutation and no byte moves; batch axes that do not merge
 * become a loop around the GEMM. An output whose m axes are not
 * the unit-stride ones is computed transposed (C^T = B^T A^T) before it is
 * ever copied. */
#ifndef EIN_GEMM_PLAN_H
#define EIN_GEMM_PLAN_H

#include <stdint.h>

#define EIN_GEMM_MAX_AXES 16

/* The roles of the axes, fixed when the contraction is compiled. For each
 * role, the position of each of its axes in each operand that has it, in
 * one listing order shared by the operands. */
typedef struct {
  int batch, m, n, k; /* number of axes in each role */
  int aBatch[EIN_GEMM_MAX_AXES], aM[EIN_GEMM_MAX_AXES], aK[EIN_GEMM_MAX_AXES];
  int bBatch[EIN_GEMM_MAX_AXES], bK[EIN_GEMM_MAX_AXES], bN[EIN_GEMM_MAX_AXES];
  int cBatch[EIN_GEMM_MAX_AXES], cM[EIN_GEMM_MAX_AXES], cN[EIN_GEMM_MAX_AXES];
} EinGemmRoles;

/* Sizes and strides of an operand, in elements, read at run time. */
typedef struct {
  int rank;
  const int64_t *size;
  const int64_t *stride;
} EinGemmView;

enum { EIN_GEMM_COPY_A = 1, EIN_GEMM_COPY_B = 2, EIN_GEMM_COPY_C = 4 };

/* One column-major strided-batched GEMM, in cuBLAS's terms: D (m x n,
 * leading dimension ldc) = op(first) (m x k) * op(second) (k x n), batch
 * times, each matrix `stride*` elements after the previous one. */
typedef struct {
  int swapped; /* 0: first = the einsum's A; 1: first = B (C^T = B^T A^T) */
  int transa, transb; /* 0: N, 1: T */
  int64_t m, n, k, batch;
  int64_t lda, ldb, ldc;
  int64_t strideA, strideB, strideC; /* of first, second, C */
  /* Batch axes that do not merge with the others run as a loop around the
   * GEMM (outermost first): outerCount of them, each of outerSize[i], the
   * einsum's operand X (0: A, 1: B, 2: C) advancing outerStride[X][i]
   * elements per step. */
  int outerCount;
  int64_t outerSize[EIN_GEMM_MAX_AXES];
  int64_t outerStride[3][EIN_GEMM_MAX_AXES];
  /* EIN_GEMM_COPY_* bits: operands to copy first (C: compute into a copy);
   * the copy of operand X has, for each of X's axes, the strides
   * tempStrides[X] of a contiguous buffer of tempElements[X] elements. */
  int copies;
  int64_t tempStrides[3][EIN_GEMM_MAX_AXES];
  int64_t tempElements[3];
  /* The size of each axis of each operand at its role's size: a copy reads
   * operand X through these sizes (an axis of size 1 where the role is
   * larger read with stride 0, a broadcast) and writes tempStrides[X]. */
  int64_t roleSizes[3][EIN_GEMM_MAX_AXES];
} EinGemmPlan;

/* The size of a role's axis j: the largest over the operands (the others
 * have 1 there, a broadcast). */
static inline int64_t ein_gemm_role_size_(const EinGemmView *views[3],
                                          const int *axes[3], int j) {
  int64_t s = 1, any = 0;
  for (int o = 0; o < 3; ++o)
    if (views[o] && axes[o]) {
      int64_t v = views[o]->size[axes[o][j]];
      if (!any || v == 0 || (s != 0 && v > s))
        s = v;
      any = 1;
    }
  return s;
}

/* Merges the axes `axes` of `v` listed in `order` (outermost first) whose
 * role sizes exceed 1 into one strided dimension: sets *stride (-1 when no
 * axis exceeds 1: any stride will do) and returns 1, or 0 when they do not
 * merge. An axis of size 1 in `v` where the role is larger broadcasts:
 * stride 0. */
static inline int ein_gemm_merge_(const EinGemmView *v, const int *axes,
                                  const int64_t *roleSize, const int *order,
                                  int count, int64_t *stride) {
  int64_t inner = -1, innerSize = 0;
  for (int i = count - 1; i >= 0; --i) {
    int j = order[i];
    if (roleSize[j] <= 1)
      continue;
    int a = axes[j];
    int64_t s = v->size[a] == 1 ? 0 : v->stride[a];
    if (inner >= 0 && s != inner * innerSize)
      return 0;
    if (inner < 0)
      *stride = s;
    inner = s;
    innerSize = roleSize[j];
  }
  if (inner < 0)
    *stride = -1;
  return 1;
}

/* The orders to try for a role: its listing order, then the axes sorted by
 * decreasing stride in each operand that has the role. */
static inline int ein_gemm_orders_(const EinGemmView *views[3],
                                   const int *axes[3], int count,
                                   int orders[4][EIN_GEMM_MAX_AXES]) {
  int n = 0;
  for (int j = 0; j < count; ++j)
    orders[0][j] = j;
  n = 1;
  for (int o = 0; o < 3; ++o) {
    if (!views[o] || !axes[o])
      continue;
    int *ord = orders[n];
    for (int j = 0; j < count; ++j)
      ord[j] = j;
    for (int i = 1; i < count; ++i) /* stable insertion sort */
      for (int j = i; j > 0 && views[o]->stride[axes[o][ord[j]]] >
                                   views[o]->stride[axes[o][ord[j - 1]]];
           --j) {
        int t = ord[j];
        ord[j] = ord[j - 1];
        ord[j - 1] = t;
      }
    ++n;
  }
  return n;
}

/* For one role: the order in which all its holders merge (or, failing
 * that, the one that leaves C mergeable and the fewest operands to copy),
 * and each holder's merged stride. Sets bit o of *fails for each holder
 * that does not merge in the chosen order. */
static inline void ein_gemm_role_(const EinGemmView *views[3],
                                  const int *axes[3], int count,
                                  int64_t *roleSize, int *order,
                                  int64_t stride[3], int *fails) {
  int orders[4][EIN_GEMM_MAX_AXES];
  for (int j = 0; j < count; ++j)
    roleSize[j] = ein_gemm_role_size_(views, axes, j);
  int n = ein_gemm_orders_(views, axes, count, orders);
  int best = -1, bestScore = 1 << 30, bestFails = 0;
  int64_t bestStride[3] = {-1, -1, -1};
  for (int c = 0; c < n; ++c) {
    int f = 0, score = 0;
    int64_t s[3] = {-1, -1, -1};
    for (int o = 0; o < 3; ++o)
      if (views[o] && axes[o] &&
          !ein_gemm_merge_(views[o], axes[o], roleSize, orders[c], count,
                           &s[o])) {
        f |= 1 << o;
        score += o == 2 ? 4 : 1; /* a copy of C costs a write and a read */
      }
    if (score < bestScore) {
      best = c, bestScore = score, bestFails = f;
      for (int o = 0; o < 3; ++o)
        bestStride[o] = s[o];
    }
  }
  for (int j = 0; j < count; ++j)
    order[j] = orders[best][j];
  for (int o = 0; o < 3; ++o)
    stride[o] = bestStride[o];
  *fails |= bestFails;
}

/* For the batch role: the order, and the split point, such that the axes
 * order[split..] merge in every operand and the axes before it (a loop
 * around the GEMM) have the fewest steps. One axis always merges, so the
 * batch role never needs a copy. */
static inline int ein_gemm_batch_(const EinGemmView *views[3],
                                  const int *axes[3], int count,
                                  int64_t *roleSize, int *order,
                                  int64_t stride[3]) {
  int orders[4][EIN_GEMM_MAX_AXES];
  for (int j = 0; j < count; ++j)
    roleSize[j] = ein_gemm_role_size_(views, axes, j);
  int n = ein_gemm_orders_(views, axes, count, orders);
  int best = 0, bestSplit = 0;
  int64_t bestSteps = -1;
  for (int c = 0; c < n; ++c)
    for (int p = 0; p <= count; ++p) {
      int merges = 1;
      int64_t s[3] = {-1, -1, -1};
      for (int o = 0; o < 3; ++o)
        merges = merges && ein_gemm_merge_(views[o], axes[o], roleSize,
                                           orders[c] + p, count - p, &s[o]);
      if (!merges)
        continue;
      int64_t steps = 1;
      for (int i = 0; i < p; ++i)
        steps *= roleSize[orders[c][i]];
      if (bestSteps < 0 || steps < bestSteps) {
        best = c, bestSplit = p, bestSteps = steps;
        for (int o = 0; o < 3; ++o)
          stride[o] = s[o];
      }
      break;
    }
  for (int j = 0; j < count; ++j)
    order[j] = orders[best][j];
  return bestSplit;
}

static inline int64_t ein_gemm_max_(int64_t a, int64_t b) {
  return a > b ? a : b;
}

/* A leading dimension for a matrix of `rows` rows whose column stride is
 * `s` (-1: any); 0 when `s` cannot be one (cuBLAS needs ld >= rows). */
static inline int64_t ein_gemm_ld_(int64_t s, int64_t rows) {
  int64_t least = ein_gemm_max_(1, rows);
  if (s < 0)
    return least;
  return s >= least ? s : 0;
}

/* Whether a stride is unit for a dimension of `size` (any stride is when
 * size <= 1). */
static inline int ein_gemm_unit_(int64_t s, int64_t size) {
  return size <= 1 || s == 1 || s < 0;
}

/* Plans the GEMM of a contraction. `requireTN` (fp8): op(first) must be a
 * transposed and op(second) a plain column-major matrix, both with k
 * contiguous. Returns 0 when the GEMM reads and writes the views in place,
 * else the EIN_GEMM_COPY_* bits of plan->copies: copy those operands into
 * buffers laid out by plan->tempStrides and plan again on the copies
 * (which then succeeds without copies). */
static inline int ein_gemm_plan(const EinGemmRoles *r, EinGemmView a,
                                EinGemmView b, EinGemmView c, int requireTN,
                                EinGemmPlan *plan) {
  const EinGemmView *all[3] = {&a, &b, &c};
  int64_t batchSize[EIN_GEMM_MAX_AXES], mSize[EIN_GEMM_MAX_AXES],
      nSize[EIN_GEMM_MAX_AXES], kSize[EIN_GEMM_MAX_AXES];
  int batchOrder[EIN_GEMM_MAX_AXES], mOrder[EIN_GEMM_MAX_AXES],
      nOrder[EIN_GEMM_MAX_AXES], kOrder[EIN_GEMM_MAX_AXES];
  int64_t sBatch[3] = {-1, -1, -1}, sM[3], sN[3], sK[3];
  int fails = 0;
  int split;
  {
    const int *axes[3] = {r->aBatch, r->bBatch, r->cBatch};
    split = ein_gemm_batch_(all, axes, r->batch, batchSize, batchOrder, sBatch);
  }
  {
    const EinGemmView *v[3] = {&a, 0, &c};
    const int *axes[3] = {r->aM, 0, r->cM};
    ein_gemm_role_(v, axes, r->m, mSize, mOrder, sM, &fails);
  }
  {
    const EinGemmView *v[3] = {0, &b, &c};
    const int *axes[3] = {0, r->bN, r->cN};
    ein_gemm_role_(v, axes, r->n, nSize, nOrder, sN, &fails);
  }
  {
    const EinGemmView *v[3] = {&a, &b, 0};
    const int *axes[3] = {r->aK, r->bK, 0};
    ein_gemm_role_(v, axes, r->k, kSize, kOrder, sK, &fails);
  }
  int64_t B = 1, M = 1, N = 1, K = 1;
  for (int j = split; j < r->batch; ++j)
    B *= batchSize[batchOrder[j]];
  for (int j = 0; j < r->m; ++j)
    M *= mSize[j];
  for (int j = 0; j < r->n; ++j)
    N *= nSize[j];
  for (int j = 0; j < r->k; ++j)
    K *= kSize[j];

  /* The output: m unit-stride (as is) or n unit-stride (transposed). A
   * batch of one needs no batch stride; several must not overlap. */
  int swapped = 0;
  int64_t ldc = 0;
  if (!(fails & 4)) {
    if (ein_gemm_unit_(sM[2], M) && (ldc = ein_gemm_ld_(sN[2], M)) != 0)
      swapped = 0;
    else if (ein_gemm_unit_(sN[2], N) && (ldc = ein_gemm_ld_(sM[2], N)) != 0)
      swapped = 1;
    else
      fails |= 4;
  }
  if (fails & 4) {
    swapped = 0;
    ldc = ein_gemm_max_(1, M);
  }
  /* The operands of the column-major problem: first (rows x k), second
   * (k x cols). */
  int64_t rows = swapped ? N : M, cols = swapped ? M : N;
  int firstOp = swapped ? 1 : 0, secondOp = swapped ? 0 : 1;
  int64_t sFirstRows = swapped ? sN[1] : sM[0];
  int64_t sFirstK = swapped ? sK[1] : sK[0];
  int64_t sSecondK = swapped ? sK[0] : sK[1];
  int64_t sSecondCols = swapped ? sM[0] : sN[1];
  int transa = 0, transb = 0;
  int64_t lda = 0, ldb = 0;
  if (!(fails & (1 << firstOp))) {
    if (!requireTN && ein_gemm_unit_(sFirstRows, rows) &&
        (lda = ein_gemm_ld_(sFirstK, rows)) != 0)
      transa = 0;
    else if (ein_gemm_unit_(sFirstK, K) &&
             (lda = ein_gemm_ld_(sFirstRows, K)) != 0)
      transa = 1;
    else
      fails |= 1 << firstOp;
  }
  if (!(fails & (1 << secondOp))) {
    if (ein_gemm_unit_(sSecondK, K) &&
        (ldb = ein_gemm_ld_(sSecondCols, K)) != 0)
      transb = 0;
    else if (!requireTN && ein_gemm_unit_(sSecondCols, cols) &&
             (ldb = ein_gemm_ld_(sSecondK, cols)) != 0)
      transb = 1;
    else
      fails |= 1 << secondOp;
  }
  /* A copied operand is laid out k-contiguous: first as k x rows
   * (transposed), second as k x cols (plain): the fp8 layout too. */
  if (fails & (1 << firstOp))
    transa = 1, lda = ein_gemm_max_(1, K);
  if (fails & (1 << secondOp))
    transb = 0, ldb = ein_gemm_max_(1, K);

  plan->swapped = swapped;
  plan->transa = transa;
  plan->transb = transb;
  plan->m = rows;
  plan->n = cols;
  plan->k = K;
  plan->batch = B;
  plan->lda = lda;
  plan->ldb = ldb;
  plan->ldc = ldc;
  {
    int64_t sb[3];
    for (int o = 0; o < 3; ++o)
      sb[o] = sBatch[o] < 0 ? 0 : sBatch[o];
    /* Copies hold one matrix after another. */
    int64_t perMatrix[3] = {M * K, K * N, M * N};
    for (int o = 0; o < 3; ++o)
      if (fails & (1 << o))
        sb[o] = perMatrix[o];
    plan->strideA = sb[firstOp];
    plan->strideB = sb[secondOp];
    plan->strideC = sb[2];
  }
  plan->copies = fails;
  plan->outerCount = split;
  for (int i = 0; i < split; ++i) {
    int j = batchOrder[i];
    const int *axes[3] = {r->aBatch, r->bBatch, r->cBatch};
    plan->outerSize[i] = batchSize[j];
    for (int o = 0; o < 3; ++o) {
      const EinGemmView *v = all[o];
      plan->outerStride[o][i] =
          v->size[axes[o][j]] == 1 ? 0 : v->stride[axes[o][j]];
    }
  }
  for (int o = 0; o < 3; ++o)
    for (int j = 0; j < EIN_GEMM_MAX_AXES; ++j)
      plan->roleSizes[o][j] = j < all[o]->rank ? all[o]->size[j] : 1;
  for (int j = 0; j < r->batch; ++j) {
    plan->roleSizes[0][r->aBatch[j]] = batchSize[j];
    plan->roleSizes[1][r->bBatch[j]] = batchSize[j];
    plan->roleSizes[2][r->cBatch[j]] = batchSize[j];
  }
  for (int j = 0; j < r->m; ++j)
    plan->roleSizes[0][r->aM[j]] = plan->roleSizes[2][r->cM[j]] = mSize[j];
  for (int j = 0; j < r->n; ++j)
    plan->roleSizes[1][r->bN[j]] = plan->roleSizes[2][r->cN[j]] = nSize[j];
  for (int j = 0; j < r->k; ++j)
    plan->roleSizes[0][r->aK[j]] = plan->roleSizes[1][r->bK[j]] = kSize[j];
  /* The copies' layouts: A as [batch, m, k], B as [batch, n, k], C as
   * [batch, n, m], each role's axes in the order chosen above, row-major;
   * an axis of size 0 counts as 1, so that no stride is 0 (an empty k
   * would otherwise give A's m axis stride 0, which no GEMM reads). */
  for (int o = 0; o < 3; ++o) {
    plan->tempElements[o] = 0;
    for (int j = 0; j < EIN_GEMM_MAX_AXES; ++j)
      plan->tempStrides[o][j] = 0;
    if (!(fails & (1 << o)))
      continue;
    const int *outer = o == 0 ? r->aBatch : o == 1 ? r->bBatch : r->cBatch;
    const int *middle = o == 0 ? r->aM : o == 1 ? r->bN : r->cN;
    const int *inner = o == 0 ? r->aK : o == 1 ? r->bK : r->cM;
    const int *middleOrder = o == 0 ? mOrder : nOrder;
    const int *innerOrder = o == 2 ? mOrder : kOrder;
    const int64_t *middleSize = o == 0 ? mSize : nSize;
    const int64_t *innerSize = o == 2 ? mSize : kSize;
    int middleCount = o == 0 ? r->m : r->n;
    int innerCount = o == 2 ? r->m : r->k;
    int64_t s = 1;
    for (int i = innerCount - 1; i >= 0; --i) {
      plan->tempStrides[o][inner[innerOrder[i]]] = s;
      s *= ein_gemm_max_(1, innerSize[innerOrder[i]]);
    }
    for (int i = middleCount - 1; i >= 0; --i) {
      plan->tempStrides[o][middle[middleOrder[i]]] = s;
      s *= ein_gemm_max_(1, middleSize[middleOrder[i]]);
    }
    for (int i = r->batch - 1; i >= 0; --i) {
      plan->tempStrides[o][outer[batchOrder[i]]] = s;
      s *= ein_gemm_max_(1, batchSize[batchOrder[i]]);
    }
    plan->tempElements[o] = s;
  }
  return fails;
}

#endif /* EIN_GEMM_PLAN_H */
