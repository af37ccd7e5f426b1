// The C++ API's pattern operations: rearrange, reduce, repeat and einsum.
// As einops does, each call's recipe (a Plan) is made once per (operation,
// pattern, dtypes, ranks, size names): the pattern is parsed once, the call
// is checked by building it with the ProgramBuilder (the shape and dtype
// rules), then every input is split into its elementary axes as a strided
// view (a split never copies) and the operation runs on those views, as a
// view when the result's strides can express it, else through a kernel
// built with the ProgramBuilder over elementary axes (size-generic, so
// cached across sizes). No .ein text is written.
#include "Internal.h"

#include "ein/Sema/ProgramBuilder.h"
#include "ein/Sema/Suggestions.h"
#include "ein/Syntax/Pattern.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <tuple>
#include <unordered_map>

namespace ein::api::detail {

TensorType typeOf(const Tensor &t, bool concrete, unsigned &anonymous) {
  TensorType type;
  type.dtype = internal(t.dtype());
  for (int64_t d : t.shape())
    type.shape.push_back(Dim::ofSize(
        concrete ? SizeExpr::constant(d)
                 : SizeExpr::symbol(fmt::format("_anon{}", anonymous++))));
  return type;
}

ErrorInfo callError(const CallText &call, const BuildError &e) {
  size_t col = 0, length = call.text.size();
  const ShapeError &at = e.error;
  switch (at.anchor) {
  case ShapeError::Anchor::Pattern:
    col = call.pattern + at.offset;
    length = at.length;
    break;
  case ShapeError::Anchor::Operand:
    if (at.index < call.operands.size())
      std::tie(col, length) = call.operands[at.index];
    break;
  case ShapeError::Anchor::Kwarg:
    if (at.index < call.keywords.size())
      std::tie(col, length) = call.keywords[at.index];
    break;
  case ShapeError::Anchor::Op:
    break;
  }
  std::string message = fmt::format(
      "{}\n    {}\n    {}^{}", at.message, call.text, std::string(col, ' '),
      std::string(length > 1 ? length - 1 : 0, '~'));
  if (!e.spaced.empty())
    message += "\nnote: " + spacedPatternNote(e.spaced);
  return programError(message);
}

namespace {

enum class Op { Rearrange, Reduce, Repeat, Einsum };

const char *opName(Op op) {
  switch (op) {
  case Op::Rearrange:
    return "rearrange";
  case Op::Reduce:
    return "reduce";
  case Op::Repeat:
    return "repeat";
  case Op::Einsum:
    return "einsum";
  }
  return "";
}

/// The compiler's reduction for the public one: a switch with no default,
/// so a reduction added to either side is named by -Wswitch here.
ReduceKind toReduceKind(Reduction how) {
  switch (how) {
  case Reduction::Sum:
    return ReduceKind::Sum;
  case Reduction::Mean:
    return ReduceKind::Mean;
  case Reduction::Max:
    return ReduceKind::Max;
  case Reduction::Min:
    return ReduceKind::Min;
  case Reduction::Prod:
    return ReduceKind::Prod;
  case Reduction::Any:
    return ReduceKind::Any;
  case Reduction::All:
    return ReduceKind::All;
  case Reduction::Var:
    return ReduceKind::Var;
  }
  return ReduceKind::Sum; // unreachable: every enumerator is listed
}

const char *reductionName(Reduction how) {
  return reduceKindName(toReduceKind(how));
}

/// One call's operation, as the plan cache and the generated sources see it.
struct Request {
  Op op;
  std::string_view pattern;
  const std::vector<Tensor> &inputs;
  const Sizes &sizes;
  Reduction how = Reduction::Sum;
  std::optional<DType> acc;
};

/// An elementary axis: a name of the pattern, a number of it (`(h 2)`), a
/// dim of `...`, or an anonymous `_`.
struct Axis {
  std::string name;
  int64_t fixed = -1; // a number of the pattern
  int sizeIndex = -1; // the keyword size that gives it
};

/// A dim of a side: the elementary axes it is made of (none: a size-1 dim).
using Group = std::vector<int>;
using Side = std::vector<Group>;

struct Plan {
  Op op;
  Reduction how = Reduction::Sum;
  /// The user's pattern, parsed once: for the recipe and the errors of a
  /// later call whose sizes do not fit.
  Pattern pattern;
  std::vector<Axis> axes;
  std::vector<Side> inputs;
  Side output;
  /// Ellipsis axes (right-aligned across einsum operands).
  std::vector<int> ellipsis;
  DType dtype, result;
  /// The elementary axes of each input, in order: the dims of its
  /// elementary view (size-1 dims of the pattern have none).
  std::vector<std::vector<int>> inputAxes;
  /// The elementary axes of the kernel's inputs and output (fixed by the
  /// plan: the same for every call).
  std::vector<std::vector<int>> kernelInputs;
  std::vector<int> kernelOutput;
  /// The kernel: a program built with the ProgramBuilder, the key it is
  /// cached as (everything that decides it), and its code for each device
  /// once compiled: on the first call on that device that needs it (a
  /// rearrange that is a view needs none).
  CheckedModule kernelModule;
  std::string kernelKey;
  mutable std::once_flag compileOnce[2];
  mutable std::optional<Result<std::shared_ptr<Kernel>>> kernel[2];
  const Result<std::shared_ptr<Kernel>> &compiled(Device device) const {
    size_t slot = device == cuda ? 1 : 0;
    std::call_once(compileOnce[slot], [&] {
      kernel[slot] = kernelFor(kernelKey, device, kernelModule);
    });
    return *kernel[slot];
  }
};

struct PlanCache {
  std::shared_mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<const Plan>> plans;
};

/// Never destroyed, as the kernel cache (plans hold kernels).
PlanCache &plans() {
  static PlanCache *instance = new PlanCache;
  return *instance;
}

/// Everything a plan depends on. Built by appending (no formatting): it
/// is made on every call.
std::string planKey(const Request &r) {
  std::string key;
  key.reserve(r.pattern.size() + 16 + 4 * r.inputs.size());
  key += char('0' + int(r.op));
  key += char('0' + int(r.how));
  key += r.acc ? char('a' + int(*r.acc)) : '-';
  key += r.pattern;
  key += '|';
  for (const Tensor &t : r.inputs) {
    key += char('a' + int(t.dtype()));
    key += std::to_string(t.rank());
    key += ',';
  }
  for (auto &[n, v] : r.sizes) {
    key += n;
    key += ',';
  }
  // The CPU compiled for (set_cpu): a plan holds its compiled kernel.
  key += '@';
  key += std::to_string(compileTargetId());
  return key;
}

/// The user's call as errors show it: `rearrange(x, "PATTERN", h=3)`,
/// `einsum(x0, x1, "PATTERN")`.
CallText callText(const Request &r) {
  CallText call;
  call.text = std::string(opName(r.op)) + "(";
  for (size_t i = 0; i < r.inputs.size(); ++i) {
    std::string operand = r.op == Op::Einsum ? fmt::format("x{}", i) : "x";
    call.operands.push_back({call.text.size(), operand.size()});
    call.text += operand + ", ";
  }
  call.text += '"';
  call.pattern = call.text.size();
  call.text += r.pattern;
  call.text += '"';
  if (r.op == Op::Reduce)
    call.text += fmt::format(", \"{}\"", reductionName(r.how));
  for (auto &[n, v] : r.sizes) {
    call.text += ", ";
    call.keywords.push_back({call.text.size(), n.size()});
    call.text += fmt::format("{}={}", n, v);
  }
  if (r.acc)
    call.text += fmt::format(", acc={}", name(*r.acc));
  call.text += ')';
  return call;
}

ErrorInfo callError(const Request &r, const BuildError &e) {
  return callError(callText(r), e);
}

/// Builds the call with the ProgramBuilder, its inputs' dims anonymous
/// (the sizes bind later; a recipe serves every size) or, when `concrete`,
/// their numbers; the error, if the shape or dtype rules refuse it.
std::optional<BuildError> checkCall(const Request &r, const Pattern &pattern,
                                    bool concrete) {
  CheckedFunction fn;
  ProgramBuilder b(fn);
  std::vector<unsigned> xs;
  unsigned anonymous = 0;
  for (const Tensor &t : r.inputs)
    xs.push_back(b.param(typeOf(t, concrete, anonymous)));
  std::vector<SizeArg> sizes;
  for (auto &[n, v] : r.sizes)
    sizes.push_back(SizeArg{n, SizeExpr::constant(v)});
  std::optional<ein::DType> acc;
  if (r.acc)
    acc = internal(*r.acc);
  BuildOr<unsigned> built = [&]() -> BuildOr<unsigned> {
    switch (r.op) {
    case Op::Einsum:
      return b.einsum(xs, pattern, std::move(sizes), acc);
    case Op::Rearrange:
      return b.transform(OpKind::Rearrange, xs[0], pattern, std::move(sizes));
    case Op::Repeat:
      return b.transform(OpKind::Repeat, xs[0], pattern, std::move(sizes));
    case Op::Reduce: {
      ReduceKind how = toReduceKind(r.how);
      unsigned x = xs[0];
      // any/all read their input as truth values (as the checker does).
      if ((how == ReduceKind::Any || how == ReduceKind::All) &&
          b.type(x).dtype != ein::DType::Bool)
        x = b.cast(x, ein::DType::Bool);
      return b.transform(OpKind::Reduce, x, pattern, std::move(sizes), how,
                         acc);
    }
    }
    return BuildError{ShapeError::atOp("unknown operation"), "", ""};
  }();
  if (built)
    return std::nullopt;
  return built.error();
}

PatternUse patternUse(Op op) {
  switch (op) {
  case Op::Rearrange:
    return PatternUse::Rearrange;
  case Op::Reduce:
    return PatternUse::Reduce;
  case Op::Repeat:
    return PatternUse::Repeat;
  case Op::Einsum:
    return PatternUse::Einsum;
  }
  return PatternUse::Rearrange;
}

/// Builds the plan of a request that the ProgramBuilder built.
std::shared_ptr<Plan> buildPlan(const Request &r, const Pattern &pattern) {
  auto plan = std::make_shared<Plan>();
  plan->op = r.op;
  plan->how = r.how;
  plan->pattern = pattern;
  plan->dtype = r.inputs[0].dtype();
  plan->result = r.acc ? *r.acc : plan->dtype;
  const Pattern *parsed = &plan->pattern;
  std::map<std::string, int> byName;
  // An axis named `_` is a name like any other, as in einops' einsum and
  // ein's checker (einsum("_ b -> b _") is a transpose).
  auto named = [&](const std::string &n) {
    if (auto it = byName.find(n); it != byName.end())
      return it->second;
    int id = int(plan->axes.size());
    plan->axes.push_back({n});
    byName[n] = id;
    return id;
  };
  // The ellipsis covers the most dims any input gives it.
  size_t ellipsisRank = 0;
  for (size_t i = 0; i < parsed->inputs.size(); ++i)
    if (parsed->inputs[i].hasEllipsis())
      ellipsisRank = std::max<size_t>(
          ellipsisRank,
          r.inputs[i].rank() - (parsed->inputs[i].groups.size() - 1));
  for (size_t k = 0; k < ellipsisRank; ++k)
    plan->ellipsis.push_back(named(fmt::format("...{}", k)));
  auto side = [&](const PatternSide &s, size_t covered) {
    Side out;
    for (const PatternGroup &g : s.groups) {
      bool bareEllipsis = !g.parenthesized && g.axes.size() == 1 &&
                          g.axes[0].kind == PatternAxis::Kind::Ellipsis;
      if (bareEllipsis) {
        for (size_t k = ellipsisRank - covered; k < ellipsisRank; ++k)
          out.push_back({plan->ellipsis[k]});
        continue;
      }
      Group group;
      for (const PatternAxis &a : g.axes) {
        if (a.kind == PatternAxis::Kind::Ellipsis) {
          group.insert(group.end(), plan->ellipsis.begin(),
                       plan->ellipsis.end());
        } else if (a.kind == PatternAxis::Kind::Number) {
          int id = int(plan->axes.size());
          plan->axes.push_back({a.name, a.value});
          group.push_back(id);
        } else {
          group.push_back(named(a.name));
        }
      }
      out.push_back(std::move(group));
    }
    return out;
  };
  for (size_t i = 0; i < parsed->inputs.size(); ++i) {
    const PatternSide &s = parsed->inputs[i];
    size_t covered =
        s.hasEllipsis() ? r.inputs[i].rank() - (s.groups.size() - 1) : 0;
    plan->inputs.push_back(side(s, covered));
  }
  plan->output = side(parsed->output, ellipsisRank);
  for (size_t k = 0; k < r.sizes.size(); ++k)
    if (auto it = byName.find(r.sizes[k].first); it != byName.end())
      plan->axes[it->second].sizeIndex = int(k);
  return plan;
}

std::string axisName(int id) { return fmt::format("a{}", id); }

std::string axesText(const std::vector<int> &ids) {
  std::string s;
  for (int id : ids)
    s += (s.empty() ? "" : " ") + axisName(id);
  return s;
}

std::vector<int> flatten(const Side &side) {
  std::vector<int> ids;
  for (const Group &g : side)
    ids.insert(ids.end(), g.begin(), g.end());
  return ids;
}

/// The kernel: one function over the elementary views (`views` axes per
/// input) giving the elementary output, built with the ProgramBuilder; its
/// key names the op, its pattern over the axes and the dtypes.
Result<void> buildKernel(Plan &plan, const std::vector<std::vector<int>> &views,
                         const std::vector<int> &out) {
  CheckedFunction fn;
  fn.name = kernelName;
  ProgramBuilder b(fn);
  std::vector<unsigned> xs;
  std::string lhs;
  for (size_t i = 0; i < views.size(); ++i) {
    TensorType type;
    type.dtype = internal(plan.dtype);
    for (int id : views[i])
      type.shape.push_back(Dim::ofSize(SizeExpr::symbol(axisName(id))));
    xs.push_back(b.param(std::move(type), fmt::format("x{}", i)));
    lhs += (i ? ", " : "") + axesText(views[i]);
  }
  std::string pattern = lhs + " -> " + axesText(out);
  std::optional<ein::DType> acc;
  if (plan.result != plan.dtype)
    acc = internal(plan.result);
  BuildOr<unsigned> built = BuildError{};
  if (plan.op == Op::Einsum) {
    built = b.einsum(xs, pattern, {}, acc);
  } else if (plan.op == Op::Reduce) {
    ReduceKind how = toReduceKind(plan.how);
    unsigned x = xs[0];
    if ((how == ReduceKind::Any || how == ReduceKind::All) &&
        b.type(x).dtype != ein::DType::Bool)
      x = b.cast(x, ein::DType::Bool);
    built = b.reduce(x, pattern, how, {}, acc);
  } else {
    // A rearrange's kernel permutes; a repeat's copies the broadcast view.
    built = b.rearrange(xs[0], pattern);
  }
  if (!built)
    return programError("internal error: the kernel of " +
                        std::string(opName(plan.op)) +
                        " did not build: " + built.error().str());
  b.ret({*built});
  plan.kernelModule.path = "<ein C++ API>";
  plan.kernelModule.functions.push_back(std::move(fn));
  plan.kernelKey = fmt::format(
      "ein C++ API kernel v1: {}(\"{}\"{}) {} -> {}",
      plan.op == Op::Einsum   ? "einsum"
      : plan.op == Op::Reduce ? "reduce"
                              : "rearrange",
      pattern,
      plan.op == Op::Reduce ? fmt::format(", \"{}\"", reductionName(plan.how))
                            : "",
      name(plan.dtype), name(plan.result));
  return {};
}

/// The sizes of every axis, bound from the inputs and keyword sizes; an
/// error message (without "error: ") when they do not fit.
std::optional<std::string> bindSizes(const Plan &plan, const Request &r,
                                     std::vector<int64_t> &size) {
  size.assign(plan.axes.size(), -1);
  for (size_t id = 0; id < plan.axes.size(); ++id) {
    const Axis &a = plan.axes[id];
    if (a.fixed >= 0)
      size[id] = a.fixed;
    if (a.sizeIndex >= 0) {
      int64_t v = r.sizes[a.sizeIndex].second;
      if (v < 0)
        return fmt::format("size {}={} is negative", a.name, v);
      size[id] = v;
    }
  }
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    const Side &side = plan.inputs[i];
    const Tensor &t = r.inputs[i];
    if (side.size() != size_t(t.rank()))
      return fmt::format("input {} has rank {}; the pattern expects {}", i,
                         t.rank(), side.size());
    for (size_t g = 0; g < side.size(); ++g) {
      int64_t dim = t.shape()[g];
      const Group &group = side[g];
      // A dim of `...` of size 1 broadcasts in einsum.
      bool isEllipsis = group.size() == 1 && plan.axes[group[0]].name[0] == '.';
      if (isEllipsis && plan.op == Op::Einsum) {
        int id = group[0];
        if (size[id] < 0 || size[id] == 1)
          size[id] = dim;
        else if (dim != 1 && dim != size[id])
          return fmt::format("'...' dims do not broadcast: {} against {}", dim,
                             size[id]);
        continue;
      }
      int64_t known = 1;
      int unknown = -1, unknowns = 0;
      for (int id : group) {
        if (size[id] < 0) {
          if (unknown != id)
            ++unknowns;
          unknown = id;
        } else {
          known *= size[id];
        }
      }
      if (unknowns == 0) {
        if (known != dim)
          return fmt::format("input {} dim {} has size {}, the pattern needs "
                             "{}",
                             i, g, dim, known);
      } else if (unknowns == 1) {
        if (known == 0 || dim % known != 0)
          return fmt::format("input {} dim {} of size {} cannot be split by "
                             "{}",
                             i, g, dim, known);
        size[unknown] = dim / known;
      } else {
        return fmt::format("input {} dim {}: the sizes of its composition "
                           "cannot be inferred",
                           i, g);
      }
    }
  }
  for (int id : plan.kernelOutput)
    if (size[id] < 0)
      return fmt::format("axis '{}' needs a size", plan.axes[id].name);
  return std::nullopt;
}

/// Input `i` as a view with one dim per elementary axis (size-1 dims of
/// the pattern dropped, `...` dims of size 1 broadcast with stride 0).
Tensor elementaryView(const Tensor &t, const Side &side,
                      const std::vector<int64_t> &size) {
  std::vector<int64_t> shape, strides;
  shape.reserve(8);
  strides.reserve(8);
  for (size_t g = 0; g < side.size(); ++g) {
    const Group &group = side[g];
    int64_t stride = t.strides()[g];
    if (t.shape()[g] == 1 && group.size() == 1 && size[group[0]] != 1)
      stride = 0; // a broadcast `...` dim
    // Axes from the outermost in; their strides from the innermost out.
    size_t first = strides.size();
    for (size_t k = 0; k < group.size(); ++k) {
      shape.push_back(size[group[k]]);
      strides.push_back(0);
    }
    for (size_t k = group.size(); k-- > 0;) {
      strides[first + k] = stride;
      stride *= size[group[k]];
    }
  }
  return Tensor(t.storage(), t.dtype(), t.device(), std::move(shape),
                std::move(strides), t.offset());
}

/// `t` (one dim per elementary axis of `groups`, in order) with the dims of
/// each group merged, when its strides allow; nullopt when a merge would
/// need a copy.
std::optional<Tensor> mergeGroups(const Tensor &t, const Side &groups) {
  std::vector<int64_t> shape, strides;
  shape.reserve(groups.size());
  strides.reserve(groups.size());
  if (t.numel() == 0) {
    // No elements: any strides describe it; C order.
    size_t at = 0;
    for (const Group &group : groups) {
      int64_t n = 1;
      for (size_t j = 0; j < group.size(); ++j)
        n *= t.shape()[at + j];
      at += group.size();
      shape.push_back(n);
    }
    std::vector<int64_t> dense = runtime::cOrderStrides(shape);
    return Tensor(t.storage(), t.dtype(), t.device(), std::move(shape),
                  std::move(dense), t.offset());
  }
  size_t k = 0;
  for (const Group &group : groups) {
    int64_t n = 1, stride = 1;
    bool first = true;
    // From the innermost axis out: each must follow the one inside it.
    for (size_t j = group.size(); j-- > 0;) {
      size_t pos = k + j;
      int64_t s = t.shape()[pos];
      if (s != 1) {
        if (first)
          stride = t.strides()[pos];
        else if (t.strides()[pos] != stride * n)
          return std::nullopt;
        first = false;
      }
      n *= s;
    }
    k += group.size();
    shape.push_back(n);
    strides.push_back(first ? 1 : stride);
  }
  return Tensor(t.storage(), t.dtype(), t.device(), std::move(shape),
                std::move(strides), t.offset());
}

Result<std::shared_ptr<const Plan>> planFor(const Request &r) {
  std::string key = planKey(r);
  PlanCache &cache = plans();
  {
    std::shared_lock<std::shared_mutex> lock(cache.mutex);
    if (auto it = cache.plans.find(key); it != cache.plans.end())
      return it->second;
  }
  for (char c : r.pattern)
    if (c == '"' || c == '\\' || (unsigned char)c < 0x20)
      return programError(fmt::format(
          "{}: the pattern holds a character no pattern may hold: {:?}",
          opName(r.op), std::string(1, c)));
  auto parsed = parsePattern(std::string(r.pattern), patternUse(r.op));
  if (!parsed)
    return callError(
        r, BuildError{parsed.error(), opName(r.op), std::string(r.pattern)});
  if (auto error = checkCall(r, *parsed, false)) {
    // The symbolic check names the dims anonymously ("_anon0 _anon1"); the
    // same call with the tensors' sizes says it with their shapes
    // ("2 3 10"), when it fails too.
    if (auto sized = checkCall(r, *parsed, true))
      return callError(r, *sized);
    return callError(r, *error);
  }
  std::shared_ptr<Plan> plan = buildPlan(r, *parsed);
  Plan &p = *plan;
  p.kernelOutput = flatten(p.output);
  for (const Side &side : p.inputs)
    p.inputAxes.push_back(flatten(side));
  // A repeat's kernel copies a view in the output's order (new axes
  // stride 0); the others read the elementary views.
  p.kernelInputs = r.op == Op::Repeat
                       ? std::vector<std::vector<int>>{p.kernelOutput}
                       : p.inputAxes;
  if (auto built = buildKernel(p, p.kernelInputs, p.kernelOutput); !built)
    return built.error();
  std::shared_ptr<const Plan> shared = plan;
  std::unique_lock<std::shared_mutex> lock(cache.mutex);
  cache.plans.emplace(key, shared);
  return shared;
}

/// What one call does: the views the kernel reads, the output's elementary
/// shape, and the result when it is a view.
struct Prepared {
  std::shared_ptr<const Plan> plan;
  std::vector<Tensor> views;
  std::vector<int64_t> size;
  std::optional<Tensor> resultView;
  /// Where the inputs are, and the kernel runs.
  Device device = cpu;
};

Result<Prepared> prepare(const Request &r) {
  if (r.inputs.empty())
    return usageError(
        fmt::format("{} needs at least one tensor", opName(r.op)));
  for (const Tensor &t : r.inputs)
    if (!t.defined())
      return usageError(fmt::format("{} of an undefined tensor", opName(r.op)));
  auto device = deviceOf(opName(r.op), r.inputs);
  if (!device)
    return device.error();
  auto plan = planFor(r);
  if (!plan)
    return plan.error();
  Prepared p;
  p.plan = *plan;
  p.device = *device;
  const Plan &pl = **plan;
  if (auto why = bindSizes(pl, r, p.size)) {
    // The shape rules' words for it, located in the pattern, when they see
    // the sizes' problem.
    if (auto error = checkCall(r, pl.pattern, true))
      return ErrorInfo{ErrorInfo::Kind::Usage, callError(r, *error).message};
    return usageError(
        fmt::format("{}(\"{}\"): {}", opName(r.op), r.pattern, *why));
  }
  if (r.op == Op::Reduce &&
      (r.how == Reduction::Max || r.how == Reduction::Min)) {
    const std::vector<int> &out = pl.kernelOutput;
    for (int id : pl.inputAxes[0])
      if (p.size[id] == 0 &&
          std::find(out.begin(), out.end(), id) == out.end()) {
        if (auto error = checkCall(r, pl.pattern, true))
          return ErrorInfo{ErrorInfo::Kind::Usage,
                           callError(r, *error).message};
        return usageError(fmt::format("{} over an empty axis: '{}' has size 0",
                                      reductionName(r.how), pl.axes[id].name));
      }
  }
  p.views.reserve(pl.inputs.size());
  for (size_t i = 0; i < pl.inputs.size(); ++i) {
    if (r.inputs[i].device() == p.device) {
      p.views.push_back(elementaryView(r.inputs[i], pl.inputs[i], p.size));
      continue;
    }
    // A CPU scalar joins CUDA operands on the device.
    auto moved = onDevice(r.inputs[i], p.device);
    if (!moved)
      return moved.error();
    p.views.push_back(elementaryView(*moved, pl.inputs[i], p.size));
  }
  const std::vector<int> &in = pl.inputAxes[0], &out = pl.kernelOutput;
  if (r.op == Op::Rearrange) {
    // The permuted view; a view result when its groups merge.
    const Tensor &v = p.views[0];
    std::vector<int64_t> shape, strides;
    shape.reserve(out.size());
    strides.reserve(out.size());
    for (int id : out) {
      auto pos = std::find(in.begin(), in.end(), id) - in.begin();
      shape.push_back(v.shape()[pos]);
      strides.push_back(v.strides()[pos]);
    }
    Tensor permuted(v.storage(), v.dtype(), v.device(), shape, strides,
                    v.offset());
    p.resultView = mergeGroups(permuted, pl.output);
    if (p.resultView)
      return p;
  }
  if (r.op == Op::Repeat) {
    // A view in the output's order, new axes broadcast (stride 0); the
    // kernel copies it.
    const Tensor &v = p.views[0];
    std::vector<int64_t> shape, strides;
    for (int id : out) {
      auto it = std::find(in.begin(), in.end(), id);
      shape.push_back(p.size[id]);
      strides.push_back(it == in.end() ? 0 : v.strides()[it - in.begin()]);
    }
    p.views[0] =
        Tensor(v.storage(), v.dtype(), v.device(), shape, strides, v.offset());
  }
  return p;
}

Result<Tensor> run(const Request &r) {
  auto p = prepare(r);
  if (!p)
    return p.error();
  if (p->resultView)
    return *p->resultView;
  std::vector<int64_t> shape;
  for (int id : p->plan->kernelOutput)
    shape.push_back(p->size[id]);
  auto out = allocate(p->plan->result, shape, false, p->device);
  if (!out)
    return out;
  std::vector<const Tensor *> tensors;
  for (const Tensor &v : p->views)
    tensors.push_back(&v);
  tensors.push_back(&*out);
  // The kernel is compiled once per plan and device.
  const auto &kernel = p->plan->compiled(p->device);
  if (!kernel)
    return kernel.error();
  if (auto ran = runKernel(**kernel, tensors); !ran)
    return ran.error();
  // A fresh C-order tensor: its groups always merge.
  if (auto merged = mergeGroups(*out, p->plan->output))
    return *merged;
  return programError("internal error: the groups of a fresh tensor did not "
                      "merge");
}

} // namespace
} // namespace ein::api::detail

