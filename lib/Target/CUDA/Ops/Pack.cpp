// The CUDA target's pack and unpack: what each becomes in the generated
// source (copies into slices of the packed tensor, views of them) and in
// the report's CUDA column.
#include "Describe.h"
#ifndef EIN_CUDA_DESCRIBE_ONLY
#include "FunctionEmitter.h"
#endif

#include <fmt/format.h>

#include <string>
#include <vector>

namespace ein {
namespace cuda {

// ------------------------------------------------------------- describe

std::string describePack(const CheckedOp &op, const CheckedFunction &) {
  return fmt::format("ein_copy x{} into slices", op.operands.size());
}

std::string describeUnpack(const CheckedOp &, const CheckedFunction &) {
  return "views";
}

#ifndef EIN_CUDA_DESCRIBE_ONLY
// ------------------------------------------------------------- emit

/// The view, in the packed tensor `packed` (of rank `packedRank`, the `*`
/// axis at `before`), of the part `part` that starts at `offset` along it:
/// the slice split into the part's dims. `count` receives the variable
/// holding the part's length along the `*` axis.
std::string FunctionEmitter::packedPart(const std::string &packed,
                                        size_t packedRank, size_t before,
                                        const std::string &offset,
                                        mlir::Value part, std::string &count,
                                        mlir::Operation *op) {
  auto sizes = shapeSizes(tensorType(part), op);
  size_t after = packedRank - before - 1;
  std::vector<int> dimOf;
  std::string length = "INT64_C(1)";
  for (size_t d = 0; d < sizes.size(); ++d) {
    bool inStar = d >= before && d < sizes.size() - after;
    dimOf.push_back(static_cast<int>(d < before ? d
                                     : inStar
                                         ? before
                                         : d - (sizes.size() - packedRank)));
    if (inStar)
      length = fmt::format("ein_mul_({}, {}, &ovf)", length, sizes[d]);
  }
  count = fresh("n");
  fmt::format_to(out(), "  int64_t {} = {};\n", count, length);
  std::string dims = intArray(dimOf), z = sizeArray(sizes);
  return fmt::format("ein_split<{}>(ein_slice({}, {}, {}, {}), {}, {})",
                     sizes.size(), packed, before, offset, count, dims, z);
}

void FunctionEmitter::emitPack(PackOp op) {
  auto pattern = op.getPattern().getPattern(PatternUse::Pack);
  if (!pattern)
    return fail(op, "a pack pattern that does not parse");
  size_t before = pattern->inputs[0].starIndex();
  mlir::Value result = op.getResult();
  EinTensorType rt = tensorType(result);
  size_t rank = rt.getShape().size();
  int owner;
  std::string w = destination(result, owner);
  std::string offset = fresh("off");
  fmt::format_to(out(), "  int64_t {} = 0;\n", offset);
  for (mlir::Value input : op.getInputs()) {
    const ValueView &in = view(input, op);
    std::string count;
    std::string part = packedPart(w, rank, before, offset, input, count, op);
    fmt::format_to(out(), "  ein_move(stream, {}, {});\n  {} += {};\n", part,
                   in.name, offset, count);
  }
  define(result, w, owner >= 0 ? std::vector<int>{owner} : std::vector<int>{});
}

void FunctionEmitter::emitUnpack(UnpackOp op) {
  auto pattern = op.getPattern().getPattern(PatternUse::Pack);
  if (!pattern)
    return fail(op, "an unpack pattern that does not parse");
  size_t before = pattern->inputs[0].starIndex();
  const ValueView in = view(op.getInput(), op);
  std::string offset = fresh("off");
  fmt::format_to(out(), "  int64_t {} = 0;\n", offset);
  for (mlir::Value result : op.getResults()) {
    std::string count;
    std::string part =
        packedPart(in.name, in.rank, before, offset, result, count, op);
    // The part is a view of the slice at the current offset.
    ValueView v;
    v.name = fresh("v");
    v.dtype = in.dtype;
    v.rank = tensorType(result).getShape().size();
    v.owners = in.owners;
    fmt::format_to(out(), "  {} {} = {};\n  {} += {};\n",
                   viewType(v.dtype, v.rank), v.name, part, offset, count);
    if (directOutput.count(result.getAsOpaquePointer())) {
      int owner;
      std::string w = destination(result, owner);
      fmt::format_to(out(), "  ein_move(stream, {}, {});\n", w, v.name);
      define(result, w, {});
      continue;
    }
    values[result.getAsOpaquePointer()] = v;
  }
}

#endif // EIN_CUDA_DESCRIBE_ONLY

} // namespace cuda
} // namespace ein
