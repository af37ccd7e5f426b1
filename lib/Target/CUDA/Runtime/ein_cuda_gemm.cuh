// ein's matrix multiply: a descriptor shaped like cuBLASLt's column-major
// strided-batched matmul, run by cuBLASLt under nvcc and by a reference loop
// that reads the descriptor the same way under emulation.
#ifndef EIN_CUDA_GEMM_CUH
#define EIN_CUDA_GEMM_CUH

enum EinDType {
  EIN_DT_F64,
  EIN_DT_F32,
  EIN_DT_F16,
  EIN_DT_BF16,
  EIN_DT_F8E4M3,
  EIN_DT_F8E5M2
};

/// A GEMM's epilogue, cuBLASLt's CUBLASLT_MATMUL_DESC_EPILOGUE: bits of
/// what is applied, in f32, to each element of alpha * op(A) op(B) + beta *
/// C before it is rounded to D: + bias[i] (a vector of m elements of D's
/// dtype, one per row, the same for every column and batch), then relu.
enum EinEpilogueBits { EIN_EPI_BIAS = 1, EIN_EPI_RELU = 2 };

/// D[b] = alpha * op(A[b]) op(B[b]) + beta * C[b] for b < batch, cuBLASLt's
/// definition: column-major, op(A) is m x k (A is m x k with leading
/// dimension lda >= m, or k x m with lda >= k when transa), op(B) k x n,
/// C and D m x n (ldc, ldd >= m); X[b] starts stride_x elements after
/// X[b-1]. Accumulation is f32 (f64 when compute_64f), the result rounded
/// once to d_type. beta == 0 does not read C (NaNs there do not spread).
///
/// fp8 (A and B both e4m3/e5m2, not both e5m2): cuBLASLt requires the "TN"
/// form, transa and !transb, so the emitter must arrange k-contiguous
/// operands (copy one first if needed); then D = d_scale * (alpha * a_scale
/// * b_scale * op(A) op(B) + beta * C), where d_scale applies only to an
/// fp8 D, and a null scale pointer means 1. Scales are device pointers.
struct EinGemm {
  EinDType a_type, b_type, c_type, d_type;
  bool compute_64f; // CUBLAS_COMPUTE_64F: every operand f64
  bool allow_tf32;  // f32 operands may be rounded to TF32 by cuBLASLt
  bool transa, transb;
  int64_t m, n, k;
  const void *a;
  int64_t lda, stride_a;
  const void *b;
  int64_t ldb, stride_b;
  const void *c;
  int64_t ldc, stride_c;
  void *d;
  int64_t ldd, stride_d;
  int64_t batch;
  double alpha, beta;
  const float *a_scale, *b_scale, *d_scale;
  int epilogue;     // EinEpilogueBits (0: none)
  const void *bias; // EIN_EPI_BIAS: m elements of d_type, contiguous
};

inline bool ein_is_fp8(EinDType t) {
  return t == EIN_DT_F8E4M3 || t == EIN_DT_F8E5M2;
}

