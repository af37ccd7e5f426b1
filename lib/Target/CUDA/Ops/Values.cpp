// The CUDA target's constant, size and arange: what each becomes in the
// generated source (a literal in its users' functors or a scalar tensor,
// a scalar read at run time, ein_arange) and in the report's CUDA column.
#include "Describe.h"
#ifndef EIN_CUDA_DESCRIBE_ONLY
#include "FunctionEmitter.h"
#endif

#include <fmt/format.h>

#include <string>

namespace ein {
namespace cuda {

// ------------------------------------------------------------- describe

std::string describeConstant(const CheckedOp &, const CheckedFunction &) {
  return ""; // the report shows no constant
}

std::string describeSize(const CheckedOp &, const CheckedFunction &) {
  return "ein_scalar"; // emitSize: a scalar written from the size
}

std::string describeArange(const CheckedOp &, const CheckedFunction &) {
  return "ein_arange"; // emitArange: a kernel writing 0..n-1
}

#ifndef EIN_CUDA_DESCRIBE_ONLY
// ------------------------------------------------------------- emit

void FunctionEmitter::emitConstant(ConstantOp op) {
  // Literals inside functors; a tensor only for other users.
  bool other = directOutput.count(op.getResult().getAsOpaquePointer()) > 0;
  for (mlir::Operation *user : op.getResult().getUsers())
    other = other || !isElementwise(user);
  if (other)
    emitConstantTensor(op);
}

void FunctionEmitter::emitConstantTensor(ConstantOp op) {
  DType t = tensorType(op.getResult()).getDType();
  int owner = newOwner();
  std::string w = fresh("w");
  fmt::format_to(
      out(), "  EinView<{0}, 0> {1} = ein_scalar<{0}>(stream, {2}, &t{3});\n",
      storageType(t), w, literal(op, t), owner);
  // Returned, it is copied into the output like any other view.
  define(op.getResult(), w, {owner});
}

/// A size read at run time (a dim used as a value): a scalar.
void FunctionEmitter::emitSize(SizeOp op) {
  DType t = tensorType(op.getResult()).getDType();
  Expected<SizeExpr> size = parseSizeExpr(op.getSize().str());
  if (!size)
    return fail(op, size.error().message);
  int owner = newOwner();
  std::string w = fresh("w");
  fmt::format_to(out(),
                 "  EinView<{0}, 0> {1} = ein_scalar<{0}>(stream, "
                 "ein_cvt<{0}>(int64_t({2})), &t{3});\n",
                 storageType(t), w, this->size(*size, op), owner);
  define(op.getResult(), w, {owner});
}

/// arange: 0, 1, ..., n-1 written by a kernel into the result.
void FunctionEmitter::emitArange(ArangeOp op) {
  mlir::Value result = op.getResult();
  int owner;
  std::string w = destination(result, owner);
  fmt::format_to(out(), "  ein_arange(stream, {});\n", w);
  define(result, w, owner >= 0 ? std::vector<int>{owner} : std::vector<int>{});
}

#endif // EIN_CUDA_DESCRIBE_ONLY

} // namespace cuda
} // namespace ein
