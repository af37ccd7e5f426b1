// CUDA device tensors of the C++ API: the device selected by EIN_CUDA (this
// machine's GPU, or the CUDA code emulated on the CPU), its memory and
// copies through the CUDA target's DeviceMemory (Target::memory), and the
// registered target its kernels compile for.
#include "CUDA/Device.h"
#include "Internal.h"

#include "ein/Target/CUDA/Build.h"
#include "ein/Target/DeviceMemory.h"
#include "ein/Target/TargetRegistry.h"

#include <fmt/format.h>

#include <cstdlib>
#include <type_traits>

namespace ein::api::detail::cudaDevice {

namespace {

struct DeviceState {
  /// Why the device cannot be used; empty when it can.
  std::string unusable;
  DeviceMemory *memory = nullptr;
  const Target *target = nullptr;
  /// EIN_CUDA=emulated: "device" memory is host memory.
  bool emulated = false;
};

/// The device, selected on first use: EIN_CUDA=emulated runs the CUDA
/// source on the CPU; otherwise this machine's GPU, through nvcc.
const DeviceState &state() {
  static const DeviceState *instance = [] {
    auto *s = new DeviceState;
    const char *mode = std::getenv("EIN_CUDA");
    std::string m = mode ? mode : "";
    if (!m.empty() && m != "emulated" && m != "gpu") {
      s->unusable = fmt::format("EIN_CUDA={} is not a CUDA mode; use "
                                "EIN_CUDA=gpu (the default) or "
                                "EIN_CUDA=emulated",
                                m);
      return s;
    }
    bool emulated = m == "emulated";
    if (!emulated && !hasNvidiaGPU()) {
      s->unusable = "no CUDA device: this machine has no NVIDIA GPU (no "
                    "/dev/nvidiactl); EIN_CUDA=emulated runs the CUDA code "
                    "on the CPU";
      return s;
    }
    auto target =
        lookupTarget(emulated ? "cuda-emulated" : "cuda", TargetUse::Run);
    if (!target) {
      s->unusable = target.error().message;
      return s;
    }
    auto memory = (*target)->memory();
    if (!memory) {
      s->unusable = memory.error().message;
      return s;
    }
    s->memory = *memory;
    s->target = *target;
    s->emulated = emulated;
    return s;
  }();
  return *instance;
}

Result<DeviceMemory *> usable() {
  const DeviceState &s = state();
  if (!s.unusable.empty())
    return usageError(s.unusable);
  return s.memory;
}

/// The device memory's failure as the API reports it.
template <class T> Result<T> reported(ErrorOr<T> done) {
  if (!done)
    return toInfo(done.error());
  if constexpr (std::is_void_v<T>)
    return {};
  else
    return std::move(*done);
}

} // namespace

Result<void *> allocate(size_t bytes) {
  auto s = usable();
  if (!s)
    return s.error();
  return reported((*s)->allocate(bytes));
}

void release(void *device) {
  if (device)
    state().memory->release(device);
}

Result<void> copy(void *dst, const void *src, size_t bytes, Direction how) {
  auto s = usable();
  if (!s)
    return s.error();
  switch (how) {
  case Direction::HostToDevice:
    return reported((*s)->copyIn(dst, src, bytes));
  case Direction::DeviceToHost:
    return reported((*s)->copyOut(dst, src, bytes));
  case Direction::DeviceToDevice:
    return reported((*s)->copyWithin(dst, src, bytes));
  }
  return programError("an unknown direction of a device copy");
}

Result<void> zero(void *device, size_t bytes) {
  auto s = usable();
  if (!s)
    return s.error();
  return reported((*s)->zero(device, bytes));
}

Result<const Target *> target() {
  auto s = usable();
  if (!s)
    return s.error();
  return state().target;
}

bool emulated() { return state().unusable.empty() && state().emulated; }

Result<std::string> deviceName() {
  auto s = usable();
  if (!s)
    return s.error();
  return (*s)->name();
}

} // namespace ein::api::detail::cudaDevice
