// The abstract interpreter of one Python function (private to EinPyCheck):
// abstract values, the statements and expressions it walks, and the hooks
// of its einops (EinopsCalls.cpp) and torch/numpy (TorchOps.cpp) rules.
#pragma once

#include "ein/PyCheck/Annotations.h"
#include "ein/PyCheck/PyCheck.h"
#include "ein/Sema/ProgramBuilder.h"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ein::pycheck {

/// What the checker knows about a Python value. Unknown is the default and
/// what everything not understood becomes.
struct AbsVal {
  enum class Kind {
    Unknown,
    Tensor,       // `id`: a value of the function being built
    Size,         // an integer, `size` (a dim or a count)
    Number,       // a Python number of unknown value (a scale, a flag)
    Tuple,        // a tuple or list, `items`
    PackedShapes, // einops.pack's second result, `parts`
    ShapeDict,    // einops.parse_shape's dict, `dict`
    Layer,        // an einops layer module, `layer` its constructor call
    Instance,     // an object of a class of the file, `layer` its ClassDef
    Parameter,    // a tensor __init__ builds, `layer` its creation call
  } kind = Kind::Unknown;
  unsigned id = 0;
  SizeExpr size;
  std::vector<AbsVal> items;
  std::vector<Shape> parts;
  std::map<std::string, SizeExpr> dict;
  Node layer = nullptr;

  bool known() const { return kind != Kind::Unknown; }
  bool isTensor() const { return kind == Kind::Tensor; }
  static AbsVal unknown() { return {}; }
  static AbsVal tensor(unsigned id) {
    AbsVal v;
    v.kind = Kind::Tensor;
    v.id = id;
    return v;
  }
  static AbsVal ofSize(SizeExpr size) {
    AbsVal v;
    v.kind = Kind::Size;
    v.size = std::move(size);
    return v;
  }
  static AbsVal number() {
    AbsVal v;
    v.kind = Kind::Number;
    return v;
  }
  /// A Layer or an Instance: what `node` (a constructor call, a ClassDef)
  /// built.
  static AbsVal built(Kind kind, Node node) {
    AbsVal v;
    v.kind = kind;
    v.layer = node;
    return v;
  }
  static AbsVal tuple(std::vector<AbsVal> items) {
    AbsVal v;
    v.kind = Kind::Tuple;
    v.items = std::move(items);
    return v;
  }
};

/// The attributes of a class that its methods read: `self.X` assigned once,
/// at the top level of `__init__`.
struct ClassInfo {
  std::string name;
  std::map<std::string, AbsVal> attrs;
  /// Attributes stored more than once (or outside __init__'s top level).
  std::set<std::string> unstable;
  /// Its methods by name.
  std::map<std::string, Node> methods;
  /// Attributes __init__ stores with a jaxtyping annotation
  /// (`self.W_U: Float[Tensor, "d_model d_vocab"] = ...`): the annotation.
  std::map<std::string, Node> annotated;
};

/// What every function of one file shares.
struct FileContext {
  const SourceFile &file;
  DiagnosticEngine &diags;
  const ModuleNames &names;
  PyCheckReport &report;
  /// Module-level names bound once to an integer (`HEADS = 8`).
  std::map<std::string, AbsVal> globals;
  /// The file's top-level functions and classes defined once, by name.
  std::map<std::string, Node> functions, classes;
  /// Module-level names assigned once, and the value (a decorator made
  /// once: `checked = jaxtyped(typechecker=beartype)`).
  std::map<std::string, Node> decoratorAliases;
};

class FunctionInterp {
public:
  /// `cls` is the class a method belongs to (its attributes are read, and
  /// __init__'s are recorded into it).
  FunctionInterp(FileContext &cx, Node def, ClassInfo *cls,
                 std::string qualifiedName);
  /// Checks the function; adds its summary to the report when annotated.
  void run();

