// The `host` fabric and the calibration file: resolveFabric on stored files
// in a temporary XDG_CACHE_HOME (the table's entries, `host` measured with
// and without its per-collective tables, not measured and malformed, an
// unknown name), fitFabric and fitCollective on sweeps made from a known
// latency and bus bandwidth with nccl-tests' formula, and --check's sizes.
#include "ein/Driver/Calibrate.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

using namespace ein;

namespace {

/// Points XDG_CACHE_HOME at a fresh directory for one test.
class CalibrationFileTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (const char *old = std::getenv("XDG_CACHE_HOME"))
      saved = old, hadOld = true;
    char dir[] = "/tmp/ein-calibrate-test-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    root = dir;
    setenv("XDG_CACHE_HOME", root.c_str(), 1);
  }
  void TearDown() override {
    unlink(calibrationPath().c_str());
    rmdir((root + "/ein").c_str());
    rmdir(root.c_str());
    if (hadOld)
      setenv("XDG_CACHE_HOME", saved.c_str(), 1);
    else
      unsetenv("XDG_CACHE_HOME");
  }
  void store(const std::string &json) {
    mkdir((root + "/ein").c_str(), 0755);
    std::ofstream(calibrationPath()) << json;
  }
  std::string root, saved;
  bool hadOld = false;
};

const char *cpuFigures =
    R"("peak_flops_f32": 3.3e11, "bandwidth": 3.6e10, )"
    R"("ein_matmul_flops_f32": 1.5e11, "peak_source": "2 cores")";

} // namespace

TEST_F(CalibrationFileTest, TableFabricsResolveWithoutAFile) {
  for (const FabricSpec &entry : fabricTable()) {
    auto spec = resolveFabric(entry.name);
    ASSERT_TRUE(spec) << spec.error().message;
    EXPECT_EQ(spec->name, entry.name);
    EXPECT_EQ(spec->latency, entry.latency);
    EXPECT_EQ(spec->busBandwidth, entry.busBandwidth);
  }
}

TEST_F(CalibrationFileTest, UnknownFabricListsEveryName) {
  auto spec = resolveFabric("nvlink-h300");
  ASSERT_FALSE(spec);
  EXPECT_NE(spec.error().message.find("unknown fabric 'nvlink-h300'"),
            std::string::npos);
  for (const FabricSpec &entry : fabricTable())
    EXPECT_NE(spec.error().message.find(entry.name), std::string::npos)
        << spec.error().message;
  EXPECT_NE(spec.error().message.find(", host"), std::string::npos);
}

TEST_F(CalibrationFileTest, HostWithoutCalibrationNamesTheCommand) {
  auto spec = resolveFabric("host");
  ASSERT_FALSE(spec);
  EXPECT_NE(spec.error().message.find("run `einc calibrate`"),
            std::string::npos)
      << spec.error().message;
}

TEST_F(CalibrationFileTest, OldFileLoadsButHasNoHostFabric) {
  store(std::string("{") + cpuFigures + "}\n");
  auto cpu = loadCalibration();
  ASSERT_TRUE(cpu);
  EXPECT_EQ(cpu->peakFlops, 3.3e11);
  EXPECT_EQ(cpu->description, "2 cores");
  auto spec = resolveFabric("host");
  ASSERT_FALSE(spec);
  EXPECT_NE(spec.error().message.find("has not been measured"),
            std::string::npos);
  EXPECT_NE(spec.error().message.find("einc calibrate"), std::string::npos);
}

TEST_F(CalibrationFileTest, HostFabricIsTheStoredOne) {
  store(std::string("{") + cpuFigures +
        R"(, "host_fabric_latency_s": 2.5e-06, )"
        R"("host_fabric_bus_bandwidth": 1.25e9, "host_fabric_ranks": 2, )"
        R"("host_fabric_source": "MPI, 2 ranks"})"
        "\n");
  auto spec = resolveFabric("host");
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(spec->name, "host");
  EXPECT_EQ(spec->latency, 2.5e-6);
  EXPECT_EQ(spec->busBandwidth, 1.25e9);
  EXPECT_NE(spec->description.find("MPI, 2 ranks"), std::string::npos);
  // 1 MiB all-reduced over 2 ranks: 2.5 us + 1 * 1048576 B / 1.25 GB/s.
  EXPECT_NEAR(collectiveSeconds(CollectiveKind::AllReduce, 1048576, 2, *spec),
              2.5e-6 + 1048576 / 1.25e9, 1e-15);
  // The CPU figures beside it still load.
  auto cpu = loadCalibration();
  ASSERT_TRUE(cpu);
  EXPECT_EQ(cpu->bandwidth, 3.6e10);
  EXPECT_EQ(cpu->fabricRanks, 2);
}

