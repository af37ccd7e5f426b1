// The fabric part of `einc calibrate` (docs/distributed.md §5): an MPI job of
// this einc times all-reduce, all-gather, reduce-scatter, all-to-all and
// broadcast from 64 B to 64 MiB (factors of 2) through the MPI
// communicator, fits each one's latency and busbw by size, and checks the
// model at sizes it did not measure; `--check` times them again in a later job
// against the stored fit.
#include "CalibrateFabric.h"
#include "ein/Runtime/Communicator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <functional>
#include <spawn.h>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char **environ;

namespace ein {

using runtime::StorageType;

namespace {

const double MiB = 1024.0 * 1024.0;
/// The sizes of each collective's table: 64 B to 64 MiB by factors of 2
/// (64 B is 16 floats, which 2, 4, 8 or 16 ranks split evenly). Factors of
/// 4 left the cache's edge (1 MiB of L2 per core) between two sizes, 1 and
/// 4 MiB, so that no interpolation could place it (bench/README.md).
const std::vector<int64_t> gridBytes = [] {
  std::vector<int64_t> sizes;
  for (int64_t bytes = 64; bytes <= 64 * 1024 * 1024; bytes *= 2)
    sizes.push_back(bytes);
  return sizes;
}();
/// How deep refineSweep halves a grid interval (in log size): 2^(1/8), a
/// factor of 1.09 between neighbours at the deepest.
constexpr int maxRefineDepth = 3;
/// How far the interpolation between two measured sizes may miss the time
/// past the latency measured at their geometric midpoint before refineSweep
/// takes the interval as bent: above the noise of one job's medians (a few
/// percent), below the 25%.
constexpr double refineTolerance = 0.12;
/// The sizes calibrate checks its fit at, none of them in the grid.
const int64_t checkBytesDefault[] = {48 * 1024, 3 * 1024 * 1024,
                                     24 * 1024 * 1024};
/// The largest size `--check` takes.
const int64_t maxCheckBytes = 256 * 1024 * 1024;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

/// The latency of a sweep of (bytes, seconds): the median time of the
/// calls of at most 1 KiB (fitFabric's alpha, fitCollective's and
/// refineSweep's latency); an error, naming `what` ("the all-reduce
/// sweep"), when a time or size is not positive or no call is that small.
ErrorOr<double>
sweepLatency(const std::vector<std::pair<double, double>> &sweep,
             const std::string &what) {
  std::vector<double> small;
  for (auto [bytes, seconds] : sweep) {
    if (!(seconds > 0) || !(bytes > 0))
      return Error::usage(fmt::format("{} has {} s for {} B: not a positive "
                                      "time",
                                      what, seconds, bytes));
    if (bytes <= 1024)
      small.push_back(seconds);
  }
  if (small.empty())
    return Error::usage(fmt::format(
        "{} has no size of at most 1 KiB to fit the latency to", what));
  return median(small);
}

/// "8 B", "64 KiB", "16 MiB".
std::string sizeText(double bytes) {
  if (bytes >= MiB)
    return fmt::format("{:g} MiB", bytes / MiB);
  if (bytes >= 1024)
    return fmt::format("{:g} KiB", bytes / 1024);
  return fmt::format("{:g} B", bytes);
}

/// One `kind` of nccl-tests' size `bytes` on f32 buffers `a` (send, or in
/// place) and `b` (receive): an all-gather's `bytes` is its result, a
/// reduce-scatter's its input, an all-to-all's each rank's buffer.
ErrorOr<void> runOnce(Communicator &comm, CollectiveKind kind, int64_t bytes,
                      float *a, float *b) {
  // The count rounds down to a multiple of the ranks (3 ranks, say), so that
  // every rank's block has the same size; it moves at most 4n bytes less.
  int64_t n = comm.size(), count = bytes / 4;
  if (kind != CollectiveKind::AllReduce && kind != CollectiveKind::Broadcast)
    count = count / n * n;
  switch (kind) {
  case CollectiveKind::AllReduce:
    return comm.allReduce(a, StorageType::F32, count, ReduceOp::Sum);
  case CollectiveKind::AllGather:
    return comm.allGather(a, b, StorageType::F32, count / n);
  case CollectiveKind::ReduceScatter:
    return comm.reduceScatter(a, b, StorageType::F32, count, ReduceOp::Sum);
  case CollectiveKind::AllToAll:
    return comm.allToAll(a, b, StorageType::F32, count / n);
  case CollectiveKind::Broadcast:
    return comm.broadcast(a, StorageType::F32, count, 0);
  }
  return {};
}

/// Seconds of one `kind` over `bytes`: the median of 7 samples (5 from
/// 4 MiB on, which keeps calibrate to seconds) after a warm-up one, each
/// the mean of back-to-back calls (many for small sizes, whose time is a
/// few microseconds), taken on the slowest rank. The call counts depend on
/// the size only, so every rank makes the same calls.
ErrorOr<double> timeCollective(Communicator &comm, CollectiveKind kind,
                               int64_t bytes, float *a, float *b) {
  int64_t reps = std::clamp<int64_t>((1 << 20) / bytes, 1, 64);
  int samplesWanted = bytes >= 4 * 1024 * 1024 ? 5 : 7;
  std::vector<double> samples;
  for (int s = -1; s < samplesWanted; ++s) {
    auto begin = std::chrono::steady_clock::now();
    for (int64_t r = 0; r < reps; ++r)
      if (auto ok = runOnce(comm, kind, bytes, a, b); !ok)
        return ok.error();
    std::chrono::duration<double> took =
        std::chrono::steady_clock::now() - begin;
    if (s >= 0)
      samples.push_back(took.count() / static_cast<double>(reps));
  }
  double seconds = median(samples);
  if (auto ok = comm.allReduce(&seconds, StorageType::F64, 1, ReduceOp::Max);
      !ok)
    return ok.error();
  return seconds;
}

/// The model against measurement: each kind timed at each of `sizes` and
/// modelled on `fabric`, one line each.
ErrorOr<std::string> checkLines(Communicator &comm, const FabricSpec &fabric,
                                const std::vector<int64_t> &sizes, float *a,
                                float *b) {
  std::string text =
      "  collective        size    measured    modelled  model/measured\n";
  for (CollectiveKind kind : collectiveKinds())
    for (int64_t bytes : sizes) {
      auto t = timeCollective(comm, kind, bytes, a, b);
      if (!t)
        return t.error();
      double model = collectiveSeconds(kind, static_cast<double>(bytes),
                                       comm.size(), fabric);
      text += fmt::format("  {:<15} {:>7} {:>8.1f} us {:>8.1f} us {:>10.2f}\n",
                          collectiveName(kind), sizeText(bytes), *t * 1e6,
                          model * 1e6, model / *t);
    }
  return text;
}

} // namespace

ErrorOr<FabricSpec>
fitFabric(const std::vector<std::pair<double, double>> &sweep, int64_t ranks) {
  if (ranks < 2)
    return Error::usage(
        fmt::format("a fabric is fitted on 2 ranks or more, not {}", ranks));
  auto latency = sweepLatency(sweep, "the all-reduce sweep");
  if (!latency)
    return latency.error();
  double alpha = *latency;
  std::vector<double> large;
  double factor = busFactor(CollectiveKind::AllReduce, ranks);
  for (auto [bytes, seconds] : sweep) {
    if (bytes < 16 * MiB)
      continue;
    if (!(seconds > alpha))
      return Error::usage(fmt::format(
          "the all-reduce of {} took {:.3g} us, no longer than the latency "
          "{:.3g} us of the smallest ones: the sweep is too noisy to fit",
          sizeText(bytes), seconds * 1e6, alpha * 1e6));
    large.push_back(factor * bytes / (seconds - alpha));
  }
  if (large.empty())
    return Error::usage("the all-reduce sweep has no size of at least 16 MiB "
                        "to fit the bus bandwidth to");
  return FabricSpec{
      "host", fmt::format("shared memory, measured on {} MPI ranks", ranks),
      alpha, median(large)};
}

ErrorOr<MeasuredCollective>
fitCollective(CollectiveKind kind,
              const std::vector<std::pair<double, double>> &sweep,
              int64_t ranks) {
  const char *name = collectiveName(kind);
  if (ranks < 2)
    return Error::usage(fmt::format(
        "a collective is fitted on 2 ranks or more, not {}", ranks));
  auto latency = sweepLatency(sweep, fmt::format("the {} sweep", name));
  if (!latency)
    return latency.error();
  MeasuredCollective m{kind, *latency, {}};
  double factor = busFactor(kind, ranks);
  for (auto [bytes, seconds] : sweep)
    if (bytes >= 4096 && seconds > m.latency)
      m.busBandwidth.push_back({bytes, factor * bytes / (seconds - m.latency)});
  std::sort(m.busBandwidth.begin(), m.busBandwidth.end());
  if (m.busBandwidth.empty())
    return Error::usage(fmt::format(
        "the {} sweep has no size of at least 4 KiB slower than its latency "
        "{:.3g} us: the sweep is too noisy to fit",
        name, m.latency * 1e6));
  if (std::string problem = measuredCollectiveProblem(m); !problem.empty())
    return Error::usage(
        fmt::format("the {} sweep does not fit: {}", name, problem));
  return m;
}

namespace {

/// Adds to `out` the sizes between `lo` and `hi` (bytes, seconds) where the
/// time bends (refineSweep), `depth` halvings deep already.
ErrorOr<void>
refineInterval(const std::function<ErrorOr<double>(int64_t)> &timeAt,
               double latency, std::pair<double, double> lo,
               std::pair<double, double> hi, int depth,
               std::vector<std::pair<double, double>> &out) {
  double mid = std::round(std::sqrt(lo.first * hi.first) / 64) * 64;
  if (depth >= maxRefineDepth || !(mid > lo.first && mid < hi.first))
    return {};
  auto t = timeAt(static_cast<int64_t>(mid));
  if (!t)
    return t.error();
  out.push_back({mid, *t});
  // The model's rule between two measured sizes: the time past the latency
  // linear in the size (Collectives.cpp's interpolation).
  double w = (mid - lo.first) / (hi.first - lo.first);
  double guess = lo.second + w * (hi.second - lo.second);
  if (std::abs((guess - latency) / (*t - latency) - 1) <= refineTolerance)
    return {};
  if (auto ok = refineInterval(timeAt, latency, lo, {mid, *t}, depth + 1, out);
      !ok)
    return ok;
  return refineInterval(timeAt, latency, {mid, *t}, hi, depth + 1, out);
}

} // namespace

ErrorOr<std::vector<std::pair<double, double>>>
refineSweep(const std::vector<std::pair<double, double>> &grid,
            const std::function<ErrorOr<double>(int64_t)> &timeAt) {
  auto latency = sweepLatency(grid, "the sweep to refine");
  if (!latency)
    return latency.error();
  std::vector<std::pair<double, double>> sorted = grid, out;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i + 1 < sorted.size(); ++i)
    if (sorted[i].first >= 4096)
      if (auto ok = refineInterval(timeAt, *latency, sorted[i], sorted[i + 1],
                                   0, out);
          !ok)
        return ok.error();
  return out;
}

