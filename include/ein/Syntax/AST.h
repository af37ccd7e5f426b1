// The abstract syntax tree of a .ein file.
#pragma once

#include "ein/Syntax/Diagnostics.h"

#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace ein {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

/// A keyword argument: `h=heads`.
struct KeywordArg {
  std::string name;
  SourceLoc loc;
  ExprPtr value;
};

/// An expression. One node type with a kind keeps the tree simple to walk.
struct Expr {
  enum class Kind {
    Name,
    Int,
    Float,
    String,
    Call,
    Binary,
    Neg,
    Not,
    List,
    Index
  } kind;
  SourceLoc loc;
  unsigned length = 1; // source columns of the token (names, strings)
  std::string
      text; // Name, Int/Float digits, String contents, Call callee, Binary op
  /// Call arguments, Binary/Neg operands, List items; Index: the tensor
  /// indexed, then the indices (`w[l]`: w, l).
  std::vector<ExprPtr> args;
  std::vector<KeywordArg> keywords; // Call keyword arguments
};

/// `bf16["batch seq (heads d)"]`.
struct TypeAnnotation {
  std::string dtype;
  SourceLoc dtypeLoc;
  std::string shape;
  SourceLoc shapeLoc; // the opening quote
};

struct Param {
  std::string name;
  SourceLoc loc;
  TypeAnnotation type;
};

/// `a, b = expr`, `return x, y`, or `for l in range(layers):` and its
/// indented body.
struct Stmt {
  enum class Kind { Assign, Return, For } kind;
  SourceLoc loc;
  /// Assign: the names assigned; For: the loop variable.
  std::vector<std::pair<std::string, SourceLoc>> targets;
  /// Assign: one value; Return: one or more; For: what it runs over (the
  /// call `range(layers)` as written).
  std::vector<ExprPtr> values;
  std::vector<Stmt> body; // For: the statements run once per iteration
};

struct Function {
  std::string name;
  SourceLoc loc;
  std::vector<Param> params;
  std::vector<TypeAnnotation> results;
  std::vector<Stmt> body;
};

/// `dim heads = 8`.
struct DimDecl {
  std::string name;
  SourceLoc loc;
  ExprPtr value;
};

/// `mesh dp, tp`: the named axes of the device mesh (docs/distributed.md).
/// Each axis is a dim, symbolic unless bound by `dim`, `--dim` or `--mesh`.
struct MeshDecl {
  SourceLoc loc; // the keyword
  std::vector<std::pair<std::string, SourceLoc>> axes;
};

/// `shard batch -> dp`: every parameter and result dim named `batch` without
/// a layout of its own is sharded on mesh axis `dp`.
struct ShardRule {
  std::string dim;
  SourceLoc dimLoc;
  std::string axis;
  SourceLoc axisLoc;
};

/// `from layers import rmsnorm, swiglu`: functions of `layers.ein` (in the
/// importing file's directory) made callable in the importing file.
struct Import {
  std::string module; // `layers`
  SourceLoc loc;      // the module name
  std::vector<std::pair<std::string, SourceLoc>> names;
  /// SourceFile::id of the imported file, once resolveImports has read it.
  unsigned resolvedFile = 0;
};

struct Module {
  std::vector<DimDecl> dims;
  std::vector<Function> functions;
  std::vector<Import> imports;
  /// Every `mesh` declaration written (more than one is an error the
  /// checker reports at the second) and every `shard` rule.
  std::vector<MeshDecl> meshes;
  std::vector<ShardRule> shardRules;
  /// Filled by resolveImports: what the imported files (transitively, each
  /// once) declare. Their functions are callable but are not entry points;
  /// their dims join the file's. Imports come after those of the files they
  /// import. Locations carry the file (SourceLoc::file).
  std::vector<std::shared_ptr<const SourceFile>> importedFiles;
  std::vector<Function> importedFunctions;
  std::vector<DimDecl> importedDims;
  std::vector<Import> importedImports;
  /// The names of the file's own functions (its entry points), in order.
  std::vector<std::string> functionNames() const;
};

/// Prints the tree in an indented, FileCheck-friendly form.
void printAST(const Module &module, std::ostream &os);
std::string exprToString(const Expr &expr);

} // namespace ein
