// The CPU that code is compiled for (the host, or one named by --cpu) and
// what it offers the CPU passes: vector width, threads, caches, and the GEMM
// blocking derived from them.
#pragma once

#include "ein/Conversion/CPU/CPUOptions.h"
#include "ein/Support/Error.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace llvm {
class TargetMachine;
} // namespace llvm

namespace ein {

/// The integer pair dot products (i16 pairs into i32 lanes) a CPU has, for
/// the int8 GEMM (ein-tile-contractions' `int8-dot`), best last: none,
/// vpmaddwd + vpaddd on 256 bits (avx2) or 512 bits (avx512bw), vpdpwssd
/// (avx512vnni, with 512-bit vectors).
enum class Int8Dot { None, Avx2, Avx512BW, Vnni };
/// "none", "avx2", "avx512bw", "vnni": the option's spelling.
const char *int8DotName(Int8Dot dot);
std::optional<Int8Dot> parseInt8Dot(const std::string &name);

/// What code compiled for a TargetCPU may use, as LLVM and the tiling passes
/// need it.
struct ResolvedCPU {
  std::string name;          // LLVM's CPU name (the host's, for the host)
  std::string features;      // the full "+f,-g" string for the target machine
  int64_t vectorBits;        // 512 with avx512f, 256 with avx, 128 otherwise
  bool bf16Dot;              // avx512bf16: vdpbf16ps, bf16 pair dot products
  Int8Dot int8Dot;           // integer pair dot products (the int8 GEMM)
  bool host;                 // exactly the host: its caches and features
  std::string extraFeatures; // --cpu-features as given ("+f,-g")
  /// "znver3 +avx512f": the CPU as the user named it, for messages and keys.
  std::string describe() const;
};

/// Checks `cpu` against LLVM's table for this processor family (x86-64 on
/// x86-64 hosts): an unknown CPU or feature is a usage error that lists the
/// nearest names. The host needs no check.
ErrorOr<ResolvedCPU> resolveCPU(const TargetCPU &cpu);

/// LLVM's target machine for `cpu` (this process's triple, position-
/// independent code, -O3 code generation), for the JIT and for objects.
ErrorOr<std::unique_ptr<llvm::TargetMachine>>
createTargetMachine(const ResolvedCPU &cpu);

/// Whether this host can run code compiled for `cpu`: an error naming the
/// instruction-set features it lacks (`einc run --cpu` refuses then rather
/// than dying of SIGILL).
ErrorOr<void> checkHostCanRun(const ResolvedCPU &cpu);

/// The widest vector registers of the host in bits: 512 with AVX-512, 256
/// with AVX, 128 otherwise (resolveCPU's rule, for the host).
int64_t hostVectorBits();

/// Parallel work items the tiling passes aim for by default: twice the
/// host's hardware threads, so every core gets work and load balances.
int64_t defaultWorkItems();

/// One level of data cache: bytes, ways and the CPUs that share it.
struct CacheLevel {
  int64_t bytes = 0, ways = 0, sharers = 1;
};

/// The data caches of one core's view of the host.
struct HostCaches {
  CacheLevel l1d, l2, l3;
};

/// Common caches: 32 KiB 8-way L1d, 512 KiB 8-way L2, 8 MiB 16-way L3
/// shared by all threads. A level the host does not list gets its size here,
/// and code compiled for a named CPU (--cpu) is blocked for these, so that
/// it is the same whichever host compiles it.
HostCaches commonCaches();

/// The host's caches from /sys/devices/system/cpu/cpu0/cache (Linux); a
/// level it does not list is as in commonCaches.
HostCaches hostCaches();

/// Bytes in a sysfs cache size ("32K", "512K", "32768K", "8M", "1024");
/// 0 for anything else.
inline int64_t parseCacheSize(const std::string &text) {
  int64_t value = 0;
  size_t i = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i)
    value = value * 10 + (text[i] - '0');
  if (i == 0)
    return 0;
  std::string unit = text.substr(i);
  while (!unit.empty() && (unit.back() == '\n' || unit.back() == ' '))
    unit.pop_back();
  if (unit.empty())
    return value;
  if (unit == "K")
    return value << 10;
  if (unit == "M")
    return value << 20;
  if (unit == "G")
    return value << 30;
  return 0;
}

