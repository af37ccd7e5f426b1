// What the compiling host offers the CPU passes: vector width and threads.
#pragma once

#include <cstdint>

namespace ein {

/// The widest vector registers of the host in bits: 512 with AVX-512, 256
/// with AVX, 128 otherwise.
int64_t hostVectorBits();

/// Parallel work items the tiling passes aim for by default: twice the
/// host's hardware threads, so every core gets work and load balances.
int64_t defaultWorkItems();

} // namespace ein
