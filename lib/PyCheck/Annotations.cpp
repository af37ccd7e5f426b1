// Reading jaxtyping annotations: the dtype wrapper, the array type, and the
// shape spec translated into ein's shape syntax.
#include "ein/PyCheck/Annotations.h"

#include <cctype>
#include <set>
#include <sstream>

namespace ein::pycheck {

bool isJaxtypingDType(const std::string &qualified) {
  static const std::set<std::string> names = {"Shaped",
                                              "Num",
                                              "Real",
                                              "Inexact",
                                              "Float",
                                              "Float8",
                                              "Float16",
                                              "Float32",
                                              "Float64",
                                              "BFloat16",
                                              "Complex",
                                              "Complex64",
                                              "Complex128",
                                              "Integer",
                                              "Int",
                                              "Int4",
                                              "Int8",
                                              "Int16",
                                              "Int32",
                                              "Int64",
                                              "UInt",
                                              "UInt4",
                                              "UInt8",
                                              "UInt16",
                                              "UInt32",
                                              "UInt64",
                                              "Bool",
                                              "Key",
                                              "Float8e4m3fn",
                                              "Float8e5m2",
                                              "Float8e4m3b11fnuz",
                                              "Float8e4m3fnuz",
                                              "Float8e5m2fnuz"};
  size_t dot = qualified.rfind('.');
  return dot != std::string::npos && qualified.substr(0, dot) == "jaxtyping" &&
         names.count(qualified.substr(dot + 1));
}

static bool isIdentifier(const std::string &s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])))
    return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
          static_cast<unsigned char>(c) >= 0x80))
      return false;
  return true;
}

std::string einShapeOfSpec(const std::string &spec,
                           std::map<std::string, unsigned> *declared) {
  std::vector<std::string> dims;
  size_t pos = 0;
  while (pos < spec.size()) {
    if (std::isspace(static_cast<unsigned char>(spec[pos]))) {
      ++pos;
      continue;
    }
    size_t start = pos;
    while (pos < spec.size() &&
           !std::isspace(static_cast<unsigned char>(spec[pos])))
      ++pos;
    std::string elem = spec.substr(start, pos - start);
    if (elem == "...") {
      dims.push_back("...");
      continue;
    }
    bool broadcast = false, variadic = false, anonymous = false;
    unsigned nameAt = static_cast<unsigned>(start);
    // jaxtyping's modifiers, in any order, as its parser strips them.
    for (;;) {
      if (elem.empty())
        break;
      char c = elem[0];
      if (c == '#' || c == '*' || c == '_' || c == '?') {
        broadcast |= c == '#';
        variadic |= c == '*';
        anonymous |= c == '_';
        elem = elem.substr(1);
        ++nameAt;
      } else if (std::count(elem.begin(), elem.end(), '=') == 1) {
        size_t eq = elem.find('=');
        nameAt += static_cast<unsigned>(eq + 1);
        elem = elem.substr(eq + 1);
      } else {
        break;
      }
    }
    if (variadic) {
      // `*#batch` may be 1 anywhere: ein's variadic cannot say so.
      if (anonymous || broadcast || !isIdentifier(elem)) {
        dims.push_back("...");
      } else {
        dims.push_back("*" + elem);
        if (declared)
          declared->emplace(elem, nameAt);
      }
      continue;
    }
    if (anonymous || broadcast || elem.empty()) {
      dims.push_back("_");
      continue;
    }
    if (isIdentifier(elem)) {
      dims.push_back(elem);
      if (declared)
        declared->emplace(elem, nameAt);
      continue;
    }
    // A number, or a symbolic expression jaxtyping evaluates with Python:
    // `//` is ein's floor quotient `/`; Python's `/` (a float) and anything
    // ein does not read are a dim of unknown size.
    std::string expr;
    bool readable = true;
    for (size_t i = 0; i < elem.size(); ++i) {
      if (elem[i] == '/') {
        if (i + 1 < elem.size() && elem[i + 1] == '/') {
          expr += '/';
          ++i;
          continue;
        }
        readable = false;
      }
      expr += elem[i];
    }
    if (readable && parseSizeExpr(expr))
      dims.push_back(expr.find_first_of("+-*/") == std::string::npos
                         ? expr
                         : "(" + expr + ")");
    else
      dims.push_back("_");
  }
  std::ostringstream out;
  for (size_t i = 0; i < dims.size(); ++i)
    out << (i ? " " : "") << dims[i];
  return out.str();
}

AnnotationRead readAnnotation(Node annotation, const ModuleNames &names,
                              unsigned *anonCounter) {
  AnnotationRead read;
  if (!isa(annotation, "Subscript") ||
      !isJaxtypingDType(names.qualified(child(annotation, "value"))))
    return read;
  read.kind = AnnotationRead::Kind::Unreadable;
  Node slice = child(annotation, "slice");
  std::vector<Node> elts = children(slice, "elts");
  if (!isa(slice, "Tuple") || elts.size() != 2) {
    read.reason = "a jaxtyping annotation without [ARRAY, \"SHAPE\"]";
    return read;
  }
  auto spec = stringConstant(elts[1]);
  if (!spec) {
    read.reason = "its shape is not a string literal";
    return read;
  }
  ArrayAnnotation &array = read.array;
  array.spec = *spec;
  array.literal = elts[1];
  std::string text = einShapeOfSpec(*spec, &array.declared);
  auto shape = parseShape(text, anonCounter);
  if (!shape) {
    read.reason = "ein does not read the shape \"" + *spec + "\" (" +
                  shape.error().message + ")";
    return read;
  }
  array.shape = *shape;
  read.kind = AnnotationRead::Kind::Array;
  return read;
}

} // namespace ein::pycheck
