// The fabric table and the bus-bandwidth model of collectives (nccl-tests'
// PERFORMANCE.md): time = alpha + factor(n) * S / busbw.
#include "ein/Analysis/Collectives.h"

namespace ein {

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

double collectiveSeconds(CollectiveKind kind, double bytes, Int ranks,
                         const FabricSpec &fabric) {
  if (ranks <= 1)
    return 0;
  return fabric.latency +
         bytesPerRank(kind, bytes, ranks) / fabric.busBandwidth;
}

} // namespace ein
