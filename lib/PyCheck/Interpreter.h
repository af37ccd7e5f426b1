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
};

/// What every function of one file shares.
struct FileContext {
  const SourceFile &file;
  DiagnosticEngine &diags;
  const ModuleNames &names;
  PyCheckReport &report;
  /// Module-level names bound once to an integer (`HEADS = 8`).
  std::map<std::string, AbsVal> globals;
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
  const Shape &shapeOf(const AbsVal &tensor) const;
  /// A keyword or positional size argument: a number, a known Size, else a
  /// fresh anonymous size named after the expression (`self.heads`),
  /// nullopt for what cannot be an integer (a float literal).
  std::optional<SizeExpr> sizeArg(Node expr);
  /// A fresh size for the text of an expression, the same for the same text.
  SizeExpr namedUnknownSize(const std::string &text);
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
  /// Counts a checked einops call or torch op.
  void checkedEinops() { ++cx.report.einopsChecked; }
  void checkedTorch() { ++cx.report.torchChecked; }
  ProgramBuilder &build() { return builder; }
  InferContext &ctx() { return fn.ctx; }
  /// A new tensor of `shape` (a parameter of the function being built: an
  /// op's result that the builder has no op for, e.g. matmul).
  AbsVal newTensor(Shape shape);
  FileContext &file() { return cx; }
  /// The positional and keyword arguments of a Call node.
  static std::vector<Node> args(Node call);
  static Node keyword(Node call, const char *name);

  // The op rules: nullopt when `qualified` is not theirs.
  std::optional<AbsVal> einopsCall(const std::string &qualified, Node call);
  AbsVal applyLayer(const AbsVal &layer, Node call);
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
  void checkReturn(Node value);
  void checkAgainst(Node at, const AbsVal &v, const ArrayAnnotation &declared,
                    const std::string &what);
  /// Runs `body` in a copy of the environment (a branch, a loop body):
  /// names stored in `region` are unknown after it.
  void branch(const std::vector<Node> &body, Node region);
  void forgetStored(Node region);
  std::optional<bool> decide(Node test);
  bool mentionsShapes(Node test);
  AbsVal call(Node expr);
  AbsVal attribute(Node expr);
  AbsVal subscript(Node expr);
  AbsVal sizeArithmetic(Node expr, const AbsVal &lhs, const AbsVal &rhs);
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
  /// Where each annotation dim is first written, for notes.
  std::map<std::string, std::pair<SourceLoc, unsigned>> declaredAt;
  std::set<std::string> paramDims;
  std::vector<AnnotationRead> results; // the result annotation(s)
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

} // namespace ein::pycheck
