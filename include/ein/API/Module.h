// The embedded C++ API's modules: a .ein file loaded, checked and compiled
// on first call per signature, as `einc run` does, plus its cost report as
// `einc report` prints it.
#pragma once

#include "ein/API/Tensor.h"

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace ein::api {

namespace detail {
struct ModuleState;
} // namespace detail

/// The cost of one function at given sizes, as `einc report` computes it.
struct CostReport {
  /// The report's table, as `einc report` prints it.
  std::string text;
  /// The same report as JSON (`einc report --json`).
  std::string json;
  /// The function's total FLOPs and bytes moved (doubles: counts may pass
  /// 2^63; exact ones are in `json`).
  double flops = 0, bytes = 0;
};

/// What Module::train_report accounts for: `einc report --train`'s flags.
struct TrainReportOptions {
  /// --params: the parameters of a loss function without grad() (its first
  /// result, a scalar, is the loss); empty for a function with grad().
  std::vector<std::string> params;
  /// --optimizer: sgd, momentum, adagrad, rmsprop, adam or adamw.
  std::string optimizer = "sgd";
  /// --param-dtype, --act-dtype: the float dtype parameters (gradients,
  /// optimizer states) and saved activations are held in; unset: as
  /// declared.
  std::optional<DType> param_dtype, act_dtype;
  /// --tokens: N of the 6·N·P rule, a count or a formula of dims ("b*s");
  /// empty: the report's default.
  std::string tokens;
  /// --device: the roofline's device (a100, h100, h200); empty: h100.
  std::string device;
};

/// The training account of a step, as `einc report --train` computes it.
/// Counts are doubles (they may pass 2^63; exact ones and their formulas
/// are in `json`), NaN where a size is not bound.
struct TrainReport {
  /// The per-op table and the account, as `einc report --train` prints
  /// them (without the target's column).
  std::string text;
  /// The same as `einc report --train --json`: {"report":...,"train":...}.
  std::string json;
  /// FLOPs of one forward, backward (recomputation apart), recomputation,
  /// optimizer update, and the step (their sum).
  double forward_flops = 0, backward_flops = 0, recompute_flops = 0,
         optimizer_flops = 0, total_flops = 0;
  /// Bytes of the parameters, gradients, optimizer states and activations
  /// saved for the backward, and the peak of live tensors over the step.
  double parameter_bytes = 0, gradient_bytes = 0, optimizer_state_bytes = 0,
         activation_bytes = 0, peak_bytes = 0;
  /// The ideal (roofline) time of each phase on the device, and the peak
  /// FLOP/s of the parameters' dtype there.
  double forward_seconds = 0, backward_seconds = 0, optimizer_seconds = 0,
         peak_flops = 0;
  /// The model FLOPs utilisation of a step that took `seconds`:
  /// total_flops / seconds / peak_flops.
  double mfu(double seconds) const {
    return total_flops / seconds / peak_flops;
  }
  /// The MFU at the ideal step time, the bound a measured step can reach.
  double mfu_bound() const {
    return mfu(forward_seconds + backward_seconds + optimizer_seconds);
  }
};

/// A function's parameters and results as checked (dims as written).
struct Signature {
  struct Value {
    std::string name;
    DType dtype = f32;
    /// The shape as written, "b s d" ("" for a scalar).
    std::string shape;
  };
  std::vector<Value> params, results;
  /// Per result: the index of the parameter it is the gradient of (a
  /// result of grad() returned as it is), or -1.
  std::vector<int> gradient_of;
  /// Per result: whether it is a loss grad() differentiated.
  std::vector<bool> is_loss;
};

/// A .ein module: its functions, checked as `einc check` checks them.
/// Copies share one module; calls from several threads are safe.
class Module {
public:
  /// Loads and checks `path` with `dims` bound as `einc --dim NAME=VALUE`.
  static Module load(const std::string &path, const Sizes &dims = {});
  /// Checks `source` as if read from `path` (named in diagnostics).
  static Module from_source(const std::string &source,
                            const std::string &path = "<source>",
                            const Sizes &dims = {});
  /// The module's function names, in source order.
  std::vector<std::string> functions() const;
  /// Calls `function` on `inputs` (one per parameter, any strides): binds
  /// its sizes from their shapes, evaluates its entry checks, compiles it
  /// size-generic on first use and runs it. Returns one tensor per result.
  std::vector<Tensor> call(const std::string &function,
                           const std::vector<Tensor> &inputs) const;
  /// call() with the inputs as arguments: `mod.call("f", q, k)`.
  template <class... Ts, class = std::enable_if_t<
                             (std::is_convertible_v<Ts, Tensor> && ...)>>
  std::vector<Tensor> call(const std::string &function,
                           const Ts &...inputs) const {
    return call(function, std::vector<Tensor>{Tensor(inputs)...});
  }
  /// call() for a function with N results, for structured bindings:
  /// `auto [scores] = mod.call<1>("scores", q, k);`.
  template <size_t N, class... Ts>
  std::array<Tensor, N> call(const std::string &function,
                             const Ts &...inputs) const {
    std::vector<Tensor> results =
        call(function, std::vector<Tensor>{Tensor(inputs)...});
    if (results.size() != N)
      raise(resultCountError(function, results.size(), N));
    std::array<Tensor, N> out;
    for (size_t i = 0; i < N; ++i)
      out[i] = std::move(results[i]);
    return out;
  }
  /// The cost report of `function` with `sizes` bound (as `einc report
  /// --dim ...`): FLOPs, bytes and roofline times on its default device.
  CostReport report(const std::string &function, const Sizes &sizes = {}) const;
  /// The training account of `function` (a step with grad(), or a loss
  /// function with `options.params`) with `sizes` bound, as `einc report
  /// --train --dim ...` computes it.
  TrainReport train_report(const std::string &function, const Sizes &sizes = {},
                           const TrainReportOptions &options = {}) const;
  /// The parameters and results of `function`.
  Signature signature(const std::string &function) const;

  /// For the library.
  explicit Module(std::shared_ptr<detail::ModuleState> state)
      : state_(std::move(state)) {}
  const std::shared_ptr<detail::ModuleState> &state() const { return state_; }

private:
  static ErrorInfo resultCountError(const std::string &function, size_t got,
                                    size_t expected);
  std::shared_ptr<detail::ModuleState> state_;
};

namespace nothrow {
/// Module::load, or the error (the file's diagnostics, as einc prints them).
Result<Module> load_module(const std::string &path, const Sizes &dims = {});
/// Module::from_source, or the error.
Result<Module> module_from_source(const std::string &source,
                                  const std::string &path = "<source>",
                                  const Sizes &dims = {});
/// Module::call, or the error.
Result<std::vector<Tensor>> call(const Module &module,
                                 const std::string &function,
                                 const std::vector<Tensor> &inputs);
/// Module::report, or the error.
Result<CostReport> report(const Module &module, const std::string &function,
                          const Sizes &sizes = {});
/// Module::train_report, or the error.
Result<TrainReport> train_report(const Module &module,
                                 const std::string &function,
                                 const Sizes &sizes = {},
                                 const TrainReportOptions &options = {});
/// Module::signature, or the error (no such function).
Result<Signature> signature(const Module &module, const std::string &function);
} // namespace nothrow

inline Module Module::load(const std::string &path, const Sizes &dims) {
  return nothrow::load_module(path, dims).value();
}
inline Module Module::from_source(const std::string &source,
                                  const std::string &path, const Sizes &dims) {
  return nothrow::module_from_source(source, path, dims).value();
}
inline std::vector<Tensor>
Module::call(const std::string &function,
             const std::vector<Tensor> &inputs) const {
  return nothrow::call(*this, function, inputs).value();
}
inline CostReport Module::report(const std::string &function,
                                 const Sizes &sizes) const {
  return nothrow::report(*this, function, sizes).value();
}
inline TrainReport
Module::train_report(const std::string &function, const Sizes &sizes,
                     const TrainReportOptions &options) const {
  return nothrow::train_report(*this, function, sizes, options).value();
}
inline Signature Module::signature(const std::string &function) const {
  return nothrow::signature(*this, function).value();
}

} // namespace ein::api
