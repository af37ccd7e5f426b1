// The figures of `einc train`'s progress line and log (Train.cpp): memory,
// rates and JSON numbers.
#include "TrainState.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>

#include <unistd.h>

namespace ein {

int64_t residentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  if (!(statm >> size >> resident))
    return -1;
  return resident * static_cast<int64_t>(::sysconf(_SC_PAGESIZE));
}

std::string bytesText(double bytes) {
  if (bytes < 0)
    return "-";
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int i = 0;
  while (bytes >= 1024 && i < 4) {
    bytes /= 1024;
    ++i;
  }
  return fmt::format("{:.4g} {}", bytes, units[i]);
}

std::string rateText(double v) {
  const char *prefixes[] = {"", "k", "M", "G", "T"};
  int i = 0;
  while (v >= 1000 && i < 4) {
    v /= 1000;
    ++i;
  }
  return fmt::format("{:.3g}{}", v, prefixes[i]);
}

/// A JSON number: finite values as themselves, others as null (JSON has no
/// NaN).
std::string jsonNumber(double v) {
  return std::isfinite(v) ? fmt::format("{}", v) : "null";
}

} // namespace ein
