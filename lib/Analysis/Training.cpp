// Optimizer update costs and the liveness walk of a training step.
#include "ein/Analysis/Training.h"

#include <map>
#include <set>

namespace ein {

const std::vector<OptimizerSpec> &optimizerTable() {
  // FLOPs per element, counting each arithmetic operation and sqrt as 1:
  // As torch.optim's single-tensor code computes them (and ein.optim,
  // share/ein/optim.ein, writes them): addcmul/addcdiv count 3, lerp 3.
  static const std::vector<OptimizerSpec> table = {
      // p.add_(g, alpha=-lr)
      {"sgd", 0, 2, "w -= lr * g"},
      // b.mul_(mu).add_(g); p.add_(b, alpha=-lr)
      {"momentum", 1, 4, "b = mu * b + g; w -= lr * b"},
      // s.addcmul_(g, g) (2); std = s.sqrt().add_(eps) (2);
      // p.addcdiv_(g, std, value=-lr) (3)
      {"adagrad", 1, 7, "s += g * g; w -= lr * g / (sqrt(s) + eps)"},
      // s.mul_(a).addcmul_(g, g, value=1-a) (4); sqrt, add (2); addcdiv (3)
      {"rmsprop", 1, 9,
       "s = a * s + (1 - a) * g * g; w -= lr * g / (sqrt(s) + eps)"},
      // m.lerp_(g, 1-b1) (3); v.mul_(b2).addcmul_(g, g, value=1-b2) (4);
      // denom = (v.sqrt() / sqrt(c2)).add_(eps) (3); addcdiv (3)
      {"adam", 2, 13,
       "m += (1 - b1) * (g - m); v = b2 * v + (1 - b2) * g * g; "
       "w -= lr / c1 * m / (sqrt(v) / sqrt(c2) + eps), c = 1 - b^t"},
      // p.mul_(1 - lr * wd) (1), then adam's 13
      {"adamw", 2, 14, "w *= 1 - lr * wd; then adam's update"},
  };
  return table;
}

const OptimizerSpec *findOptimizer(const std::string &name) {
  for (const OptimizerSpec &spec : optimizerTable())
    if (spec.name == name)
      return &spec;
  return nullptr;
}

std::optional<SizeExpr> localElements(const Shape &expanded,
                                      const ValueLayout &layout) {
  if (layout.dims.size() != expanded.size())
    return std::nullopt;
  // As the per-rank cost divides an operand's dims (perRankCost): the
  // quotient keeps an unbound axis a formula.
  Shape local = expanded;
  for (size_t i = 0; i < local.size(); ++i)
    if (!layout.dims[i].empty())
      local[i].size =
          SizeExpr::quotient(local[i].size, SizeExpr::symbol(layout.dims[i]));
  return numElements(local);
}

std::optional<Int>
peakLiveBytes(const CheckedFunction &fn,
              const std::function<bool(size_t)> &isView,
              const std::function<std::optional<Int>(unsigned)> &bytesOf) {
  // The last op reading each value (the function's results: past the end).
  std::map<unsigned, size_t> lastUse;
  for (size_t i = 0; i < fn.ops.size(); ++i)
    for (unsigned v : fn.ops[i].operands)
      lastUse[v] = i;
  for (unsigned v : fn.returns)
    lastUse[v] = fn.ops.size();
  // A view keeps the tensor it looks into alive as long as itself.
  for (size_t i = fn.ops.size(); i-- > 0;)
    if (isView(i))
      for (unsigned r : fn.ops[i].results)
        if (auto use = lastUse.find(r); use != lastUse.end())
          for (unsigned v : fn.ops[i].operands)
            lastUse[v] = std::max(lastUse[v], use->second);
  Int live = 0;
  for (unsigned p : fn.params) {
    auto b = bytesOf(p);
    if (!b)
      return std::nullopt;
    live += *b;
  }
  // The function's results are the caller's buffers (the calling
  // convention of compiled code: results are output parameters written in
  // place), live throughout: `einc train` holds the gradients and the loss
  // across steps, and the op computing a result writes it there instead of
  // allocating. A result returned twice, or that is a parameter or a view,
  // is copied into a buffer of its own.
  std::set<unsigned> outputs(fn.returns.begin(), fn.returns.end());
  for (unsigned r : fn.returns) {
    auto b = bytesOf(r);
    if (!b)
      return std::nullopt;
    live += *b;
  }
  Int peak = live;
  std::map<unsigned, Int> held; // allocated results, by value
  for (size_t i = 0; i < fn.ops.size(); ++i) {
    const CheckedOp &op = fn.ops[i];
    if (!isView(i))
      for (unsigned r : op.results) {
        if (outputs.count(r))
          continue;
        auto b = bytesOf(r);
        if (!b)
          return std::nullopt;
        held[r] = *b;
        live += *b;
      }
    peak = std::max(peak, live);
    // Values whose last reader was this op are freed after it; a result
    // nobody reads is freed at once.
    for (auto it = held.begin(); it != held.end();) {
      auto use = lastUse.find(it->first);
      size_t last = use == lastUse.end() ? i : use->second;
      if (last <= i) {
        live -= it->second;
        it = held.erase(it);
      } else {
        ++it;
      }
    }
  }
  return peak;
}

} // namespace ein
