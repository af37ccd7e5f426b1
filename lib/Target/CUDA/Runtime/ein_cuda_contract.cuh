// One pairwise contraction over strided views: ein_gemm_plan decides how
// cuBLASLt reads them; an operand it cannot read in place is copied first
// (ein_copy into a stream-ordered temporary, its bytes the only extra
// traffic), the GEMM runs once per step of the batch axes that do not merge,
// and a C computed in a copy is copied back. Eighth in the concatenation
// order, after ein_gemm_plan.h (docs/cuda.md).
#ifndef EIN_CUDA_CONTRACT_CUH
#define EIN_CUDA_CONTRACT_CUH

/// The EinDType of a storage type (the floating types cuBLASLt multiplies).
template <typename T> struct EinGemmDType;
template <> struct EinGemmDType<double> {
  static constexpr EinDType value = EIN_DT_F64;
};
template <> struct EinGemmDType<float> {
  static constexpr EinDType value = EIN_DT_F32;
};
template <> struct EinGemmDType<ein_f16_t> {
  static constexpr EinDType value = EIN_DT_F16;
};
template <> struct EinGemmDType<ein_bf16_t> {
  static constexpr EinDType value = EIN_DT_BF16;
};
template <> struct EinGemmDType<ein_f8e4m3_t> {
  static constexpr EinDType value = EIN_DT_F8E4M3;
};
template <> struct EinGemmDType<ein_f8e5m2_t> {
  static constexpr EinDType value = EIN_DT_F8E5M2;
};
/// Whether a storage type is an fp8 format (cuBLASLt's FP8 path wants TN).
template <typename T> struct EinIsFp8 {
  static constexpr bool value = std::is_same<T, ein_f8e4m3_t>::value ||
                                std::is_same<T, ein_f8e5m2_t>::value;
};

/// What a contraction did, for tests and for the cost report's claim that
/// a layout needs no copy: the plan's copy bits and the GEMM calls made.
struct EinContractStats {
  int copies = 0;
  int64_t gemmCalls = 0;
  bool epilogueInGemm = false; // the epilogue ran in cuBLASLt's
};

/// A functor giving 0 in T: the result of a contraction over empty k.
template <typename T> struct EinZeroOf {
  template <typename U> EIN_HD T operator()(U) const {
    return ein_cvt<T>(0.0f);
  }
};

template <typename T, int R>
inline EinGemmView ein_gemm_view(const EinView<T, R> &v) {
  return EinGemmView{R, v.size, v.stride};
}

/// The operand `v` read at the role sizes `sizes` (an axis of size 1 where
/// the role is larger read with stride 0), for a copy.
template <typename T, int R>
inline EinView<const T, R> ein_role_view(const EinView<T, R> &v,
                                         const int64_t *sizes) {
  EinView<const T, R> out;
  out.data = v.data;
  for (int d = 0; d < R; ++d) {
    out.size[d] = sizes[d];
    out.stride[d] = v.size[d] == 1 && sizes[d] != 1 ? 0 : v.stride[d];
  }
  return out;
}


template <typename T, int R>
inline EinView<const T, R> ein_const_view(const EinView<T, R> &v) {
  return ein_make_view<const T, R>(v.data, v.size, v.stride);
}

/// Copies input `operand` (0: A, 1: B) of a contraction into a
/// stream-ordered temporary laid out as `plan` says, points `v` at it and
/// returns it (to be freed after the GEMM).
template <typename T, int R>
inline T *ein_copy_operand(cudaStream_t stream, EinView<const T, R> &v,
                           const EinGemmPlan &plan, int operand) {
  T *copy = nullptr;
  EIN_CUDA_CHECK(cudaMallocAsync(
      &copy, size_t(plan.tempElements[operand]) * sizeof(T), stream));
  auto dst = ein_make_view<T, R>(copy, plan.roleSizes[operand],
                                 plan.tempStrides[operand]);
  ein_copy(stream, dst, ein_role_view(v, plan.roleSizes[operand]));
  v = ein_const_view(dst);
  return copy;
}