TEST_F(CalibrationFileTest, MalformedFabricFiguresAreRefusedByName) {
  struct Case {
    const char *fields, *key, *written;
  } cases[] = {
      {R"("host_fabric_latency_s": -1e-06, "host_fabric_bus_bandwidth": 1e9)",
       "host_fabric_latency_s", "-1e-06"},
      {R"("host_fabric_latency_s": 1e-06, "host_fabric_bus_bandwidth": "fast")",
       "host_fabric_bus_bandwidth", "\"fast\""},
      {R"("host_fabric_latency_s": 1e-06, "host_fabric_bus_bandwidth": 0)",
       "host_fabric_bus_bandwidth", "0"},
      {R"("host_fabric_latency_s": nan, "host_fabric_bus_bandwidth": 1e9)",
       "host_fabric_latency_s", "nan"},
      {R"("host_fabric_latency_s": 1e-06)", "host_fabric_bus_bandwidth",
       "only one of"},
  };
  for (const Case &c : cases) {
    store(std::string("{") + cpuFigures + ", " + c.fields + "}\n");
    auto spec = resolveFabric("host");
    ASSERT_FALSE(spec) << c.fields;
    const std::string &message = spec.error().message;
    EXPECT_NE(message.find(c.key), std::string::npos) << message;
    EXPECT_NE(message.find(c.written), std::string::npos) << message;
    EXPECT_NE(message.find("einc calibrate"), std::string::npos) << message;
    // A malformed file is refused as a whole, as before the fabric.
    EXPECT_FALSE(loadCalibration()) << c.fields;
    // The table's fabrics do not read the file.
    EXPECT_TRUE(resolveFabric("pcie5"));
  }
}

TEST(FitFabricTest, RecoversLatencyAndBandwidthOfAnExactSweep) {
  const double alpha = 2e-6, bandwidth = 3e9;
  for (int64_t ranks : {2, 4}) {
    double factor = 2.0 * (ranks - 1) / ranks; // all-reduce, by hand
    std::vector<std::pair<double, double>> sweep;
    for (double bytes = 8; bytes <= 64 * 1048576.0; bytes *= 8)
      sweep.push_back({bytes, alpha + factor * bytes / bandwidth});
    sweep.push_back(
        {64 * 1048576.0, alpha + factor * 64 * 1048576.0 / bandwidth});
    auto fit = fitFabric(sweep, ranks);
    ASSERT_TRUE(fit) << fit.error().message;
    // alpha is the 64 B all-reduce's time (the median of 8, 64, 512 B),
    // which carries 64 B of transfer: within 2%.
    EXPECT_NEAR(fit->latency, alpha + factor * 64 / bandwidth, 1e-15);
    EXPECT_NEAR(fit->busBandwidth, bandwidth, bandwidth * 1e-3);
  }
}

TEST(FitFabricTest, RefusesSweepsItCannotFit) {
  auto noSmall = fitFabric({{1048576.0 * 16, 0.01}}, 2);
  ASSERT_FALSE(noSmall);
  EXPECT_NE(noSmall.error().message.find("at most 1 KiB"), std::string::npos);
  auto noLarge = fitFabric({{8, 2e-6}, {4096, 5e-6}}, 2);
  ASSERT_FALSE(noLarge);
  EXPECT_NE(noLarge.error().message.find("at least 16 MiB"), std::string::npos);
  auto noisy = fitFabric({{8, 2e-6}, {16 * 1048576.0, 1e-6}}, 2);
  ASSERT_FALSE(noisy);
  EXPECT_NE(noisy.error().message.find("too noisy"), std::string::npos);
  EXPECT_FALSE(fitFabric({{8, 2e-6}, {16 * 1048576.0, 1e-2}}, 1));
}

