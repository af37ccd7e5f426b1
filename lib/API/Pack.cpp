// The C++ API's pack and unpack: the pattern checked by einc's checker,
// then strided copies into the packed tensor (pack) and views of it
// (unpack), as einops.pack and einops.unpack.
#include "Internal.h"

#include "ein/Syntax/Pattern.h"

#include <fmt/format.h>

namespace ein::api::detail {
namespace {

/// The names before and after `*`, or the error.
Result<std::pair<size_t, size_t>> starSplit(std::string_view pattern) {
  for (char c : pattern)
    if (c == '"' || c == '\\' || (unsigned char)c < 0x20)
      return programError(
          fmt::format("the pattern holds a character no pattern may hold: {:?}",
                      std::string(1, c)));
  auto parsed = parsePattern(std::string(pattern), PatternUse::Pack);
  if (!parsed)
    return std::pair<size_t, size_t>{0, 0}; // the checker words the error
  const PatternSide &side =
      parsed->output.groups.empty() && !parsed->inputs.empty()
          ? parsed->inputs[0]
          : parsed->output;
  size_t star = side.starIndex();
  return std::pair<size_t, size_t>{star, side.groups.size() - star - 1};
}

std::string typesText(const std::vector<Tensor> &xs, bool concrete,
                      std::string &operands) {
  std::string params;
  for (size_t i = 0; i < xs.size(); ++i) {
    std::string dims;
    for (int64_t d = 0; d < xs[i].rank(); ++d)
      dims += (d ? " " : "") +
              (concrete ? std::to_string(xs[i].shape()[d]) : std::string("_"));
    params += fmt::format("{}x{}: {}[\"{}\"]", i ? ", " : "", i,
                          name(xs[i].dtype()), dims);
    operands += fmt::format("{}x{}", i ? ", " : "", i);
  }
  return params;
}

std::string packSource(const std::vector<Tensor> &xs, std::string_view pattern,
                       bool concrete) {
  std::string operands;
  std::string params = typesText(xs, concrete, operands);
  return fmt::format("def {}({}) -> {}[\"...\"]:\n    p, ps = pack([{}], "
                     "\"{}\")\n    return p\n",
                     kernelName, params, name(xs[0].dtype()), operands,
                     pattern);
}

std::string unpackSource(const Tensor &x, const PackedShapes &shapes,
                         std::string_view pattern, bool concrete) {
  std::string operands;
  std::string params = typesText({x}, concrete, operands);
  std::string parts, results, names;
  for (size_t i = 0; i < shapes.size(); ++i) {
    std::string dims;
    for (int64_t d : shapes[i])
      dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    parts += fmt::format("{}[{}]", i ? ", " : "", dims);
    results += fmt::format("{}{}[\"...\"]", i ? ", " : "", name(x.dtype()));
    names += fmt::format("{}y{}", i ? ", " : "", i);
  }
  return fmt::format("def {}({}) -> ({},):\n    {} = unpack(x0, [{}], "
                     "\"{}\")\n    return {}\n",
                     kernelName, params, results, names, parts, pattern, names);
}

/// The error of the checker for the call with concrete sizes, as a usage
/// error, or `fallback`.
ErrorInfo concreteError(const std::string &source, std::string fallback) {
  if (auto error = checkCall(source))
    return ErrorInfo{ErrorInfo::Kind::Usage, error->message};
  return usageError(std::move(fallback));
}

} // namespace
} // namespace ein::api::detail

