// einops' functions over the C++ API (include/ein/API/Ops.h), bound as the
// package's own ein.rearrange & co. (python/ein/__init__.py re-exports them):
// einops' signatures, inputs as views, results as arrays of the first
// input's framework, errors as ein.EinopsError in einops' words around
// ein's diagnostic. No Python frame sits between the caller and these: the
// per-call cost is bench/python_overhead.py's. The GIL is released while
// ein compiles or runs.
#include "Ops.h"
#include "Tensors.h"

#include <nanobind/stl/string.h>

#include <cctype>
#include <optional>

namespace ein::python {

namespace {

/// ein.EinopsError (python/ein/_errors.py), registered at import.
PyObject *einopsErrorType = nullptr;

std::string_view utf8(nb::handle s, const char *what) {
  Py_ssize_t size = 0;
  const char *data = PyUnicode_Check(s.ptr())
                         ? PyUnicode_AsUTF8AndSize(s.ptr(), &size)
                         : nullptr;
  if (!data) {
    PyErr_Clear();
    raiseError(std::string(what) + " must be a str, not " +
               text(nb::handle(reinterpret_cast<PyObject *>(Py_TYPE(s.ptr())))
                        .attr("__name__")));
  }
  return {data, size_t(size)};
}

/// einops' keyword axis lengths as ein's sizes.
api::Sizes toSizes(const nb::kwargs &lengths) {
  api::Sizes sizes;
  sizes.reserve(lengths.size());
  for (auto [key, value] : lengths) {
    int64_t n;
    if (!nb::try_cast(value, n))
      raiseError("axis length " + text(key) + "=" +
                 nb::cast<std::string>(nb::repr(value)) + " is not an integer");
    sizes.emplace_back(text(key), n);
  }
  return sizes;
}

/// einops' reduction names as ein's reductions.
api::Reduction toReduction(nb::handle how) {
  struct Named {
    const char *name;
    api::Reduction reduction;
  };
  static constexpr Named names[] = {{"sum", api::sum},   {"mean", api::mean},
                                    {"max", api::max},   {"min", api::min},
                                    {"prod", api::prod}, {"any", api::any},
                                    {"all", api::all}};
  if (PyUnicode_Check(how.ptr())) {
    std::string_view name = utf8(how, "reduction");
    for (const Named &n : names)
      if (name == n.name)
        return n.reduction;
    raiseError("unknown reduction '" + std::string(name) +
               "' (ein's: sum, mean, max, min, prod, any, all)");
  }
  raiseError("reduction " + nb::cast<std::string>(nb::repr(how)) +
             " is not a name: ein takes 'sum', 'mean', 'max', 'min', "
             "'prod', 'any' or 'all', not a callable");
}

/// The value of `result`, or ein's diagnostic raised as ein._ein.Error.
template <class T> T take(api::Result<T> &&result) {
  if (!result)
    raiseError(result.error().message);
  return std::move(*result);
}

/// einops' list of tensors: stacked along a new first axis by the list's
/// own framework (numpy.stack, torch.stack: a copy, as einops makes one).
nb::object stacked(nb::handle list) {
  if (PyList_GET_SIZE(list.ptr()) == 0)
    throw nb::type_error("Rearrange/Reduce/Repeat can't be applied to an "
                         "empty list");
  nb::handle first = PyList_GET_ITEM(list.ptr(), 0);
  const char *module =
      frameworkOf(first) == Framework::Torch ? "torch" : "numpy";
  return nb::module_::import_(module).attr("stack")(list);
}

/// `x`, or its stack when it is a list.
nb::object tensorArgument(nb::handle x) {
  return PyList_Check(x.ptr()) ? stacked(x) : nb::borrow(x);
}

/// A numpy 0-d result where numpy's reduction would give a scalar: numpy's
/// scalar, as einops on numpy returns (PyArray_Return's rule).
nb::object scalarIfNumPy(nb::object result, bool reducedAxes) {
  if (reducedAxes)
    return numpyScalar(std::move(result));
  return result;
}

/// " (2, 3)" as einops prints input shapes: the tuple of x.shape, or the
/// type's name for something without one.
std::string shapeText(nb::handle x) {
  if (nb::hasattr(x, "shape"))
    return text(nb::tuple(x.attr("shape")));
  return text(nb::handle(reinterpret_cast<PyObject *>(Py_TYPE(x.ptr())))
                  .attr("__name__"));
}

/// Raises ein.EinopsError for the ein._ein.Error being handled: einops'
/// first line `head`, the input shapes (and keyword lengths), then ein's
/// message with its caret. Any other error passes as it is.
[[noreturn]] void reraise(nb::python_error &error, const std::string &head,
                          const std::vector<nb::handle> &inputs,
                          const nb::kwargs *lengths) {
  if (!error.matches(errorType()) || !einopsErrorType)
    throw;
  std::string shapes;
  for (nb::handle x : inputs)
    shapes += (shapes.empty() ? "" : ", ") + shapeText(x);
  std::string message = " " + head + "\n Input tensor shape" +
                        (inputs.size() > 1 ? "s" : "") + ": " + shapes + ".";
  if (lengths)
    message +=
        " Additional info: " + nb::cast<std::string>(nb::repr(*lengths)) + ".";
  message += "\n " + text(error.value());
  PyErr_SetString(einopsErrorType, message.c_str());
  throw nb::python_error();
}

std::string quoted(std::string_view pattern) {
  return "\"" + std::string(pattern) + "\"";
}

/// Whether a reduce pattern's input side names an axis or `...` (a
/// reduction over `() ->` or `1 ->` reduces nothing: numpy gives an array).
bool namesAnAxis(std::string_view pattern) {
  std::string_view left = pattern.substr(0, pattern.find("->"));
  for (char c : left)
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '.' ||
        static_cast<unsigned char>(c) >= 0x80)
      return true;
  return false;
}

/// An op of one input and keyword lengths (rearrange, reduce, repeat):
/// `run` gives ein's result for the input's view (with the GIL released);
/// errors in einops' frame, `name`-reduction as einops names them. With
/// `numpyScalars`, a numpy result that reduced axes to none is numpy's
/// scalar, as numpy's reductions (and so einops on numpy) give. `prepare`
/// reads the op's other arguments, under the GIL, its errors framed too.
template <class Run, class Prepare>
nb::object oneInput(const std::string &name, nb::handle tensor,
                    nb::handle patternObject, const nb::kwargs &lengths,
                    bool numpyScalars, Run run, Prepare prepare) {
  nb::object x = tensorArgument(tensor);
  std::string_view pattern;
  try {
    pattern = utf8(patternObject, "pattern");
    prepare();
    Inputs in = viewInputs({x});
    api::Sizes sizes = toSizes(lengths);
    api::Result<api::Tensor> r = [&] {
      nb::gil_scoped_release unlocked;
      return run(in.tensors[0], pattern, sizes);
    }();
    api::Tensor result = take(std::move(r));
    bool scalar = numpyScalars && in.framework == Framework::NumPy &&
                  result.rank() == 0 && in.tensors[0].rank() > 0 &&
                  namesAnAxis(pattern);
    return scalarIfNumPy(toPython(result, in), scalar);
  } catch (nb::python_error &e) {
    reraise(e,
            "Error while processing " + name + "-reduction pattern " +
                quoted(pattern) + ".",
            {x}, &lengths);
  }
}

nb::object rearrange(nb::handle tensor, nb::handle pattern,
                     const nb::kwargs &lengths) {
  return oneInput(
      "rearrange", tensor, pattern, lengths, false,
      [](const api::Tensor &x, std::string_view p, const api::Sizes &sizes) {
        return api::nothrow::rearrange(x, p, sizes);
      },
      [] {});
}

nb::object repeat(nb::handle tensor, nb::handle pattern,
                  const nb::kwargs &lengths) {
  return oneInput(
      "repeat", tensor, pattern, lengths, false,
      [](const api::Tensor &x, std::string_view p, const api::Sizes &sizes) {
        return api::nothrow::repeat(x, p, sizes);
      },
      [] {});
}

nb::object reduce(nb::handle tensor, nb::handle pattern, nb::handle how,
                  const nb::kwargs &lengths) {
  // einops forwards these two to its rearrange and repeat.
  if (PyUnicode_Check(how.ptr())) {
    std::string_view name = utf8(how, "reduction");
    if (name == "rearrange")
      return rearrange(tensor, pattern, lengths);
    if (name == "repeat")
      return repeat(tensor, pattern, lengths);
  }
  // The reduction is read under the GIL, before `run` releases it.
  std::optional<api::Reduction> reduction;
  return oneInput(
      text(how), tensor, pattern, lengths, true,
      [&](const api::Tensor &x, std::string_view p, const api::Sizes &sizes) {
        return api::nothrow::reduce(x, p, *reduction, sizes);
      },
      [&] { reduction = toReduction(how); });
}

nb::object einsum(const nb::args &args) {
  size_t n = args.size();
  if (n <= 1)
    throw nb::value_error("`einops.einsum` takes at minimum two arguments: "
                          "the tensors (at least one), followed by the "
                          "pattern.");
  nb::handle last = args[n - 1];
  if (!PyUnicode_Check(last.ptr()))
    throw nb::value_error("The last argument passed to `einops.einsum` must "
                          "be a string, representing the einsum pattern.");
  std::string_view pattern = utf8(last, "pattern");
  std::vector<nb::handle> operands(n - 1);
  for (size_t i = 0; i + 1 < n; ++i)
    operands[i] = args[i];
  try {
    Inputs in = viewInputs(operands);
    api::Result<api::Tensor> r = [&] {
      nb::gil_scoped_release unlocked;
      return api::nothrow::einsum(pattern, in.tensors);
    }();
    api::Tensor result = take(std::move(r));
    bool scalar = in.framework == Framework::NumPy && result.rank() == 0 &&
                  in.tensors[0].rank() > 0;
    return scalarIfNumPy(toPython(result, in), scalar);
  } catch (nb::python_error &e) {
    reraise(e, "Error while processing einsum pattern " + quoted(pattern) + ".",
            operands, nullptr);
  }
}

nb::object pack(nb::handle tensors, nb::handle patternObject) {
  std::vector<nb::handle> parts;
  for (nb::handle h : tensors)
    parts.push_back(h);
  std::string_view pattern;
  try {
    pattern = utf8(patternObject, "pattern");
    Inputs in = viewInputs(parts);
    api::Result<api::Packed> r = [&] {
      nb::gil_scoped_release unlocked;
      return api::nothrow::pack(in.tensors, pattern);
    }();
    api::Packed packed = take(std::move(r));
    nb::list shapes;
    for (const std::vector<int64_t> &shape : packed.shapes) {
      nb::list dims;
      for (int64_t d : shape)
        dims.append(d);
      shapes.append(nb::tuple(dims));
    }
    return nb::make_tuple(toPython(packed.tensor, in), shapes);
  } catch (nb::python_error &e) {
    reraise(e, "Error during pack(..., " + quoted(pattern) + ").", parts,
            nullptr);
  }
}

nb::object unpack(nb::handle tensor, nb::handle packedShapes,
                  nb::handle patternObject) {
  std::string_view pattern;
  try {
    pattern = utf8(patternObject, "pattern");
    Inputs in = viewInputs({tensor});
    api::PackedShapes parts;
    for (nb::handle shape : packedShapes) {
      std::vector<int64_t> dims;
      for (nb::handle d : shape) {
        int64_t size;
        if (!nb::try_cast(d, size))
          raiseError("packed shape " + nb::cast<std::string>(nb::repr(shape)) +
                     " holds " + nb::cast<std::string>(nb::repr(d)) +
                     ", not an integer");
        dims.push_back(size);
      }
      parts.push_back(std::move(dims));
    }
    api::Result<std::vector<api::Tensor>> r = [&] {
      nb::gil_scoped_release unlocked;
      return api::nothrow::unpack(in.tensors[0], parts, pattern);
    }();
    nb::list out;
    for (const api::Tensor &t : take(std::move(r)))
      out.append(toPython(t, in));
    return out;
  } catch (nb::python_error &e) {
    reraise(e,
            "Error during unpack(..., " + quoted(pattern) + ") into " +
                text(packedShapes) + ".",
            {tensor}, nullptr);
  }
}

} // namespace

