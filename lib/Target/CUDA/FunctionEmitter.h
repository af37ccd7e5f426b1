// The CUDA emitter's core, private to lib/Target/CUDA: FunctionEmitter,
// which writes one function's CUDA source op by op, and the helpers every
// op family's emit functions (Ops/<Family>.cpp) write with.
#pragma once

#include "ein/Dialect/EinDialect.h"
#include "ein/Target/CEntry.h"
#include "ein/Target/CUDA/EmitCUDA.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <optional>
#include <set>

namespace ein {
namespace cuda {

inline const char *storageType(DType t) { return dtypeInfo(t).cudaType; }

inline bool isLowFloat(DType t) {
  return t == DType::F16 || t == DType::BF16 || t == DType::F8E4M3 ||
         t == DType::F8E5M2;
}
inline bool isFp8(DType t) { return t == DType::F8E4M3 || t == DType::F8E5M2; }
/// The type a reduction into `t` accumulates in: f32 for 16- and 8-bit
/// floats (as the CPU back end), else `t`'s own.
inline const char *accumulatorType(DType t) {
  return isLowFloat(t) ? "float" : storageType(t);
}

/// An op that cannot be emitted: the reason, anchored at the op. (The
/// project builds without exceptions: the emitter records the first error
/// and finishes its walk on placeholders; the text is then discarded.)
struct EmitError {
  mlir::Operation *op = nullptr;
  std::string what;
};

inline bool isElementwise(mlir::Operation *op) {
  return mlir::isa<ElementwiseOp, CastOp, ConstantOp>(op);
}

inline EinTensorType tensorType(mlir::Value v) {
  return mlir::cast<EinTensorType>(v.getType());
}

/// A tensor value of the function as the generated code holds it: a
/// variable `EinView<const T, R> name`, and the temporaries it reads.
struct ValueView {
  std::string name;
  DType dtype = DType::F32;
  size_t rank = 0;
  std::vector<int> owners;
};

/// The C++ expression of the constant `op` as a value of `dtype`
/// (Ops/Elementwise.cpp).
std::string literal(ConstantOp op, DType dtype);

/// The runtime's EinReduceKind of `kind` (any and all are max and min on
/// bool); null for var, which is two passes (Ops/Transforms.cpp).
const char *runtimeReduceKind(ReduceKind kind);

/// `fn` with each reduce-scattered result its block, as the local program
/// built with `mesh` returns it (Ops/Collectives.cpp).
CheckedFunction withMeshResults(const CheckedFunction &fn,
                                const MeshProgram &mesh);

/// Emits one function: the core (EmitCUDA.cpp) walks the ops and
/// dispatches each to its row's emit function.
class FunctionEmitter {
public:
  FunctionEmitter(const CheckedFunction &fn, mlir::func::FuncOp func,
                  const CUDAOptions &options, std::string &functors,
                  int &functorCount)
      : fn(fn), func(func), options(options), functors(functors),
        functorCount(functorCount),
        entry(cEntry(fn, ",\n    cudaStream_t stream")) {}

  std::string emit();
  /// The ops computed in one kernel or GEMM call with others: per group its
  /// kind ("rows", "epilogue", "elementwise") and its ops (constants left
  /// out), groups in the order of the ops that emit them.
  std::vector<std::pair<std::string, std::vector<mlir::Operation *>>>
  fusionGroups();
  /// Whether the function calls collectives (a sharded local program).
  bool hasCollectives();
  /// The first error, if any (then emit's text is meaningless).
  const std::optional<EmitError> &error() const { return firstError; }

private:
  void fail(mlir::Operation *op, std::string what) {
    if (!firstError)
      firstError = EmitError{op, std::move(what)};
  }
  std::optional<EmitError> firstError;
  // ---- text helpers
  std::string fresh(const char *prefix) {
    return fmt::format("{}{}", prefix, counter++);
  }
  std::string size(const SizeExpr &e, mlir::Operation *at) {
    SizeExpr bound = e.substitute(fn.ctx.env);
    for (const std::string &name : bound.symbols())
      if (!entry.sizes.names.count(name)) {
        fail(at, fmt::format("the size {} is not known from the function's "
                             "parameters",
                             e.str()));
        return "0";
      }
    return entry.sizes.expr(bound);
  }
  /// `const int64_t zN[] = {...};` (one extra element: never empty).
  std::string sizeArray(const std::vector<std::string> &sizes) {
    std::string name = fresh("z");
    fmt::format_to(out(), "  const int64_t {}[] = {{{}{}0}};\n", name,
                   fmt::join(sizes, ", "), sizes.empty() ? "" : ", ");
    return name;
  }
  std::string intArray(const std::vector<int> &values) {
    std::string name = fresh("d");
    fmt::format_to(out(), "  const int {}[] = {{{}{}0}};\n", name,
                   fmt::join(values, ", "), values.empty() ? "" : ", ");
    return name;
  }
  std::back_insert_iterator<std::string> out() {
    return std::back_inserter(*chunk);
  }
  std::vector<std::string> shapeSizes(EinTensorType t, mlir::Operation *at) {
    std::vector<std::string> sizes;
    for (const Dim &d : t.getShape()) {
      if (d.isPack()) {
        fail(at, "a variadic of unknown rank");
        sizes.push_back("0");
        continue;
      }
      sizes.push_back(size(d.size, at));
    }
    return sizes;
  }
  std::string viewType(DType t, size_t rank, bool isConst = true) {
    return fmt::format("EinView<{}{}, {}>", isConst ? "const " : "",
                       storageType(t), rank);
  }

