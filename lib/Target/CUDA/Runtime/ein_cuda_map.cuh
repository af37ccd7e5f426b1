// ein's elementwise kernels: map (a generated functor over 1-4 strided,
// broadcast inputs) and copy (any strides to any strides, with a
// shared-memory tiled transpose when the contiguous axis changes).
#ifndef EIN_CUDA_MAP_CUH
#define EIN_CUDA_MAP_CUH

/// E elements of T moved as one 1-16 byte access: aligned so that nvcc
/// emits one vector load or store (ld.global.v4 for 16 bytes).
template <typename T, int E> struct alignas(E * sizeof(T)) EinPack { T v[E]; };
template <typename T, int E> EIN_D EinPack<T, E> ein_load_pack(const T *p) {
#ifdef __CUDA_ARCH__
  return *reinterpret_cast<const EinPack<T, E> *>(p);
#else
  EinPack<T, E> r; // the host compiler's aliasing rules: copy the bytes
  memcpy(&r, p, sizeof(r));
  return r;
#endif
}
template <typename T, int E>
EIN_D void ein_store_pack(T *p, const EinPack<T, E> &v) {
#ifdef __CUDA_ARCH__
  *reinterpret_cast<EinPack<T, E> *>(p) = v;
#else
  memcpy(p, &v, sizeof(v));
#endif
}

template <typename... T> struct EinMaxSize;
template <typename T> struct EinMaxSize<T> {
  static constexpr size_t value = sizeof(T);
};
template <typename T, typename... Rest> struct EinMaxSize<T, Rest...> {
  static constexpr size_t value = sizeof(T) > EinMaxSize<Rest...>::value
                                      ? sizeof(T)
                                      : EinMaxSize<Rest...>::value;
};

/// Per input of a flat map: 1 when it is contiguous like the output, 0
/// when it is one broadcast element.
template <int N> struct EinFlatStrides { int s[N > 0 ? N : 1]; };

/// One pack per input, told apart by position (a tuple without <tuple>,
/// whose functions are host-only constexpr under nvcc).
template <size_t K, typename T, int E> struct EinLeaf { EinPack<T, E> p; };
template <int E, typename Seq, typename... T> struct EinPackSet;
template <int E, size_t... K, typename... T>
struct EinPackSet<E, std::index_sequence<K...>, T...> : EinLeaf<K, T, E>... {};

template <int E, typename T>
EIN_D EinPack<T, E> ein_load_or_splat(const T *p, int strideOne) {
  if (strideOne)
    return ein_load_pack<T, E>(p);
  EinPack<T, E> r;
  EIN_UNROLL
  for (int e = 0; e < E; ++e)
    r.v[e] = p[0];
  return r;
}

template <int E, typename F, typename TO, typename Index, size_t... K,
          typename... TI>
EIN_D void ein_map_flat_body(F &f, TO *__restrict__ out, Index n,
                             const EinFlatStrides<sizeof...(TI)> &s,
                             std::index_sequence<K...>, const TI *...in) {
  const Index step = Index(gridDim.x) * blockDim.x;
  const Index start = Index(blockIdx.x) * blockDim.x + threadIdx.x;
  const Index vectors = n / E;
  if constexpr (E > 1)
    for (Index v = start; v < vectors; v += step) {
      const Index i = v * E;
      EinPackSet<E, std::index_sequence<K...>, TI...> packs;
      ((static_cast<EinLeaf<K, TI, E> &>(packs).p =
            ein_load_or_splat<E>(in + i * Index(s.s[K]), s.s[K])),
       ...);
      EinPack<TO, E> o;
      EIN_UNROLL
      for (int e = 0; e < E; ++e)
        o.v[e] = f(static_cast<EinLeaf<K, TI, E> &>(packs).p.v[e]...);
      ein_store_pack<TO, E>(out + i, o);
    }
  for (Index i = (E > 1 ? vectors * E : 0) + start; i < n; i += step)
    out[i] = f(in[i * Index(s.s[K])]...);
}

/// Contiguous output, inputs contiguous or scalar: a flat grid-stride loop,
/// E elements per step with one vector access per tensor (E = 16 bytes over
/// the widest dtype), the n % E tail element by element.
template <int E, typename F, typename TO, typename Index, typename... TI>
__global__ void ein_map_flat_kernel(F f, TO *__restrict__ out, Index n,
                                    EinFlatStrides<sizeof...(TI)> s,
                                    const TI *...in) {
  ein_map_flat_body<E>(f, out, n, s, std::index_sequence_for<TI...>{}, in...);
}