/// Why cuBLASLt would refuse `g` (a null pointer when it is well-formed):
/// the emitter's contract, checked on both paths so that tests catch what
/// the GPU would.
inline const char *ein_gemm_check(const EinGemm &g) {
  if (g.m < 0 || g.n < 0 || g.k < 0 || g.batch < 1)
    return "negative size or batch count < 1";
  const int64_t rowsA = g.transa ? g.k : g.m, rowsB = g.transb ? g.n : g.k;
  auto atLeast = [](int64_t ld, int64_t rows) {
    return ld >= (rows > 1 ? rows : 1);
  };
  if (!atLeast(g.lda, rowsA) || !atLeast(g.ldb, rowsB) ||
      !atLeast(g.ldc, g.m) || !atLeast(g.ldd, g.m))
    return "a leading dimension below the rows of its matrix";
  const bool fp8 = ein_is_fp8(g.a_type) || ein_is_fp8(g.b_type);
  if (fp8) {
    if (!ein_is_fp8(g.a_type) || !ein_is_fp8(g.b_type))
      return "fp8 A needs fp8 B and the reverse";
    if (g.a_type == EIN_DT_F8E5M2 && g.b_type == EIN_DT_F8E5M2)
      return "fp8: e5m2 x e5m2 is not supported";
    if (!g.transa || g.transb)
      return "fp8 needs the TN form (transa, !transb)";
    if (g.compute_64f)
      return "fp8 computes in f32";
  } else if (g.a_type != g.b_type) {
    return "A and B need one dtype (except e4m3 x e5m2)";
  }
  if (ein_is_fp8(g.c_type))
    return "C cannot be fp8";
  if (g.compute_64f && (g.a_type != EIN_DT_F64 || g.c_type != EIN_DT_F64 ||
                        g.d_type != EIN_DT_F64))
    return "compute_64f needs f64 operands";
  if (!g.compute_64f && (g.a_type == EIN_DT_F64 || g.d_type == EIN_DT_F64))
    return "f64 operands need compute_64f";
  if (g.epilogue & ~(EIN_EPI_BIAS | EIN_EPI_RELU))
    return "an unknown epilogue";
  if (g.epilogue && (fp8 || g.compute_64f))
    return "an epilogue on an fp8 or f64 GEMM";
  if ((g.epilogue & EIN_EPI_BIAS) && !g.bias)
    return "a bias epilogue without a bias";
  return nullptr;
}

#ifdef __CUDACC__

inline cudaDataType_t ein_cuda_dtype(EinDType t) {
  switch (t) {
  case EIN_DT_F64:
    return CUDA_R_64F;
  case EIN_DT_F32:
    return CUDA_R_32F;
  case EIN_DT_F16:
    return CUDA_R_16F;
  case EIN_DT_BF16:
    return CUDA_R_16BF;
  case EIN_DT_F8E4M3:
    return CUDA_R_8F_E4M3;
  default:
    return CUDA_R_8F_E5M2;
  }
}

#define EIN_CUBLAS_CHECK(expr)                                                 \
  do {                                                                         \
    cublasStatus_t ein_st_ = (expr);                                           \
    if (ein_st_ != CUBLAS_STATUS_SUCCESS) {                                    \
      std::fprintf(stderr,                                                     \
                   "ein CUDA runtime: %s failed at %s:%d: status %d\n", #expr, \
                   __FILE__, __LINE__, int(ein_st_));                          \
      std::abort();                                                            \
    }                                                                          \
  } while (0)

/// One handle per process, created on first use (cuBLASLt handles are
/// thread-safe and not tied to a stream).
inline cublasLtHandle_t ein_cublaslt_handle() {
  static cublasLtHandle_t handle = [] {
    cublasLtHandle_t h;
    EIN_CUBLAS_CHECK(cublasLtCreate(&h));
    return h;
  }();
  return handle;
}

inline cublasLtMatrixLayout_t ein_gemm_layout(EinDType t, int64_t rows,
                                              int64_t cols, int64_t ld,
                                              int64_t batch, int64_t stride) {
  cublasLtMatrixLayout_t l;
  EIN_CUBLAS_CHECK(
      cublasLtMatrixLayoutCreate(&l, ein_cuda_dtype(t), rows, cols, ld));
  if (batch > 1) {
    int32_t count = int32_t(batch);
    EIN_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
        l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
    EIN_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
        l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
        sizeof(stride)));
  }
  return l;
}

/// The largest power of two (up to 256) dividing a pointer: what cuBLASLt's
/// heuristic must be told a matrix is aligned to (it assumes 256 bytes).
inline uint32_t ein_alignment(const void *p) {
  uintptr_t v = uintptr_t(p);
  uint32_t a = 256;
  while (a > 1 && v % a != 0)
    a /= 2;
  return a;
}