ErrorOr<std::vector<int64_t>> parseByteSizes(const std::string &list) {
  std::vector<int64_t> out;
  for (size_t start = 0; start <= list.size();) {
    size_t comma = std::min(list.find(',', start), list.size());
    std::string item = list.substr(start, comma - start);
    start = comma + 1;
    size_t digits = 0;
    while (digits < item.size() && std::isdigit(item[digits]))
      ++digits;
    std::string unit = item.substr(digits);
    int64_t scale = unit == "B"     ? 1
                    : unit == "KiB" ? 1024
                    : unit == "MiB" ? 1024 * 1024
                                    : 0;
    int64_t bytes = digits > 0 && digits <= 9 && scale
                        ? std::stoll(item.substr(0, digits)) * scale
                        : 0;
    if (bytes < 64 || bytes > maxCheckBytes)
      return Error::usage(fmt::format(
          "'{}' is not a size from 64 B to 256 MiB: a whole number of B, "
          "KiB or MiB (48KiB,3MiB)",
          item));
    out.push_back(bytes);
  }
  return out;
}

int hostFabricRanks() {
  return std::thread::hardware_concurrency() >= 4 ? 4 : 2;
}

ErrorOr<std::string> runFabricRank() {
  auto world = mpiWorld();
  if (!world)
    return world.error();
  Communicator &comm = **world;
  int n = comm.size();
  if (n < 2)
    return Error::usage("calibrate under mpirun measures the fabric between "
                        "ranks, so it needs 2 ranks or more (mpirun -n 2 "
                        "einc calibrate)");
  int64_t largest = *std::max_element(gridBytes.begin(), gridBytes.end());
  std::vector<float> a(largest / 4), b(largest / 4);
  // sweeps[k][i]: (bytes, seconds) of kind k at gridBytes[i].
  std::vector<std::vector<std::pair<double, double>>> sweeps;
  FabricSpec fit;
  for (CollectiveKind kind : collectiveKinds()) {
    sweeps.emplace_back();
    for (int64_t bytes : gridBytes) {
      auto t = timeCollective(comm, kind, bytes, a.data(), b.data());
      if (!t)
        return t.error();
      sweeps.back().push_back({static_cast<double>(bytes), *t});
    }
    // The grid's times first (the table below reads them by index), then
    // the sizes refined between them.
    auto refined = refineSweep(sweeps.back(), [&](int64_t bytes) {
      return timeCollective(comm, kind, bytes, a.data(), b.data());
    });
    if (!refined)
      return refined.error();
    sweeps.back().insert(sweeps.back().end(), refined->begin(), refined->end());
    auto table = fitCollective(kind, sweeps.back(), n);
    if (!table)
      return table.error();
    if (kind == CollectiveKind::AllReduce) {
      auto allReduce = fitFabric(sweeps.back(), n);
      if (!allReduce)
        return allReduce.error();
      fit = *allReduce;
    }
    fit.measured.push_back(*table);
  }
  std::string text = fmt::format(
      "host fabric: {} on this machine's shared memory\n", comm.name());
  text += "  time per call (us; the slowest rank's median) and busbw "
          "(GB/s; busFactor x size / (time - latency)):\n";
  text += fmt::format("  {:>8}", "size");
  for (CollectiveKind kind : collectiveKinds())
    text += fmt::format(" {:>22}", collectiveName(kind));
  text += "\n";
  for (size_t i = 0; i < gridBytes.size(); ++i) {
    text += fmt::format("  {:>8}", sizeText(gridBytes[i]));
    for (size_t k = 0; k < sweeps.size(); ++k) {
      double seconds = sweeps[k][i].second;
      std::string busbw = "-";
      for (auto [bytes, bandwidth] : fit.measured[k].busBandwidth)
        if (bytes == sweeps[k][i].first)
          busbw = fmt::format("{:.3f}", bandwidth / 1e9);
      text += fmt::format(" {:>13.1f} {:>8}", seconds * 1e6, busbw);
    }
    text += "\n";
  }
  for (size_t k = 0; k < sweeps.size(); ++k) {
    std::vector<std::pair<double, double>> refined(
        sweeps[k].begin() + gridBytes.size(), sweeps[k].end());
    std::sort(refined.begin(), refined.end());
    std::string list;
    for (auto [bytes, seconds] : refined)
      list += fmt::format("{}{} {:.1f}", list.empty() ? "" : ", ",
                          sizeText(bytes), seconds * 1e6);
    text += fmt::format("  {} refined where the time bends (size us): {}\n",
                        collectiveName(fit.measured[k].kind),
                        list.empty() ? "none" : list);
  }
  text += fmt::format("  {:>8}", "latency");
  for (const MeasuredCollective &m : fit.measured)
    text += fmt::format(" {:>13.1f} {:>8}", m.latency * 1e6, "");
  text += "\n";
  text += fmt::format(
      "  all-reduce fit: latency {:.1f} us (median of 64 B-1 KiB), bus "
      "bandwidth {:.3g} GB/s (median busbw of 16-64 MiB, less the latency)\n",
      fit.latency * 1e6, fit.busBandwidth / 1e9);
  text += "  model against measurement at sizes not measured above (latency "
          "+ busFactor x size / busbw, the time linear in size between two "
          "measured sizes):\n";
  auto check = checkLines(comm, fit,
                          std::vector<int64_t>(std::begin(checkBytesDefault),
                                               std::end(checkBytesDefault)),
                          a.data(), b.data());
  if (!check)
    return check.error();
  text += *check;
  if (comm.rank() != 0)
    return std::string();
  // Rank 0 adds the fabric to the CPU figures already stored (a malformed
  // file is replaced).
  auto stored = readCalibration();
  Calibration c = stored ? *stored : Calibration{};
  c.fabricLatency = fit.latency;
  c.fabricBusBandwidth = fit.busBandwidth;
  c.fabricRanks = n;
  c.fabricSource =
      fmt::format("MPI, {} ranks, {} collectives from 64 B to 64 MiB", n,
                  collectiveKinds().size());
  c.fabricCollectives = fit.measured;
  if (auto ok = writeCalibration(c); !ok)
    return ok.error();
  return text;
}