/// The integer GEMM cuBLASLt lacks (i32, i64; ein's integer arithmetic
/// wraps): the plan's column-major problem, one 16 x 16 tile of D per block
/// and step of the batch loop, A and B tiles staged in shared memory so
/// that each element is read from global memory once per tile.
template <typename T>
__global__ void
ein_gemm_int_kernel(const T *first, const T *second, T *d, int64_t m, int64_t n,
                    int64_t k, int64_t lda, int64_t ldb, int64_t ldc,
                    int transa, int transb, int64_t strideA, int64_t strideB,
                    int64_t strideC, int64_t batch, int64_t tilesM,
                    int64_t tilesN) {
  __shared__ T ta[16][17], tb[16][17];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t tiles = tilesM * tilesN;
  for (int64_t t = blockIdx.x; t < tiles * batch; t += gridDim.x) {
    const int64_t q = t / tiles, i0 = t % tiles % tilesM * 16,
                  j0 = t % tiles / tilesM * 16;
    const T *a = first + q * strideA, *b = second + q * strideB;
    const int64_t i = i0 + tx, j = j0 + ty;
    T acc = T(0);
    for (int64_t l0 = 0; l0 < k; l0 += 16) {
      // ta[l][r] = op(A)(i0 + r, l0 + l); tb[c][l] = op(B)(l0 + l, j0 + c).
      const int64_t r = i0 + tx, la = l0 + ty, lb = l0 + tx, c = j0 + ty;
      ta[ty][tx] =
          r < m && la < k ? (transa ? a[la + r * lda] : a[r + la * lda]) : T(0);
      tb[ty][tx] =
          c < n && lb < k ? (transb ? b[c + lb * ldb] : b[lb + c * ldb]) : T(0);
      __syncthreads();
      for (int l = 0; l < 16; ++l)
        acc = ein_add(acc, ein_mul(ta[l][tx], tb[ty][l]));
      __syncthreads();
    }
    if (i < m && j < n)
      d[q * strideC + i + j * ldc] = acc;
  }
}

/// Calls f(offsets) once per step of the plan's loop around the GEMM (the
/// batch axes that do not merge), offsets[X] the elements operand X (0: A,
/// 1: B, 2: C) advances; returns the number of steps.
template <typename F>
inline int64_t ein_for_each_outer_step(const EinGemmPlan &plan, F f) {
  int64_t step[EIN_GEMM_MAX_AXES] = {0}, steps = 0;
  for (;;) {
    int64_t off[3] = {0, 0, 0};
    for (int i = 0; i < plan.outerCount; ++i)
      for (int o = 0; o < 3; ++o)
        off[o] += step[i] * plan.outerStride[o][i];
    f(off);
    ++steps;
    int i = plan.outerCount - 1;
    for (; i >= 0; --i) {
      if (++step[i] < plan.outerSize[i])
        break;
      step[i] = 0;
    }
    if (i < 0)
      return steps;
  }
}

/// The integer contraction of `ein_contract`: its plan's problem through
/// ein_gemm_int_kernel, once per outer batch step. Returns the launches.
template <typename T, int RA, int RB, int RC>
inline int64_t ein_contract_int(cudaStream_t stream, const EinGemmPlan &plan,
                                const EinView<const T, RA> &a,
                                const EinView<const T, RB> &b,
                                EinView<T, RC> target) {
  const int64_t tilesM = (plan.m + 15) / 16, tilesN = (plan.n + 15) / 16;
  auto kernel = &ein_gemm_int_kernel<T>;
  return ein_for_each_outer_step(plan, [&](const int64_t *off) {
    const T *first = plan.swapped ? b.data + off[1] : a.data + off[0];
    const T *second = plan.swapped ? a.data + off[0] : b.data + off[1];
    EIN_LAUNCH(kernel, ein_grid_for(tilesM * tilesN * plan.batch, 1),
               dim3(16, 16), stream, first, second, target.data + off[2],
               plan.m, plan.n, plan.k, plan.lda, plan.ldb, plan.ldc,
               plan.transa, plan.transb, plan.strideA, plan.strideB,
               plan.strideC, plan.batch, tilesM, tilesN);
  });
}