/// A cuBLASLt matmul set up once: descriptors and the heuristic's algorithm
/// for one shape, layout, dtype set and alignment (cached: the heuristic
/// costs tens of microseconds, a large share of a small GEMM).
struct EinGemmPlanCached {
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t la, lb, lc, ld;
  cublasLtMatmulAlgo_t algo;
  bool found; // false: no algorithm takes this epilogue
};

/// What the cached set-up depends on: every field of the descriptor but the
/// matrices' addresses, their alignments instead, and the workspace size.
struct EinGemmKey {
  EinGemm g; // pointers zeroed, except the fp8 scales (set on the desc)
  uint32_t align[4];
  size_t workspaceBytes;
  bool operator<(const EinGemmKey &o) const {
    return std::memcmp(this, &o, sizeof(EinGemmKey)) < 0;
  }
};

inline EinGemmPlanCached ein_gemm_setup(const EinGemm &g, const uint32_t *align,
                                        size_t workspaceBytes) {
  EinGemmPlanCached p;
  const cublasComputeType_t compute = g.compute_64f ? CUBLAS_COMPUTE_64F
                                      : g.allow_tf32
                                          ? CUBLAS_COMPUTE_32F_FAST_TF32
                                          : CUBLAS_COMPUTE_32F;
  const cudaDataType_t scaleType = g.compute_64f ? CUDA_R_64F : CUDA_R_32F;
  EIN_CUBLAS_CHECK(cublasLtMatmulDescCreate(&p.op, compute, scaleType));
  cublasOperation_t ta = g.transa ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t tb = g.transb ? CUBLAS_OP_T : CUBLAS_OP_N;
  EIN_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
      p.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  EIN_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
      p.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  if (ein_is_fp8(g.a_type)) {
    if (g.a_scale)
      EIN_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
          p.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &g.a_scale,
          sizeof(g.a_scale)));
    if (g.b_scale)
      EIN_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
          p.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &g.b_scale,
          sizeof(g.b_scale)));
    if (g.d_scale && ein_is_fp8(g.d_type))
      EIN_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
          p.op, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, &g.d_scale,
          sizeof(g.d_scale)));
  }
  if (g.epilogue) {
    const cublasLtEpilogue_t epilogue[4] = {
        CUBLASLT_EPILOGUE_DEFAULT, CUBLASLT_EPILOGUE_BIAS,
        CUBLASLT_EPILOGUE_RELU, CUBLASLT_EPILOGUE_RELU_BIAS};
    EIN_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
        p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue[g.epilogue],
        sizeof(epilogue[g.epilogue])));
  }
  if (g.epilogue & EIN_EPI_BIAS) {
    const cudaDataType_t biasType = ein_cuda_dtype(g.d_type);
    const int64_t biasStride = 0; // one vector for every batch
    EIN_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
        p.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &biasType,
        sizeof(biasType)));
    EIN_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
        p.op, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &biasStride,
        sizeof(biasStride)));
  }
  p.la = ein_gemm_layout(g.a_type, g.transa ? g.k : g.m, g.transa ? g.m : g.k,
                         g.lda, g.batch, g.stride_a);
  p.lb = ein_gemm_layout(g.b_type, g.transb ? g.n : g.k, g.transb ? g.k : g.n,
                         g.ldb, g.batch, g.stride_b);
  p.lc = ein_gemm_layout(g.c_type, g.m, g.n, g.ldc, g.batch, g.stride_c);
  p.ld = ein_gemm_layout(g.d_type, g.m, g.n, g.ldd, g.batch, g.stride_d);
  cublasLtMatmulPreference_t pref;
  EIN_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  EIN_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspaceBytes,
      sizeof(workspaceBytes)));
  const cublasLtMatmulPreferenceAttributes_t alignments[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; ++i)
    EIN_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, alignments[i], &align[i], sizeof(align[i])));
  cublasLtMatmulHeuristicResult_t heuristic;
  int found = 0;
  EIN_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(ein_cublaslt_handle(), p.op,
                                                  p.la, p.lb, p.lc, p.ld, pref,
                                                  1, &heuristic, &found));
  cublasLtMatmulPreferenceDestroy(pref);
  p.found = found != 0;
  if (!p.found && !g.epilogue)
    ein_fail("ein_gemm: cuBLASLt has no algorithm for this descriptor");
  p.algo = heuristic.algo;
  return p;
}