namespace {

/// A host fabric's five tables, as calibrate writes them: each kind's
/// latency 1-5 us and busbw 1 GB/s at 4 KiB, 3 GB/s at 1 MiB.
std::string storedTables() {
  std::string out = R"("host_fabric_collectives": {)";
  const char *names[] = {"all-reduce", "all-gather", "reduce-scatter",
                         "all-to-all", "broadcast"};
  for (int k = 0; k < 5; ++k)
    out += std::string(k ? ", " : "") + "\"" + names[k] +
           "\": {\"latency_s\": " + std::to_string(k + 1) +
           "e-06, \"busbw\": [[4096, 1e9], [1048576, 3e9]]}";
  return out + "}";
}

const char *hostFigures =
    R"(, "host_fabric_latency_s": 1e-06, "host_fabric_bus_bandwidth": 2e9, )"
    R"("host_fabric_ranks": 2, "host_fabric_source": "MPI, 2 ranks", )";

} // namespace

TEST_F(CalibrationFileTest, HostFabricCarriesItsTables) {
  store(std::string("{") + cpuFigures + hostFigures + storedTables() + "}\n");
  auto spec = resolveFabric("host");
  ASSERT_TRUE(spec) << spec.error().message;
  // The single (alpha, B) stays for whoever reads it.
  EXPECT_EQ(spec->latency, 1e-6);
  EXPECT_EQ(spec->busBandwidth, 2e9);
  ASSERT_EQ(spec->measured.size(), collectiveKinds().size());
  const MeasuredCollective *rs =
      findMeasured(*spec, CollectiveKind::ReduceScatter);
  ASSERT_NE(rs, nullptr);
  EXPECT_EQ(rs->latency, 3e-6);
  // 64 KiB is 61440/1044480 = 1/17 of the way from 4 KiB (4.096 us per
  // unit of bus factor at 1 GB/s) to 1 MiB (349.525 us at 3 GB/s): 4.096 +
  // 345.429 / 17 = 24.4154 us; reduce-scattered over 2 ranks: 3 us + 0.5 *
  // 24.4154 us = 15.2077 us.
  double unit = 4.096e-6 + (1048576 / 3e9 - 4.096e-6) / 17;
  EXPECT_NEAR(unit, 24.4154e-6, 1e-10);
  EXPECT_NEAR(collectiveSeconds(CollectiveKind::ReduceScatter, 65536, 2, *spec),
              3e-6 + 0.5 * unit, 1e-15);
  // All-reduce: 1 us + 1 * 24.4154 us.
  EXPECT_NEAR(collectiveSeconds(CollectiveKind::AllReduce, 65536, 2, *spec),
              1e-6 + unit, 1e-15);
  auto stored = readCalibration();
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->fabricCollectives.size(), collectiveKinds().size());
}

TEST_F(CalibrationFileTest, HostFabricWithoutTablesIsAlphaAndB) {
  // A file written before the tables: every kind on (alpha, B).
  store(std::string("{") + cpuFigures +
        R"(, "host_fabric_latency_s": 1e-06, )"
        R"("host_fabric_bus_bandwidth": 2e9})"
        "\n");
  auto spec = resolveFabric("host");
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_TRUE(spec->measured.empty());
  // 1 us + 0.5 * 65536 B / 2 GB/s = 17.384 us.
  EXPECT_NEAR(collectiveSeconds(CollectiveKind::AllGather, 65536, 2, *spec),
              17.384e-6, 1e-15);
}