/// What a contraction applies to its product before writing C (the
/// emitter folds the elementwise ops reading only the product into it):
/// C = act(alpha * (A x B) + bias), act relu when `bits` has EIN_EPI_RELU,
/// bias read at C's positions (stride 0 where it broadcasts) when it has
/// EIN_EPI_BIAS.
template <typename TC, int RC> struct EinEpilogue {
  int bits = 0;
  double alpha = 1;
  EinView<const TC, RC> bias{};
};

/// The epilogue as a kernel over the written C (when cuBLASLt cannot take
/// it: ein_contract), computed in f32 and rounded once, as cuBLASLt does.
template <typename TC> struct EinEpilogueFn {
  int bits;
  EIN_HD TC operator()(TC v, TC bias) const {
    auto x = EinCompute<TC>::load(v);
    if (bits & EIN_EPI_BIAS)
      x = x + EinCompute<TC>::load(bias);
    if (bits & EIN_EPI_RELU)
      x = ein_relu(x);
    return ein_cvt<TC>(x);
  }
};

/// Whether cuBLASLt's epilogue computes `epi` for `plan` with D `target`:
/// a float GEMM (not fp8) written in place, the bias varying only along
/// the GEMM's m axes (C's m, or n when the plan swaps the operands), with
/// C's strides there (contiguous: one element per row of D).
template <typename TC, int RC>
inline bool ein_epilogue_in_gemm(const EinGemmRoles &roles,
                                 const EinGemmPlan &plan, int copies,
                                 const EinView<TC, RC> &c,
                                 const EinEpilogue<TC, RC> &epi, int fp8) {
  if (!epi.bits || (copies & EIN_GEMM_COPY_C) || fp8 ||
      std::is_same<TC, double>::value)
    return false;
  if (!(epi.bits & EIN_EPI_BIAS))
    return true;
  bool rows[EIN_GEMM_MAX_AXES] = {false};
  for (int i = 0; i < (plan.swapped ? roles.n : roles.m); ++i)
    rows[plan.swapped ? roles.cN[i] : roles.cM[i]] = true;
  for (int d = 0; d < RC; ++d)
    if (c.size[d] != 1 &&
        epi.bias.stride[d] != (rows[d] ? c.stride[d] : int64_t(0)))
      return false;
  return true;
}