  // ---- values and destinations
  const ValueView &view(mlir::Value v, mlir::Operation *at) {
    auto it = values.find(v.getAsOpaquePointer());
    if (it == values.end()) {
      fail(at, "an operand the CUDA target has not computed");
      static const ValueView placeholder;
      return placeholder;
    }
    return it->second;
  }
  /// Where the op computing `result` writes: the caller's output when the
  /// function returns it (the first return of it), else a new temporary.
  /// Declares `EinView<T, R> w` and returns its name; `owner` gets the
  /// temporary (-1 for an output).
  std::string destination(mlir::Value result, int &owner) {
    EinTensorType t = tensorType(result);
    auto sizes = shapeSizes(t, result.getDefiningOp());
    auto direct = directOutput.find(result.getAsOpaquePointer());
    std::string w = fresh("w");
    if (direct != directOutput.end()) {
      written.insert(direct->second);
      fmt::format_to(out(), "  {} {} = o{};\n",
                     viewType(t.getDType(), sizes.size(), false), w,
                     direct->second);
      owner = -1;
      return w;
    }
    owner = newOwner();
    std::string z = sizeArray(sizes);
    fmt::format_to(out(),
                   "  {0} {1} = ein_temp<{2}, {3}>(stream, {4}, &t{5});\n",
                   viewType(t.getDType(), sizes.size(), false), w,
                   storageType(t.getDType()), sizes.size(), z, owner);
    return w;
  }
  int newOwner() {
    int k = static_cast<int>(ownerLastUse.size());
    ownerLastUse.push_back(opIndex);
    fmt::format_to(out(), "  void *t{} = nullptr;\n", k);
    return k;
  }
  /// Records `result` as the const view of the written `w`.
  void define(mlir::Value result, const std::string &w,
              std::vector<int> owners) {
    EinTensorType t = tensorType(result);
    ValueView v;
    v.name = fresh("v");
    v.dtype = t.getDType();
    v.rank = t.getShape().size();
    v.owners = std::move(owners);
    fmt::format_to(out(), "  {} {} = ein_const_view({});\n",
                   viewType(v.dtype, v.rank), v.name, w);
    values[result.getAsOpaquePointer()] = v;
  }