namespace ein::api::nothrow {

using namespace ein::api::detail;

Result<Tensor> rearrange(const Tensor &x, std::string_view pattern,
                         const Sizes &sizes) {
  std::vector<Tensor> inputs{x};
  return run({Op::Rearrange, pattern, inputs, sizes});
}

Result<Tensor> reduce(const Tensor &x, std::string_view pattern, Reduction how,
                      const Sizes &sizes, std::optional<DType> acc) {
  std::vector<Tensor> inputs{x};
  return run({Op::Reduce, pattern, inputs, sizes, how, acc});
}

Result<Tensor> repeat(const Tensor &x, std::string_view pattern,
                      const Sizes &sizes) {
  std::vector<Tensor> inputs{x};
  return run({Op::Repeat, pattern, inputs, sizes});
}

Result<Tensor> einsum(std::string_view pattern,
                      const std::vector<Tensor> &operands, const Sizes &sizes,
                      std::optional<DType> acc) {
  return run({Op::Einsum, pattern, operands, sizes, Reduction::Sum, acc});
}

Result<std::string> explain(std::string_view op, std::string_view pattern,
                            const std::vector<Tensor> &inputs,
                            const Sizes &sizes) {
  std::optional<Op> which;
  for (Op o : {Op::Rearrange, Op::Reduce, Op::Repeat, Op::Einsum})
    if (op == opName(o))
      which = o;
  if (!which)
    return usageError(fmt::format("explain: unknown operation '{}'; expected "
                                  "rearrange, reduce, repeat or einsum",
                                  op));
  auto p = prepare({*which, pattern, inputs, sizes});
  if (!p)
    return p.error();
  std::string head = fmt::format("{}(\"{}\")", op, pattern);
  if (p->resultView)
    return fmt::format("{}: a view (no copy, no kernel): {}", head,
                       p->resultView->describe());
  int64_t elements = 1;
  for (int id : p->plan->kernelOutput)
    elements *= p->size[id];
  return fmt::format(
      "{}: a kernel writing a new tensor ({} bytes){}, "
      "built as:\n{}",
      head, elements * int64_t(itemsize(p->plan->result)),
      p->device == cuda ? " on the CUDA device (the CUDA back end's code)" : "",
      p->plan->kernelKey);
}

} // namespace ein::api::nothrow