template <typename F, typename TO, int R, typename Index, size_t... K,
          typename... TI>
EIN_D void
ein_map_strided_body(F &f, TO *__restrict__ out, Index n,
                     const EinOffsets<R, 1 + sizeof...(TI), Index> &offs,
                     std::index_sequence<K...>, const TI *...in) {
  const Index step = Index(gridDim.x) * blockDim.x;
  for (Index i = Index(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += step) {
    int64_t o[1 + sizeof...(TI)];
    offs.offsets(i, o);
    out[o[0]] = f(in[o[K + 1]]...);
  }
}

/// Any strides: each element's offsets from its linear index (fast 32-bit
/// division when the space is below 2^31 elements).
template <typename F, typename TO, int R, typename Index, typename... TI>
__global__ void
ein_map_strided_kernel(F f, TO *__restrict__ out, Index n,
                       EinOffsets<R, 1 + sizeof...(TI), Index> offs,
                       const TI *...in) {
  ein_map_strided_body(f, out, n, offs, std::index_sequence_for<TI...>{},
                       in...);
}

/// Any strides, but every view moves along the innermost dim with stride 1
/// (or 0: a broadcast), whose size and every other stride are multiples of
/// E: each thread maps E consecutive elements with one vector access per
/// view (offsets from the vector's index, innermost strides scaled by E).
template <int E, typename F, typename TO, int R, typename Index, size_t... K,
          typename... TI>
EIN_D void ein_map_rows_body(
    F &f, TO *__restrict__ out, Index vectors,
    const EinOffsets<R, 1 + sizeof...(TI), Index> &offs,
    const EinFlatStrides<sizeof...(TI)> &s, std::index_sequence<K...>,
    const TI *...in) {
  const Index step = Index(gridDim.x) * blockDim.x;
  for (Index v = Index(blockIdx.x) * blockDim.x + threadIdx.x; v < vectors;
       v += step) {
    int64_t o[1 + sizeof...(TI)];
    offs.offsets(v, o);
    EinPackSet<E, std::index_sequence<K...>, TI...> packs;
    ((static_cast<EinLeaf<K, TI, E> &>(packs).p =
          ein_load_or_splat<E>(in + o[K + 1], s.s[K])),
     ...);
    EinPack<TO, E> r;
    EIN_UNROLL
    for (int e = 0; e < E; ++e)
      r.v[e] = f(static_cast<EinLeaf<K, TI, E> &>(packs).p.v[e]...);
    ein_store_pack<TO, E>(out + o[0], r);
  }
}

template <int E, typename F, typename TO, int R, typename Index,
          typename... TI>
__global__ void
ein_map_rows_kernel(F f, TO *__restrict__ out, Index vectors,
                    EinOffsets<R, 1 + sizeof...(TI), Index> offs,
                    EinFlatStrides<sizeof...(TI)> s, const TI *...in) {
  ein_map_rows_body<E>(f, out, vectors, offs, s,
                       std::index_sequence_for<TI...>{}, in...);
}

template <typename T, int E> inline bool ein_aligned(const T *p) {
  return reinterpret_cast<uintptr_t>(p) % (E * sizeof(T)) == 0;
}

template <typename F, typename TO, int R, typename Index, typename... TI>
inline void ein_map_launch(cudaStream_t stream, F f, EinView<TO, R> out,
                           EinView<TI, R>... in) {
  constexpr int N = sizeof...(TI);
  constexpr int E = int(16 / EinMaxSize<TO, TI...>::value);
  const Index n = Index(ein_numel(out));
  const unsigned threads = 256;
  bool flat = ein_is_contiguous(out);
  bool scalar[N > 0 ? N : 1] = {ein_is_scalar(in)...};
  bool contiguous[N > 0 ? N : 1] = {ein_is_contiguous(in)...};
  for (int k = 0; k < N; ++k)
    flat = flat && (scalar[k] || contiguous[k]);
  if (flat) {
    EinFlatStrides<N> s;
    for (int k = 0; k < N; ++k)
      s.s[k] = scalar[k] ? 0 : 1;
    bool aligned = ein_aligned<TO, E>(out.data);
    const bool inAligned[N > 0 ? N : 1] = {ein_aligned<TI, E>(in.data)...};
    for (int k = 0; k < N; ++k)
      aligned = aligned && (scalar[k] || inAligned[k]);
    if (aligned && E > 1) {
      auto kernel = &ein_map_flat_kernel<E, F, TO, Index,
                                         typename std::remove_cv<TI>::type...>;
      EIN_LAUNCH(kernel, ein_grid_for(n / E + 1, threads), threads, stream, f,
                 out.data, n, s, in.data...);
    } else {
      auto kernel = &ein_map_flat_kernel<1, F, TO, Index,
                                         typename std::remove_cv<TI>::type...>;
      EIN_LAUNCH(kernel, ein_grid_for(n, threads), threads, stream, f, out.data,
                 n, s, in.data...);
    }
    return;
  }
  int64_t size[R > 0 ? R : 1], stride[N + 1][R > 0 ? R : 1];
  const int64_t *inStrides[N > 0 ? N : 1] = {in.stride...};
  for (int d = 0; d < R; ++d) {
    size[d] = out.size[d];
    stride[0][d] = out.stride[d];
    for (int k = 0; k < N; ++k)
      stride[k + 1][d] = inStrides[k][d];
  }
  const int dims = ein_collapse<R, N + 1>(size, stride);
  if constexpr (E > 1 && R > 0) {
    // Rows: the innermost dim has stride 1 (inputs: or 0) everywhere.
    bool rows = dims > 0 && stride[0][R - 1] == 1 && size[R - 1] % E == 0 &&
                ein_aligned<TO, E>(out.data);
    const bool inAligned[N > 0 ? N : 1] = {ein_aligned<TI, E>(in.data)...};
    for (int k = 0; k <= N && rows; ++k) {
      const int64_t inner = stride[k][R - 1];
      rows = k == 0 || inner == 0 || (inner == 1 && inAligned[k - 1]);
      for (int d = 0; d < R - 1; ++d)
        rows = rows && stride[k][d] % E == 0;
    }
    if (rows) {
      EinFlatStrides<N> s;
      for (int k = 0; k < N; ++k)
        s.s[k] = int(stride[k + 1][R - 1]);
      size[R - 1] /= E;
      for (int k = 0; k <= N; ++k)
        stride[k][R - 1] *= E;
      const int64_t *vecRows[N + 1];
      for (int k = 0; k <= N; ++k)
        vecRows[k] = stride[k];
      auto offs = ein_make_offsets<R, N + 1, Index>(size, vecRows);
      auto kernel = &ein_map_rows_kernel<E, F, TO, R, Index,
                                         typename std::remove_cv<TI>::type...>;
      EIN_LAUNCH(kernel, ein_grid_for(n / E, threads), threads, stream, f,
                 out.data, Index(n / E), offs, s, in.data...);
      return;
    }
  }
  const int64_t *rows[N + 1];
  for (int k = 0; k <= N; ++k)
    rows[k] = stride[k];
  auto offs = ein_make_offsets<R, N + 1, Index>(size, rows);
  auto kernel = &ein_map_strided_kernel<F, TO, R, Index,
                                        typename std::remove_cv<TI>::type...>;
  EIN_LAUNCH(kernel, ein_grid_for(n, threads), threads, stream, f, out.data, n,
             offs, in.data...);
}

/// out[i] = f(in0[i], in1[i], ...) over out's index space. Every input view
/// has out's sizes (a broadcast dim has stride 0); the functor takes the
/// inputs' storage values and returns out's (it converts, e.g. with
/// ein_to_f32 / ein_cvt). `out` must not overlap an input other than
/// element for element, and must not itself have stride-0 dims of size > 1.
template <typename F, typename TO, int R, typename... TI>
inline void ein_map(cudaStream_t stream, F f, EinView<TO, R> out,
                    EinView<TI, R>... in) {
  static_assert(sizeof...(TI) >= 1 && sizeof...(TI) <= 4,
                "ein_map takes 1 to 4 inputs");
  const int64_t n = ein_numel(out);
  if (n == 0)
    return;
  if (n < (int64_t(1) << 31))
    ein_map_launch<F, TO, R, uint32_t>(stream, f, out, in...);
  else
    ein_map_launch<F, TO, R, int64_t>(stream, f, out, in...);
}

template <typename T> struct EinIdentity {
  EIN_HD T operator()(T x) const { return x; }
};

/// dst and src index one 2-d tile pair: dst is contiguous along axis A, src
/// along axis B. A 32x32 tile (+1 column against bank conflicts) is read
/// along B and written along A, so both sides coalesce; the other dims are
/// the batch, walked by `batch` (whose A and B sizes are 1).
template <typename T, typename Index>
__global__ void
ein_transpose_kernel(T *__restrict__ dst, const T *__restrict__ src,
                     int64_t sizeA, int64_t sizeB, int64_t srcStrideA,
                     int64_t dstStrideB, int64_t tilesA, int64_t tilesB,
                     int64_t total, EinOffsets<8, 2, Index> batch) {
  __shared__ T tile[32][33];
  for (int64_t t = blockIdx.x; t < total; t += gridDim.x) {
    const int64_t ta = t % tilesA, tb = t / tilesA % tilesB;
    int64_t base[2];
    batch.offsets(Index(t / (tilesA * tilesB)), base);
    for (int j = threadIdx.y; j < 32; j += blockDim.y) {
      int64_t a = ta * 32 + j, b = tb * 32 + threadIdx.x;
      if (a < sizeA && b < sizeB)
        tile[j][threadIdx.x] = src[base[1] + a * srcStrideA + b];
    }
    __syncthreads();
    for (int j = threadIdx.y; j < 32; j += blockDim.y) {
      int64_t b = tb * 32 + j, a = ta * 32 + threadIdx.x;
      if (a < sizeA && b < sizeB)
        dst[base[0] + a + b * dstStrideB] = tile[threadIdx.x][j];
    }
    __syncthreads(); // the tile is rewritten by the next iteration
  }
}

/// The axis along which a view is contiguous (stride 1, size > 1), or -1.
template <typename T, int R> inline int ein_unit_axis(const EinView<T, R> &v) {
  for (int d = R - 1; d >= 0; --d)
    if (v.stride[d] == 1 && v.size[d] > 1)
      return d;
  return -1;
}

/// dst = src for views of equal sizes and any strides: materialises a
/// rearrange, a repeat (stride-0 source dims), pack/unpack into sub-views.
/// When the two are contiguous along different axes, and both axes are
/// long enough to fill a tile, a tiled transpose; otherwise an elementwise
/// copy (flat and vectorised when both are contiguous). Rank at most 8 on
/// the tiled path (the batch index's rank).
template <typename T, int R>
inline void ein_copy(cudaStream_t stream, EinView<T, R> dst,
                     EinView<const T, R> src) {
  static_assert(R <= 8, "ein_copy handles ranks up to 8");
  const int64_t n = ein_numel(dst);
  if (n == 0)
    return;
  const int a = ein_unit_axis(dst), b = ein_unit_axis(src);
  if (a >= 0 && b >= 0 && a != b && dst.size[a] >= 8 && dst.size[b] >= 8) {
    const int64_t tilesA = (dst.size[a] + 31) / 32;
    const int64_t tilesB = (dst.size[b] + 31) / 32;
    int64_t size[8], stride[2][8];
    for (int d = 0; d < 8; ++d) {
      size[d] = d < R && d != a && d != b ? dst.size[d] : 1;
      stride[0][d] = d < R ? dst.stride[d] : 0;
      stride[1][d] = d < R ? src.stride[d] : 0;
    }
    ein_collapse<8, 2>(size, stride);
    const int64_t batchCount = n / (dst.size[a] * dst.size[b]);
    const int64_t total = tilesA * tilesB * batchCount;
    const int64_t *rows[2] = {stride[0], stride[1]};
    dim3 block(32, 8);
    unsigned grid = ein_grid_for(total, 1);
    if (batchCount < (int64_t(1) << 31)) {
      auto kernel = &ein_transpose_kernel<T, uint32_t>;
      EIN_LAUNCH(kernel, grid, block, stream, dst.data, src.data, dst.size[a],
                 dst.size[b], src.stride[a], dst.stride[b], tilesA, tilesB,
                 total, ein_make_offsets<8, 2, uint32_t>(size, rows));
    } else {
      auto kernel = &ein_transpose_kernel<T, int64_t>;
      EIN_LAUNCH(kernel, grid, block, stream, dst.data, src.data, dst.size[a],
                 dst.size[b], src.stride[a], dst.stride[b], tilesA, tilesB,
                 total, ein_make_offsets<8, 2, int64_t>(size, rows));
    }
    return;
  }
  ein_map(stream, EinIdentity<T>(), dst, src);
}

#endif // EIN_CUDA_MAP_CUH
