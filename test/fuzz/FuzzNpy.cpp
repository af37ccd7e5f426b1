// libFuzzer target: the tensor-file readers of `einc run` on arbitrary bytes:
// the `.npy` reader (runtime::parseNpy), read as its natural type and as every
// storage type `einc run` may want, the safetensors reader
// (runtime::parseSafeTensors) and the .npz reader (runtime::parseNpz), each
// of their tensors read likewise.
//
// Oracles beyond "no crash, no sanitizer report, no huge allocation":
//   npy-consistent  an accepted tensor's data size matches its shape and type;
//   npy-roundtrip   serializeNpy of an accepted tensor parses back (as the
//                   same type) to the same shape and values, in C order
//                   (a Fortran-ordered file is read with Fortran strides and
//                   written in C order).
//   safetensors-roundtrip  an accepted safetensors file written again
//                   (serializeSafeTensors) parses back to the same names,
//                   types, shapes and bytes.
//   npz-roundtrip   an accepted .npz archive written again (serializeNpz,
//                   with and without ZIP64 records) parses back to the same
//                   names, types, shapes and values.
#include "FuzzSupport.h"

#include "ein/Runtime/Npy.h"
#include "ein/Runtime/Npz.h"
#include "ein/Runtime/SafeTensors.h"

#include <cmath>
#include <cstring>
#include <optional>

using namespace ein;
using namespace ein::runtime;

