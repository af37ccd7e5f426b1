// The embedded C++ API's operations: einops' rearrange, reduce, repeat,
// einsum, pack and unpack, and the language's elementwise functions, each
// compiled through einc's front end and CPU pipeline on first use and
// cached (docs/cpp-api.md).
#pragma once

#include "ein/API/Tensor.h"

#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace ein::api {

/// The shapes of the parts `pack` joined, for `unpack`: one per input, the
/// dims each input had in place of `*`.
using PackedShapes = std::vector<std::vector<int64_t>>;

/// What `pack` returns: the packed tensor and the parts' shapes.
struct Packed {
  Tensor tensor;
  PackedShapes shapes;
};

namespace nothrow {
/// einops.rearrange. A view (no copy, no kernel) whenever the result's
/// strides can express it: splits, permutations, and merges of axes that are
/// adjacent in memory; otherwise a copy by a compiled kernel.
Result<Tensor> rearrange(const Tensor &x, std::string_view pattern,
                         const Sizes &sizes = {});
/// einops.reduce: the axes missing from the output are reduced. `acc` sets
/// the accumulation and result dtype, as `acc=` in the language.
Result<Tensor> reduce(const Tensor &x, std::string_view pattern, Reduction how,
                      const Sizes &sizes = {},
                      std::optional<DType> acc = std::nullopt);
/// einops.repeat: new axes take their sizes from `sizes` or the pattern's
/// numbers. Always a new tensor.
Result<Tensor> repeat(const Tensor &x, std::string_view pattern,
                      const Sizes &sizes = {});
/// einsum over any number of operands: the axes missing from the output are
/// summed. The operands may be any strided views (a transposed view costs
/// no copy).
Result<Tensor> einsum(std::string_view pattern,
                      const std::vector<Tensor> &operands,
                      const Sizes &sizes = {},
                      std::optional<DType> acc = std::nullopt);
/// einops.pack: joins the inputs along `*` ("b * c").
Result<Packed> pack(const std::vector<Tensor> &inputs,
                    std::string_view pattern);
/// einops.unpack: the parts of `x` again, as views of it.
Result<std::vector<Tensor>> unpack(const Tensor &x, const PackedShapes &shapes,
                                   std::string_view pattern);
/// An elementwise function of the language by name ("exp", "add", "where",
/// docs/language.md §6), operands broadcast as numpy does.
Result<Tensor> elementwise(std::string_view function,
                           const std::vector<Tensor> &operands);
/// The elements converted to `dtype` (astype in the language).
Result<Tensor> astype(const Tensor &x, DType dtype);
/// What an operation on these inputs does, without running it: "view" (no
/// copy, no kernel) or "kernel" with the compiled function's source, and the
/// bytes it copies. `op` is "rearrange", "reduce", "repeat" or "einsum".
Result<std::string> explain(std::string_view op, std::string_view pattern,
                            const std::vector<Tensor> &inputs,
                            const Sizes &sizes = {});
/// A 0-d tensor holding `value` as `dtype`, or the error (a value the
/// dtype cannot hold).
Result<Tensor> scalar(double value, DType dtype);
/// Compiles the CPU kernels and module functions built from now on for the
/// CPU `name`, an LLVM CPU name ("x86-64-v3": AVX2 code; "" or "native":
/// the host, the default), with `features` added or removed ("+avx512f,
/// -avx512bw"), as einc's --cpu and --cpu-features. The error: an unknown
/// name or feature (the nearest known one suggested), or a CPU this host
/// cannot run. Kernels compiled before stay as they are.
Result<void> set_cpu(const std::string &name,
                     const std::string &features = "");
} // namespace nothrow

/// What the caches of compiled kernels did in this process.
struct CacheStats {
  /// Kernels and module functions compiled (the pipeline and LLVM's code
  /// generator ran; for CUDA tensors, nvcc or the emulation's compiler).
  size_t compiled = 0;
  /// Kernels and module functions loaded from the disk cache instead.
  size_t loaded = 0;
  /// The disk cache's directory: $EIN_CACHE_DIR, else $XDG_CACHE_HOME/ein,
  /// else $HOME/.cache/ein; empty when off (EIN_CACHE_DIR=off).
  std::string directory;
};
/// The kernel caches' counts so far.
CacheStats cache_stats();

/// A 0-d tensor holding `value` as `dtype` (for arithmetic with scalars).
inline Tensor scalar(double value, DType dtype) {
  return nothrow::scalar(value, dtype).value();
}

/// set_cpu, raising its error.
inline void set_cpu(const std::string &name,
                    const std::string &features = "") {
  nothrow::set_cpu(name, features).value();
}

/// Throwing forms of the nothrow functions above.
inline Tensor rearrange(const Tensor &x, std::string_view pattern,
                        const Sizes &sizes = {}) {
  return nothrow::rearrange(x, pattern, sizes).value();
}
inline Tensor reduce(const Tensor &x, std::string_view pattern, Reduction how,
                     const Sizes &sizes = {},
                     std::optional<DType> acc = std::nullopt) {
  return nothrow::reduce(x, pattern, how, sizes, acc).value();
}
inline Tensor repeat(const Tensor &x, std::string_view pattern,
                     const Sizes &sizes = {}) {
  return nothrow::repeat(x, pattern, sizes).value();
}
/// einsum("i j, j k -> i k", a, b): the pattern first, then the operands.
template <class... Ts,
          class = std::enable_if_t<(std::is_convertible_v<Ts, Tensor> && ...)>>