ErrorOr<std::string> checkFabricRank(const std::vector<int64_t> &checkBytes) {
  auto world = mpiWorld();
  if (!world)
    return world.error();
  Communicator &comm = **world;
  int n = comm.size();
  // Every rank reads the stored fit, so every rank refuses alike.
  auto stored = readCalibration();
  if (!stored)
    return stored.error();
  if (stored->fabricCollectives.empty())
    return Error::usage(fmt::format(
        "calibrate --check compares with the host fabric's measured tables, "
        "and {} has none; run `mpirun -n {} einc calibrate` first",
        calibrationPath(), n));
  if (stored->fabricRanks != n)
    return Error::usage(fmt::format(
        "the host fabric in {} was measured on {} ranks and this job has {}; "
        "run `mpirun -n {} einc calibrate` first",
        calibrationPath(), stored->fabricRanks, n, n));
  auto fabric = resolveFabric("host");
  if (!fabric)
    return fabric.error();
  int64_t largest = *std::max_element(checkBytes.begin(), checkBytes.end());
  std::vector<float> a(largest / 4), b(largest / 4);
  auto check = checkLines(comm, *fabric, checkBytes, a.data(), b.data());
  if (!check)
    return check.error();
  if (comm.rank() != 0)
    return std::string();
  return fmt::format("host fabric check: {} against the model stored in {} "
                     "({})\n",
                     comm.name(), calibrationPath(), stored->fabricSource) +
         *check;
}

