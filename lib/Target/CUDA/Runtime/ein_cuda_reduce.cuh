// ein's reduction kernels: sum, mean, max, min, prod over any set of axes,
// accumulated in a chosen type; warp-shuffle reductions when the reduced
// axes are inner in memory, coalesced per-thread loops when they are outer.
#ifndef EIN_CUDA_REDUCE_CUH
#define EIN_CUDA_REDUCE_CUH

enum EinReduceKind {
  EIN_REDUCE_SUM,
  EIN_REDUCE_MEAN,
  EIN_REDUCE_MAX,
  EIN_REDUCE_MIN,
  EIN_REDUCE_PROD
};

template <typename Acc> struct EinLimits;
template <> struct EinLimits<float> {
  static EIN_HD float lowest() { return ein_bits_float(0xFF800000u); }
  static EIN_HD float highest() { return ein_bits_float(0x7F800000u); }
};
template <> struct EinLimits<double> {
  static EIN_HD double lowest() { return -EinLimits<float>::highest(); }
  static EIN_HD double highest() { return EinLimits<float>::highest(); }
};
template <> struct EinLimits<bool> { // any (max) and all (min)
  static EIN_HD bool lowest() { return false; }
  static EIN_HD bool highest() { return true; }
};
template <> struct EinLimits<int32_t> {
  static EIN_HD int32_t lowest() { return INT32_MIN; }
  static EIN_HD int32_t highest() { return INT32_MAX; }
};
template <> struct EinLimits<int64_t> {
  static EIN_HD int64_t lowest() { return INT64_MIN; }
  static EIN_HD int64_t highest() { return INT64_MAX; }
};
template <> struct EinLimits<int8_t> {
  static EIN_HD int8_t lowest() { return INT8_MIN; }
  static EIN_HD int8_t highest() { return INT8_MAX; }
};

/// The combining step and identity of each kind, in the accumulator type.
/// Float max/min propagate NaN (numpy's maximum/minimum, arith.maximumf);
/// integer sum and prod wrap. Mean sums, and divides once at the end.
template <EinReduceKind K, typename Acc> struct EinReduceOp {
  static EIN_HD Acc identity() {
    return K == EIN_REDUCE_PROD  ? Acc(1)
           : K == EIN_REDUCE_MAX ? EinLimits<Acc>::lowest()
           : K == EIN_REDUCE_MIN ? EinLimits<Acc>::highest()
                                 : Acc(0);
  }
  static EIN_HD Acc combine(Acc a, Acc b) {
    switch (K) {
    case EIN_REDUCE_PROD:
      return ein_mul(a, b);
    case EIN_REDUCE_MAX:
      return ein_maximum(a, b);
    case EIN_REDUCE_MIN:
      return ein_minimum(a, b);
    default:
      return ein_add(a, b);
    }
  }
  static EIN_HD Acc finish(Acc a, int64_t count) {
    return K == EIN_REDUCE_MEAN ? Acc(a / Acc(count)) : a;
  }
};

/// Reduces `v` across the x dimension of a block (blockDim.x a multiple of
/// 32, at most 1024; blockDim.y rows reduce independently). Every thread of
/// the block must call it; lane 0 of row y gets the row's result, and with
/// `All` every thread of the row (the warps' partials combined by each
/// thread in the same order, so that all hold the same value).
template <typename Op, bool All = false, typename Acc>
EIN_D Acc ein_block_reduce_x(Acc v) {
  __shared__ Acc partial[32]; // one per warp of the block
  EIN_UNROLL
  for (int off = 16; off > 0; off /= 2)
    v = Op::combine(v, __shfl_xor_sync(0xffffffffu, v, off));
  const int warps = blockDim.x / 32;
  if (warps == 1)
    return v; // the butterfly leaves the result in every lane
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  // Row y's warps own partial[y * warps ...]: at most 32 warps in all.
  const int row = threadIdx.y * warps;
  if (lane == 0)
    partial[row + warp] = v;
  __syncthreads();
  if constexpr (All) {
    v = partial[row];
    for (int w = 1; w < warps; ++w)
      v = Op::combine(v, partial[row + w]);
  } else if (warp == 0) {
    v = lane < warps ? partial[row + lane] : Op::identity();
    EIN_UNROLL
    for (int off = 16; off > 0; off /= 2)
      v = Op::combine(v, __shfl_xor_sync(0xffffffffu, v, off));
  }
  __syncthreads(); // partial is reused by the caller's next output
  return v;
}