  // ---- used by the op rules (EinopsCalls.cpp, TorchOps.cpp) ----
  AbsVal eval(Node expr);
  /// What a name is bound to (a local, else a module constant), read
  /// without evaluating anything.
  AbsVal lookup(const std::string &name) const;
  const Shape &shapeOf(const AbsVal &tensor) const;
  /// A keyword or positional size argument: a number, a known Size, else a
  /// fresh anonymous size named after the expression (`self.heads`),
  /// nullopt for what cannot be an integer (a float literal).
  std::optional<SizeExpr> sizeArg(Node expr);
  /// A fresh size for the text of an expression, the same for the same key
  /// (`display` shown in messages; the key itself when empty).
  SizeExpr namedUnknownSize(const std::string &key,
                            const std::string &display = "");
  /// A size written where a module was built (__init__), whose names this
  /// function does not see: a number, a module constant, else a fresh size
  /// named after its text.
  SizeExpr initSize(Node expr);
  /// The source text of an expression's first line.
  std::string textOf(Node expr) const;
  /// Reports a refusal of the builder at its anchor (the pattern literal,
  /// an operand, a keyword, or the call), with notes. Errors that are not
  /// shape errors (the dtype table) are not reported: dtypes are not read.
  void reportBuild(const BuildError &error, Node call, Node pattern,
                   const std::vector<Node> &operands,
                   const std::vector<Node> &keywords);
  /// An error at `at` (its whole first line's span), with `declared here`
  /// notes for the annotation dims it names.
  void error(Node at, const std::string &message);
  void errorAt(SourceLoc loc, unsigned length, const std::string &message);
  /// A recognised call that was not checked, and why.
  void skip(Node at, const std::string &what, const std::string &reason);
  /// False under an undecided condition on shapes or pytest.raises, where
  /// diagnostics are not reported.
  bool reporting() const { return quiet == 0; }
  /// Counts a checked einops call or torch op.
  void checkedEinops() { ++cx.report.einopsChecked; }
  void checkedTorch() { ++cx.report.torchChecked; }
  ProgramBuilder &build() { return builder; }
  InferContext &ctx() { return fn.ctx; }
  /// A new tensor of `shape` (a parameter of the function being built: an
  /// op's result that the builder has no op for, e.g. matmul).
  AbsVal newTensor(Shape shape);
  /// A tensor of the rank `side` (a pattern's input) requires, every size
  /// anonymous (a variadic for a bare `...`).
  AbsVal syntheticInput(const PatternSide &side);
  FileContext &file() { return cx; }
  /// Evaluates every argument of `call` (for the calls in them).
  void evalArgs(Node call);
  /// The positional and keyword arguments of a Call node.
  static std::vector<Node> args(Node call);
  static Node keyword(Node call, const char *name);

  // The op rules: nullopt when `qualified` is not theirs.
  std::optional<AbsVal> einopsCall(const std::string &qualified, Node call);
  AbsVal applyLayer(const AbsVal &layer, Node call);
  /// torch.nn modules built in __init__ (nn.Linear, nn.LayerNorm, ...):
  /// the constructor's value, and its application.
  std::optional<AbsVal> torchModule(const std::string &qualified, Node call);
  AbsVal applyTorchModule(const AbsVal &module, Node call);
  /// nn.Conv1d/Conv2d (`spatial` dims) applied to a tensor of shape `s`:
  /// exact with stride 1 and literal kernel, padding and dilation.
  AbsVal applyConv(const AbsVal &module, Node call, Shape s, size_t spatial);
  /// In __init__: `value` builds a tensor of sizes it writes
  /// (`nn.Parameter(torch.randn(d_in, d_out) / d_in**0.5)`), as a Parameter
  /// for the methods to read (Parameters.cpp); nullopt otherwise.
  std::optional<AbsVal> initParameter(Node value);
  /// A Parameter read by a method: a tensor of __init__'s sizes (initSize).
  AbsVal parameterTensor(const AbsVal &param);
  /// A call of a function of the file (`def`; `bound`: a method, its first
  /// parameter the object): its arguments checked against its parameters'
  /// annotations, as jaxtyping checks them, and its result annotation, in
  /// the caller's sizes, as the result.
  AbsVal callAnnotated(Node def, Node call, bool bound);
  /// Calling an object of a class of the file: its forward (or __call__).
  AbsVal callModule(const AbsVal &object, Node call);
  std::optional<AbsVal> torchFunction(const std::string &qualified, Node call);
  std::optional<AbsVal> tensorMethod(const AbsVal &self,
                                     const std::string &method, Node call);
  AbsVal binaryOp(Node expr, const AbsVal &lhs, const AbsVal &rhs);
  AbsVal subscriptTensor(const AbsVal &x, Node expr);
  AbsVal tensorAttribute(const AbsVal &x, const std::string &attr, Node expr);

private:
  void block(const std::vector<Node> &body, bool topLevel);
  void stmt(Node s, bool topLevel);
  void assign(Node target, const AbsVal &v, bool topLevel);
  /// Whether `target` is `self.X` at the top level of __init__, which the
  /// other methods read.
  bool storesAttribute(Node target, bool topLevel) const;
  void checkReturn(Node value);
  /// Checks `v` against an annotation; on a mismatch, an error at `at`
  /// and `declaredNote` (when not empty) at the annotation.
  void checkAgainst(Node at, const AbsVal &v, const ArrayAnnotation &declared,
                    const std::string &what, const std::string &declaredNote);
  /// A note at the result annotation `v` was read from, when a call of an
  /// annotated function of the file gave it.
  void noteOrigin(const AbsVal &v);
  /// Runs `body` in a copy of the environment (a branch, a loop body):
  /// names stored in `region` are unknown after it.
  void branch(const std::vector<Node> &body, Node region);
  void forgetStored(Node region);
  /// Evaluates a condition on shapes, and decides it when the sizes do.
  std::optional<bool> decide(Node test);
  bool mentionsShapes(Node test);
  AbsVal call(Node expr);
  AbsVal attribute(Node expr);
  AbsVal subscript(Node expr);
  AbsVal sizeArithmetic(Node expr, const AbsVal &lhs, const AbsVal &rhs);
  /// `body` once per item of a known tuple, `var` bound to the item.
  AbsVal mapOver(const std::string &var, Node body, const AbsVal &items);
  std::string displayName(const std::string &message) const;
  void addNotes(const std::string &message);

