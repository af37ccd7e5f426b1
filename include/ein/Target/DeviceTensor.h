// A tensor held in a target's memory (DeviceMemory): a host tensor on the
// host, a buffer of a device's memory with its type and shape elsewhere; and
// a call of a target's in-process code on such tensors.
#pragma once

#include "ein/Runtime/HostTensor.h"
#include "ein/Support/Error.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace ein {

class Callable;
class DeviceMemory;

/// A C-order tensor in one memory. On the host its bytes are host() itself;
/// on a device, host() holds only the type and shape and the bytes are a
/// buffer of that memory, released with the last copy of the tensor (copies
/// share the buffer).
class DeviceTensor {
public:
  DeviceTensor() = default;
  /// A new tensor of `type` and `shape` in `memory` (zeros on the host,
  /// unset on a device).
  static ErrorOr<DeviceTensor> create(DeviceMemory &memory,
                                      runtime::StorageType type,
                                      std::vector<int64_t> shape);
  /// `t` in `memory`: `t` itself (in C order) on the host, a copy on a
  /// device.
  static ErrorOr<DeviceTensor> place(DeviceMemory &memory,
                                     runtime::HostTensor t);
  /// The tensor on the host: itself on the host, a copy from a device.
  ErrorOr<runtime::HostTensor> toHost() const;

  DeviceMemory &memory() const { return *mem; }
  /// The type and shape (and, on the host, the bytes).
  const runtime::HostTensor &host() const { return meta; }
  runtime::HostTensor &host() { return meta; }
  runtime::StorageType type() const { return meta.type; }
  const std::vector<int64_t> &shape() const { return meta.shape; }
  size_t byteSize() const { return meta.byteSize(); }
  /// The first byte, in memory().
  void *data() const;

private:
  DeviceMemory *mem = nullptr;
  runtime::HostTensor meta;
  std::shared_ptr<void> buffer;
};

/// Runs `callable`, built for the tensors' memory (TargetOptions::inProcess),
/// on them: Callable::call on the host's tensors, callStrided on a device's
/// buffers. `outputs` are allocated with the result shapes.
ErrorOr<void> callOn(Callable &callable,
                     const std::vector<const DeviceTensor *> &inputs,
                     const std::vector<DeviceTensor *> &outputs,
                     const Bindings &dims, int64_t *indexStatus = nullptr);

/// callOn on host tensors: on the host themselves, on a device copies of
/// them in `memory`, the outputs copied back.
ErrorOr<void> callIn(DeviceMemory &memory, Callable &callable,
                     const std::vector<const runtime::HostTensor *> &inputs,
                     const std::vector<runtime::HostTensor *> &outputs,
                     const Bindings &dims, int64_t *indexStatus = nullptr);

} // namespace ein