  // ---- elementary axes
  /// `ein_split` of the view `name` (of `dtype`, const or writable) into
  /// the axes of `groups` (per dim, its elementary axes); `axes` receives
  /// the axis names in order.
  std::string split(const std::string &name, DType dtype, bool isConst,
                    const std::vector<std::vector<std::string>> &groups,
                    const std::map<std::string, SizeExpr> &axisSizes,
                    std::vector<std::string> &axes, mlir::Operation *at) {
    std::vector<int> dimOf;
    std::vector<std::string> sizes;
    axes.clear();
    for (size_t d = 0; d < groups.size(); ++d)
      for (auto &a : groups[d]) {
        auto it = axisSizes.find(a);
        dimOf.push_back(static_cast<int>(d));
        if (it == axisSizes.end())
          fail(at, fmt::format("no size for axis '{}'", a));
        sizes.push_back(it == axisSizes.end() ? "0" : size(it->second, at));
        axes.push_back(a);
      }
    std::string dims = intArray(dimOf), z = sizeArray(sizes);
    std::string e = fresh("e");
    fmt::format_to(out(), "  {} {} = ein_split<{}>({}, {}, {});\n",
                   viewType(dtype, axes.size(), isConst), e, axes.size(), name,
                   dims, z);
    return e;
  }
  /// `ein_pick` of the axes `rows` from a view whose axes are `axes` (a
  /// row matches every equal axis: diagonals; none: a broadcast of size
  /// `sizeOf(row)`).
  std::string pick(const std::string &e, DType dtype,
                   const std::vector<std::string> &axes,
                   const std::vector<std::string> &rows,
                   const std::vector<std::string> &rowSizes,
                   bool isConst = true) {
    std::string mask;
    for (auto &r : rows)
      for (auto &a : axes)
        mask += a == r ? '1' : '0';
    std::string z = sizeArray(rowSizes);
    std::string p = fresh("p");
    fmt::format_to(out(), "  {} {} = ein_pick<{}>({}, \"{}\", {});\n",
                   viewType(dtype, rows.size(), isConst), p, rows.size(), e,
                   mask, z);
    return p;
  }
  std::vector<std::string>
  axisSizeTexts(const std::vector<std::string> &axes,
                const std::map<std::string, SizeExpr> &axisSizes,
                mlir::Operation *at) {
    std::vector<std::string> sizes;
    for (auto &a : axes) {
      auto it = axisSizes.find(a);
      if (it == axisSizes.end())
        fail(at, fmt::format("no size for axis '{}'", a));
      sizes.push_back(it == axisSizes.end() ? "0" : size(it->second, at));
    }
    return sizes;
  }

  /// The outputs written in place (directOutput) and the fusion plans:
  /// epilogues, row kernels, elementwise functors.
  void plan();

  // ---- ops
  /// Emits `op` through its row's emit function below (or not at all when
  /// it is inlined into a functor).
  void emitOp(mlir::Operation *op);
  /// A sharded local program's `mesh` collectives and the casts around them
  /// (Ops/Collectives.cpp); false when `op` is neither.
  bool emitMeshOp(mlir::Operation *op);
  /// Per row of the op registry, what the op becomes in the source, defined
  /// in its family's file (Ops/<Family>.cpp); a row without one fails to
  /// link, naming it. An op the target cannot emit calls `fail` naming it.
#define EIN_OP(Kind, Name, OpClass) void emit##Kind(OpClass op);
#include "ein/Sema/Ops.def"

  // Shared by the families (Ops/Transforms.cpp): the elementary axes of
  // `in` (per dim `inGroups`) moved into the dims `outGroups` (a view when
  // strides allow), or reduced into them by `kind`.
  void emitMove(mlir::Value result, const ValueView &in,
                const std::vector<std::vector<std::string>> &inGroups,
                const std::vector<std::vector<std::string>> &outGroups,
                const std::map<std::string, SizeExpr> &axisSizes,
                mlir::Operation *op);
  void emitReduction(mlir::Value result, const ValueView &in,
                     const std::vector<std::vector<std::string>> &inGroups,
                     const std::vector<std::vector<std::string>> &outGroups,
                     const std::map<std::string, SizeExpr> &axisSizes,
                     ReduceKind kind, mlir::Operation *op);
  /// rearrange, repeat and reduce: their pattern's axes moved or reduced.
  void emitTransform(mlir::Operation *op);
  /// A pairwise einsum: cuBLASLt (Ops/Einsum.cpp).
  void emitContraction(EinsumOp op, const EinsumInfo &info);
  /// The elementwise ops a contraction computes after its product (see
  /// planEpilogues): C = relu(alpha * (A x B) + bias), the bias when
  /// `bias` is set, the relu when `relu` is; `result` the last op's value.
  struct Epilogue {
    bool relu = false;
    double alpha = 1;
    mlir::Value bias;
    std::vector<int> biasAlignment; // per bias dim, its dim of C
    std::vector<mlir::Operation *> ops;
    mlir::Value result;
  };
  void planEpilogues();
  std::string emitEpilogue(const Epilogue &epi, const EinsumInfo &info,
                           const std::vector<std::string> &rowsC,
                           mlir::Operation *op);
  /// A value of dtype `to` holding `v` converted (a new temporary).
  ValueView castTo(const ValueView &v, DType to);
  /// The view of one part of a packed tensor (Ops/Pack.cpp).
  std::string packedPart(const std::string &packed, size_t packedRank,
                         size_t before, const std::string &offset,
                         mlir::Value part, std::string &count,
                         mlir::Operation *op);
  /// A scalar tensor holding a constant, for users that are not functors.
  void emitConstantTensor(ConstantOp op);
  /// One `ein_map` computing the tree of elementwise ops rooted at `root`.
  void emitFusedTree(mlir::Operation *root);

