// The C++ API's elementwise functions and astype: operands broadcast as
// numpy does (as stride-0 views), then one kernel per function, dtypes and
// rank, built with the ProgramBuilder.
#include "Internal.h"

#include "ein/Sema/ProgramBuilder.h"
#include "ein/Shape/Elementwise.h"

#include <fmt/format.h>

#include <algorithm>

namespace ein::api::detail {
namespace {

/// `t` broadcast to `shape` (numpy's rules: aligned at the right).
Tensor broadcastTo(const Tensor &t, const std::vector<int64_t> &shape) {
  size_t lead = shape.size() - t.shape().size();
  std::vector<int64_t> strides(shape.size(), 0);
  for (size_t d = 0; d < t.shape().size(); ++d)
    strides[lead + d] = t.shape()[d] == shape[lead + d] ? t.strides()[d] : 0;
  return Tensor(t.storage(), t.dtype(), t.device(), shape, strides, t.offset());
}

/// Runs the one-function kernel of `fn` (nullopt: astype) over `operands`
/// broadcast to one shape, giving a new tensor of `result` dtype.
Result<Tensor> runElementwise(const std::string &what,
                              const std::vector<Tensor> &given,
                              std::optional<ElementwiseFn> fn, DType result) {
  for (const Tensor &t : given)
    if (!t.defined())
      return usageError(fmt::format("{} of an undefined tensor", what));
  auto device = deviceOf(what, given);
  if (!device)
    return device.error();
  // CPU scalars join CUDA operands on the device (copied only then: a
  // call on the CPU pays for no handles).
  std::vector<Tensor> moved;
  if (std::any_of(given.begin(), given.end(),
                  [&](const Tensor &t) { return t.device() != *device; }))
    for (const Tensor &t : given) {
      auto there = onDevice(t, *device);
      if (!there)
        return there.error();
      moved.push_back(*there);
    }
  const std::vector<Tensor> &operands = moved.empty() ? given : moved;
  std::vector<int64_t> shape;
  for (const Tensor &t : operands) {
    if (t.shape().size() > shape.size())
      shape.insert(shape.begin(), t.shape().size() - shape.size(), 1);
  }
  for (const Tensor &t : operands) {
    size_t lead = shape.size() - t.shape().size();
    for (size_t d = 0; d < t.shape().size(); ++d) {
      int64_t &s = shape[lead + d];
      int64_t o = t.shape()[d];
      if (s == 1)
        s = o;
      else if (o != 1 && o != s) {
        std::string shapes;
        for (const Tensor &u : operands)
          shapes += (shapes.empty() ? "" : " and ") +
                    runtime::shapeTupleStr(u.shape());
        return usageError(
            fmt::format("{}: shapes {} do not broadcast", what, shapes));
      }
    }
  }
  // The kernel by function, dtypes and rank (kernelFor adds the device and
  // the CPU compiled for, set_cpu's); it keys the disk cache too, so it holds
  // nothing of this process. The program is built only when the cache
  // does not hold it.
  std::string key = "ein C++ API elementwise v1: ";
  key += what;
  key += '|';
  for (const Tensor &t : operands)
    key += name(t.dtype()) + std::string(",");
  key += name(result);
  key += '|';
  key += std::to_string(shape.size());
  auto build = [&]() -> Result<CheckedModule> {
    CheckedFunction f;
    f.name = kernelName;
    ProgramBuilder b(f);
    std::vector<unsigned> xs;
    for (size_t i = 0; i < operands.size(); ++i) {
      TensorType type;
      type.dtype = internal(operands[i].dtype());
      for (size_t d = 0; d < shape.size(); ++d)
        type.shape.push_back(
            Dim::ofSize(SizeExpr::symbol(fmt::format("a{}", d))));
      xs.push_back(b.param(std::move(type), fmt::format("x{}", i)));
    }
    unsigned y = 0;
    if (fn) {
      auto built = b.elementwise(*fn, xs);
      if (!built)
        return programError(built.error().error.message);
      y = *built;
    } else {
      y = b.cast(xs[0], internal(result));
    }
    b.ret({y});
    CheckedModule module;
    module.path = "<ein C++ API>";
    module.functions.push_back(std::move(f));
    return module;
  };
  auto kernel = kernelFor(key, *device, build);
  if (!kernel)
    return kernel.error();
  auto out = allocate(result, shape, false, *device);
  if (!out)
    return out;
  std::vector<Tensor> views;
  for (const Tensor &t : operands)
    views.push_back(broadcastTo(t, shape));
  std::vector<const Tensor *> tensors;
  for (const Tensor &v : views)
    tensors.push_back(&v);
  tensors.push_back(&*out);
  Result<void> ran = runKernel(**kernel, tensors);
  if (!ran)
    return ran.error();
  return out;
}

} // namespace
} // namespace ein::api::detail

namespace ein::api::nothrow {

using namespace ein::api::detail;

Result<Tensor> elementwise(std::string_view function,
                           const std::vector<Tensor> &operands) {
  const ElementwiseInfo *info = findElementwise(function);
  if (!info)
    return programError(fmt::format("unknown elementwise function '{}' (the "
                                    "functions are listed in "
                                    "docs/language.md §6)",
                                    function));
  if (operands.size() != info->arity)
    return programError(fmt::format("{} takes {} operand(s), got {}", function,
                                    info->arity, operands.size()));
  for (const Tensor &t : operands)
    if (!t.defined())
      return usageError(fmt::format("{} of an undefined tensor", function));
  // The result dtype from the language's table; the builder reports
  // operands it refuses when the kernel is built.
  DType value = operands[info->firstIsCondition ? 1 : 0].dtype();
  DType result = external(elementwiseResultDType(*info, internal(value)));
  return runElementwise(std::string(function), operands, info->fn, result);
}

Result<Tensor> astype(const Tensor &x, DType dtype) {
  return runElementwise("astype", {x}, std::nullopt, dtype);
}

} // namespace ein::api::nothrow
