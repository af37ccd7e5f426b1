// The fabric part of `einc calibrate` (docs/distributed.md §5): an MPI job of
// this einc times all-reduce from 8 B to 64 MiB through the MPI
// communicator, fits nccl-tests' model (alpha + busFactor * S / B) and
// checks it against all-reduce, all-gather, reduce-scatter and all-to-all.
#include "CalibrateFabric.h"
#include "ein/Runtime/Communicator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
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
/// The all-reduces of the sweep, 8 B by factors of 8, then 64 MiB (which
/// sizes the buffers).
const int64_t sweepBytes[] = {8,      64,      512,      4096,    32768,
                              262144, 2097152, 16777216, 67108864};
const int64_t sweepMaxBytes = 67108864;
/// The sizes the model is checked at (nccl-tests' size S of each).
const int64_t checkBytes[] = {64 * 1024, 1024 * 1024, 16 * 1024 * 1024};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
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

/// Seconds of one `kind` over `bytes`: the median of 7 samples after a
/// warm-up one, each the mean of back-to-back calls (many for small sizes,
/// whose time is a few microseconds), taken on the slowest rank. The call
/// counts depend on the size only, so every rank makes the same calls.
ErrorOr<double> timeCollective(Communicator &comm, CollectiveKind kind,
                               int64_t bytes, float *a, float *b) {
  int64_t reps = std::clamp<int64_t>((1 << 20) / bytes, 1, 64);
  std::vector<double> samples;
  for (int s = -1; s < 7; ++s) {
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

} // namespace

ErrorOr<FabricSpec>
fitFabric(const std::vector<std::pair<double, double>> &sweep, int64_t ranks) {
  if (ranks < 2)
    return Error::usage(
        fmt::format("a fabric is fitted on 2 ranks or more, not {}", ranks));
  std::vector<double> small, large;
  for (auto [bytes, seconds] : sweep) {
    if (!(seconds > 0) || !(bytes > 0))
      return Error::usage(fmt::format(
          "the all-reduce sweep has {} s for {} B: not a positive time",
          seconds, bytes));
    if (bytes <= 512)
      small.push_back(seconds);
  }
  if (small.empty())
    return Error::usage("the all-reduce sweep has no size of at most 512 B "
                        "to fit the latency to");
  double alpha = median(small);
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
  std::vector<float> a(sweepMaxBytes / 4), b(sweepMaxBytes / 4);
  std::vector<std::pair<double, double>> sweep;
  for (int64_t bytes : sweepBytes) {
    auto t = timeCollective(comm, CollectiveKind::AllReduce, bytes, a.data(),
                            b.data());
    if (!t)
      return t.error();
    sweep.push_back({static_cast<double>(bytes), *t});
  }
  auto fit = fitFabric(sweep, n);
  if (!fit)
    return fit.error();
  std::string text = fmt::format(
      "host fabric: {} on this machine's shared memory\n", comm.name());
  text += "  all-reduce     size       time   busbw (GB/s)\n";
  double factor = busFactor(CollectiveKind::AllReduce, n);
  for (auto [bytes, seconds] : sweep)
    text += fmt::format("  {:>15} {:>10.1f} us {:>8.3f}\n", sizeText(bytes),
                        seconds * 1e6, factor * bytes / seconds / 1e9);
  text += fmt::format(
      "  fit: latency {:.1f} us (median of 8-512 B), bus bandwidth {:.3g} "
      "GB/s (median busbw of 16-64 MiB, less the latency)\n",
      fit->latency * 1e6, fit->busBandwidth / 1e9);
  text += "  model against measurement (latency + busFactor x size / "
          "bandwidth):\n";
  text += "  collective        size    measured    modelled  model/measured\n";
  for (CollectiveKind kind :
       {CollectiveKind::AllReduce, CollectiveKind::AllGather,
        CollectiveKind::ReduceScatter, CollectiveKind::AllToAll})
    for (int64_t bytes : checkBytes) {
      auto t = timeCollective(comm, kind, bytes, a.data(), b.data());
      if (!t)
        return t.error();
      double model =
          collectiveSeconds(kind, static_cast<double>(bytes), n, *fit);
      text += fmt::format("  {:<15} {:>6} {:>8.1f} us {:>8.1f} us {:>10.2f}\n",
                          collectiveName(kind), sizeText(bytes), *t * 1e6,
                          model * 1e6, model / *t);
    }
  if (comm.rank() != 0)
    return std::string();
  // Rank 0 adds the fabric to the CPU figures already stored (a malformed
  // file is replaced).
  auto stored = readCalibration();
  Calibration c = stored ? *stored : Calibration{};
  c.fabricLatency = fit->latency;
  c.fabricBusBandwidth = fit->busBandwidth;
  c.fabricRanks = n;
  c.fabricSource = fmt::format("MPI, {} ranks, all-reduce 8 B to 64 MiB", n);
  if (auto ok = writeCalibration(c); !ok)
    return ok.error();
  return text;
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
  char self[4096];
  ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
  if (length <= 0)
    return notMeasured("cannot find this einc's own path to launch it");
  self[length] = 0;
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
  std::vector<std::string> words = {"mpirun", "-n", std::to_string(ranks),
                                    "--oversubscribe"};
  if (geteuid() == 0)
    words.push_back("--allow-run-as-root");
  words.push_back(self);
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