namespace {

/// Whether `x` and `y` hold the same values at the same indices, whatever
/// their layouts.
bool sameValues(const HostTensor &x, const HostTensor &y) {
  if (x.type != y.type || x.shape != y.shape || x.data.size() != y.data.size())
    return false;
  const HostTensor a = x.toCOrder(), b = y.toCOrder();
  bool narrowFloat = a.type == StorageType::BF16 ||
                     a.type == StorageType::F8E4M3 ||
                     a.type == StorageType::F8E5M2;
  if (!narrowFloat)
    return a.data == b.data;
  // bf16/fp8 travel as f32: values must survive, NaN payloads need not.
  for (int64_t i = 0, n = a.numElements(); i < n; ++i) {
    double x = elementAsDouble(a, i), y = elementAsDouble(b, i);
    if (std::isnan(x) && std::isnan(y))
      continue;
    if (std::memcmp(&x, &y, sizeof x) != 0)
      return false;
  }
  return true;
}

void checkTensor(const HostTensor &t, const std::string &as) {
  if (!fuzz::ignored("npy-consistent") && !t.isConsistent())
    fuzz::finding("npy-consistent",
                  fmt::format("read as {}: {} with {} data bytes", as,
                              t.describe(), t.data.size()));
  if (fuzz::ignored("npy-roundtrip"))
    return;
  auto bytes = serializeNpy(t);
  if (!bytes)
    fuzz::finding("npy-roundtrip",
                  fmt::format("read as {}: {} does not serialize: {}", as,
                              t.describe(), bytes.error().message));
  auto again = parseNpy(std::move(*bytes), "again.npy", t.type);
  if (!again)
    fuzz::finding(
        "npy-roundtrip",
        fmt::format("read as {}: the serialized {} does not parse: {}", as,
                    t.describe(), again.error().message));
  if (!again->isCOrder())
    fuzz::finding("npy-roundtrip",
                  fmt::format("read as {}: the serialized {} is not C order",
                              as, t.describe()));
  if (!sameValues(t, *again))
    fuzz::finding(
        "npy-roundtrip",
        fmt::format("read as {}: {} comes back as {} with other values", as,
                    t.describe(), again->describe()));
}

void checkSafeTensors(const std::vector<uint8_t> &bytes) {
  auto file = parseSafeTensors(bytes, "fuzz.safetensors");
  if (!file) {
    if (file.error().message.rfind("fuzz.safetensors", 0) != 0 &&
        !fuzz::ignored("npy-message"))
      fuzz::finding("npy-message", "error does not start with the file name: " +
                                       file.error().message);
    return;
  }
  std::vector<HostTensor> tensors;
  std::vector<NamedTensor> named;
  for (const SafeTensorsEntry &e : file->entries) {
    auto t = file->tensor(e.name);
    if (!t)
      continue; // a dtype ein has no type for
    if (!t->isConsistent())
      fuzz::finding("npy-consistent",
                    fmt::format("safetensors tensor {}: {} with {} data bytes",
                                e.name, t->describe(), t->data.size()));
    tensors.push_back(std::move(*t));
  }
  if (fuzz::ignored("safetensors-roundtrip"))
    return;
  size_t k = 0;
  for (const SafeTensorsEntry &e : file->entries)
    if (e.type)
      named.push_back({e.name, &tensors[k++]});
  auto again = serializeSafeTensors(named, file->metadata);
  if (!again) {
    fuzz::finding("safetensors-roundtrip",
                  "an accepted file does not serialize: " +
                      again.error().message);
    return;
  }
  auto back = parseSafeTensors(*again, "again.safetensors");
  if (!back) {
    fuzz::finding("safetensors-roundtrip",
                  "the serialized file does not parse: " +
                      back.error().message);
    return;
  }
  if (back->metadata != file->metadata || back->entries.size() != named.size())
    fuzz::finding("safetensors-roundtrip",
                  "metadata or tensors differ after a round trip");
  for (size_t i = 0; i < named.size() && i < back->entries.size(); ++i) {
    auto t = back->tensor(back->entries[i].name);
    if (back->entries[i].name != named[i].name || !t ||
        t->type != named[i].tensor->type ||
        t->shape != named[i].tensor->shape || t->data != named[i].tensor->data)
      fuzz::finding("safetensors-roundtrip",
                    "tensor " + named[i].name + " differs after a round trip");
  }
}

void checkNpz(const std::vector<uint8_t> &bytes) {
  auto file = parseNpz(bytes, "fuzz.npz");
  if (!file) {
    if (file.error().message.rfind("fuzz.npz", 0) != 0 &&
        !fuzz::ignored("npy-message"))
      fuzz::finding("npy-message", "error does not start with the file name: " +
                                       file.error().message);
    return;
  }
  std::vector<HostTensor> tensors;
  std::vector<std::string> names;
  for (const NpzEntry &e : file->entries) {
    auto t = file->tensor(e.name);
    if (!t) {
      if (t.error().message.rfind("fuzz.npz: member '", 0) != 0 &&
          !fuzz::ignored("npy-message"))
        fuzz::finding("npy-message", "a member's error does not start with "
                                     "the file and member: " +
                                         t.error().message);
      continue;
    }
    checkTensor(*t, "npz member " + e.name);
    tensors.push_back(std::move(*t));
    names.push_back(e.name);
  }
  if (fuzz::ignored("npz-roundtrip"))
    return;
  std::vector<NamedTensor> named;
  for (size_t i = 0; i < tensors.size(); ++i)
    named.push_back({names[i], &tensors[i]});
  for (bool zip64 : {false, true}) {
    auto again = serializeNpz(named, zip64);
    if (!again)
      fuzz::finding("npz-roundtrip", "an accepted archive does not "
                                     "serialize: " +
                                         again.error().message);
    auto back = parseNpz(*again, "again.npz");
    if (!back)
      fuzz::finding("npz-roundtrip", "the serialized archive does not parse: " +
                                         back.error().message);
    if (back->entries.size() != named.size())
      fuzz::finding("npz-roundtrip", "arrays differ after a round trip");
    for (size_t i = 0; i < named.size(); ++i) {
      auto t = back->tensor(back->entries[i].name, tensors[i].type);
      if (back->entries[i].name != names[i] || !t ||
          !sameValues(tensors[i], *t))
        fuzz::finding("npz-roundtrip",
                      "array " + names[i] + " differs after a round trip");
    }
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  checkSafeTensors(std::vector<uint8_t>(data, data + size));
  checkNpz(std::vector<uint8_t>(data, data + size));
  const std::optional<StorageType> wants[] = {
      std::nullopt,        StorageType::F64,  StorageType::F32,
      StorageType::F16,    StorageType::BF16, StorageType::F8E4M3,
      StorageType::F8E5M2, StorageType::I64,  StorageType::I32,
      StorageType::Bool};
  for (auto want : wants) {
    auto tensor =
        parseNpy(std::vector<uint8_t>(data, data + size), "fuzz.npy", want);
    std::string as = want ? storageName(*want) : "natural type";
    if (!tensor) {
      if (tensor.error().message.rfind("fuzz.npy", 0) != 0 &&
          !fuzz::ignored("npy-message"))
        fuzz::finding("npy-message",
                      "error does not start with the file name: " +
                          tensor.error().message);
      continue;
    }
    if (want && tensor->type != *want)
      fuzz::finding("npy-consistent", fmt::format("asked for {}, got {}", as,
                                                  tensor->describe()));
    checkTensor(*tensor, as);
  }
  return 0;
}
