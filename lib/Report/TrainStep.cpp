// The training step `einc report --train` accounts for (and the C++ API's
// Module::train_report): a function with grad(), or a loss function
// differentiated with respect to named parameters (`--params`).
#include "ein/Report/Report.h"
#include "ein/Sema/Autodiff.h"
#include "ein/Sema/Layout.h"

#include <fmt/format.h>

#include <algorithm>

namespace ein {

ErrorOr<CheckedModule> trainingStep(const CheckedModule &checked,
                                    const std::string &function,
                                    const std::vector<std::string> &params) {
  auto programError = [&](std::string message) {
    return Error::inFile(ErrorKind::Program, checked.path, std::move(message));
  };
  if (function.empty() && checked.functions.size() != 1)
    return Error::usage("--train needs --fn NAME (the training step or the "
                        "loss to differentiate)");
  const CheckedFunction *found =
      function.empty() ? &checked.functions.front() : checked.find(function);
  if (!found)
    return Error::usage(fmt::format("no function '{}'", function));
  CheckedModule module = checked;
  module.functions = {*found};
  CheckedFunction &fn = module.functions.front();
  if (!params.empty()) {
    if (!fn.gradWrt.empty())
      return Error::usage(fmt::format("'{}' differentiates with grad(); "
                                      "--params is for a loss function "
                                      "without one",
                                      fn.name));
    if (fn.returns.empty() || !isFloat(fn.values[fn.returns[0]].type.dtype) ||
        !fn.ctx.expand(fn.values[fn.returns[0]].type.shape).empty())
      return programError(fmt::format(
          "--train --params needs '{}' to return a scalar float loss first",
          fn.name));
    std::vector<unsigned> wrt;
    for (const std::string &name : params) {
      auto it =
          std::find_if(fn.params.begin(), fn.params.end(),
                       [&](unsigned v) { return fn.values[v].name == name; });
      if (it == fn.params.end())
        return Error::usage(fmt::format("--params: '{}' is not a parameter "
                                        "of '{}'",
                                        name, fn.name));
      if (!isFloat(fn.values[*it].type.dtype))
        return Error::usage(
            fmt::format("--params: '{}' is not a float tensor", name));
      wrt.push_back(*it);
    }
    GradientResult grads = appendGradient(fn, fn.returns[0], wrt, fn.loc);
    if (grads.error) {
      SourceLoc at = grads.error->loc;
      return programError(fmt::format("{}:{}:{}: cannot differentiate: {}",
                                      module.pathOf(at), at.line, at.col,
                                      grads.error->message));
    }
    fn.gradWrt = wrt;
    fn.gradLosses = {fn.returns[0]};
    // The gradients are results of the step, as grad() would return them,
    // each in its parameter's layout (a sharded module's).
    for (size_t i = 0; i < wrt.size(); ++i) {
      fn.returns.push_back(grads.grads[i]);
      TensorType type = fn.values[grads.grads[i]].type;
      const Shape &param = fn.values[wrt[i]].type.shape;
      if (type.shape.size() == param.size())
        for (size_t d = 0; d < param.size(); ++d)
          type.shape[d].meshAxis = param[d].meshAxis;
      fn.results.push_back(std::move(type));
    }
    // The backward's layouts and collectives (the forward's again, then
    // the gradient's ops).
    if (!module.meshAxes.empty())
      if (auto e = inferLayouts(fn, module.meshAxes))
        return programError(fmt::format("{}:{}:{}: {}", module.pathOf(e->loc),
                                        e->loc.line, e->loc.col, e->message));
  }
  if (fn.gradWrt.empty())
    return Error::usage(fmt::format("--train: '{}' has no grad(); name the "
                                    "parameters to train with --params w1,w2 "
                                    "(its first result is the loss)",
                                    fn.name));
  return module;
}

ErrorOr<std::string> trainReportOutput(const CheckedModule &step,
                                       const ReportOptions &options,
                                       const TrainOptions &train, bool json) {
  const CheckedFunction &fn = step.functions.front();
  auto account =
      (json ? trainReportJSON : trainReportTable)(step, fn, options, train);
  if (!account)
    return account.error();
  if (!json)
    return reportTable(step, options) + *account;
  std::string report = reportJSON(step, options);
  return fmt::format("{{\"report\":{},\"train\":{}}}\n",
                     report.substr(0, report.find_last_not_of("\n") + 1),
                     *account);
}

} // namespace ein
