// CUDA device tensors of the C++ API: the device selected by EIN_CUDA (this
// machine's GPU, or the CUDA code emulated on the CPU), its memory and
// copies through the CUDA targets' device support (ein/Target/CUDA/
// Device.h), and the registered target its kernels compile for.
#include "CUDA/Device.h"
#include "Internal.h"

#include "ein/Target/CUDA/Build.h"
#include "ein/Target/CUDA/Device.h"
#include "ein/Target/TargetRegistry.h"

#include <fmt/format.h>

#include <cstdlib>

namespace ein::api::detail::cudaDevice {

namespace {

struct DeviceState {
  /// Why the device cannot be used; empty when it can.
  std::string unusable;
  CUDADevice *device = nullptr;
  const Target *target = nullptr;
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
    auto device = loadCUDADevice(emulated);
    if (!device) {
      s->unusable = device.error().message;
      return s;
    }
    s->device = *device;
    s->target = *target;
    return s;
  }();
  return *instance;
}

Result<CUDADevice *> usable() {
  const DeviceState &s = state();
  if (!s.unusable.empty())
    return usageError(s.unusable);
  return s.device;
}

} // namespace

Result<void *> allocate(size_t bytes) {
  auto s = usable();
  if (!s)
    return s.error();
  void *p = nullptr;
  if (int rc = (*s)->malloc(&p, bytes); rc != 0)
    return usageError(fmt::format("cannot allocate {} bytes on the CUDA "
                                  "device: {}",
                                  bytes, (*s)->errorString(rc)));
  return p;
}

void release(void *device) {
  if (device)
    state().device->free(device);
}

Result<void> copy(void *dst, const void *src, size_t bytes, Direction how) {
  auto s = usable();
  if (!s)
    return s.error();
  std::lock_guard<std::mutex> lock((*s)->running);
  if (int rc = (*s)->copy(dst, src, bytes, int(how)); rc != 0)
    return usageError(fmt::format("a copy of {} bytes to or from the CUDA "
                                  "device failed: {}",
                                  bytes, (*s)->errorString(rc)));
  return {};
}

Result<void> zero(void *device, size_t bytes) {
  auto s = usable();
  if (!s)
    return s.error();
  std::lock_guard<std::mutex> lock((*s)->running);
  if (int rc = (*s)->zero(device, bytes); rc != 0)
    return usageError(fmt::format("cannot zero {} bytes on the CUDA device: "
                                  "{}",
                                  bytes, (*s)->errorString(rc)));
  return {};
}

Result<const Target *> target() {
  auto s = usable();
  if (!s)
    return s.error();
  return state().target;
}

Result<std::string> deviceName() {
  auto s = usable();
  if (!s)
    return s.error();
  return (*s)->name;
}

} // namespace ein::api::detail::cudaDevice
