// The collectives of a sharded function's local program (docs/distributed.md
// §4, docs/cuda.md): the generated code calls the host's entry points
// (ein/Runtime/CollectiveCalls.h) through this table, which the loader of an
// in-process library fills (ein_api_set_collectives) so that they run on the
// calling rank's device communicators: NCCL, or its emulation under
// cuda-emulated. Buffers are contiguous device memory; each call returns once
// its collective is done, so the kernels queued after it read its result.
#ifndef EIN_CUDA_COMM_CUH
#define EIN_CUDA_COMM_CUH

/* A function with collectives returns it before queuing anything when no
   table is installed (built outside einc, nothing gives it communicators). */
#define EIN_ERR_COMM 7

/// ein_comm_all_reduce, ein_comm_reduce_scatter and ein_comm_axis_rank of
/// CollectiveCalls.h: pointers as integers, `type` a runtime::StorageType,
/// `op` a CollectiveReduction (the generated code passes sums, max and min:
/// it divides a mean itself, on the device).
typedef void (*EinCommAllReduce)(int64_t data, int64_t count, int32_t type,
                                 int32_t op, int32_t axis);
typedef void (*EinCommReduceScatter)(int64_t send, int64_t recv,
                                     int64_t total, int32_t type, int32_t op,
                                     int32_t axis);
typedef int64_t (*EinCommAxisRank)(int32_t axis);

struct EinCommCalls {
  EinCommAllReduce all_reduce;
  EinCommReduceScatter reduce_scatter;
  EinCommAxisRank axis_rank;
};
static EinCommCalls ein_comm_calls = {nullptr, nullptr, nullptr};

/// Installs the host's entry points (SharedLibrary.cpp, after dlopen).
extern "C" void ein_api_set_collectives(EinCommAllReduce all_reduce,
                                        EinCommReduceScatter reduce_scatter,
                                        EinCommAxisRank axis_rank) {
  ein_comm_calls.all_reduce = all_reduce;
  ein_comm_calls.reduce_scatter = reduce_scatter;
  ein_comm_calls.axis_rank = axis_rank;
}

inline bool ein_comm_installed() {
  return ein_comm_calls.all_reduce && ein_comm_calls.reduce_scatter &&
         ein_comm_calls.axis_rank;
}

/// The kernels queued so far have written the buffer before the host's
/// collective reads it, whichever stream the communicator issues on.
inline void ein_comm_ready(cudaStream_t stream) {
  EIN_CUDA_CHECK(cudaStreamSynchronize(stream));
}

/// In place: data[0 .. count) of a rank's partial sums, summed (max, min)
/// over the ranks of mesh axis `axis`.
inline void ein_comm_all_reduce(cudaStream_t stream, void *data,
                                int64_t count, int32_t type, int32_t op,
                                int32_t axis) {
  ein_comm_ready(stream);
  ein_comm_calls.all_reduce(int64_t(data), count, type, op, axis);
}

/// recv[0 .. total/n) = this rank's block of the reduction of
/// send[0 .. total) over axis `axis`'s n ranks.
inline void ein_comm_reduce_scatter(cudaStream_t stream, const void *send,
                                    void *recv, int64_t total, int32_t type,
                                    int32_t op, int32_t axis) {
  ein_comm_ready(stream);
  ein_comm_calls.reduce_scatter(int64_t(send), int64_t(recv), total, type, op,
                                axis);
}

/// This rank's coordinate on mesh axis `axis`.
inline int64_t ein_comm_axis_rank(int32_t axis) {
  return ein_comm_calls.axis_rank(axis);
}

/// A mean's division of the group's sum by its size, on the device (as the
/// host's entry point divides on the CPU: each element by T(ranks)).
template <typename T>
__global__ void ein_comm_divide_kernel(T *__restrict__ data, int64_t n,
                                       T ranks) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    data[i] = data[i] / ranks;
}
template <typename T>
inline void ein_comm_divide(cudaStream_t stream, T *data, int64_t n,
                            int64_t ranks) {
  if (n <= 0)
    return;
  const unsigned threads = 256;
  auto kernel = &ein_comm_divide_kernel<T>;
  EIN_LAUNCH(kernel, ein_grid_for(n, threads), threads, stream, data, n,
             T(ranks));
}

#endif
