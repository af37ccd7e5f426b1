// The fabric table and the bus-bandwidth model of collectives (nccl-tests'
// PERFORMANCE.md): time = alpha + factor(n) * S / busbw, with busbw a
// measured fabric's interpolated table where it has one.
#include "ein/Analysis/Collectives.h"

#include <cmath>
#include <sstream>

namespace ein {

const std::vector<CollectiveKind> &collectiveKinds() {
  static const std::vector<CollectiveKind> kinds = {
      CollectiveKind::AllReduce, CollectiveKind::AllGather,
      CollectiveKind::ReduceScatter, CollectiveKind::AllToAll,
      CollectiveKind::Broadcast};
  return kinds;
}

const std::vector<FabricSpec> &fabricTable() {
  // Bus bandwidths are what nccl-tests measures on the fabric, not the
  // link's signalling rate: NVLink 4 gives 900 GB/s both ways (450 each
  // way), of which ring all-reduces reach about 360 GB/s busbw on 8 GPUs
  // without NVLink SHARP; PCIe 5 x16 moves 64 GB/s each way, about 48 GB/s
  // of it as busbw; one 400 Gb/s NDR rail per GPU gives about 46 GB/s
  // (docs/distributed.md §5 cites the sources).
  static const std::vector<FabricSpec> table = {
      {"nvlink-h100", "NVLink 4 within an HGX H100 board (8 GPUs)", 10e-6,
       360e9},
      {"nvlink-h200", "NVLink 4 within an HGX H200 board (8 GPUs)", 10e-6,
       360e9},
      {"pcie5", "PCIe 5.0 x16 between GPUs of one host", 15e-6, 48e9},
      {"ib-ndr", "InfiniBand NDR, one 400 Gb/s rail per GPU, across nodes",
       25e-6, 46e9},
  };
  return table;
}

const FabricSpec *findFabric(const std::string &name) {
  for (const FabricSpec &f : fabricTable())
    if (f.name == name)
      return &f;
  return nullptr;
}

const FabricSpec &defaultFabric() { return fabricTable()[0]; }

std::string fabricNames(const std::string &separator) {
  std::string out;
  for (const FabricSpec &f : fabricTable())
    out += (out.empty() ? "" : separator) + f.name;
  return out;
}

double busFactor(CollectiveKind kind, Int ranks) {
  if (ranks <= 1)
    return 0;
  double n = static_cast<double>(ranks);
  switch (kind) {
  case CollectiveKind::AllReduce:
    return 2 * (n - 1) / n;
  case CollectiveKind::AllGather:
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::AllToAll:
    return (n - 1) / n;
  case CollectiveKind::Broadcast:
    return 1;
  }
  return 0;
}

double bytesPerRank(CollectiveKind kind, double bytes, Int ranks) {
  return busFactor(kind, ranks) * bytes;
}

double interpolateBusBandwidth(const MeasuredCollective &m, double bytes) {
  const auto &points = m.busBandwidth;
  if (points.empty())
    return 0;
  // Outside the measured sizes the nearest one's bandwidth holds: a
  // larger buffer stays in DRAM, a smaller one is latency-bound anyway.
  if (bytes <= points.front().first)
    return points.front().second;
  if (bytes >= points.back().first)
    return points.back().second;
  // Between two measured sizes the time past the latency is linear in the
  // size, S/b(S) = S0/b0 + w (S1/b1 - S0/b0) with w = (S - S0)/(S1 - S0):
  // exact where both lie in one regime (a per-call cost and a rate, as
  // alpha + S/B), and where a cache's edge lies between them, the time
  // grows with the bytes past it, as measured (busbw linear in log S was
  // 26% short at 3 MiB between 1 and 4 MiB; bench/README.md).
  size_t hi = 1;
  while (points[hi].first < bytes)
    ++hi;
  auto [s0, b0] = points[hi - 1];
  auto [s1, b1] = points[hi];
  double w = (bytes - s0) / (s1 - s0);
  return bytes / (s0 / b0 + w * (s1 / b1 - s0 / b0));
}

const MeasuredCollective *findMeasured(const FabricSpec &fabric,
                                       CollectiveKind kind) {
  for (const MeasuredCollective &m : fabric.measured)
    if (m.kind == kind)
      return &m;
  return nullptr;
}

std::string measuredCollectiveProblem(const MeasuredCollective &m) {
  auto positive = [](double v) { return std::isfinite(v) && v > 0; };
  std::ostringstream why;
  if (!positive(m.latency)) {
    why << "its latency " << m.latency << " s is not a positive number";
    return why.str();
  }
  if (m.busBandwidth.empty())
    return "it has no measured size";
  for (size_t i = 0; i < m.busBandwidth.size(); ++i) {
    auto [bytes, bandwidth] = m.busBandwidth[i];
    if (!positive(bytes) || !positive(bandwidth)) {
      why << "its entry [" << bytes << ", " << bandwidth
          << "] is not a positive size and bandwidth";
      return why.str();
    }
    if (i > 0 && !(bytes > m.busBandwidth[i - 1].first)) {
      why << "its sizes are not ascending (" << m.busBandwidth[i - 1].first
          << " B, then " << bytes << " B)";
      return why.str();
    }
  }
  return "";
}

double collectiveSeconds(CollectiveKind kind, double bytes, Int ranks,
                         const FabricSpec &fabric) {
  if (ranks <= 1)
    return 0;
  if (const MeasuredCollective *m = findMeasured(fabric, kind))
    return m->latency + bytesPerRank(kind, bytes, ranks) /
                            interpolateBusBandwidth(*m, bytes);
  return fabric.latency +
         bytesPerRank(kind, bytes, ranks) / fabric.busBandwidth;
}

} // namespace ein
