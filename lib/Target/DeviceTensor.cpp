// Tensors held in a target's memory, and calls of in-process code on them
// (ein/Target/DeviceTensor.h).
#include "ein/Target/DeviceTensor.h"
#include "ein/Target/DeviceMemory.h"
#include "ein/Target/Target.h"

namespace ein {

ErrorOr<DeviceTensor> DeviceTensor::create(DeviceMemory &memory,
                                           runtime::StorageType type,
                                           std::vector<int64_t> shape) {
  DeviceTensor t;
  t.mem = &memory;
  if (memory.isHost()) {
    auto made = runtime::HostTensor::create(type, std::move(shape));
    if (!made)
      return made.error();
    t.meta = std::move(*made);
    return t;
  }
  t.meta.type = type;
  t.meta.shape = std::move(shape);
  auto buffer = memory.allocate(t.meta.byteSize());
  if (!buffer)
    return buffer.error();
  DeviceMemory *owner = &memory;
  t.buffer =
      std::shared_ptr<void>(*buffer, [owner](void *p) { owner->release(p); });
  return t;
}

ErrorOr<DeviceTensor> DeviceTensor::place(DeviceMemory &memory,
                                          runtime::HostTensor t) {
  if (!t.isCOrder())
    t = t.toCOrder();
  if (memory.isHost()) {
    DeviceTensor held;
    held.mem = &memory;
    held.meta = std::move(t);
    return held;
  }
  auto held = create(memory, t.type, t.shape);
  if (!held)
    return held.error();
  if (auto in = memory.copyIn(held->data(), t.data.data(), t.data.size()); !in)
    return in.error();
  return held;
}

ErrorOr<runtime::HostTensor> DeviceTensor::toHost() const {
  if (mem->isHost())
    return meta;
  auto t = runtime::HostTensor::create(meta.type, meta.shape);
  if (!t)
    return t.error();
  if (auto out = mem->copyOut(t->data.data(), data(), t->data.size()); !out)
    return out.error();
  return t;
}

void *DeviceTensor::data() const {
  if (mem && !mem->isHost())
    return buffer.get();
  return const_cast<uint8_t *>(meta.data.data());
}

ErrorOr<void> callOn(Callable &callable,
                     const std::vector<const DeviceTensor *> &inputs,
                     const std::vector<DeviceTensor *> &outputs,
                     const Bindings &dims, int64_t *indexStatus) {
  std::vector<const DeviceTensor *> all = inputs;
  all.insert(all.end(), outputs.begin(), outputs.end());
  for (const DeviceTensor *t : all)
    if (&t->memory() != &all.front()->memory())
      return Error::program("a call on tensors of two memories");
  if (all.empty() || all.front()->memory().isHost()) {
    std::vector<const runtime::HostTensor *> ins;
    std::vector<runtime::HostTensor *> outs;
    for (const DeviceTensor *t : inputs)
      ins.push_back(&t->host());
    for (DeviceTensor *t : outputs)
      outs.push_back(&t->host());
    return callable.call(ins, outs, dims, indexStatus);
  }
  std::vector<std::vector<int64_t>> strides;
  for (const DeviceTensor *t : all)
    strides.push_back(runtime::cOrderStrides(t->shape()));
  std::vector<StridedArgument> args;
  for (size_t i = 0; i < all.size(); ++i)
    args.push_back({all[i]->data(), all[i]->shape().data(), strides[i].data(),
                    all[i]->shape().size()});
  return callable.callStrided(args.data(), args.size(), &dims, indexStatus);
}

ErrorOr<void> callIn(DeviceMemory &memory, Callable &callable,
                     const std::vector<const runtime::HostTensor *> &inputs,
                     const std::vector<runtime::HostTensor *> &outputs,
                     const Bindings &dims, int64_t *indexStatus) {
  if (memory.isHost())
    return callable.call(inputs, outputs, dims, indexStatus);
  std::vector<DeviceTensor> ins, outs;
  for (const runtime::HostTensor *t : inputs) {
    auto placed = DeviceTensor::place(memory, *t);
    if (!placed)
      return placed.error();
    ins.push_back(std::move(*placed));
  }
  for (const runtime::HostTensor *t : outputs) {
    auto made = DeviceTensor::create(memory, t->type, t->shape);
    if (!made)
      return made.error();
    outs.push_back(std::move(*made));
  }
  std::vector<const DeviceTensor *> inPointers;
  std::vector<DeviceTensor *> outPointers;
  for (const DeviceTensor &t : ins)
    inPointers.push_back(&t);
  for (DeviceTensor &t : outs)
    outPointers.push_back(&t);
  if (auto called =
          callOn(callable, inPointers, outPointers, dims, indexStatus);
      !called)
    return called;
  for (size_t k = 0; k < outputs.size(); ++k)
    if (auto out = memory.copyOut(outputs[k]->data.data(), outs[k].data(),
                                  outputs[k]->data.size());
        !out)
      return out;
  return {};
}

} // namespace ein
