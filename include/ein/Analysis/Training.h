// The training side of the cost model: optimizer update costs and states,
// and the memory a training step holds (parameters, gradients, optimizer
// states, saved activations, and the peak of live tensors).
#pragma once

#include "ein/Sema/Program.h"

#include <functional>
#include <string>
#include <vector>

namespace ein {

/// One optimizer's update of one parameter element, as torch.optim defines
/// it (docs/cost-model.md, "Training"): the state tensors it keeps per
/// parameter and the FLOPs of its update per element (scalar factors such
/// as lr * weight decay or 1 - beta are computed once per step, not per
/// element, and are not counted).
struct OptimizerSpec {
  std::string name;
  unsigned states;          // state tensors of the parameter's size
  unsigned flopsPerElement; // FLOPs of one element's update
  std::string update;       // the update rule, for the report
};

/// sgd, momentum, adagrad, rmsprop, adam, adamw.
const std::vector<OptimizerSpec> &optimizerTable();
const OptimizerSpec *findOptimizer(const std::string &name);

/// The elements of one device's block of a value of (expanded) shape
/// `expanded` laid out as `layout` (docs/distributed.md §5): a dim split on
/// mesh axis a counts size/a, a replicated dim ("") its whole size. A
/// partial result (pending) is a whole block on each device, so `pending`
/// does not change the count. Nullopt when the layout does not have one
/// entry per dim (a layout of another value).
std::optional<SizeExpr> localElements(const Shape &expanded,
                                      const ValueLayout &layout);

/// The peak of the bytes of live tensors over `fn`'s ops in the order they
/// run: the inputs and the function's results (the caller's output
/// buffers) are live throughout, any other value from its op to its last
/// use; a
/// view (`isView(op index)`) allocates nothing. `bytesOf` gives a value's
/// bytes (its dtype may be overridden by the caller). Unbound sizes make
/// the peak unknown (nullopt).
std::optional<Int>
peakLiveBytes(const CheckedFunction &fn,
              const std::function<bool(size_t)> &isView,
              const std::function<std::optional<Int>(unsigned)> &bytesOf);

} // namespace ein