Tensor einsum(std::string_view pattern, const Ts &...operands) {
  return nothrow::einsum(pattern, std::vector<Tensor>{Tensor(operands)...})
      .value();
}
inline Packed pack(const std::vector<Tensor> &inputs,
                   std::string_view pattern) {
  return nothrow::pack(inputs, pattern).value();
}
inline std::vector<Tensor> unpack(const Tensor &x, const PackedShapes &shapes,
                                  std::string_view pattern) {
  return nothrow::unpack(x, shapes, pattern).value();
}
inline Tensor astype(const Tensor &x, DType dtype) {
  return nothrow::astype(x, dtype).value();
}
inline std::string explain(std::string_view op, std::string_view pattern,
                           const std::vector<Tensor> &inputs,
                           const Sizes &sizes = {}) {
  return nothrow::explain(op, pattern, inputs, sizes).value();
}

/// The language's elementwise functions (docs/language.md §6), by name.
#define EIN_API_UNARY(NAME)                                                    \
  inline Tensor NAME(const Tensor &x) {                                        \
    return nothrow::elementwise(#NAME, {x}).value();                           \
  }
EIN_API_UNARY(exp)
EIN_API_UNARY(log)
EIN_API_UNARY(sqrt)
EIN_API_UNARY(rsqrt)
EIN_API_UNARY(tanh)
EIN_API_UNARY(relu)
EIN_API_UNARY(sigmoid)
EIN_API_UNARY(silu)
EIN_API_UNARY(gelu)
EIN_API_UNARY(gelu_tanh)
EIN_API_UNARY(softplus)
EIN_API_UNARY(sin)
EIN_API_UNARY(cos)
EIN_API_UNARY(erf)
EIN_API_UNARY(floor)
EIN_API_UNARY(ceil)
EIN_API_UNARY(round)
EIN_API_UNARY(abs)
EIN_API_UNARY(sign)
EIN_API_UNARY(square)
EIN_API_UNARY(neg)
#undef EIN_API_UNARY
#define EIN_API_BINARY(NAME, FN)                                               \
  inline Tensor NAME(const Tensor &a, const Tensor &b) {                       \
    return nothrow::elementwise(FN, {a, b}).value();                           \
  }
EIN_API_BINARY(add, "add")
EIN_API_BINARY(sub, "sub")
EIN_API_BINARY(mul, "mul")
EIN_API_BINARY(div, "div")
EIN_API_BINARY(pow, "pow")
EIN_API_BINARY(floordiv, "floordiv")
EIN_API_BINARY(mod, "mod")
/// Elementwise min and max (the reductions are ein::min and ein::max).
EIN_API_BINARY(minimum, "min")
EIN_API_BINARY(maximum, "max")
EIN_API_BINARY(lt, "lt")
EIN_API_BINARY(le, "le")
EIN_API_BINARY(gt, "gt")
EIN_API_BINARY(ge, "ge")
EIN_API_BINARY(eq, "eq")
EIN_API_BINARY(ne, "ne")
EIN_API_BINARY(logical_and, "and")
EIN_API_BINARY(logical_or, "or")
#undef EIN_API_BINARY
inline Tensor logical_not(const Tensor &x) {
  return nothrow::elementwise("not", {x}).value();
}
inline Tensor clip(const Tensor &x, const Tensor &lo, const Tensor &hi) {
  return nothrow::elementwise("clip", {x, lo, hi}).value();
}
/// `a` where `condition` holds, else `b`.
inline Tensor where(const Tensor &condition, const Tensor &a, const Tensor &b) {
  return nothrow::elementwise("where", {condition, a, b}).value();
}
inline Tensor operator+(const Tensor &a, const Tensor &b) { return add(a, b); }
inline Tensor operator-(const Tensor &a, const Tensor &b) { return sub(a, b); }
inline Tensor operator*(const Tensor &a, const Tensor &b) { return mul(a, b); }
inline Tensor operator/(const Tensor &a, const Tensor &b) { return div(a, b); }
inline Tensor operator-(const Tensor &x) { return neg(x); }
inline Tensor operator*(const Tensor &a, double b) {
  return mul(a, scalar(b, a.dtype()));
}
inline Tensor operator*(double a, const Tensor &b) {
  return mul(scalar(a, b.dtype()), b);
}
inline Tensor operator+(const Tensor &a, double b) {
  return add(a, scalar(b, a.dtype()));
}
inline Tensor operator-(const Tensor &a, double b) {
  return sub(a, scalar(b, a.dtype()));
}
inline Tensor operator/(const Tensor &a, double b) {
  return div(a, scalar(b, a.dtype()));
}

} // namespace ein::api
