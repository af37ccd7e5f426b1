// checkPython: the file's tree read through Python, every function checked,
// and the report of what was checked and skipped, as text or JSON.
#include "ein/PyCheck/PyCheck.h"

#include "Interpreter.h"

#include <fmt/format.h>

namespace ein::pycheck {

ErrorOr<PyCheckReport> checkPython(DiagnosticEngine &diags,
                                   const PyCheckOptions &options) {
  const SourceFile &file = diags.source();
  PyCheckReport report;
  report.path = file.path;
  auto tree = readPythonAst(file, options.python);
  if (!tree) {
    const Error &e = tree.error();
    if (e.kind != ErrorKind::Program || e.file != file.path)
      return e;
    // A syntax error: Python's own message at its line:col.
    report.parsed = false;
    if (e.line)
      diags.error({e.line, e.col}, "invalid Python: " + e.message);
    else
      diags.error({1, 1}, "invalid Python: " + e.message);
    return report;
  }
  Node module = tree->getAsObject()->getObject("module");
  ModuleNames names(module);
  FileContext cx{file, diags, names, report, {}};
  checkModule(cx, module);
  return report;
}

static const char *statusName(FunctionSummary::Status s) {
  switch (s) {
  case FunctionSummary::Status::Full:
    return "full";
  case FunctionSummary::Status::Partial:
    return "partial";
  case FunctionSummary::Status::Skipped:
    return "skipped";
  }
  return "";
}

static unsigned countStatus(const PyCheckReport &r, FunctionSummary::Status s) {
  return static_cast<unsigned>(
      std::count_if(r.functions.begin(), r.functions.end(),
                    [&](const FunctionSummary &f) { return f.status == s; }));
}

std::string reportText(const PyCheckReport &r, bool verbose) {
  std::string out;
  for (auto &[function, check] : r.entryChecks)
    out += fmt::format("{}: {}: entry check: {}\n", r.path, function, check);
  out += fmt::format(
      "{}: {} annotated functions: {} fully checked, {} partly, {} skipped; "
      "{} einops calls, {} torch/numpy ops, {} calls of annotated functions "
      "and {} returns checked; {} not checked{}\n",
      r.path, r.functions.size(), countStatus(r, FunctionSummary::Status::Full),
      countStatus(r, FunctionSummary::Status::Partial),
      countStatus(r, FunctionSummary::Status::Skipped), r.einopsChecked,
      r.torchChecked, r.callsChecked, r.returnsChecked, r.skipped.size(),
      verbose || r.skipped.empty() ? "" : " (--verbose lists them)");
  if (!verbose)
    return out;
  for (auto &f : r.functions)
    out += fmt::format("{}:{}: function {}: {}{}\n", r.path, f.loc.line, f.name,
                       statusName(f.status),
                       f.reason.empty() ? "" : " (" + f.reason + ")");
  for (auto &s : r.skipped)
    out += fmt::format("{}:{}:{}: not checked: {}: {}\n", r.path, s.loc.line,
                       s.loc.col, s.what, s.reason);
  return out;
}

std::string reportJSON(const PyCheckReport &r) {
  llvm::json::Array functions, skipped;
  for (auto &f : r.functions)
    functions.push_back(llvm::json::Object{{"name", f.name},
                                           {"line", f.loc.line},
                                           {"status", statusName(f.status)},
                                           {"reason", f.reason}});
  for (auto &s : r.skipped)
    skipped.push_back(llvm::json::Object{{"line", s.loc.line},
                                         {"col", s.loc.col},
                                         {"what", s.what},
                                         {"reason", s.reason}});
  llvm::json::Array checks;
  for (auto &[function, check] : r.entryChecks)
    checks.push_back(
        llvm::json::Object{{"function", function}, {"check", check}});
  llvm::json::Object root{{"file", r.path},
                          {"functions", std::move(functions)},
                          {"einops_checked", r.einopsChecked},
                          {"torch_checked", r.torchChecked},
                          {"returns_checked", r.returnsChecked},
                          {"calls_checked", r.callsChecked},
                          {"skipped", std::move(skipped)},
                          {"entry_checks", std::move(checks)}};
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  return os.str();
}

} // namespace ein::pycheck