void bindOps(nb::module_ &m) {
  m.def("_set_einops_error",
        [](nb::handle type) { einopsErrorType = type.inc_ref().ptr(); });
  m.def("rearrange", &rearrange, nb::arg("tensor"), nb::arg("pattern"),
        nb::arg("axes_lengths"),
        "einops.rearrange: a view of `tensor` when strides can express the "
        "result (splits, permutations, merges of adjacent axes), else a "
        "copy by a compiled kernel.");
  m.def("reduce", &reduce, nb::arg("tensor"), nb::arg("pattern"),
        nb::arg("reduction"), nb::arg("axes_lengths"),
        "einops.reduce with reduction 'sum', 'mean', 'max', 'min', 'prod', "
        "'any' or 'all' ('rearrange' and 'repeat' forwarded as einops "
        "does; a callable is refused by name).");
  m.def("repeat", &repeat, nb::arg("tensor"), nb::arg("pattern"),
        nb::arg("axes_lengths"), "einops.repeat: always a new tensor.");
  m.def("einsum", &einsum, nb::arg("tensors_and_pattern"),
        "einops.einsum(x, y, ..., pattern): the pattern last, as einops "
        "orders it.");
  m.def("pack", &pack, nb::arg("tensors"), nb::arg("pattern"),
        "einops.pack: (packed, packed_shapes), the inputs joined along `*`.");
  m.def("unpack", &unpack, nb::arg("tensor"), nb::arg("packed_shapes"),
        nb::arg("pattern"),
        "einops.unpack: views of `tensor`, one per packed shape.");
}

} // namespace ein::python
