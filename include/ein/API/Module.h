// The embedded C++ API's modules: a .ein file loaded, checked and compiled
// on first call per signature, as `einc run` does, plus its cost report as
// `einc report` prints it.
#pragma once

#include "ein/API/Tensor.h"

#include <array>
#include <memory>
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

} // namespace ein::api