TEST_F(CalibrationFileTest, MalformedTablesAreRefusedByName) {
  std::string good = storedTables();
  auto replaced = [&](const std::string &from, const std::string &to) {
    std::string out = good;
    out.replace(out.find(from), from.size(), to);
    return out;
  };
  struct Case {
    std::string tables, expected;
  } cases[] = {
      {R"("host_fabric_collectives": 3)", "not a JSON object"},
      {R"("host_fabric_collectives": {"all-reduce": {)", "not a JSON object"},
      {replaced("\"broadcast\": {\"latency_s\": 5e-06, \"busbw\": [[4096, "
                "1e9], [1048576, 3e9]]}",
                "\"broadcast \": {}"),
       "unknown collective \"broadcast \""},
      {replaced(", \"broadcast\": {\"latency_s\": 5e-06, \"busbw\": [[4096, "
                "1e9], [1048576, 3e9]]}",
                ""),
       "has no object for broadcast"},
      {replaced("\"latency_s\": 3e-06", "\"latency_s\": -3e-06"),
       "reduce-scatter: its latency"},
      {replaced(
           "\"all-to-all\": {\"latency_s\": 4e-06, \"busbw\": [[4096, 1e9]",
           "\"all-to-all\": {\"latency_s\": 4e-06, \"busbw\": [[4096]"),
       "all-to-all: a \"busbw\" entry is not a pair"},
      {replaced(
           "\"all-gather\": {\"latency_s\": 2e-06, \"busbw\": [[4096, 1e9], "
           "[1048576, 3e9]]",
           "\"all-gather\": {\"latency_s\": 2e-06, \"busbw\": [[1048576, "
           "1e9], [4096, 3e9]]"),
       "all-gather: its sizes are not ascending"},
      {replaced("\"broadcast\": {\"latency_s\": 5e-06, \"busbw\": [[4096, 1e9]",
                "\"broadcast\": {\"latency_s\": 5e-06, \"busbw\": [[4096, 0]"),
       "broadcast: its entry"},
      {replaced("\"broadcast\": {\"latency_s\": 5e-06, \"busbw\": [[4096, "
                "1e9], [1048576, 3e9]]",
                "\"broadcast\": {\"latency_s\": 5e-06, \"busbw\": []"),
       "broadcast: it has no measured size"},
  };
  for (const Case &c : cases) {
    store(std::string("{") + cpuFigures + hostFigures + c.tables + "}\n");
    auto spec = resolveFabric("host");
    ASSERT_FALSE(spec) << c.tables;
    const std::string &message = spec.error().message;
    EXPECT_NE(message.find("\"host_fabric_collectives\""), std::string::npos)
        << message;
    EXPECT_NE(message.find(c.expected), std::string::npos) << message;
    EXPECT_NE(message.find("einc calibrate"), std::string::npos) << message;
    EXPECT_FALSE(loadCalibration()) << c.tables;
  }
  // Tables without the fabric's (alpha, B) are refused too.
  store(std::string("{") + cpuFigures + ", " + good + "}\n");
  auto orphan = resolveFabric("host");
  ASSERT_FALSE(orphan);
  EXPECT_NE(orphan.error().message.find("without \"host_fabric_latency_s\""),
            std::string::npos)
      << orphan.error().message;
}

TEST(FitFabricTest, CollectiveTableOfAnExactSweep) {
  // Latency-bound calls up to 1 KiB take 3 us; from 4 KiB on the time is
  // 3 us + busFactor * S / bw(S) with bw 1, 2, ... GB/s, so the table is
  // bw at each size, exactly; a 4 KiB call no slower than the latency is
  // left out.
  const double latency = 3e-6;
  for (int64_t ranks : {2, 4}) {
    double factor = (ranks - 1.0) / ranks; // all-gather, by hand
    std::vector<std::pair<double, double>> sweep = {
        {64, latency}, {256, latency}, {1024, latency}, {4096, latency}};
    std::vector<std::pair<double, double>> expected;
    double bw = 1e9;
    for (double bytes = 16384; bytes <= 67108864; bytes *= 4, bw += 1e9) {
      sweep.push_back({bytes, latency + factor * bytes / bw});
      expected.push_back({bytes, bw});
    }
    auto m = fitCollective(CollectiveKind::AllGather, sweep, ranks);
    ASSERT_TRUE(m) << m.error().message;
    EXPECT_EQ(m->latency, latency);
    ASSERT_EQ(m->busBandwidth.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(m->busBandwidth[i].first, expected[i].first);
      EXPECT_NEAR(m->busBandwidth[i].second, expected[i].second, 1e-3);
    }
  }
  auto noLatency = fitCollective(CollectiveKind::AllToAll, {{4096, 5e-6}}, 2);
  ASSERT_FALSE(noLatency);
  EXPECT_NE(noLatency.error().message.find("all-to-all sweep has no size of "
                                           "at most 1 KiB"),
            std::string::npos);
  auto allBound =
      fitCollective(CollectiveKind::Broadcast, {{64, 5e-6}, {4096, 4e-6}}, 2);
  ASSERT_FALSE(allBound);
  EXPECT_NE(allBound.error().message.find("too noisy"), std::string::npos);
}

/// An all-reduce whose time steps up at 30 MiB, as MPI's on 2 ranks of
/// the project's machine does (bench/README.md): 2 us + S / 1.5 GB/s below,
/// 2 us + S / 0.75 GB/s from there.
double steppedAllReduce(int64_t bytes) {
  return 2e-6 + double(bytes) / (bytes < 30 * 1048576 ? 1.5e9 : 0.75e9);
}

std::vector<std::pair<double, double>>
gridSweep(const std::function<double(int64_t)> &seconds) {
  std::vector<std::pair<double, double>> grid;
  for (int64_t bytes = 64; bytes <= 64 * 1048576; bytes *= 2)
    grid.push_back({double(bytes), bytes <= 1024 ? 2e-6 : seconds(bytes)});
  return grid;
}

