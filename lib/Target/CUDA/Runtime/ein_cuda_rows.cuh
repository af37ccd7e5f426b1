// ein's row kernel: a chain of reductions along the last axis and the
// elementwise ops reading them (softmax, LayerNorm, RMSNorm) in one kernel,
// one warp (short rows) or block per row, the row read once when it fits in
// registers and written once.
#ifndef EIN_CUDA_ROWS_CUH
#define EIN_CUDA_ROWS_CUH

/// The tag of a row functor's stage S (its reduction's input).
template <int S> struct EinStage { static constexpr int value = S; };

/// The tag of a row functor's values per row computed once from the
/// stages' results (`rsqrt(var + eps)`), after them.
struct EinRowValues {};

/// Calls g(EinStage<S>()) for each S in order.
template <typename G, int... S>
EIN_D void ein_rows_each(G &&g, std::integer_sequence<int, S...>) {
  (g(EinStage<S>()), ...);
}

/// Per view (the output first), its stride along the row.
template <int N> struct EinRowSteps { int64_t s[N]; };

/// A row per blockDim.x threads: for each stage S in order, the row's
/// f(EinStage<S>(), r, elements...) combined with F::kinds[S] into r[S]
/// (finished: a mean divided by the row's length); then
/// f(EinRowValues(), r) fills r[stages ...] with values per row; then
/// out = f(r, elements...). A row of at most E * blockDim.x elements is read
/// once into registers (E per thread and input); a longer one is read again
/// by each stage.
template <typename F, int E, typename TO, int R, typename Index, size_t... K,
          typename... TI>
EIN_D void ein_rows_body(const F &f, TO *__restrict__ out, Index nRows, Index n,
                         const EinOffsets<R, 1 + sizeof...(TI), Index> &rows,
                         const EinRowSteps<1 + sizeof...(TI)> &st,
                         std::index_sequence<K...>, const TI *...in) {
  using Acc = typename F::Acc;
  const bool cached = int64_t(n) <= int64_t(E) * blockDim.x;
  for (Index first = Index(blockIdx.x) * blockDim.y; first < nRows;
       first += Index(gridDim.x) * blockDim.y) {
    const Index row = first + threadIdx.y;
    const bool live = row < nRows;
    int64_t base[1 + sizeof...(TI)] = {};
    if (live)
      rows.offsets(row, base);
    EinPackSet<E, std::index_sequence<K...>, TI...> cache;
    if (cached && live) {
      EIN_UNROLL
      for (int e = 0; e < E; ++e) {
        const Index j = Index(threadIdx.x) + Index(e) * blockDim.x;
        if (j < n)
          ((static_cast<EinLeaf<K, TI, E> &>(cache).p.v[e] =
                in[base[K + 1] + int64_t(j) * st.s[K + 1]]),
           ...);
      }
    }
    // g applied to the row's elements, each element once per thread (the
    // registers' or memory's), j its index in the row.
    auto each = [&](auto &&g) {
      if (!live)
        return;
      if (cached) {
        EIN_UNROLL
        for (int e = 0; e < E; ++e) {
          const Index j = Index(threadIdx.x) + Index(e) * blockDim.x;
          if (j < n)
            g(j, static_cast<EinLeaf<K, TI, E> &>(cache).p.v[e]...);
        }
        return;
      }
      for (Index j = threadIdx.x; j < n; j += blockDim.x)
        g(j, in[base[K + 1] + int64_t(j) * st.s[K + 1]]...);
    };
    Acc r[F::stages + F::values];
    ein_rows_each(
        [&](auto stage) {
          constexpr int S = decltype(stage)::value;
          using Op = EinReduceOp<F::kinds[S], Acc>;
          Acc acc = Op::identity();
          each([&](Index, auto... x) {
            acc = Op::combine(acc, f(stage, r, x...));
          });
          r[S] = Op::finish(ein_block_reduce_x<Op, true>(acc), int64_t(n));
        },
        std::make_integer_sequence<int, F::stages>{});
    f(EinRowValues(), r);
    each([&](Index j, auto... x) {
      out[base[0] + int64_t(j) * st.s[0]] = f(r, x...);
    });
  }
}

