// The host's DeviceMemory: plain memory and the training loop's element-wise
// loops as host loops (the reference the devices' loops follow).
#include "ein/Target/DeviceMemory.h"

#include "ein/Runtime/Communicator.h"
#include "ein/Runtime/FloatConvert.h"

#include <cstdlib>
#include <cstring>

namespace ein {

DeviceMemory::~DeviceMemory() = default;

ErrorOr<std::unique_ptr<Communicator>>
DeviceMemory::communicator(Communicator &) {
  return Error::usage("collectives on the buffers of " + name() +
                      " are not built: the host's communicator works on the "
                      "host's memory");
}

namespace {

using runtime::StorageType;

/// Element i of a bf16 or f16 tensor, widened.
float narrowAt(const void *data, StorageType type, int64_t i) {
  uint16_t bits = static_cast<const uint16_t *>(data)[i];
  return type == StorageType::BF16 ? runtime::bf16BitsToFloat(bits)
                                   : runtime::f16BitsToFloat(bits);
}

class HostMemory final : public DeviceMemory {
public:
  bool isHost() const override { return true; }
  std::string name() const override { return "the host"; }

  ErrorOr<void *> allocate(size_t bytes) override {
    void *p = std::malloc(bytes ? bytes : 1);
    if (!p)
      return Error::usage("out of host memory");
    return p;
  }
  void release(void *p) override { std::free(p); }
  ErrorOr<void> copyIn(void *dst, const void *src, size_t bytes) override {
    if (bytes && dst != src)
      std::memcpy(dst, src, bytes);
    return {};
  }
  ErrorOr<void> copyOut(void *dst, const void *src, size_t bytes) override {
    return copyIn(dst, src, bytes);
  }
  ErrorOr<void> copyWithin(void *dst, const void *src, size_t bytes) override {
    if (bytes)
      std::memmove(dst, src, bytes);
    return {};
  }
  ErrorOr<void> zero(void *p, size_t bytes) override {
    if (bytes)
      std::memset(p, 0, bytes);
    return {};
  }

  ErrorOr<void> scale(void *data, StorageType type, int64_t n,
                      double factor) override {
    if (type == StorageType::F64) {
      double *p = static_cast<double *>(data);
      for (int64_t i = 0; i < n; ++i)
        p[i] *= factor;
      return {};
    }
    float *p = static_cast<float *>(data);
    float f = static_cast<float>(factor);
    for (int64_t i = 0; i < n; ++i)
      p[i] *= f;
    return {};
  }

  ErrorOr<void> accumulate(void *sum, StorageType sumType, const void *part,
                           StorageType partType, int64_t n, bool add) override {
    if (partType == sumType && sumType == StorageType::F64) {
      double *s = static_cast<double *>(sum);
      const double *p = static_cast<const double *>(part);
      for (int64_t i = 0; i < n; ++i)
        s[i] += p[i];
      return {};
    }
    float *s = static_cast<float *>(sum);
    if (partType == sumType) {
      const float *p = static_cast<const float *>(part);
      for (int64_t i = 0; i < n; ++i)
        s[i] += p[i];
      return {};
    }
    for (int64_t i = 0; i < n; ++i)
      s[i] = (add ? s[i] : 0.0f) + narrowAt(part, partType, i);
    return {};
  }

  ErrorOr<void> narrow(void *narrow, StorageType narrowType, const void *master,
                       int64_t n) override {
    const float *m = static_cast<const float *>(master);
    uint16_t *out = static_cast<uint16_t *>(narrow);
    bool bf16 = narrowType == StorageType::BF16;
    for (int64_t i = 0; i < n; ++i)
      out[i] =
          bf16 ? runtime::floatToBF16Bits(m[i]) : runtime::floatToF16Bits(m[i]);
    return {};
  }

  ErrorOr<double> sumOfSquares(const void *data, StorageType type,
                               int64_t n) override {
    double sum = 0;
    if (type == StorageType::F64) {
      const double *p = static_cast<const double *>(data);
      for (int64_t i = 0; i < n; ++i)
        sum += p[i] * p[i];
      return sum;
    }
    const float *p = static_cast<const float *>(data);
    for (int64_t i = 0; i < n; ++i)
      sum += double(p[i]) * double(p[i]);
    return sum;
  }
};

} // namespace

DeviceMemory &hostMemory() {
  static HostMemory memory;
  return memory;
}

} // namespace ein
