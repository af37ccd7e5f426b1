// The CUDA target's take, take_along, slice and scatter_add: what each
// becomes in the generated source (ein_take, ein_take_along, a view by
// ein_slice, ein_scatter_add) and in
// the report's CUDA column.
#include "Describe.h"
#ifndef EIN_CUDA_DESCRIBE_ONLY
#include "FunctionEmitter.h"
#endif

#include <fmt/format.h>

#include <string>

namespace ein {
namespace cuda {

// ------------------------------------------------------------- describe

std::string describeTake(const CheckedOp &, const CheckedFunction &) {
  return "ein_take (gather)"; // emitTake: a gather kernel
}

std::string describeTakeAlong(const CheckedOp &, const CheckedFunction &) {
  return "ein_take_along (gather)"; // emitTakeAlong: a gather kernel
}

std::string describeSlice(const CheckedOp &, const CheckedFunction &) {
  return "view (ein_slice)";
}

std::string describeScatterAdd(const CheckedOp &, const CheckedFunction &) {
  return "ein_scatter_add (atomicAdd)";
}

#ifndef EIN_CUDA_DESCRIBE_ONLY
// ------------------------------------------------------------- emit

/// take: a gather kernel (ids clamped), after a kernel counting the ids
/// out of range into the function's index status (`ein_status`).
void FunctionEmitter::emitTake(TakeOp op) {
  const ValueView table = view(op.getTable(), op);
  const ValueView ids = view(op.getIds(), op);
  mlir::Value result = op.getResult();
  int owner;
  std::string w = destination(result, owner);
  fmt::format_to(out(), "  ein_take(stream, {}, {}, {}, {}, ein_status);\n", w,
                 table.name, ids.name, op.getAxis());
  define(result, w, owner >= 0 ? std::vector<int>{owner} : std::vector<int>{});
}

/// take_along: take's check kernel counting the ids out of range into the
/// index status, then a gather kernel over the ids (clamped).
void FunctionEmitter::emitTakeAlong(TakeAlongOp op) {
  const ValueView input = view(op.getInput(), op);
  const ValueView ids = view(op.getIds(), op);
  mlir::Value result = op.getResult();
  int owner;
  std::string w = destination(result, owner);
  fmt::format_to(out(),
                 "  ein_take_along(stream, {}, {}, {}, {}, ein_status);\n", w,
                 input.name, ids.name, op.getAxis());
  define(result, w, owner >= 0 ? std::vector<int>{owner} : std::vector<int>{});
}

/// scatter_add (take's gradient): a zero fill, then an atomicAdd kernel
/// over the updates (f32 and f64: the atomics every target has).
void FunctionEmitter::emitScatterAdd(ScatterAddOp op) {
  DType t = tensorType(op.getResult()).getDType();
  // atomicAdd on f16/bf16 needs sm_70/sm_80 and the emulation has none; an
  // integer gradient does not arise.
  if (t != DType::F32 && t != DType::F64)
    return fail(op, fmt::format("the gradient of take (a scatter-add) in {}: "
                                "the CUDA target adds with atomicAdd in f32 "
                                "and f64 only",
                                dtypeName(t)));
  const ValueView ids = view(op.getIds(), op);
  const ValueView updates = view(op.getUpdates(), op);
  mlir::Value result = op.getResult();
  int owner;
  std::string w = destination(result, owner);
  fmt::format_to(out(), "  ein_scatter_add(stream, {}, {}, {}, {});\n", w,
                 updates.name, ids.name, op.getAxis());
  define(result, w, owner >= 0 ? std::vector<int>{owner} : std::vector<int>{});
}

/// slice: a view of the input (ein_slice), copied only when returned.
void FunctionEmitter::emitSlice(SliceOp op) {
  const ValueView in = view(op.getInput(), op);
  Expected<SizeExpr> start = parseSizeExpr(op.getStart().str());
  Expected<SizeExpr> stop = parseSizeExpr(op.getStop().str());
  if (!start || !stop)
    return fail(op, "a slice whose bounds do not parse");
  mlir::Value result = op.getResult();
  // The entry checked 0 <= start <= stop <= size: the view stays inside.
  ValueView v;
  v.name = fresh("v");
  v.dtype = in.dtype;
  v.rank = in.rank;
  v.owners = in.owners;
  fmt::format_to(out(), "  {} {} = ein_slice({}, {}, {}, {});\n",
                 viewType(v.dtype, v.rank), v.name, in.name, op.getDimIndex(),
                 size(*start, op), size(*stop - *start, op));
  if (directOutput.count(result.getAsOpaquePointer())) {
    int owner;
    std::string w = destination(result, owner);
    fmt::format_to(out(), "  ein_move(stream, {}, {});\n", w, v.name);
    define(result, w, {});
    return;
  }
  values[result.getAsOpaquePointer()] = v;
}

#endif // EIN_CUDA_DESCRIBE_ONLY

} // namespace cuda
} // namespace ein