  FileContext &cx;
  Node def;
  ClassInfo *cls;
  std::string name;
  bool isInit = false;
  CheckedFunction fn;
  ProgramBuilder builder;
  std::map<std::string, AbsVal> env;
  /// Names of the function's parameters and what it reads of `self`.
  std::string selfName;
  unsigned anonCounter = 0;
  std::map<std::string, SizeExpr> namedSizes;
  std::map<std::string, std::string> display; // anonymous name -> its text
  /// The anonymous sizes of syntheticInput's tensors.
  std::set<std::string> synthetic;
  /// Where each annotation dim is first written, for notes.
  std::map<std::string, std::pair<SourceLoc, unsigned>> declaredAt;
  std::set<std::string> paramDims;
  std::vector<AnnotationRead> results; // the result annotation(s)
  /// The tensors calls of the file's annotated functions returned: the
  /// result annotation each was read from, and the callee.
  std::map<unsigned, std::pair<Node, std::string>> resultOrigin;
  bool resultTuple = false;
  /// >0 inside code that a condition on shapes may make dead: refusals
  /// there are skipped, not reported.
  unsigned quiet = 0;
  /// The statements walked so far end in a return, raise, break or
  /// continue: the rest of the block does not run.
  bool stopped = false;
  unsigned skips = 0;
  bool annotated = false;
};

/// Checks every function of the module.
void checkModule(FileContext &cx, Node module);
/// The names `n` stores (assignment targets, loop variables, defs).
void collectStored(Node n, std::set<std::string> &out);

// The torch rules TorchOps.cpp and TorchFunctions.cpp share.
bool hasPack(const Shape &s);
Dim one();
bool isOne(const Dim &d);
/// A dim index of a tensor of rank `rank` (negative from the end).
std::optional<size_t> axisOf(long long d, size_t rank);
/// numpy's broadcasting of two known shapes, right-aligned: a literal 1
/// broadcasts, other dims must be equal under ein's rules (an error at
/// `at`); nullopt when refused or not decided (a variadic).
std::optional<Shape> broadcast(FunctionInterp &f, Node at, const Shape &a,
                               const Shape &b);
/// `lhs @ rhs` with numpy's matmul rules, `what` naming it in messages.
AbsVal matmul(FunctionInterp &f, Node at, const AbsVal &lhs, const AbsVal &rhs,
              const std::string &what);

} // namespace ein::pycheck
