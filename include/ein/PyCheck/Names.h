// What a Python name means: the module's imports (`from einops import
// rearrange as r`, `import torch.nn.functional as F`), so that a call or an
// annotation is recognised by its qualified name (`einops.rearrange`).
#pragma once

#include "ein/PyCheck/PyAst.h"

#include <map>
#include <string>

namespace ein::pycheck {

class ModuleNames {
public:
  /// Reads every import in `module`, at any depth: a local name imported as
  /// two different things is ambiguous and names nothing.
  explicit ModuleNames(Node module);
  /// The qualified name of a Name or an Attribute chain through the imports
  /// (`F.softmax` is `torch.nn.functional.softmax`, a name not imported is
  /// itself), or "" for any other expression.
  std::string qualified(Node expr) const;

private:
  void addImports(Node n);
  void bind(const std::string &local, const std::string &target);
  std::map<std::string, std::string> alias;
};

/// The last component of a qualified name (`einops.rearrange` ->
/// `rearrange`).
std::string lastComponent(const std::string &qualified);

} // namespace ein::pycheck
