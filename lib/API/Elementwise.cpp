// The C++ API's elementwise functions and astype: operands broadcast as
// numpy does (as stride-0 views), then one kernel compiled from generated
// .ein source per function, dtypes and rank.
#include "Internal.h"

#include "ein/Shape/Elementwise.h"

#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

namespace ein::api::detail {
namespace {

/// The elementwise kernels by function, dtypes and rank (never destroyed,
/// as the kernel cache).
struct ElementwiseKernels {
  std::shared_mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<Kernel>> byKey;
};
ElementwiseKernels &kernels() {
  static ElementwiseKernels *instance = new ElementwiseKernels;
  return *instance;
}

std::string dimsText(size_t rank) {
  std::vector<std::string> names;
  for (size_t d = 0; d < rank; ++d)
    names.push_back(fmt::format("a{}", d));
  return axesString(names);
}

/// `t` broadcast to `shape` (numpy's rules: aligned at the right).
Tensor broadcastTo(const Tensor &t, const std::vector<int64_t> &shape) {
  size_t lead = shape.size() - t.shape().size();
  std::vector<int64_t> strides(shape.size(), 0);
  for (size_t d = 0; d < t.shape().size(); ++d)
    strides[lead + d] = t.shape()[d] == shape[lead + d] ? t.strides()[d] : 0;
  return Tensor(t.storage(), t.dtype(), t.device(), shape, strides, t.offset());
}

/// Runs the one-function kernel of `body` over `operands` broadcast to one
/// shape, giving a new tensor of `result` dtype.
Result<Tensor> runElementwise(const std::string &what,
                              const std::vector<Tensor> &given,
                              const std::string &body, DType result) {
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
  // The kernel by function, dtypes and rank: looked up without formatting
  // its source, which only a first call writes.
  // The CPU compiled for (set_cpu) too: the cache holds compiled kernels.
  std::string key = std::to_string(compileTargetId()) + '@' + body;
  key += '|';
  for (const Tensor &t : operands)
    key += char('a' + int(t.dtype()));
  key += char('a' + int(result));
  key += std::to_string(shape.size());
  auto sourceOf = [&] {
    std::string dims = dimsText(shape.size()), params;
    for (size_t i = 0; i < operands.size(); ++i)
      params += fmt::format("{}x{}: {}[\"{}\"]", i ? ", " : "", i,
                            name(operands[i].dtype()), dims);
    return fmt::format("def {}({}) -> {}[\"{}\"]:\n    return {}\n", kernelName,
                       params, name(result), dims, body);
  };
  std::shared_ptr<Kernel> kernel;
  if (*device == cpu) {
    std::shared_lock<std::shared_mutex> lock(kernels().mutex);
    if (auto it = kernels().byKey.find(key); it != kernels().byKey.end())
      kernel = it->second;
  }
  if (!kernel && *device == cpu) {
    auto compiled = kernelFor(sourceOf());
    if (!compiled)
      return compiled.error();
    kernel = *compiled;
    std::unique_lock<std::shared_mutex> lock(kernels().mutex);
    kernels().byKey.emplace(key, kernel);
  }
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
  if (auto ran = runOn(*device, kernel ? kernel->source : sourceOf(),
                       kernel.get(), tensors);
      !ran)
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
  std::string body;
  if (!info->symbol.empty() && info->arity == 2)
    body = fmt::format("x0 {} x1", info->symbol);
  else if (!info->symbol.empty())
    body = fmt::format("{}x0", info->symbol);
  else {
    body = fmt::format("{}(", info->name);
    for (size_t i = 0; i < operands.size(); ++i)
      body += fmt::format("{}x{}", i ? ", " : "", i);
    body += ")";
  }
  // The result dtype from the language's table; the checker reports
  // operands it refuses when the kernel's source is checked.
  DType value = operands[info->firstIsCondition ? 1 : 0].dtype();
  DType result = external(elementwiseResultDType(*info, internal(value)));
  return runElementwise(std::string(function), operands, body, result);
}

Result<Tensor> astype(const Tensor &x, DType dtype) {
  return runElementwise("astype", {x},
                        fmt::format("astype(x0, {})", name(dtype)), dtype);
}

} // namespace ein::api::nothrow
