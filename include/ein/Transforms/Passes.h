// The ein passes and their registration (declared in Passes.td).
#pragma once

#include "mlir/Pass/Pass.h"

#include <memory>

namespace ein {

#define GEN_PASS_DECL
#include "ein/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "ein/Transforms/Passes.h.inc"

// GEN_PASS_REGISTRATION defines registerEinPasses(): every ein pass, for
// ein-opt's registry.

} // namespace ein
