// The builder of checked programs: the one door for a front end that is not
// .ein text (the C++ API, grad()'s backward ops, a future Python front end).
//
// Each op is built through the same rules as a written one: its shape from
// Shape/Infer.h, its dtype from the dtype table (Shape/DTypeRules.h). What it
// builds is an ordinary CheckedFunction, which MLIRGen, the JIT and the CUDA
// back end accept as they accept the checker's. A step that does not build
// returns a BuildError anchored in the caller's own text: the pattern it was
// given and an offset into it, or the operand or keyword it names.
#pragma once

#include "ein/Sema/Program.h"
#include "ein/Shape/DTypeRules.h"

#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace ein {

/// Why an op could not be built, anchored in what the caller passed.
struct BuildError {
  /// The rule's message and its anchor: `error.offset`/`length` into
  /// `pattern` (Anchor::Pattern), or the index of an operand or keyword
  /// size (Anchor::Operand, Anchor::Kwarg) of the call.
  ShapeError error;
  /// The op being built: "einsum", "reduce", "add", ...
  std::string op;
  /// The pattern the caller gave (empty for an op without one).
  std::string pattern;
  /// The rule that refused: the shape rule (Shape/Infer.h), or the dtype
  /// table's rule for an operand or for acc= (Shape/DTypeRules.h). A front
  /// end that writes a reduction or acc= apart from the operands (the
  /// checker's reduce(x, p, "mean", acc=f16)) places such an error there.
  enum class Rule { Shape, OperandDType, AccDType } rule = Rule::Shape;
  /// When the shape rule refused a pattern that numpy would read as
  /// one-letter axes ("nd,dk->nk") and that pattern spaced out ("n d, d k
  /// -> n k") builds: the spaced pattern, for a note (spacedPatternNote).
  std::string spaced;
  /// "OP(\"PATTERN\"): MESSAGE".
  std::string str() const;
  /// The caller's pattern with a caret line under the offending token
  /// ("    PATTERN\n    ^~~"), or "" when the error is not in the pattern.
  std::string caret() const;
};

/// A built value, or the error that stopped it.
template <typename T> class [[nodiscard]] BuildOr {
public:
  BuildOr(T value) : storage(std::in_place_index<0>, std::move(value)) {}
  BuildOr(BuildError error)
      : storage(std::in_place_index<1>, std::move(error)) {}
  explicit operator bool() const { return storage.index() == 0; }
  T &operator*() { return std::get<0>(storage); }
  const T &operator*() const { return std::get<0>(storage); }
  const BuildError &error() const { return std::get<1>(storage); }

private:
  std::variant<T, BuildError> storage;
};

/// slice's operands as the caller spelled them, for its messages and its
/// entry check; an empty field is spelled from the value built.
struct SliceText {
  std::string tensor; // "x"
  std::string axis;   // "seq", "2*half", as written
  std::string start, stop;
};

/// Where the ops being built come from; every op built is tagged with it.
struct BuildOrigin {
  SourceLoc loc;
  int callSite = -1;
  GradPhase phase = GradPhase::Forward;
  int gradOf = -1; // the value whose gradient a backward op computes
};

/// Appends checked ops to one function (a new one, or one being extended,
/// as grad() extends the function it differentiates). Values are the
/// function's value ids.
class ProgramBuilder {
public:
  explicit ProgramBuilder(CheckedFunction &fn) : fn(fn) {}

  CheckedFunction &function() { return fn; }
  const TensorType &type(unsigned value) const { return fn.values[value].type; }

  /// The origin every op built from now on is tagged with.
  void setOrigin(BuildOrigin origin) { at = origin; }
  const BuildOrigin &origin() const { return at; }

  /// A parameter of the function, of `type` (dims bound at entry).
  unsigned param(TensorType type, std::string name = "");
  /// Returns `values` from the function (its results take their types).
  void ret(const std::vector<unsigned> &values);

