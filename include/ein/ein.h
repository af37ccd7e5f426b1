// ein's embedded C++ API: einops-style tensor code in C++, compiled by ein
// (docs/cpp-api.md). Includes no MLIR, LLVM or internal ein header; its
// names are ein::api::X, and ein::X here.
#pragma once

#include "ein/API/Check.h"
#include "ein/API/Distributed.h"
#include "ein/API/Module.h"
#include "ein/API/Ops.h"
#include "ein/API/Tensor.h"
#include "ein/API/Train.h"
#include "ein/API/Types.h"
#if __cplusplus >= 202002L
#include "ein/API/Static.h"
#endif

namespace ein {
using namespace ein::api;
} // namespace ein
