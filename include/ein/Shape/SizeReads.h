// Where size-generic code reads each free size from its arguments' shapes.
#pragma once

#include "ein/Shape/Shape.h"

#include <string>
#include <vector>

namespace ein {

/// `symbol` is read from dim `dim` of parameter `param`, whose size is
/// `scale * symbol + offset` (`offset` over names read before it), so
/// symbol = (size - offset) / scale.
struct SizeRead {
  std::string symbol;
  size_t param = 0, dim = 0;
  Int scale = 1;
  SizeExpr offset;
};

/// The reads, in order, that give every name of `params`' shapes not bound in
/// `env` a value; `unreadable` names those that appear only where they cannot
/// be solved for (`h*d` with both free), each with where it appears. Packs
/// must be expanded (a pack dim is skipped). A dim `n` is read as is; `8*d`
/// and `n + 1` are solved when every other name in them is known.
struct SizeReadPlan {
  std::vector<SizeRead> reads;
  std::vector<std::pair<std::string, std::string>> unreadable; // name, where
};
SizeReadPlan planSizeReads(const std::vector<Shape> &params,
                           const Bindings &env);

} // namespace ein