  /// A rank-0 constant (an integer dtype takes the value's integer part).
  unsigned constant(double value, DType dtype);
  /// A number as written, as a rank-0 constant of `dtype`: refused when it
  /// does not fit the dtype (DTypeRules.h's literal rule).
  BuildOr<unsigned> literal(const NumberLiteral &value, DType dtype);
  /// The size `n` as a rank-0 value: a constant when `n` is a number, else
  /// read at run time (refused for bool: a size is a number).
  BuildOr<unsigned> size(const SizeExpr &n, DType dtype);
  /// arange(n): 0, 1, ..., n-1 in `dtype` along the dim `n`; refused for
  /// bool (anchored at the first keyword: dtype=) and for a size known to
  /// be negative (anchored at operand 0, the size).
  BuildOr<unsigned> arange(const SizeExpr &n, DType dtype = DType::I64);
  /// `x` as `dtype` (x itself when it has that dtype).
  unsigned cast(unsigned x, DType dtype);
  /// astype(x, dtype) as written: a cast op even to x's own dtype, so that
  /// the program keeps the op its text has.
  unsigned astype(unsigned x, DType dtype);

  /// An elementwise function of `xs`, broadcast together.
  BuildOr<unsigned> elementwise(ElementwiseFn fn, std::vector<unsigned> xs);
  BuildOr<unsigned> rearrange(unsigned x, const std::string &pattern,
                              std::vector<SizeArg> sizes = {});
  BuildOr<unsigned> repeat(unsigned x, const std::string &pattern,
                           std::vector<SizeArg> sizes = {});
  /// A reduction; `acc` sets the accumulation and result dtype.
  BuildOr<unsigned> reduce(unsigned x, const std::string &pattern,
                           ReduceKind how, std::vector<SizeArg> sizes = {},
                           std::optional<DType> acc = std::nullopt);
  /// rearrange, repeat or reduce by kind.
  BuildOr<unsigned> transform(OpKind kind, unsigned x,
                              const std::string &pattern,
                              std::vector<SizeArg> sizes,
                              ReduceKind how = ReduceKind::Sum,
                              std::optional<DType> acc = std::nullopt);
  /// `transform` of a pattern the caller parsed already (PatternUse of
  /// `kind`): a front end that caches its parse parses each pattern once.
  BuildOr<unsigned> transform(OpKind kind, unsigned x, const Pattern &pattern,
                              std::vector<SizeArg> sizes,
                              ReduceKind how = ReduceKind::Sum,
                              std::optional<DType> acc = std::nullopt);
  /// An einsum of `xs`; `acc` sets the accumulation and result dtype.
  BuildOr<unsigned> einsum(const std::vector<unsigned> &xs,
                           const std::string &pattern,
                           std::vector<SizeArg> sizes = {},
                           std::optional<DType> acc = std::nullopt);
  /// `einsum` of a pattern the caller parsed already (PatternUse::Einsum).
  BuildOr<unsigned> einsum(const std::vector<unsigned> &xs,
                           const Pattern &pattern,
                           std::vector<SizeArg> sizes = {},
                           std::optional<DType> acc = std::nullopt);
  /// pack(parts, pattern), already parsed, of `dtype`: every part of it.
  BuildOr<unsigned> pack(const std::vector<unsigned> &parts,
                         const Pattern &pattern, DType dtype);
  /// cat(parts, pattern): pack's concatenation, its messages naming cat.
  BuildOr<unsigned> cat(const std::vector<unsigned> &parts,
                        const Pattern &pattern, DType dtype);

  /// unpack(x, parts, pattern), already parsed: one value per part, of the
  /// shapes `parts` give for `*`.
  BuildOr<std::vector<unsigned>> unpack(unsigned x, const Pattern &pattern,
                                        const std::vector<Shape> &parts);

