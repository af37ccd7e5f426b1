// Compiled .ein modules for Python (ein.load): api::Module's load, call,
// report, training account and signature, the inputs viewed and the results
// returned without copies by Tensors.h. The GIL is released while ein
// checks, compiles or runs.
#include "Modules.h"
#include "Tensors.h"

#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace ein::python {

namespace {

/// ein._ein.CompileError (a program ein refuses: the file's diagnostics)
/// and ein._ein.ShapeError (inputs or sizes that do not fit it; also a
/// ValueError), both ein._ein.Error.
PyObject *compileErrorType = nullptr;
PyObject *shapeErrorType = nullptr;

/// The dtype named as the language names it ("f32", "bf16"), for options.
api::DType dtypeNamed(const std::string &text) {
  for (unsigned i = 0; i <= unsigned(api::DType::I8); ++i)
    if (text == api::name(static_cast<api::DType>(i)))
      return static_cast<api::DType>(i);
  raiseInfo({api::ErrorInfo::Kind::Usage,
             "error: unknown dtype '" + text +
                 "' (ein's: f64 f32 f16 bf16 f8e4m3 f8e5m2 i64 i32 i8 bool)"});
}

nb::dict valueDict(const api::Signature::Value &v) {
  nb::dict d;
  d["name"] = v.name;
  d["dtype"] = api::name(v.dtype);
  d["shape"] = v.shape;
  return d;
}

} // namespace

void raiseInfo(const api::ErrorInfo &error) {
  PyErr_SetString(error.kind == api::ErrorInfo::Kind::Program ? compileErrorType
                                                              : shapeErrorType,
                  error.message.c_str());
  throw nb::python_error();
}

void bindModules(nb::module_ &m) {
  nb::handle error = m.attr("Error");
  compileErrorType = PyErr_NewExceptionWithDoc(
      "ein._ein.CompileError",
      "A .ein program ein refuses; the message is its diagnostics as einc "
      "prints them (file:line:col, the line, a caret).",
      error.ptr(), nullptr);
  nb::object bases = nb::make_tuple(error, nb::handle(PyExc_ValueError));
  shapeErrorType = PyErr_NewExceptionWithDoc(
      "ein._ein.ShapeError",
      "Inputs or sizes that do not fit a function: a wrong argument count, "
      "shape, dtype or size; the message is ein's.",
      bases.ptr(), nullptr);
  m.attr("CompileError") = nb::handle(compileErrorType);
  m.attr("ShapeError") = nb::handle(shapeErrorType);

  m.def(
      "cache_stats",
      [] {
        api::CacheStats stats = api::cache_stats();
        nb::dict d;
        d["compiled"] = stats.compiled;
        d["loaded"] = stats.loaded;
        d["directory"] = stats.directory;
        return d;
      },
      "The kernels and module functions compiled, and those loaded from the "
      "disk cache instead, so far (ein::cache_stats).");

  nb::class_<api::Module>(m, "Module",
                          "A checked .ein module (ein.load wraps it).")
      .def_static(
          "load",
          [](const std::string &path, const api::Sizes &dims) {
            return withoutGIL(
                [&] { return api::nothrow::load_module(path, dims); });
          },
          nb::arg("path"), nb::arg("dims"))
      .def_static(
          "from_source",
          [](const std::string &source, const std::string &path,
             const api::Sizes &dims) {
            return withoutGIL([&] {
              return api::nothrow::module_from_source(source, path, dims);
            });
          },
          nb::arg("source"), nb::arg("path"), nb::arg("dims"))
      .def("functions", &api::Module::functions)
      .def(
          "call",
          [](const api::Module &self, const std::string &function,
             const std::vector<nb::handle> &args) {
            Inputs in = viewInputs(args);
            std::vector<api::Tensor> out = withoutGIL(
                [&] { return api::nothrow::call(self, function, in.tensors); });
            nb::list py;
            for (const api::Tensor &t : out)
              py.append(toPython(t, in));
            return nb::tuple(py);
          },
          nb::arg("function"), nb::arg("args"),
          "The results of `function` on `args`, always a tuple.")
      .def(
          "report",
          [](const api::Module &self, const std::string &function,
             const api::Sizes &sizes) {
            api::CostReport cost = withoutGIL(
                [&] { return api::nothrow::report(self, function, sizes); });
            nb::dict d;
            d["text"] = cost.text;
            d["json"] = cost.json;
            d["flops"] = cost.flops;
            d["bytes"] = cost.bytes;
            return d;
          },
          nb::arg("function"), nb::arg("sizes"))
      .def(
          "train_report",
          [](const api::Module &self, const std::string &function,
             const api::Sizes &sizes, const std::vector<std::string> &params,
             const std::string &optimizer, const std::string &paramDType,
             const std::string &actDType, const std::string &tokens,
             const std::string &device) {
            api::TrainReportOptions options;
            options.params = params;
            options.optimizer = optimizer;
            if (!paramDType.empty())
              options.param_dtype = dtypeNamed(paramDType);
            if (!actDType.empty())
              options.act_dtype = dtypeNamed(actDType);
            options.tokens = tokens;
            options.device = device;
            api::TrainReport t = withoutGIL([&] {
              return api::nothrow::train_report(self, function, sizes, options);
            });
            nb::dict d;
            d["text"] = t.text;
            d["json"] = t.json;
            d["forward_flops"] = t.forward_flops;
            d["backward_flops"] = t.backward_flops;
            d["recompute_flops"] = t.recompute_flops;
            d["optimizer_flops"] = t.optimizer_flops;
            d["total_flops"] = t.total_flops;
            d["parameter_bytes"] = t.parameter_bytes;
            d["gradient_bytes"] = t.gradient_bytes;
            d["optimizer_state_bytes"] = t.optimizer_state_bytes;
            d["activation_bytes"] = t.activation_bytes;
            d["peak_bytes"] = t.peak_bytes;
            d["forward_seconds"] = t.forward_seconds;
            d["backward_seconds"] = t.backward_seconds;
            d["optimizer_seconds"] = t.optimizer_seconds;
            d["peak_flops"] = t.peak_flops;
            return d;
          },
          nb::arg("function"), nb::arg("sizes"), nb::arg("params"),
          nb::arg("optimizer"), nb::arg("param_dtype"), nb::arg("act_dtype"),
          nb::arg("tokens"), nb::arg("device"))
      .def(
          "signature",
          [](const api::Module &self, const std::string &function) {
            api::Signature sig =
                unwrap(api::nothrow::signature(self, function));
            nb::list params, results;
            for (const auto &p : sig.params)
              params.append(valueDict(p));
            for (size_t i = 0; i < sig.results.size(); ++i) {
              nb::dict r = valueDict(sig.results[i]);
              r["gradient_of"] = sig.gradient_of[i];
              r["is_loss"] = bool(sig.is_loss[i]);
              results.append(r);
            }
            nb::dict d;
            d["params"] = params;
            d["results"] = results;
            return d;
          },
          nb::arg("function"));
}

} // namespace ein::python
