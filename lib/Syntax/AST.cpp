// Printing of the AST for `einc emit --stage=ast`.
#include "ein/Syntax/AST.h"

namespace ein {

std::string exprToString(const Expr &e) {
  switch (e.kind) {
  case Expr::Kind::Name:
  case Expr::Kind::Int:
  case Expr::Kind::Float:
    return e.text;
  case Expr::Kind::String:
    return "\"" + e.text + "\"";
  case Expr::Kind::Neg:
    return "(-" + exprToString(*e.args[0]) + ")";
  case Expr::Kind::Not:
    return "(~" + exprToString(*e.args[0]) + ")";
  case Expr::Kind::Binary:
    return "(" + exprToString(*e.args[0]) + " " + e.text + " " +
           exprToString(*e.args[1]) + ")";
  case Expr::Kind::List: {
    std::string out = "[";
    for (size_t i = 0; i < e.args.size(); ++i)
      out += (i ? ", " : "") + exprToString(*e.args[i]);
    return out + "]";
  }
  case Expr::Kind::Index: {
    std::string out = exprToString(*e.args[0]) + "[";
    for (size_t i = 1; i < e.args.size(); ++i)
      out += (i > 1 ? ", " : "") + exprToString(*e.args[i]);
    return out + "]";
  }
  case Expr::Kind::Call: {
    std::string out = e.text + "(";
    bool first = true;
    for (auto &a : e.args) {
      out += (first ? "" : ", ") + exprToString(*a);
      first = false;
    }
    for (auto &k : e.keywords) {
      out += (first ? "" : ", ") + k.name + "=" + exprToString(*k.value);
      first = false;
    }
    return out + ")";
  }
  }
  return "?";
}

static std::string typeToString(const TypeAnnotation &t) {
  return t.dtype + "[\"" + t.shape + "\"]";
}

static void printStatements(const std::vector<Stmt> &body,
                            const std::string &indent, std::ostream &os) {
  for (auto &s : body) {
    os << indent;
    switch (s.kind) {
    case Stmt::Kind::Return:
      os << "return ";
      for (size_t i = 0; i < s.values.size(); ++i)
        os << (i ? ", " : "") << exprToString(*s.values[i]);
      break;
    case Stmt::Kind::Assign:
      for (size_t i = 0; i < s.targets.size(); ++i)
        os << (i ? ", " : "") << s.targets[i].first;
      os << " = " << exprToString(*s.values[0]);
      break;
    case Stmt::Kind::For:
      os << "for " << s.targets[0].first << " in "
         << exprToString(*s.values[0]);
      break;
    }
    os << "  @" << s.loc.line << ":" << s.loc.col << "\n";
    if (s.kind == Stmt::Kind::For)
      printStatements(s.body, indent + "  ", os);
  }
}

std::vector<std::string> Module::functionNames() const {
  std::vector<std::string> names;
  for (const Function &f : functions)
    names.push_back(f.name);
  return names;
}

void printAST(const Module &m, std::ostream &os) {
  os << "module\n";
  for (auto &d : m.dims)
    os << "  dim " << d.name << " = " << exprToString(*d.value) << "  @"
       << d.loc.line << ":" << d.loc.col << "\n";
  for (auto &mesh : m.meshes) {
    os << "  mesh";
    for (size_t i = 0; i < mesh.axes.size(); ++i)
      os << (i ? ", " : " ") << mesh.axes[i].first;
    os << "  @" << mesh.loc.line << ":" << mesh.loc.col << "\n";
  }
  for (auto &r : m.shardRules)
    os << "  shard " << r.dim << " -> " << r.axis << "  @" << r.dimLoc.line
       << ":" << r.dimLoc.col << "\n";
  for (auto &f : m.functions) {
    os << "  def " << f.name << "  @" << f.loc.line << ":" << f.loc.col << "\n";
    for (auto &p : f.params)
      os << "    param " << p.name << ": " << typeToString(p.type) << "\n";
    for (auto &r : f.results)
      os << "    result " << typeToString(r) << "\n";
    printStatements(f.body, "    ", os);
  }
}

} // namespace ein