namespace {

std::string readAll(const std::string &path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// What the ranks said went wrong: the first `error:` line of `text` (a
/// rank's einc error), else its last line with a letter in it (mpirun ends
/// its own messages with a line of dashes).
std::string failureLine(const std::string &text) {
  std::istringstream lines(text);
  std::string line, lastWords;
  while (std::getline(lines, line)) {
    if (line.find("error:") != std::string::npos)
      return line;
    if (std::any_of(line.begin(), line.end(),
                    [](char c) { return std::isalpha(c) != 0; }))
      lastWords = line;
  }
  return lastWords;
}

} // namespace

std::string measureHostFabric(int ranks) {
  auto notMeasured = [](const std::string &why) {
    return fmt::format("host fabric:      not measured ({})\n", why);
  };
  if (!haveMPI())
    return notMeasured("this einc was built without MPI; install OpenMPI "
                       "(scripts/setup.sh: openmpi-bin, libopenmpi-dev) and "
                       "rebuild");
  auto mpirun = mpirunSelf(ranks);
  if (!mpirun)
    return notMeasured(mpirun.error().message);
  // The ranks' output goes to files: it is part of this command's text.
  char outPath[] = "/tmp/ein-calibrate-out-XXXXXX";
  char errPath[] = "/tmp/ein-calibrate-err-XXXXXX";
  int outFd = mkstemp(outPath), errFd = mkstemp(errPath);
  if (outFd < 0 || errFd < 0) {
    for (auto [fd, path] : {std::pair{outFd, outPath}, {errFd, errPath}})
      if (fd >= 0) {
        close(fd);
        unlink(path);
      }
    return notMeasured("cannot create a temporary file in /tmp");
  }
  std::vector<std::string> words = std::move(*mpirun);
  words.push_back("calibrate");
  std::vector<char *> argv;
  for (std::string &w : words)
    argv.push_back(w.data());
  argv.push_back(nullptr);
  // A rank that never arrives ends the job within a minute, not 300 s.
  std::vector<std::string> env;
  for (char **e = environ; *e; ++e)
    env.push_back(*e);
  if (!std::getenv("EIN_COMM_TIMEOUT"))
    env.push_back("EIN_COMM_TIMEOUT=60");
  std::vector<char *> envp;
  for (std::string &e : env)
    envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, outFd, 1);
  posix_spawn_file_actions_adddup2(&actions, errFd, 2);
  pid_t pid;
  int code =
      posix_spawnp(&pid, "mpirun", &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(outFd);
  close(errFd);
  int status = 0;
  if (code == 0)
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  std::string out = readAll(outPath), err = readAll(errPath);
  unlink(outPath);
  unlink(errPath);
  if (code != 0)
    return notMeasured(fmt::format("mpirun did not start: {}; install "
                                   "OpenMPI (scripts/setup.sh: openmpi-bin)",
                                   std::strerror(code)));
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return out;
  std::string why = failureLine(err + out);
  return notMeasured(fmt::format(
      "mpirun -n {} einc calibrate {}: {}", ranks,
      WIFEXITED(status) ? fmt::format("exited with {}", WEXITSTATUS(status))
                        : std::string("was killed by a signal"),
      why.empty() ? "no output" : why));
}

} // namespace ein
