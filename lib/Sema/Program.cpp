// Names of checked operations and module lookup.
#include "ein/Sema/Program.h"

namespace ein {

const char *opKindName(OpKind kind) {
  switch (kind) {
  case OpKind::Rearrange: return "rearrange";
  case OpKind::Reduce: return "reduce";
  case OpKind::Repeat: return "repeat";
  case OpKind::Einsum: return "einsum";
  case OpKind::Pack: return "pack";
  case OpKind::Unpack: return "unpack";
  case OpKind::Add: return "add";
  case OpKind::Sub: return "sub";
  case OpKind::Mul: return "mul";
  case OpKind::Div: return "div";
  case OpKind::Pow: return "pow";
  case OpKind::Exp: return "exp";
  case OpKind::Log: return "log";
  case OpKind::Sqrt: return "sqrt";
  case OpKind::Rsqrt: return "rsqrt";
  case OpKind::Relu: return "relu";
  case OpKind::Tanh: return "tanh";
  case OpKind::Neg: return "neg";
  case OpKind::Cast: return "astype";
  case OpKind::Constant: return "constant";
  }
  return "op";
}

bool isBinary(OpKind kind) {
  return kind == OpKind::Add || kind == OpKind::Sub || kind == OpKind::Mul ||
         kind == OpKind::Div || kind == OpKind::Pow;
}

bool isUnary(OpKind kind) {
  return kind == OpKind::Exp || kind == OpKind::Log || kind == OpKind::Sqrt ||
         kind == OpKind::Rsqrt || kind == OpKind::Relu ||
         kind == OpKind::Tanh || kind == OpKind::Neg;
}

const CheckedFunction *CheckedModule::find(const std::string &name) const {
  for (auto &f : functions)
    if (f.name == name)
      return &f;
  return nullptr;
}

const std::string &CheckedModule::pathOf(SourceLoc loc) const {
  return loc.file > 0 && loc.file < files.size() ? files[loc.file] : path;
}

std::vector<int> CheckedFunction::callPath(const CheckedOp &op) const {
  std::vector<int> path;
  for (int site = op.callSite; site >= 0; site = callSites[site].parent)
    path.insert(path.begin(), site);
  return path;
}

} // namespace ein
