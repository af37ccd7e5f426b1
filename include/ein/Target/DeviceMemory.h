// The memory a target's in-process code reads and writes, and the few
// element-wise loops a training loop runs over it (Target::memory): the
// host's own memory for the CPU targets, the CUDA device's for the CUDA
// targets, so that `einc train` keeps its state where the code runs.
#pragma once

#include "ein/Runtime/HostTensor.h"
#include "ein/Support/Error.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace ein {

class Communicator;

/// Memory of one device and loops over `n` contiguous elements in it. Every
/// pointer argument is this memory's, except the host side of a copy. The
/// loops' arithmetic is the same on every device (the host's is the
/// reference): f32 data is scaled by float(factor), sums of squares are
/// accumulated in f64, bf16 and f16 are rounded to nearest even.
class DeviceMemory {
public:
  virtual ~DeviceMemory();
  /// Whether this is the host's memory: its pointers are the host's, and
  /// the code that runs on it is called on host tensors (Callable::call).
  virtual bool isHost() const = 0;
  /// "the host", "NVIDIA H100 80GB HBM3 (sm_90)", "emulated CUDA on the CPU".
  virtual std::string name() const = 0;

  virtual ErrorOr<void *> allocate(size_t bytes) = 0;
  virtual void release(void *p) = 0;
  virtual ErrorOr<void> copyIn(void *dst, const void *hostSrc,
                               size_t bytes) = 0;
  virtual ErrorOr<void> copyOut(void *hostDst, const void *src,
                                size_t bytes) = 0;
  /// A copy between two places of this memory.
  virtual ErrorOr<void> copyWithin(void *dst, const void *src,
                                   size_t bytes) = 0;
  virtual ErrorOr<void> zero(void *p, size_t bytes) = 0;

  /// data *= factor; `type` is F32 or F64.
  virtual ErrorOr<void> scale(void *data, runtime::StorageType type, int64_t n,
                              double factor) = 0;
  /// sum += part, both of `sumType` (F32 or F64); or, when `partType` is
  /// BF16 or F16 and `sumType` F32, sum = (add ? sum : 0) + widened part.
  virtual ErrorOr<void> accumulate(void *sum, runtime::StorageType sumType,
                                   const void *part,
                                   runtime::StorageType partType, int64_t n,
                                   bool add) = 0;
  /// narrow[i] = master[i] (F32) rounded to `narrowType` (BF16 or F16).
  virtual ErrorOr<void> narrow(void *narrow, runtime::StorageType narrowType,
                               const void *master, int64_t n) = 0;
  /// The sum of data[i]² (F32 or F64), in f64.
  virtual ErrorOr<double>
  sumOfSquares(const void *data, runtime::StorageType type, int64_t n) = 0;

  /// The collectives on this memory's buffers over the ranks of `group`
  /// (a host communicator, which must outlive the result): NCCL on a CUDA
  /// device, emulated NCCL over `group` under cuda-emulated. Collective
  /// over `group`. The host's memory refuses: `group` itself works on it.
  virtual ErrorOr<std::unique_ptr<Communicator>>
  communicator(Communicator &group);
};

/// The host's memory (one per process).
DeviceMemory &hostMemory();

} // namespace ein