/// Reduced axes inner: a row of blockDim.x threads per output (blockDim.y
/// outputs per block) strides over the reduced elements, then reduces
/// across the row with shuffles.
template <typename Op, typename Acc, typename TO, typename TI, int R,
          typename Index>
__global__ void ein_reduce_inner_kernel(TO *out, const TI *in, Index nOut,
                                        Index nRed,
                                        EinOffsets<R, 2, Index> kept,
                                        EinOffsets<R, 1, Index> red) {
  for (Index first = Index(blockIdx.x) * blockDim.y; first < nOut;
       first += Index(gridDim.x) * blockDim.y) {
    const Index o = first + threadIdx.y;
    Acc acc = Op::identity();
    int64_t base[2] = {0, 0};
    if (o < nOut) {
      kept.offsets(o, base);
      for (Index j = threadIdx.x; j < nRed; j += blockDim.x) {
        int64_t r[1];
        red.offsets(j, r);
        acc = Op::combine(acc, ein_cvt<Acc>(in[base[1] + r[0]]));
      }
    }
    acc = ein_block_reduce_x<Op>(acc);
    if (o < nOut && threadIdx.x == 0)
      out[base[0]] = ein_cvt<TO>(Op::finish(acc, int64_t(nRed)));
  }
}

/// Reduced axes outer: one thread per output (consecutive threads read
/// consecutive kept elements: coalesced), looping over the reduced ones.
/// With `parts` > 1, blockIdx.y takes one slice of the reduced elements and
/// writes an unfinished partial to `partial[part * nOut + o]`.
template <typename Op, typename Acc, typename TO, typename TI, int R,
          typename Index>
__global__ void ein_reduce_outer_kernel(TO *out, Acc *partial, const TI *in,
                                        Index nOut, Index nRed, Index chunk,
                                        EinOffsets<R, 2, Index> kept,
                                        EinOffsets<R, 1, Index> red) {
  const Index lo = Index(blockIdx.y) * chunk;
  const Index hi = nRed - lo < chunk ? nRed : lo + chunk;
  for (Index o = Index(blockIdx.x) * blockDim.x + threadIdx.x; o < nOut;
       o += Index(gridDim.x) * blockDim.x) {
    int64_t base[2];
    kept.offsets(o, base);
    Acc acc = Op::identity();
    for (Index j = lo; j < hi; ++j) {
      int64_t r[1];
      red.offsets(j, r);
      acc = Op::combine(acc, ein_cvt<Acc>(in[base[1] + r[0]]));
    }
    if (partial)
      partial[int64_t(blockIdx.y) * nOut + o] = acc;
    else
      out[base[0]] = ein_cvt<TO>(Op::finish(acc, int64_t(nRed)));
  }
}

/// The second pass of a split outer reduction: combines each output's
/// partials in order and finishes.
template <typename Op, typename Acc, typename TO, int R, typename Index>
__global__ void ein_reduce_partials_kernel(TO *out, const Acc *partial,
                                           Index nOut, Index nRed, int parts,
                                           EinOffsets<R, 2, Index> kept) {
  for (Index o = Index(blockIdx.x) * blockDim.x + threadIdx.x; o < nOut;
       o += Index(gridDim.x) * blockDim.x) {
    int64_t base[2];
    kept.offsets(o, base);
    Acc acc = Op::identity();
    for (int p = 0; p < parts; ++p)
      acc = Op::combine(acc, partial[int64_t(p) * nOut + o]);
    out[base[0]] = ein_cvt<TO>(Op::finish(acc, int64_t(nRed)));
  }
}

template <EinReduceKind K, typename Acc, typename TO, typename TI, int R,
          typename Index>