/// Runs `g` on `stream` with cuBLASLt's first heuristic choice within
/// `workspaceBytes` of `workspace` (32 MiB is plenty on Hopper); the
/// set-up is made once per shape, layout, dtypes and alignment and kept for
/// the life of the process. Returns false, running nothing, when no
/// algorithm takes g's epilogue (the caller applies it apart).
inline bool ein_gemm(const EinGemm &g, void *workspace, size_t workspaceBytes,
                     cudaStream_t stream) {
  if (const char *why = ein_gemm_check(g))
    ein_fail(why);
  if (g.m == 0 || g.n == 0)
    return true;
  // With beta == 0 cuBLASLt does not read C; it still wants a pointer.
  const void *c = g.beta != 0 || g.c ? g.c : g.d;
  EinGemmKey key;
  std::memset(&key, 0, sizeof key); // padding too: keys compare by bytes
  // Field by field (a struct copy need not copy padding).
  key.g.a_type = g.a_type, key.g.b_type = g.b_type;
  key.g.c_type = g.c_type, key.g.d_type = g.d_type;
  key.g.compute_64f = g.compute_64f, key.g.allow_tf32 = g.allow_tf32;
  key.g.transa = g.transa, key.g.transb = g.transb;
  key.g.m = g.m, key.g.n = g.n, key.g.k = g.k;
  key.g.lda = g.lda, key.g.stride_a = g.stride_a;
  key.g.ldb = g.ldb, key.g.stride_b = g.stride_b;
  key.g.ldc = g.ldc, key.g.stride_c = g.stride_c;
  key.g.ldd = g.ldd, key.g.stride_d = g.stride_d;
  key.g.batch = g.batch;
  key.g.a_scale = g.a_scale, key.g.b_scale = g.b_scale;
  key.g.d_scale = g.d_scale;
  key.g.epilogue = g.epilogue; // the bias pointer is set at each call
  key.align[0] = ein_alignment(g.a);
  key.align[1] = ein_alignment(g.b);
  key.align[2] = ein_alignment(c);
  key.align[3] = ein_alignment(g.d);
  key.workspaceBytes = workspaceBytes;
  static std::mutex mutex;
  static std::map<EinGemmKey, EinGemmPlanCached> cache;
  // Held until the matmul is queued: the bias pointer is an attribute of
  // the shared descriptor, read by cublasLtMatmul.
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it == cache.end())
    it = cache.emplace(key, ein_gemm_setup(g, key.align, workspaceBytes)).first;
  const EinGemmPlanCached &plan = it->second;
  if (!plan.found)
    return false;
  if (g.epilogue & EIN_EPI_BIAS)
    EIN_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
        plan.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof(g.bias)));
  const float alpha32 = float(g.alpha), beta32 = float(g.beta);
  const void *alpha = g.compute_64f ? (const void *)&g.alpha : &alpha32;
  const void *beta = g.compute_64f ? (const void *)&g.beta : &beta32;
  EIN_CUBLAS_CHECK(cublasLtMatmul(ein_cublaslt_handle(), plan.op, alpha, g.a,
                                  plan.la, g.b, plan.lb, beta, c, plan.lc, g.d,
                                  plan.ld, &plan.algo, workspace,
                                  workspaceBytes, stream));
  return true;
}

#else // the emulation's reference