  /// take(table, ids, axis): the table's slices along its one dim of size
  /// `axis` at `ids` (i32 or i64), the ids' dims in that dim's place.
  /// `written` is the axis as the caller spelled it (its messages quote
  /// it); an error about the axis is anchored in it (Anchor::Pattern, the
  /// BuildError's pattern), one about the table or the ids at operand 0 or
  /// 1.
  BuildOr<unsigned> take(unsigned table, unsigned ids, const Dim &axis,
                         std::string written = "");
  /// take along the table's dim `axis` (a position in its shape), as
  /// take's adjoint does.
  BuildOr<unsigned> takeAt(unsigned table, unsigned ids, unsigned axis);
  /// take_along(x, ids, axis): x's element along its one dim of size
  /// `axis` at each position of `ids` (i32 or i64), whose shape is x's
  /// without that dim, dim for dim (no broadcasting); the result has the
  /// ids' shape. Anchors as take's: the axis as `written`, operand 0 x, 1
  /// the ids.
  BuildOr<unsigned> takeAlong(unsigned x, unsigned ids, const Dim &axis,
                              std::string written = "");
  /// take_along along x's dim `axis` (a position in its shape).
  BuildOr<unsigned> takeAlongAt(unsigned x, unsigned ids, unsigned axis);
  /// dropout(x, p, key): x (a float tensor) with each element kept iff the
  /// Philox4x64-10 draw of (key, its C-order index) is >= p, and scaled by
  /// 1 / (1 - p); p in [0, 1), the key an i64 scalar tensor
  /// (docs/language.md §6). Anchors: operand 0 x, 1 the key.
  BuildOr<unsigned> dropout(unsigned x, double p, unsigned key);
  /// dropout with a run-time p: a rank-0 float value (operand 2 of the op,
  /// after the key), checked to be in [0, 1) when the function runs: a p
  /// outside it is counted into the function's index status (an error of
  /// the call, as an id out of range). Anchors as above, operand 2 p.
  BuildOr<unsigned> dropout(unsigned x, unsigned p, unsigned key);
  /// slice(x, axis, start, stop): x with its one dim of size `axis` cut to
  /// [start, stop). The bounds are sizes; what they do not prove (0 <=
  /// start <= stop <= the dim) is checked at the function's entry, the
  /// check named by `text` and the origin's line. `axis` may be a variadic
  /// (the caller's `*name` or `...`), refused by name. Anchors: the axis
  /// (Anchor::Pattern, the BuildError's pattern: the axis as written),
  /// operand 0 the tensor, 1 start, 2 stop, the op for bounds in the wrong
  /// order.
  BuildOr<unsigned> slice(unsigned x, const Dim &axis, const SizeExpr &start,
                          const SizeExpr &stop, SliceText text = {});
  /// slice along x's dim `index` (a position in its shape, counted from
  /// the end when negative), as the IR names it; slice's rules and anchors
  /// otherwise.
  BuildOr<unsigned> sliceAt(unsigned x, int64_t index, const SizeExpr &start,
                            const SizeExpr &stop, SliceText text = {});
  /// scatter_add(ids, updates): zeros of type `table` with `updates` added
  /// at `ids` along the dim `axis`: take's adjoint (operand 0 the ids, 1
  /// the updates).
  BuildOr<unsigned> scatterAdd(unsigned ids, unsigned updates,
                               const TensorType &table, unsigned axis);

  /// Builds the op `attributes` describes (its kind and the CheckedOp
  /// fields its typed method takes) of `operands`, through that row's
  /// buildOpOfFoo: the one entry that knows every op, for a caller that
  /// holds ops as data (the dialect's verifiers, docs/architecture.md §7).
  BuildOr<std::vector<unsigned>> build(const CheckedOp &attributes,
                                       const std::vector<unsigned> &operands);

  /// Appends `op` (its structure inferred by the caller) with one result of
  /// `result`, tagged with the origin; the result's id.
  unsigned append(CheckedOp op, TensorType result);
  /// A new value of `type` made by no op yet (an op with several results
  /// names them in its `results` before `appendOp`).
  unsigned newValue(TensorType type);
  /// Appends `op`, whose results the caller made with newValue, tagged.
  void appendOp(CheckedOp op);

private:
  BuildOr<unsigned> packAs(const char *name, const std::vector<unsigned> &parts,
                           const Pattern &pattern, DType dtype);

  CheckedFunction &fn;
  BuildOrigin at;
};

/// One result as build()'s list of results.
inline BuildOr<std::vector<unsigned>> asResults(BuildOr<unsigned> built) {
  if (!built)
    return built.error();
  return std::vector<unsigned>{*built};
}

// Each registry row's builder rule, one signature for every op: builds the
// op from its CheckedOp fields (`attributes`) and `operands`, calling the
// op's typed method. Defined in the op's family file (lib/Sema/Ops/), where
// its typed method is; a row without one fails to link, naming it.
#define EIN_OP(Kind, Name, OpClass)                                            \
  BuildOr<std::vector<unsigned>> buildOpOf##Kind(                              \
      ProgramBuilder &builder, const CheckedOp &attributes,                    \
      const std::vector<unsigned> &operands);
#include "ein/Sema/Ops.def"

} // namespace ein