/// The GEMM blocking of ein-tile-contractions: an `mr` x `nrVectors`
/// vectors register tile, packed blocks of A (`mc` x `kc`) and B (`kc` x
/// `nc`), all in elements.
struct GemmTiles {
  int64_t mr, nrVectors, mc, nc, kc;
};

/// The blocking for a host with `vectorBits`-wide registers and `caches`,
/// elements of `elementBytes` bytes and `threads` threads, by the analytic
/// model of BLIS (Low et al., "Analytical modeling is enough for
/// high-performance BLIS", 2016), with the roles of the operands as in the
/// kernel (a B micro-panel `kc` x `nr` is reused from L1 across the A
/// micro-panels, an A block `mc` x `kc` from L2 across the B micro-panels,
/// the B block `kc` x `nc` from L3):
/// - register tile: 6 rows x 4 vectors (24 of AVX-512's 32 registers) with
///   512-bit vectors, 6 x 2 (12 of 16) otherwise; both hide the FMA latency
///   (4 cycles x 2 FMA units = 8 independent accumulators);
/// - kc: the B micro-panel takes `floor((W1 - 1) / (1 + mr / nr))` of the
///   L1 ways, at least 256 (measured faster than 128 on Zen 4) and a
///   multiple of 32. (A floor of 512 with 512-bit vectors measured 2-7%
///   faster on large f32 and bf16 GEMMs on Zen 4, but every thread packs a
///   kc x nc block of B: examples/gpt.ein's training step at test size then
///   measured 1.09-1.15x report --train's memory, past train-gpt.test's
///   10%, against 1.09x with 256; bench/README.md);
/// - mc: the A block fills half of L2 (the rest holds B micro-panels and
///   C), a multiple of mr;
/// - nc: the B block fills half of each thread's share of L3, a multiple of
///   nr, between 1024 and 4096.
inline GemmTiles gemmTiles(const HostCaches &caches, int64_t vectorBits,
                           int64_t elementBytes, int64_t threads) {
  GemmTiles t;
  int64_t lanes = std::max<int64_t>(1, vectorBits / 8 / elementBytes);
  t.mr = 6;
  t.nrVectors = vectorBits >= 512 ? 4 : 2;
  int64_t nr = t.nrVectors * lanes;
  int64_t l1Ways = std::max<int64_t>(2, caches.l1d.ways);
  int64_t l1WayBytes = std::max<int64_t>(1, caches.l1d.bytes / l1Ways);
  // Ways for B's micro-panel: (W - 1) / (1 + mr / nr), in integers.
  int64_t waysB = std::max<int64_t>(1, (l1Ways - 1) * nr / (nr + t.mr));
  int64_t kc = waysB * l1WayBytes / (nr * elementBytes);
  t.kc = std::max<int64_t>(256 * 4 / elementBytes, kc / 32 * 32);
  int64_t mc = caches.l2.bytes / 2 / (t.kc * elementBytes);
  t.mc = std::max<int64_t>(t.mr, mc / t.mr * t.mr);
  int64_t l3Share = caches.l3.bytes /
                    std::max<int64_t>(1, std::min(threads, caches.l3.sharers));
  int64_t nc = l3Share / 2 / (t.kc * elementBytes);
  nc = std::clamp<int64_t>(nc, 1024, 4096);
  t.nc = std::max<int64_t>(nr, nc / nr * nr);
  return t;
}

/// gemmTiles for this host (f32 elements, its threads).
GemmTiles hostGemmTiles();

} // namespace ein