/// C = A x B over `roles` (C's dtype the einsum's result, the accumulation
/// f32, f64 for f64 operands), then `epi` (cuBLASLt's epilogue when it
/// fits, ein_epilogue_in_gemm, else a kernel over C). `allowTf32` lets
/// cuBLASLt round f32 operands to TF32; fp8 operands are laid out
/// k-contiguous as cuBLASLt's FP8 path requires (a copy when they are
/// not). `workspace` is cuBLASLt's.
template <typename TA, typename TB, typename TC, int RA, int RB, int RC>
inline EinContractStats
ein_contract(cudaStream_t stream, const EinGemmRoles &roles,
             EinView<const TA, RA> a, EinView<const TB, RB> b,
             EinView<TC, RC> c, bool allowTf32, void *workspace,
             size_t workspaceBytes,
             const EinEpilogue<TC, RC> &epi = EinEpilogue<TC, RC>()) {
  static_assert(RA <= EIN_GEMM_MAX_AXES && RB <= EIN_GEMM_MAX_AXES &&
                    RC <= EIN_GEMM_MAX_AXES,
                "ein_contract: rank above EIN_GEMM_MAX_AXES");
  const int fp8 = EinIsFp8<TA>::value || EinIsFp8<TB>::value;
  if (EinIsInt<TC>::value && (epi.bits || epi.alpha != 1))
    ein_fail("ein_contract: an epilogue on an integer contraction");
  EinContractStats stats;
  EinGemmPlan plan;
  stats.copies = ein_gemm_plan(&roles, ein_gemm_view(a), ein_gemm_view(b),
                               ein_gemm_view(c), fp8, &plan);
  TA *copyA = nullptr;
  TB *copyB = nullptr;
  TC *copyC = nullptr;
  EinView<TC, RC> target = c;
  if (stats.copies & EIN_GEMM_COPY_A)
    copyA = ein_copy_operand(stream, a, plan, 0);
  if (stats.copies & EIN_GEMM_COPY_B)
    copyB = ein_copy_operand(stream, b, plan, 1);
  if (stats.copies & EIN_GEMM_COPY_C) {
    EIN_CUDA_CHECK(cudaMallocAsync(
        &copyC, size_t(plan.tempElements[2]) * sizeof(TC), stream));
    target =
        ein_make_view<TC, RC>(copyC, plan.roleSizes[2], plan.tempStrides[2]);
  }
  if (stats.copies && ein_gemm_plan(&roles, ein_gemm_view(a), ein_gemm_view(b),
                                    ein_gemm_view(target), fp8, &plan) != 0)
    ein_fail("ein_contract: the copies do not plan without copies");

  bool empty = plan.m == 0 || plan.n == 0 || plan.batch == 0;
  for (int i = 0; i < plan.outerCount; ++i)
    empty = empty || plan.outerSize[i] == 0;
  stats.epilogueInGemm =
      !empty && plan.k != 0 &&
      ein_epilogue_in_gemm(roles, plan, stats.copies, c, epi, fp8);
  if (!empty && plan.k == 0) {
    // Nothing to sum: zeros (cuBLASLt's k must be positive).
    ein_map(stream, EinZeroOf<TC>(), target, ein_const_view(target));
  } else if (!empty) {
    if constexpr (EinIsInt<TC>::value) {
      static_assert(std::is_same<TA, TB>::value && std::is_same<TA, TC>::value,
                    "ein_contract: integer operands and result of one dtype");
      stats.gemmCalls = ein_contract_int(stream, plan, a, b, target);
    } else {
      constexpr EinDType ta = EinGemmDType<TA>::value,
                         tb = EinGemmDType<TB>::value,
                         tc = EinGemmDType<TC>::value;
      EinGemm g{};
      g.a_type = plan.swapped ? tb : ta;
      g.b_type = plan.swapped ? ta : tb;
      g.c_type = g.d_type = tc;
      g.compute_64f = ta == EIN_DT_F64;
      g.allow_tf32 = allowTf32;
      g.transa = plan.transa;
      g.transb = plan.transb;
      g.m = plan.m, g.n = plan.n, g.k = plan.k;
      g.lda = plan.lda, g.stride_a = plan.strideA;
      g.ldb = plan.ldb, g.stride_b = plan.strideB;
      g.ldc = g.ldd = plan.ldc;
      g.stride_c = g.stride_d = plan.strideC;
      g.batch = plan.batch;
      g.alpha = epi.alpha, g.beta = 0;
      if (stats.epilogueInGemm) {
        g.epilogue = epi.bits;
        g.bias = epi.bias.data;
      }
      // One GEMM per step of the batch axes that do not merge.
      bool refused = false;
      auto step = [&](const int64_t *off) {
        g.a = plan.swapped ? (const void *)(b.data + off[1])
                           : (const void *)(a.data + off[0]);
        g.b = plan.swapped ? (const void *)(a.data + off[0])
                           : (const void *)(b.data + off[1]);
        g.c = nullptr;
        g.d = target.data + off[2];
        refused = !ein_gemm(g, workspace, workspaceBytes, stream) || refused;
      };
      stats.gemmCalls = ein_for_each_outer_step(plan, step);
      if (refused) {
        // No cuBLASLt algorithm took the epilogue (at some step): every
        // step again without it, then the kernel.
        g.epilogue = 0, g.bias = nullptr;
        stats.epilogueInGemm = false;
        stats.gemmCalls += ein_for_each_outer_step(plan, step);
      }
    }
  }
  if (copyC)
    ein_copy(stream, c, ein_const_view(target));
  if (!empty && epi.bits && !stats.epilogueInGemm)
    ein_map(stream, EinEpilogueFn<TC>{epi.bits}, c, ein_const_view(c),
            epi.bits & EIN_EPI_BIAS ? epi.bias : ein_const_view(c));
  if (copyA)
    EIN_CUDA_CHECK(cudaFreeAsync(copyA, stream));
  if (copyB)
    EIN_CUDA_CHECK(cudaFreeAsync(copyB, stream));
  if (copyC)
    EIN_CUDA_CHECK(cudaFreeAsync(copyC, stream));
  return stats;
}

#endif // EIN_CUDA_CONTRACT_CUH
