// Tensor shapes with symbolic dims and variadic packs, and the element types.
#pragma once

#include "ein/Shape/SizeExpr.h"
#include "ein/Support/Expected.h"

#include <optional>
#include <string>
#include <vector>

namespace ein {

/// Element types of the language (jaxtyping spelling), one per row of
/// DTypes.def.
enum class DType {
#define EIN_DTYPE(Enum, ...) Enum,
#include "ein/Shape/DTypes.def"
};

/// How a dtype's values behave: IEEE-style floats, two's-complement
/// integers, or bool.
enum class DTypeKind { Float, Int, Bool };
/// Which of a device's peak FLOP rates an op of a dtype runs at
/// (DeviceSpec::peakFor).
enum class PeakSlot { F64, F32, F16, BF16, F8 };

/// One row of DTypes.def (see there for each column).
struct DTypeInfo {
  DType type;
  const char *name;
  unsigned bytes;
  DTypeKind kind;
  const char *cType;
  const char *cudaType;
  const char *npyDescr; // "" when numpy has no such dtype
  PeakSlot peak;
  int mantissaBits; // float formats only
  int maxExponent;
  bool hasMaxMantissa;
};

/// Every dtype in enum order.
const std::vector<DType> &allDTypes();
const DTypeInfo &dtypeInfo(DType type);
std::optional<DType> parseDType(const std::string &name);
const char *dtypeName(DType type);
/// Storage size in bytes: f64 8, f32 4, f16/bf16 2, fp8 1, i64 8, i32 4,
/// bool 1 (one byte per element, 0 or 1, as numpy).
unsigned dtypeBytes(DType type);
bool isFloat(DType type);

/// One dimension: a symbolic size, or a variadic pack `*name` of unknown rank.
struct Dim {
  SizeExpr size;              // meaningless for a pack
  std::string pack;           // non-empty: this dim is the pack `*pack`
  bool broadcastable = false; // `#name`: equal or 1
  /// The layout, `name@axis`: the mesh axis the dim is split along (empty:
  /// replicated). Sizes, equality and the shape algebra ignore it.
  std::string meshAxis;
  /// What the axis must divide: the size, or for a composition the major
  /// factor it is sharded through (`(heads d)@tp`: heads).
  SizeExpr meshMajor;
  /// Offset of the axis name in the shape string, for carets.
  unsigned meshAxisOffset = 0;
  bool isPack() const { return !pack.empty(); }
  static Dim ofSize(SizeExpr s) {
    Dim d;
    d.size = std::move(s);
    return d;
  }
  static Dim ofPack(std::string name) {
    Dim d;
    d.pack = std::move(name);
    return d;
  }
  bool operator==(const Dim &o) const {
    return pack == o.pack && (isPack() || size == o.size);
  }
  bool operator!=(const Dim &o) const { return !(*this == o); }
  /// "batch", "heads*d", "*batch", "n+1", "batch@dp"
  std::string str() const;
};

using Shape = std::vector<Dim>;

/// "batch seq heads*d"; the empty string for a scalar.
std::string shapeStr(const Shape &shape);
/// Number of elements: a polynomial; a pack contributes its own name as a
/// symbol standing for the product of its dims.
SizeExpr numElements(const Shape &shape);

/// A tensor type: shape and element type.
struct TensorType {
  Shape shape;
  DType dtype = DType::F32;
  std::string str() const; // f32["batch seq"]
};

} // namespace ein

namespace ein {
/// Parses a jaxtyping-style shape string: space-separated dims, each a name,
/// an integer, `*name` (variadic), `...` (anonymous variadic), `#name`
/// (broadcastable), `_` (anonymous), a composition `(heads d)` or an
/// expression (`heads*d`, `n+1`, `hidden/8`), each but the variadic,
/// broadcastable and anonymous ones optionally sharded on a mesh axis:
/// `batch@dp`, `(heads@tp d)` or `(heads d)@tp` (docs/distributed.md; the
/// checker resolves the axis names). `anonCounter` numbers the
/// fresh names made for `_` and `...`. Errors anchor at a pattern offset.
Expected<Shape> parseShape(const std::string &text,
                           unsigned *anonCounter = nullptr);
/// Where each dim of a shape string that parses is written: (offset, length)
/// of its token, one per dim of parseShape's result, for carets.
std::vector<std::pair<unsigned, unsigned>>
shapeDimSpans(const std::string &text);
/// Parses one size expression: `8`, `heads`, `heads*d`, `n+1`, `hidden/8`.
Expected<SizeExpr> parseSizeExpr(const std::string &text);
/// True for the fresh names parseShape makes for `_` and `...` (`_anon3`)
/// and for the dims of such a `...` once its rank is known (`_anon3_0`):
/// sizes nobody named, which an operation may only require equal to
/// another size by an entry check (InferContext::unify).
bool isAnonymousName(const std::string &name);
/// True when `size` mentions an anonymous name.
bool mentionsAnonymous(const SizeExpr &size);
/// A `_`, a `...`, or a size made from them: a dim nobody named.
bool isAnonymousDim(const Dim &d);
/// A dim as a size; a pack stands for the product of its dims (as in
/// numElements).
SizeExpr sizeOrPack(const Dim &d);
} // namespace ein