namespace ein::api::nothrow {

using namespace ein::api::detail;

Result<Packed> pack(const std::vector<Tensor> &inputs,
                    std::string_view pattern) {
  if (inputs.empty())
    return programError("pack needs at least one tensor");
  for (const Tensor &t : inputs)
    if (!t.defined())
      return usageError("pack of an undefined tensor");
  auto device = deviceOf("pack", inputs);
  if (!device)
    return device.error();
  for (const Tensor &t : inputs)
    if (t.device() != *device)
      return usageError("pack: the tensors are on different devices (cpu and "
                        "cuda); move them with .to()");
  auto split = starSplit(pattern);
  if (!split)
    return split.error();
  if (auto error = checkCall(packSource(inputs, pattern, false)))
    return *error;
  auto [before, after] = *split;
  const Tensor &first = inputs[0];
  std::vector<int64_t> shape;
  Packed packed;
  int64_t total = 0;
  for (const Tensor &t : inputs) {
    auto mismatch = [&] {
      return concreteError(packSource(inputs, pattern, true),
                           fmt::format("pack(\"{}\"): the inputs' shapes do "
                                       "not agree outside '*'",
                                       pattern));
    };
    if (size_t(t.rank()) < before + after)
      return mismatch();
    for (size_t d = 0; d < before; ++d)
      if (t.shape()[d] != first.shape()[d])
        return mismatch();
    for (size_t d = 0; d < after; ++d)
      if (t.shape()[t.rank() - 1 - d] != first.shape()[first.rank() - 1 - d])
        return mismatch();
    std::vector<int64_t> part(t.shape().begin() + before,
                              t.shape().end() - after);
    int64_t n = 1;
    for (int64_t s : part)
      n *= s;
    total += n;
    packed.shapes.push_back(std::move(part));
  }
  shape.assign(first.shape().begin(), first.shape().begin() + before);
  shape.push_back(total);
  shape.insert(shape.end(), first.shape().end() - after, first.shape().end());
  auto out = allocate(first.dtype(), shape, false, *device);
  if (!out)
    return out.error();
  int64_t at = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor &t = inputs[i];
    int64_t n = 1;
    for (int64_t s : packed.shapes[i])
      n *= s;
    // The part's dims merged: C-order when they are not mergeable as is.
    Tensor source = t;
    std::vector<int64_t> partShape(shape);
    partShape[before] = n;
    std::vector<int64_t> strides(t.strides().begin(),
                                 t.strides().begin() + before);
    bool mergeable = true;
    int64_t stride = 1, expected = -1;
    for (size_t d = t.rank() - after; d-- > before;) {
      if (t.shape()[d] == 1)
        continue;
      if (expected >= 0 && t.strides()[d] != expected)
        mergeable = false;
      if (expected < 0)
        stride = t.strides()[d];
      expected = t.strides()[d] * t.shape()[d];
    }
    if (!mergeable) {
      auto copy = clone(t);
      if (!copy)
        return copy.error();
      source = *copy;
      stride = 1;
      for (size_t d = t.rank() - after; d < size_t(t.rank()); ++d)
        stride *= t.shape()[d];
      strides.assign(source.strides().begin(),
                     source.strides().begin() + before);
    }
    strides.push_back(stride);
    strides.insert(strides.end(), source.strides().end() - after,
                   source.strides().end());
    Tensor merged(source.storage(), source.dtype(), *device, partShape, strides,
                  source.offset());
    Tensor slot(out->storage(), out->dtype(), *device, partShape,
                out->strides(), out->offset() + at * out->strides()[before]);
    if (auto copied = copyInto(merged, slot); !copied)
      return copied.error();
    at += n;
  }
  packed.tensor = *out;
  return packed;
}

Result<std::vector<Tensor>> unpack(const Tensor &x, const PackedShapes &shapes,
                                   std::string_view pattern) {
  if (!x.defined())
    return usageError("unpack of an undefined tensor");
  auto split = starSplit(pattern);
  if (!split)
    return split.error();
  for (const auto &part : shapes)
    for (int64_t s : part)
      if (s < 0)
        return usageError(fmt::format("unpack(\"{}\"): a packed shape has a "
                                      "negative size",
                                      pattern));
  if (auto error = checkCall(unpackSource(x, shapes, pattern, false)))
    return *error;
  auto [before, after] = *split;
  int64_t total = 0;
  for (const auto &part : shapes) {
    int64_t n = 1;
    for (int64_t s : part)
      n *= s;
    total += n;
  }
  if (size_t(x.rank()) != before + 1 + after || x.shape()[before] != total)
    return concreteError(unpackSource(x, shapes, pattern, true),
                         fmt::format("unpack(\"{}\"): the '*' dim of {} does "
                                     "not hold the parts ({} elements)",
                                     pattern, x.describe(), total));
  std::vector<Tensor> parts;
  int64_t at = 0;
  int64_t starStride = x.strides()[before];
  for (const auto &part : shapes) {
    std::vector<int64_t> shape(x.shape().begin(), x.shape().begin() + before);
    std::vector<int64_t> strides(x.strides().begin(),
                                 x.strides().begin() + before);
    std::vector<int64_t> inner(part.size());
    int64_t s = starStride;
    for (size_t k = part.size(); k-- > 0;) {
      inner[k] = s;
      s *= part[k];
    }
    shape.insert(shape.end(), part.begin(), part.end());
    strides.insert(strides.end(), inner.begin(), inner.end());
    shape.insert(shape.end(), x.shape().end() - after, x.shape().end());
    strides.insert(strides.end(), x.strides().end() - after, x.strides().end());
    int64_t n = 1;
    for (int64_t v : part)
      n *= v;
    parts.emplace_back(x.storage(), x.dtype(), x.device(), shape, strides,
                       x.offset() + at * starStride);
    at += n;
  }
  return parts;
}

} // namespace ein::api::nothrow
