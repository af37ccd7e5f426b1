// The `host` fabric and the calibration file: resolveFabric on stored files
// in a temporary XDG_CACHE_HOME (the table's entries, `host` measured, not
// measured and malformed, an unknown name), and fitFabric on sweeps made
// from a known latency and bus bandwidth with nccl-tests' formula.
#include "ein/Driver/Calibrate.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
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
  EXPECT_NE(noSmall.error().message.find("at most 512 B"), std::string::npos);
  auto noLarge = fitFabric({{8, 2e-6}, {4096, 5e-6}}, 2);
  ASSERT_FALSE(noLarge);
  EXPECT_NE(noLarge.error().message.find("at least 16 MiB"), std::string::npos);
  auto noisy = fitFabric({{8, 2e-6}, {16 * 1048576.0, 1e-6}}, 2);
  ASSERT_FALSE(noisy);
  EXPECT_NE(noisy.error().message.find("too noisy"), std::string::npos);
  EXPECT_FALSE(fitFabric({{8, 2e-6}, {16 * 1048576.0, 1e-2}}, 1));
}