TEST(RefineSweepTest, PlacesAStepBetweenGridSizes) {
  std::vector<std::pair<double, double>> grid = gridSweep(steppedAllReduce);
  std::vector<int64_t> asked;
  auto refined = refineSweep(grid, [&](int64_t bytes) -> ErrorOr<double> {
    asked.push_back(bytes);
    return steppedAllReduce(bytes);
  });
  ASSERT_TRUE(refined) << refined.error().message;
  ASSERT_EQ(refined->size(), asked.size());
  // One midpoint per interval from 4 KiB (14 of them), and deeper only
  // toward the step: 16-32 MiB's midpoint 22.6 MiB misses, so 19 and
  // 26.9 MiB are timed; 26.9 misses, so 24.7 and 29.3 MiB (the last
  // halving). Every size is a multiple of 64 B and none 1.5 x 2^k.
  EXPECT_EQ(asked.size(), 14u + 4u);
  for (int64_t bytes : asked) {
    EXPECT_EQ(bytes % 64, 0) << bytes;
    for (int64_t k = 4096; k <= 64 * 1048576; k *= 2)
      EXPECT_NE(bytes, k + k / 2) << bytes;
  }
  auto fit = [](const std::vector<std::pair<double, double>> &sweep) {
    auto m = fitCollective(CollectiveKind::AllReduce, sweep, 2);
    EXPECT_TRUE(m) << m.error().message;
    return FabricSpec{"host", "test", m->latency, 1e9, {*m}};
  };
  std::vector<std::pair<double, double>> both = grid;
  both.insert(both.end(), refined->begin(), refined->end());
  FabricSpec gridOnly = fit(grid), withRefined = fit(both);
  // 24 MiB: from 16 and 32 MiB alone the model is 1.6x long; refined,
  // it is interpolated between sizes on the step's lower side (exact).
  double truth = steppedAllReduce(24 * 1048576);
  EXPECT_GT(
      collectiveSeconds(CollectiveKind::AllReduce, 24 * 1048576, 2, gridOnly),
      1.5 * truth);
  EXPECT_NEAR(collectiveSeconds(CollectiveKind::AllReduce, 24 * 1048576, 2,
                                withRefined) /
                  truth,
              1.0, 1e-9);
  // Exact on either side of the last halving, 29.3-32 MiB, which holds
  // the step (inside it, the interpolation spans the step).
  for (int64_t bytes : {28 * 1048576, 40 * 1048576})
    EXPECT_NEAR(
        collectiveSeconds(CollectiveKind::AllReduce, bytes, 2, withRefined) /
            steppedAllReduce(bytes),
        1.0, 1e-9)
        << bytes;
}

TEST(RefineSweepTest, StraightLineIsTimedOncePerIntervalAndErrorsPass) {
  auto line = [](int64_t bytes) { return 2e-6 + double(bytes) / 2e9; };
  int calls = 0;
  auto refined = refineSweep(gridSweep(line), [&](int64_t bytes) {
    ++calls;
    return ErrorOr<double>(line(bytes));
  });
  ASSERT_TRUE(refined) << refined.error().message;
  EXPECT_EQ(calls, 14);
  auto failed = refineSweep(gridSweep(line), [](int64_t) -> ErrorOr<double> {
    return Error::usage("rank 1 never arrived");
  });
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().message, "rank 1 never arrived");
  auto noLatency = refineSweep({{4096, 1e-5}, {8192, 2e-5}},
                               [](int64_t) { return ErrorOr<double>(1.0); });
  ASSERT_FALSE(noLatency);
  EXPECT_NE(noLatency.error().message.find("no size of at most 1 KiB"),
            std::string::npos);
}

TEST(ByteSizesTest, ParsesAndRefusesByItem) {
  auto sizes = parseByteSizes("48KiB,3MiB,100B");
  ASSERT_TRUE(sizes) << sizes.error().message;
  EXPECT_EQ(*sizes, (std::vector<int64_t>{49152, 3145728, 100}));
  for (const char *bad : {"48kb", "3MiB,", "32B", "512MiB", "KiB", "1.5MiB"}) {
    auto refused = parseByteSizes(bad);
    EXPECT_FALSE(refused) << bad;
  }
  auto named = parseByteSizes("48KiB,2GiB");
  ASSERT_FALSE(named);
  EXPECT_NE(named.error().message.find("'2GiB'"), std::string::npos);
}