template <typename F, int E, typename TO, int R, typename Index, typename... TI>
__global__ void ein_rows_kernel(F f, TO *__restrict__ out, Index nRows, Index n,
                                EinOffsets<R, 1 + sizeof...(TI), Index> rows,
                                EinRowSteps<1 + sizeof...(TI)> st,
                                const TI *...in) {
  ein_rows_body<F, E>(f, out, nRows, n, rows, st,
                      std::index_sequence_for<TI...>{}, in...);
}

template <typename F, typename TO, int R, typename Index, typename... TI>
inline void ein_rows_launch(cudaStream_t stream, F f, EinView<TO, R> out,
                            EinView<const TI, R>... in) {
  constexpr int N = sizeof...(TI), Q = R - 1; // Q: the dims indexing rows
  constexpr int E = 8; // cached elements per thread and input
  const int64_t n = out.size[Q];
  int64_t size[Q > 0 ? Q : 1], stride[N + 1][Q > 0 ? Q : 1];
  const int64_t *inStrides[N > 0 ? N : 1] = {in.stride...};
  int64_t nRows = 1;
  EinRowSteps<N + 1> st;
  st.s[0] = out.stride[Q];
  for (int k = 0; k < N; ++k)
    st.s[k + 1] = inStrides[k][Q];
  for (int d = 0; d < Q; ++d) {
    size[d] = out.size[d];
    nRows *= size[d];
    stride[0][d] = out.stride[d];
    for (int k = 0; k < N; ++k)
      stride[k + 1][d] = inStrides[k][d];
  }
  if (nRows == 0 || n == 0)
    return;
  ein_collapse<Q, N + 1>(size, stride);
  const int64_t *rowStrides[N + 1];
  for (int k = 0; k <= N; ++k)
    rowStrides[k] = stride[k];
  auto offs = ein_make_offsets<Q, N + 1, Index>(size, rowStrides);
  // A warp per row up to 128 elements (8 rows a block), then wider rows of
  // up to 1024 threads, each thread holding at most 4 of a row's elements
  // until the widest: rows up to E * 1024 stay in registers.
  unsigned width = 32;
  while (width < 1024 && int64_t(width) * 4 < n)
    width *= 2;
  const unsigned perBlock = width >= 256 ? 1 : 256 / width;
  auto kernel = &ein_rows_kernel<F, E, TO, Q, Index, TI...>;
  EIN_LAUNCH(kernel, ein_grid_for(nRows, perBlock), dim3(width, perBlock),
             stream, f, out.data, Index(nRows), Index(n), offs, st, in.data...);
}

/// out = a row functor over the last axis of out's index space (rank >= 1):
/// every input view has out's sizes (a broadcast dim has stride 0); F has
/// `Acc`, `stages`, `kinds[stages]` (EinReduceKind), per stage S an
/// `Acc operator()(EinStage<S>, const Acc *r, TI...)` (the element its
/// reduction reads; r the results of the stages before it), `values` and
/// `void operator()(EinRowValues, Acc *r)` computing r[stages ...
/// stages + values - 1] from the stages' results, and
/// `TO operator()(const Acc *r, TI...)`, the output's element. `out` must
/// not overlap an input other than element for element.
template <typename F, typename TO, int R, typename... TI>
inline void ein_rows(cudaStream_t stream, F f, EinView<TO, R> out,
                     EinView<const TI, R>... in) {
  static_assert(R >= 1, "ein_rows: a row needs an axis");
  int64_t nRows = 1;
  for (int d = 0; d + 1 < R; ++d)
    nRows *= out.size[d];
  if (nRows < (int64_t(1) << 31) && out.size[R - 1] < (int64_t(1) << 31))
    ein_rows_launch<F, TO, R, uint32_t>(stream, f, out, in...);
  else
    ein_rows_launch<F, TO, R, int64_t>(stream, f, out, in...);
}

#endif // EIN_CUDA_ROWS_CUH
