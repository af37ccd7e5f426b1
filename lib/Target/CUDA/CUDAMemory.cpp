// The CUDA targets' DeviceMemory: the device's memory through its support
// library (ein/Target/CUDA/Device.h), and the training loop's element-wise
// steps as that library's kernels.
#include "CUDAMemory.h"
#include "NCCL.h"

#include "ein/Target/CUDA/Device.h"

#include <fmt/format.h>

namespace ein {

namespace {

using runtime::StorageType;

/// The support library's code of a float storage type.
int typeCode(StorageType type) {
  switch (type) {
  case StorageType::F32:
    return 0;
  case StorageType::F64:
    return 1;
  case StorageType::BF16:
    return 2;
  case StorageType::F16:
    return 3;
  case StorageType::F8E4M3:
  case StorageType::F8E5M2:
  case StorageType::I64:
  case StorageType::I32:
  case StorageType::I8:
  case StorageType::Bool:
    break;
  }
  return -1;
}

class CUDAMemory final : public DeviceMemory {
public:
  explicit CUDAMemory(CUDADevice &device) : device(device) {}

  bool isHost() const override { return false; }
  std::string name() const override { return device.name; }

  ErrorOr<void *> allocate(size_t bytes) override {
    void *p = nullptr;
    if (int rc = device.malloc(&p, bytes); rc != 0)
      return Error::usage(fmt::format("cannot allocate {} bytes on the CUDA "
                                      "device: {}",
                                      bytes, device.errorString(rc)));
    return p;
  }
  void release(void *p) override {
    if (p)
      device.free(p);
  }
  ErrorOr<void> copyIn(void *dst, const void *src, size_t bytes) override {
    return copy(dst, src, bytes, 1);
  }
  ErrorOr<void> copyOut(void *dst, const void *src, size_t bytes) override {
    return copy(dst, src, bytes, 2);
  }
  ErrorOr<void> copyWithin(void *dst, const void *src, size_t bytes) override {
    return copy(dst, src, bytes, 3);
  }
  ErrorOr<void> zero(void *p, size_t bytes) override {
    return check(locked([&] { return device.zero(p, bytes); }),
                 fmt::format("zeroing {} bytes on the CUDA device", bytes));
  }

  ErrorOr<void> scale(void *data, StorageType type, int64_t n,
                      double factor) override {
    return check(locked([&] {
                   return device.trainScale(data, n, typeCode(type), factor);
                 }),
                 "scaling a gradient on the CUDA device");
  }
  ErrorOr<void> accumulate(void *sum, StorageType sumType, const void *part,
                           StorageType partType, int64_t n, bool add) override {
    int type = partType == sumType ? typeCode(sumType) : typeCode(partType);
    return check(locked([&] {
                   return device.trainAccumulate(sum, part, n, type,
                                                 add ? 1 : 0);
                 }),
                 "accumulating a gradient on the CUDA device");
  }
  ErrorOr<void> narrow(void *narrow, StorageType narrowType, const void *master,
                       int64_t n) override {
    return check(locked([&] {
                   return device.trainNarrow(narrow, master, n,
                                             typeCode(narrowType));
                 }),
                 "rounding master weights on the CUDA device");
  }
  ErrorOr<double> sumOfSquares(const void *data, StorageType type,
                               int64_t n) override {
    if (!scratch) {
      auto p = allocate(sizeof(double));
      if (!p)
        return p.error();
      scratch = static_cast<double *>(*p);
    }
    double sum = 0;
    if (auto ok = check(locked([&] {
                          int rc = device.trainSquares(data, n, typeCode(type),
                                                       scratch);
                          return rc ? rc
                                    : device.copy(&sum, scratch, sizeof sum, 2);
                        }),
                        "a sum of squares on the CUDA device");
        !ok)
      return ok.error();
    return sum;
  }

  ErrorOr<std::unique_ptr<Communicator>>
  communicator(Communicator &group) override {
    const NcclApi *api = &emulatedNccl();
    if (!device.emulated) {
      auto loaded = loadNccl();
      if (!loaded)
        return loaded.error();
      api = *loaded;
    }
    // The emulation's collectives wait for every rank on the host group:
    // holding the device's lock there would keep simulated ranks sharing
    // the device from arriving, and they touch no kernel's state.
    return ncclCommunicator(
        group, *api,
        NcclStream{nullptr, device.streamQuery,
                   device.emulated ? nullptr : &device.running});
  }

private:
  /// `kind` is cudaMemcpyKind: 1 to the device, 2 back, 3 within.
  ErrorOr<void> copy(void *dst, const void *src, size_t bytes, int kind) {
    return check(locked([&] { return device.copy(dst, src, bytes, kind); }),
                 fmt::format("a copy of {} bytes {} the CUDA device", bytes,
                             kind == 1   ? "to"
                             : kind == 2 ? "from"
                                         : "within"));
  }
  /// Device work runs one call at a time (CUDADevice::running).
  template <class F> int locked(F work) {
    std::lock_guard<std::mutex> lock(device.running);
    return work();
  }
  ErrorOr<void> check(int rc, const std::string &what) {
    if (rc == 0)
      return {};
    return Error::program(
        fmt::format("{} failed: {}", what, device.errorString(rc)));
  }

  CUDADevice &device;
  double *scratch = nullptr; // a device double for sumOfSquares
};

} // namespace

ErrorOr<DeviceMemory *> cudaMemory(bool emulated) {
  auto device = loadCUDADevice(emulated);
  if (!device)
    return device.error();
  // Never destroyed, as the device itself (loadCUDADevice).
  static CUDAMemory *memories[2] = {nullptr, nullptr};
  static std::mutex creating;
  std::lock_guard<std::mutex> lock(creating);
  CUDAMemory *&memory = memories[emulated ? 1 : 0];
  if (!memory)
    memory = new CUDAMemory(**device);
  return memory;
}

} // namespace ein
