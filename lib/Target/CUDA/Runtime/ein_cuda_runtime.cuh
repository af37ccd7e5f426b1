// The prelude of ein's CUDA runtime: the toolkit headers under nvcc, the
// launch macro, error checking. Second in the concatenation order, after
// ein_cuda_emu.h (docs/cuda.md); the kernels follow in ein_cuda_types.cuh,
// ein_cuda_map.cuh, ein_cuda_reduce.cuh and ein_cuda_gemm.cuh.
#ifndef EIN_CUDA_RUNTIME_CUH
#define EIN_CUDA_RUNTIME_CUH

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <type_traits>
#include <utility>

#ifdef __CUDACC__
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
/// kernel<<<grid, block, 0, stream>>>(args...); `kernel` is one token (bind
/// a template instance to a pointer variable first), as under emulation.
#define EIN_LAUNCH(kernel, grid, block, stream, ...)                           \
  kernel<<<(grid), (block), 0, (stream)>>>(__VA_ARGS__)
#endif

/// `#pragma unroll` for nvcc; host compilers would warn about it.
#ifdef __CUDACC__
#define EIN_UNROLL _Pragma("unroll")
#else
#define EIN_UNROLL
#endif

/// Functions the kernels and the host launchers share.
#define EIN_HD __host__ __device__ __forceinline__
#define EIN_D __device__ __forceinline__

/// The runtime's errors are programming errors of the emitter (a descriptor
/// cuBLASLt refuses, a launch that fails): they print and abort, since a
/// generated entry point has no way to recover.
#define EIN_CUDA_CHECK(expr)                                                   \
  do {                                                                         \
    cudaError_t ein_err_ = (expr);                                             \
    if (ein_err_ != cudaSuccess) {                                             \
      std::fprintf(stderr, "ein CUDA runtime: %s failed at %s:%d: %s\n",       \
                   #expr, __FILE__, __LINE__, cudaGetErrorString(ein_err_));   \
      std::abort();                                                            \
    }                                                                          \
  } while (0)

[[noreturn]] inline void ein_fail(const char *what) {
  std::fprintf(stderr, "ein CUDA runtime: %s\n", what);
  std::fflush(stderr);
  std::abort();
}

#endif // EIN_CUDA_RUNTIME_CUH
