// Names of checked operations and module lookup.
#include "ein/Sema/Program.h"

namespace ein {

const char *opKindName(OpKind kind) {
  switch (kind) {
#define EIN_OP(Kind, Name, OpClass)                                            \
  case OpKind::Kind:                                                           \
    return Name;
#include "ein/Sema/Ops.def"
  }
  return "op";
}

const char *opName(OpKind kind, ElementwiseFn fn) {
  if (kind == OpKind::Elementwise)
    return elementwiseInfo(fn).name.data();
  return opKindName(kind);
}

const char *gradPhaseName(GradPhase phase) {
  switch (phase) {
  case GradPhase::Forward:
    return "forward";
  case GradPhase::DataGrad:
    return "data-grad";
  case GradPhase::WeightGrad:
    return "weight-grad";
  case GradPhase::Recompute:
    return "recompute";
  }
  return "forward";
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

bool CheckedOp::checksIds() const {
  return kind == OpKind::Take || kind == OpKind::TakeAlong ||
         checksDropoutRate();
}

bool CheckedOp::checksDropoutRate() const {
  return kind == OpKind::Dropout && operands.size() == 3;
}

bool CheckedFunction::hasIndexStatus() const {
  for (const CheckedOp &op : ops)
    if (op.checksIds())
      return true;
  return false;
}

} // namespace ein
