// The C++ API's pack and unpack: the call checked by building it with the
// ProgramBuilder, then strided copies into the packed tensor (pack) and
// views of it (unpack), as einops.pack and einops.unpack.
#include "Internal.h"

#include "ein/Sema/ProgramBuilder.h"
#include "ein/Syntax/Pattern.h"

#include <fmt/format.h>

namespace ein::api::detail {
namespace {

/// The pattern, parsed once, and the numbers of its dims before and after
/// `*`.
struct StarPattern {
  Pattern parsed;
  size_t before = 0, after = 0;
};

/// The call as errors show it: `pack([x0, x1], "PATTERN")`, or
/// `unpack(x, [[2, 3], [4]], "PATTERN")` when `shapes` is given.
CallText callText(std::string_view pattern, size_t inputs,
                  const PackedShapes *shapes) {
  CallText call;
  call.text = shapes ? "unpack(" : "pack([";
  for (size_t i = 0; i < inputs; ++i) {
    std::string operand = shapes ? "x" : fmt::format("x{}", i);
    call.operands.push_back({call.text.size(), operand.size()});
    call.text += (i ? ", " : "") + operand;
  }
  if (shapes) {
    call.text += ", [";
    for (size_t i = 0; i < shapes->size(); ++i) {
      std::string dims;
      for (int64_t d : (*shapes)[i])
        dims += (dims.empty() ? "" : ", ") + std::to_string(d);
      call.text += fmt::format("{}[{}]", i ? ", " : "", dims);
    }
  }
  call.text += "], \"";
  call.pattern = call.text.size();
  call.text += pattern;
  call.text += "\")";
  return call;
}

Result<StarPattern> starSplit(std::string_view pattern, size_t inputs,
                              const PackedShapes *shapes) {
  auto parsed = parsePattern(std::string(pattern), PatternUse::Pack);
  if (!parsed)
    return callError(callText(pattern, inputs, shapes),
                     BuildError{parsed.error(), shapes ? "unpack" : "pack",
                                std::string(pattern)});
  StarPattern star{*parsed};
  const PatternSide &side =
      parsed->output.groups.empty() && !parsed->inputs.empty()
          ? parsed->inputs[0]
          : parsed->output;
  star.before = side.starIndex();
  star.after = side.groups.size() - star.before - 1;
  return star;
}

/// pack(inputs, pattern) built with the ProgramBuilder (the inputs' dims
/// anonymous, or their numbers when `concrete`); its error, if refused.
std::optional<ErrorInfo> checkPack(const std::vector<Tensor> &inputs,
                                   std::string_view text,
                                   const StarPattern &pattern, bool concrete) {
  CheckedFunction fn;
  ProgramBuilder b(fn);
  std::vector<unsigned> xs;
  unsigned anonymous = 0;
  for (const Tensor &t : inputs)
    xs.push_back(b.param(typeOf(t, concrete, anonymous)));
  for (size_t i = 1; i < inputs.size(); ++i)
    if (inputs[i].dtype() != inputs[0].dtype())
      return callError(
          callText(text, inputs.size(), nullptr),
          BuildError{
              ShapeError::atOperand(
                  fmt::format("pack operands have different dtypes ({} "
                              "and {}); convert one with astype",
                              name(inputs[0].dtype()), name(inputs[i].dtype())),
                  unsigned(i)),
              "pack", std::string(text)});
  auto packed = b.pack(xs, pattern.parsed, internal(inputs[0].dtype()));
  if (packed)
    return std::nullopt;
  return callError(callText(text, inputs.size(), nullptr), packed.error());
}

/// unpack(x, shapes, pattern) built with the ProgramBuilder, as checkPack.
std::optional<ErrorInfo>
checkUnpack(const Tensor &x, const PackedShapes &shapes, std::string_view text,
            const StarPattern &pattern, bool concrete) {
  CheckedFunction fn;
  ProgramBuilder b(fn);
  unsigned anonymous = 0;
  unsigned input = b.param(typeOf(x, concrete, anonymous));
  std::vector<Shape> parts;
  for (const auto &part : shapes) {
    Shape shape;
    for (int64_t d : part)
      shape.push_back(Dim::ofSize(SizeExpr::constant(d)));
    parts.push_back(std::move(shape));
  }
  auto unpacked = b.unpack(input, pattern.parsed, parts);
  if (unpacked)
    return std::nullopt;
  return callError(callText(text, 1, &shapes), unpacked.error());
}

/// The shape rules' error for the call with concrete sizes, as a usage
/// error, or `fallback`.
ErrorInfo concreteError(std::optional<ErrorInfo> error, std::string fallback) {
  if (error)
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
  auto split = starSplit(pattern, inputs.size(), nullptr);
  if (!split)
    return split.error();
  if (auto error = checkPack(inputs, pattern, *split, false))
    return *error;
  size_t before = split->before, after = split->after;
  const Tensor &first = inputs[0];
  std::vector<int64_t> shape;
  Packed packed;
  int64_t total = 0;
  for (const Tensor &t : inputs) {
    auto mismatch = [&] {
      return concreteError(checkPack(inputs, pattern, *split, true),
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
  auto split = starSplit(pattern, 1, &shapes);
  if (!split)
    return split.error();
  for (const auto &part : shapes)
    for (int64_t s : part)
      if (s < 0)
        return usageError(fmt::format("unpack(\"{}\"): a packed shape has a "
                                      "negative size",
                                      pattern));
  if (auto error = checkUnpack(x, shapes, pattern, *split, false))
    return *error;
  size_t before = split->before, after = split->after;
  int64_t total = 0;
  for (const auto &part : shapes) {
    int64_t n = 1;
    for (int64_t s : part)
      n *= s;
    total += n;
  }
  if (size_t(x.rank()) != before + 1 + after || x.shape()[before] != total)
    return concreteError(checkUnpack(x, shapes, pattern, *split, true),
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