  // Row kernels (RowKernels.cpp, see planRows): last-axis reductions and
  // the elementwise ops around them as one ein_rows functor.
  struct RowGroup {
    mlir::Operation *root = nullptr;
    size_t rank = 0;
    std::string acc;                       // the reductions' accumulator
    std::vector<mlir::Operation *> stages; // the reductions, in order
    std::set<mlir::Operation *> members;   // inlined (root, stages apart)
    std::set<mlir::Operation *> rowScalar; // members of size 1 along rows
    std::map<mlir::Operation *, std::string> results; // `r[k]`, as stored
    /// A var whose mean is an earlier mean stage's (the same row): the
    /// stage, so that the var adds one stage, not two.
    std::map<mlir::Operation *, int> varMean;
    /// Members of one value per row computed from the stages' results and
    /// constants alone (`rsqrt(var + eps)`): once per row for the output,
    /// in program order.
    std::vector<mlir::Operation *> perRow;
  };
  void planRows();
  void emitRowKernel(const RowGroup &group);
  std::optional<RowGroup> rowGroupAt(mlir::Operation *root);
  /// Where each dim of operand `operand` of a member of `group` lands in
  /// the row space (-1: broadcast).
  std::vector<int> rowAlignment(const RowGroup &group, mlir::Operation *op,
                                unsigned operand);

  // Elementwise fusion (see planFusion).
  void planFusion();
  /// A functor being written: its inputs (value, alignment to the root),
  /// the locals of fused values read more than once, their definitions.
  /// In a row functor (`rows` set), the group's members are inlined, its
  /// reductions read from `r`, and `used` says which inputs and whether `r`
  /// a method reads.
  struct FunctorBody {
    std::vector<std::pair<mlir::Value, std::vector<int>>> leaves;
    std::map<mlir::Operation *, std::string> locals;
    std::vector<std::string> lets;
    const RowGroup *rows = nullptr;
    std::set<size_t> used;
    bool readsRows = false;
  };
  std::string expression(mlir::Operation *op, FunctorBody &body);
  /// The text of operand `i` of `op` in a functor: a literal, an inlined
  /// value (a local when read more than once), a reduction's result or an
  /// input `aK`.
  std::string operandText(mlir::Operation *op, unsigned i, FunctorBody &body);
  /// Per input of a functor, its storage type and its view at the root's
  /// sizes `z` (rank `rank`).
  void functorInputs(const FunctorBody &body, size_t rank, const std::string &z,
                     mlir::Operation *at, std::vector<std::string> &types,
                     std::vector<std::string> &views);
  std::vector<int> alignment(mlir::Operation *op, unsigned operand);
  bool readsInPlace(mlir::Operation *user, mlir::Value v);
  std::set<std::pair<const void *, std::vector<int>>>
  leafSet(mlir::Operation *op);

  const CheckedFunction &fn;
  mlir::func::FuncOp func;
  const CUDAOptions &options;
  std::string &functors;
  int &functorCount;
  CEntry entry;

  std::string *chunk = nullptr;
  int counter = 0;
  size_t opIndex = 0;
  std::map<const void *, ValueView> values;
  std::map<const void *, size_t> directOutput;     // value -> output index
  std::set<size_t> written;                        // outputs written directly
  std::vector<size_t> ownerLastUse;                // per temporary
  std::set<mlir::Operation *> fused;               // inlined into their user
  std::map<mlir::Operation *, Epilogue> epilogues; // per contraction
  std::set<mlir::Operation *> inEpilogue;          // computed by one
  std::map<mlir::Operation *, RowGroup> rowGroups; // per root
  std::map<mlir::Operation *, mlir::Operation *> inRows; // member -> root
};

} // namespace cuda
} // namespace ein