inline void ein_reduce_launch(cudaStream_t stream, EinView<TO, R> out,
                              EinView<const TI, R> in, bool inner, int64_t nOut,
                              int64_t nRed) {
  using Op = EinReduceOp<K, Acc>;
  // The kept space (out's sizes; offsets into out and in) and the reduced
  // space (in's sizes on the reduced axes, 1 elsewhere).
  int64_t keptSize[R > 0 ? R : 1], keptStride[2][R > 0 ? R : 1];
  int64_t redSize[R > 0 ? R : 1], redStride[1][R > 0 ? R : 1];
  for (int d = 0; d < R; ++d) {
    const bool reduced = out.size[d] == 1 && in.size[d] != 1;
    keptSize[d] = reduced ? 1 : out.size[d];
    keptStride[0][d] = out.stride[d];
    keptStride[1][d] = in.stride[d];
    redSize[d] = reduced ? in.size[d] : 1;
    redStride[0][d] = in.stride[d];
  }
  ein_collapse<R, 2>(keptSize, keptStride);
  ein_collapse<R, 1>(redSize, redStride);
  const int64_t *keptRows[2] = {keptStride[0], keptStride[1]};
  const int64_t *redRows[1] = {redStride[0]};
  auto kept = ein_make_offsets<R, 2, Index>(keptSize, keptRows);
  auto red = ein_make_offsets<R, 1, Index>(redSize, redRows);
  if (inner) {
    // A row of 32..1024 threads per output, enough to cover the reduced
    // elements in a few steps; 256 threads per block in all.
    unsigned width = 32;
    while (width < 1024 && int64_t(width) * 4 < nRed)
      width *= 2;
    const unsigned rows = width >= 256 ? 1 : 256 / width;
    auto kernel = &ein_reduce_inner_kernel<Op, Acc, TO, TI, R, Index>;
    EIN_LAUNCH(kernel, ein_grid_for(nOut, rows), dim3(width, rows), stream,
               out.data, in.data, Index(nOut), Index(nRed), kept, red);
    return;
  }
  const unsigned threads = 256;
  const int64_t blocks = (nOut + threads - 1) / threads;
  // Few outputs over long reductions: split the reduced elements across
  // blockIdx.y so that the GPU fills, and combine the partials after.
  int64_t parts = 1;
  if (blocks < 264 && nRed >= 512)
    parts = std::min<int64_t>({(264 + blocks - 1) / blocks, nRed / 256, 1024});
  const Index chunk = Index(nRed > 0 ? (nRed + parts - 1) / parts : 1);
  if (nRed > 0) // the last part is not empty
    parts = (nRed + int64_t(chunk) - 1) / int64_t(chunk);
  auto kernel = &ein_reduce_outer_kernel<Op, Acc, TO, TI, R, Index>;
  if (parts <= 1) {
    EIN_LAUNCH(kernel, ein_grid_for(nOut, threads), threads, stream, out.data,
               (Acc *)nullptr, in.data, Index(nOut), Index(nRed), chunk, kept,
               red);
    return;
  }
  Acc *partial = nullptr;
  EIN_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void **>(&partial),
                                 sizeof(Acc) * size_t(parts * nOut), stream));
  EIN_LAUNCH(kernel, dim3(ein_grid_for(nOut, threads), unsigned(parts)),
             threads, stream, out.data, partial, in.data, Index(nOut),
             Index(nRed), chunk, kept, red);
  auto second = &ein_reduce_partials_kernel<Op, Acc, TO, R, Index>;
  EIN_LAUNCH(second, ein_grid_for(nOut, threads), threads, stream, out.data,
             partial, Index(nOut), Index(nRed), int(parts), kept);
  EIN_CUDA_CHECK(cudaFreeAsync(partial, stream));
}

/// out = reduce(in) with `K`, accumulating in `Acc` (f32 for 16- and 8-bit
/// floats, as the CPU back end does whatever acc= says; the result is then
/// rounded once to TO). `out` has in's rank: a reduced axis has size 1 in
/// out (any stride), every other axis in's size. An axis of size 1 in both
/// is neither. Reducing an empty axis gives the identity (sum 0, prod 1,
/// mean NaN); the front end refuses max/min there.
template <EinReduceKind K, typename Acc, typename TO, typename TI, int R>
inline void ein_reduce(cudaStream_t stream, EinView<TO, R> out,
                       EinView<const TI, R> in) {
  int64_t nOut = 1, nRed = 1;
  int64_t smallest = INT64_MAX;
  bool inner = false;
  for (int d = 0; d < R; ++d) {
    const bool reduced = out.size[d] == 1 && in.size[d] != 1;
    if (!reduced && out.size[d] != in.size[d])
      ein_fail("ein_reduce: out's sizes are neither in's nor 1");
    (reduced ? nRed : nOut) *= in.size[d];
    // The axis walked fastest in memory decides the strategy.
    if (in.size[d] > 1 && in.stride[d] > 0 && in.stride[d] < smallest) {
      smallest = in.stride[d];
      inner = reduced;
    }
  }
  if (nOut == 0)
    return;
  if (nOut < (int64_t(1) << 31) && nRed < (int64_t(1) << 31))
    ein_reduce_launch<K, Acc, TO, TI, R, uint32_t>(stream, out, in, inner, nOut,
                                                   nRed);
  else
    ein_reduce_launch<K, Acc, TO, TI, R, int64_t>(stream, out, in, inner, nOut,
                                                  nRed);
}

#endif // EIN_CUDA_REDUCE_CUH
