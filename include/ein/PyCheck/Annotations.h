// jaxtyping annotations (`Float[Tensor, "batch seq hidden"]`) read as ein
// shapes: each dim spec translated to ein's shape syntax, what ein cannot
// hold exactly (`#name`, `*#name`, `_foo`) made anonymous.
#pragma once

#include "ein/PyCheck/Names.h"
#include "ein/Shape/Shape.h"

#include <map>
#include <optional>
#include <string>

namespace ein::pycheck {

/// A jaxtyping array annotation.
struct ArrayAnnotation {
  Shape shape;
  /// The shape string as written, and the literal holding it.
  std::string spec;
  Node literal = nullptr;
  /// Each named dim (and `*name` variadic) of the spec with the byte offset
  /// of its name in `spec`, first occurrence only, for notes.
  std::map<std::string, unsigned> declared;
};

/// What an annotation is, for the checker.
struct AnnotationRead {
  enum class Kind {
    None,       // no annotation, or not an array's (`int`, `nn.Module`)
    Array,      // a jaxtyping array annotation, read
    Unreadable, // a jaxtyping annotation whose shape is not read
  } kind = Kind::None;
  ArrayAnnotation array;
  std::string reason; // Unreadable: why
};

/// Whether `qualified` is one of jaxtyping's dtype annotations
/// (`jaxtyping.Float`, `jaxtyping.Int32`, `jaxtyping.Shaped`, ...).
bool isJaxtypingDType(const std::string &qualified);

/// The ein shape string of a jaxtyping shape spec: `*name` and `name` kept,
/// `...`, `_`, `_foo`, `*_foo`, `#name`, `*#name` anonymous (`_` or `...`),
/// `name=4` as `4`, `?name` as `name`, `dim//2` as ein's `dim/2`, and a
/// symbolic dim ein cannot read (`min(a,b)`, `dim/2`) anonymous. Each
/// named dim's offset in `spec` goes to `declared`.
std::string einShapeOfSpec(const std::string &spec,
                           std::map<std::string, unsigned> *declared);

/// Reads `annotation` through the module's names; `anonCounter` numbers
/// the fresh dims of `_` and `...` (parseShape's counter).
AnnotationRead readAnnotation(Node annotation, const ModuleNames &names,
                              unsigned *anonCounter);

} // namespace ein::pycheck
