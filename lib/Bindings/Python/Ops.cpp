// einops' functions over the C++ API (include/ein/API/Ops.h): arguments
// from Python, inputs as views, results back as arrays of the first input's
// framework. The GIL is released while ein compiles or runs.
#include "Ops.h"
#include "Tensors.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>

namespace ein::python {

namespace {

/// einops' keyword axis lengths as ein's sizes.
api::Sizes toSizes(const nb::dict &lengths) {
  api::Sizes sizes;
  sizes.reserve(lengths.size());
  for (auto [key, value] : lengths) {
    int64_t n;
    if (!nb::try_cast(value, n))
      raiseError("axis length " + text(key) + "=" +
                 nb::cast<std::string>(nb::repr(value)) + " is not an integer");
    sizes.emplace_back(nb::cast<std::string>(key), n);
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
  if (nb::isinstance<nb::str>(how)) {
    std::string name = nb::cast<std::string>(how);
    for (const Named &n : names)
      if (name == n.name)
        return n.reduction;
    raiseError("unknown reduction '" + name +
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

std::vector<nb::handle> handles(const nb::sequence &items) {
  std::vector<nb::handle> out;
  out.reserve(nb::len(items));
  for (nb::handle h : items)
    out.push_back(h);
  return out;
}

} // namespace

void bindOps(nb::module_ &m) {
  m.def("rearrange",
        [](nb::handle x, std::string_view pattern, const nb::dict &lengths) {
          Inputs in = viewInputs({x});
          api::Sizes sizes = toSizes(lengths);
          api::Result<api::Tensor> r = [&] {
            nb::gil_scoped_release unlocked;
            return api::nothrow::rearrange(in.tensors[0], pattern, sizes);
          }();
          return toPython(take(std::move(r)), in);
        });
  m.def("reduce", [](nb::handle x, std::string_view pattern, nb::handle how,
                     const nb::dict &lengths) {
    Inputs in = viewInputs({x});
    api::Reduction reduction = toReduction(how);
    api::Sizes sizes = toSizes(lengths);
    api::Result<api::Tensor> r = [&] {
      nb::gil_scoped_release unlocked;
      return api::nothrow::reduce(in.tensors[0], pattern, reduction, sizes);
    }();
    return toPython(take(std::move(r)), in);
  });
  m.def("repeat",
        [](nb::handle x, std::string_view pattern, const nb::dict &lengths) {
          Inputs in = viewInputs({x});
          api::Sizes sizes = toSizes(lengths);
          api::Result<api::Tensor> r = [&] {
            nb::gil_scoped_release unlocked;
            return api::nothrow::repeat(in.tensors[0], pattern, sizes);
          }();
          return toPython(take(std::move(r)), in);
        });
  m.def("einsum", [](const nb::sequence &operands, std::string_view pattern) {
    Inputs in = viewInputs(handles(operands));
    api::Result<api::Tensor> r = [&] {
      nb::gil_scoped_release unlocked;
      return api::nothrow::einsum(pattern, in.tensors);
    }();
    return toPython(take(std::move(r)), in);
  });
  m.def("pack", [](const nb::sequence &tensors, std::string_view pattern) {
    Inputs in = viewInputs(handles(tensors));
    api::Result<api::Packed> r = [&] {
      nb::gil_scoped_release unlocked;
      return api::nothrow::pack(in.tensors, pattern);
    }();
    api::Packed packed = take(std::move(r));
    nb::list shapes;
    for (const std::vector<int64_t> &shape : packed.shapes) {
      nb::list dims;
      for (int64_t n : shape)
        dims.append(n);
      shapes.append(nb::tuple(dims));
    }
    return nb::make_tuple(toPython(packed.tensor, in), shapes);
  });
  m.def("unpack", [](nb::handle x, const nb::sequence &shapes,
                     std::string_view pattern) {
    Inputs in = viewInputs({x});
    api::PackedShapes parts;
    for (nb::handle shape : shapes) {
      std::vector<int64_t> dims;
      for (nb::handle n : shape) {
        int64_t size;
        if (!nb::try_cast(n, size))
          raiseError("packed shape " + nb::cast<std::string>(nb::repr(shape)) +
                     " holds " + nb::cast<std::string>(nb::repr(n)) +
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
  });
}

} // namespace ein::python