/// Element `i` of a matrix of dtype `t`, exactly.
inline double ein_gemm_load(const void *p, EinDType t, int64_t i) {
  switch (t) {
  case EIN_DT_F64:
    return static_cast<const double *>(p)[i];
  case EIN_DT_F32:
    return static_cast<const float *>(p)[i];
  case EIN_DT_F16:
    return ein_to_f32(static_cast<const ein_f16_t *>(p)[i]);
  case EIN_DT_BF16:
    return ein_to_f32(static_cast<const ein_bf16_t *>(p)[i]);
  case EIN_DT_F8E4M3:
    return ein_to_f32(static_cast<const ein_f8e4m3_t *>(p)[i]);
  default:
    return ein_to_f32(static_cast<const ein_f8e5m2_t *>(p)[i]);
  }
}

/// Rounds `v` once to dtype `t` (from f32 unless compute_64f).
template <typename Acc>
inline void ein_gemm_store(void *p, EinDType t, int64_t i, Acc v) {
  switch (t) {
  case EIN_DT_F64:
    static_cast<double *>(p)[i] = double(v);
    break;
  case EIN_DT_F32:
    static_cast<float *>(p)[i] = float(v);
    break;
  case EIN_DT_F16:
    static_cast<ein_f16_t *>(p)[i] = ein_cvt<ein_f16_t>(v);
    break;
  case EIN_DT_BF16:
    static_cast<ein_bf16_t *>(p)[i] = ein_cvt<ein_bf16_t>(v);
    break;
  case EIN_DT_F8E4M3:
    static_cast<ein_f8e4m3_t *>(p)[i] = ein_cvt<ein_f8e4m3_t>(v);
    break;
  default:
    static_cast<ein_f8e5m2_t *>(p)[i] = ein_cvt<ein_f8e5m2_t>(v);
  }
}

template <typename Acc> inline void ein_gemm_reference(const EinGemm &g) {
  const Acc scaleAB = Acc(g.alpha) * (g.a_scale ? Acc(*g.a_scale) : Acc(1)) *
                      (g.b_scale ? Acc(*g.b_scale) : Acc(1));
  const Acc scaleD =
      ein_is_fp8(g.d_type) && g.d_scale ? Acc(*g.d_scale) : Acc(1);
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t j = 0; j < g.n; ++j)
      for (int64_t i = 0; i < g.m; ++i) {
        Acc acc = 0;
        for (int64_t p = 0; p < g.k; ++p) {
          // op(A)(i, p) and op(B)(p, j), column-major.
          const int64_t ia = g.transa ? p + i * g.lda : i + p * g.lda;
          const int64_t ib = g.transb ? j + p * g.ldb : p + j * g.ldb;
          acc += Acc(ein_gemm_load(g.a, g.a_type, b * g.stride_a + ia)) *
                 Acc(ein_gemm_load(g.b, g.b_type, b * g.stride_b + ib));
        }
        Acc v = scaleAB * acc;
        if (g.beta != 0)
          v += Acc(g.beta) * Acc(ein_gemm_load(g.c, g.c_type,
                                               b * g.stride_c + i + j * g.ldc));
        if (g.epilogue & EIN_EPI_BIAS)
          v += Acc(ein_gemm_load(g.bias, g.d_type, i));
        if (g.epilogue & EIN_EPI_RELU)
          v = ein_relu(v);
        ein_gemm_store<Acc>(g.d, g.d_type, b * g.stride_d + i + j * g.ldd,
                            scaleD * v);
      }
}

/// The emulation's stand-in for cuBLASLt: the same descriptor, read by a
/// plain loop (the workspace is unused); every epilogue is taken. Queued
/// as a kernel is: a captured graph runs it at each launch.
inline bool ein_gemm(const EinGemm &g, void *, size_t, cudaStream_t) {
  if (const char *why = ein_gemm_check(g))
    ein_fail(why);
  ::ein_emu::enqueue([g] {
    if (g.compute_64f)
      ein_gemm_reference<double>(g);
    else
      ein_gemm_reference<float>(g);
  });
  return true;
}

#endif // __CUDACC__
#endif // EIN_CUDA_GEMM_CUH
