// Tests of the target registry (lookup by --target spelling and use, the
// refusals and "did you mean") and of Engine::compile through a target.
#include "ein/Engine/Engine.h"
#include "ein/Syntax/Parser.h"
#include "ein/Target/TargetRegistry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <set>

namespace ein {
namespace {

TEST(TargetRegistry, NamesAreUniqueAndEachTargetServesAUse) {
  std::set<std::string> names;
  for (const Target *t : targets()) {
    EXPECT_TRUE(names.insert(t->name()).second) << t->name();
    EXPECT_NE(t->uses(), 0u) << t->name();
    EXPECT_FALSE(t->supportedDTypes().empty()) << t->name();
  }
  // The four targets of docs/architecture.md §8.
  EXPECT_EQ(names, (std::set<std::string>{"cpu", "cpu-object", "cuda",
                                          "cuda-emulated"}));
}

TEST(TargetRegistry, OneSpellingNamesATargetPerUse) {
  auto run = lookupTarget("cpu", TargetUse::Run);
  ASSERT_TRUE(bool(run));
  EXPECT_EQ((*run)->name(), "cpu");
  auto build = lookupTarget("cpu", TargetUse::Build);
  ASSERT_TRUE(bool(build));
  EXPECT_EQ((*build)->name(), "cpu-object");
  auto report = lookupTarget("cuda", TargetUse::Report);
  ASSERT_TRUE(bool(report));
  EXPECT_EQ((*report)->name(), "cuda");
  EXPECT_EQ(targetFlags(TargetUse::Run),
            (std::vector<std::string>{"cpu", "cuda", "cuda-emulated"}));
  EXPECT_EQ(targetFlags(TargetUse::Build),
            (std::vector<std::string>{"cpu", "cuda"}));
}

TEST(TargetRegistry, UnknownSpellingsAreRefusedWithTheList) {
  auto emulatedBuild = lookupTarget("cuda-emulated", TargetUse::Build);
  ASSERT_FALSE(bool(emulatedBuild));
  EXPECT_EQ(emulatedBuild.error().kind, ErrorKind::Usage);
  EXPECT_EQ(emulatedBuild.error().message, "--target expects cpu or cuda");
  auto typo = lookupTarget("cuda-simulated", TargetUse::Run);
  ASSERT_FALSE(bool(typo));
  EXPECT_EQ(typo.error().message, "--target expects cpu, cuda or "
                                  "cuda-emulated; did you mean "
                                  "'cuda-emulated'?");
  auto empty = lookupTarget("", TargetUse::Report);
  ASSERT_FALSE(bool(empty));
  EXPECT_EQ(empty.error().message, "--target expects cpu or cuda");
}

TEST(TargetRegistry, AUseATargetDoesNotServeIsRefusedByName) {
  auto object = lookupTarget("cpu", TargetUse::Build);
  ASSERT_TRUE(bool(object));
  auto built = (*object)->build(CheckedModule{}, "f", TargetOptions{});
  ASSERT_FALSE(bool(built));
  EXPECT_EQ(built.error().message,
            "target 'cpu-object' does not build code to run here");
  auto jit = lookupTarget("cpu", TargetUse::Run);
  ASSERT_TRUE(bool(jit));
  auto files = (*jit)->buildFiles(CheckedModule{}, "f.ein", "f.o", "f.h",
                                  TargetOptions{});
  ASSERT_FALSE(bool(files));
  EXPECT_EQ(files.error().message, "target 'cpu' does not build files");
}

TEST(TargetEngine, CompilesThroughTheTargetOnceAndCallsIt) {
  SourceFile file{"target-test.ein", "def scale(x: f32[\"n\"]) -> f32[\"n\"]:\n"
                                     "    return x * 3.0\n"};
  DiagnosticEngine diags(file);
  Module module = parseModule(file, diags);
  ASSERT_FALSE(diags.hadError());
  Engine engine;
  auto checked = engine.check(file, module, {}, "scale");
  ASSERT_TRUE(bool(checked));
  auto bound = engine.bind(file, module, {}, *checked, "scale", {{4}},
                           Specialisation::Generic);
  ASSERT_TRUE(bool(bound)) << bound.error().message;
  auto target = lookupTarget("cpu", TargetUse::Run);
  ASSERT_TRUE(bool(target));
  auto callable =
      engine.compile(**target, file, bound->source, "scale", TargetOptions{});
  ASSERT_TRUE(bool(callable)) << callable.error().message;
  auto again =
      engine.compile(**target, file, bound->source, "scale", TargetOptions{});
  ASSERT_TRUE(bool(again));
  EXPECT_EQ(callable->get(), again->get());
  EXPECT_EQ(engine.compilations(), 1u);
  // bind with the target compiles through the same cache (another shape,
  // size-generic: the same code).
  auto compiled = engine.bind(file, module, {}, *checked, "scale", {{9}},
                              Specialisation::Generic, *target);
  ASSERT_TRUE(bool(compiled)) << compiled.error().message;
  EXPECT_EQ(compiled->callable.get(), callable->get());
  EXPECT_EQ(engine.compilations(), 1u);

  auto x = runtime::HostTensor::create(runtime::StorageType::F32, {4});
  auto y = runtime::HostTensor::create(runtime::StorageType::F32, {4});
  ASSERT_TRUE(x && y);
  auto *px = reinterpret_cast<float *>(x->data.data());
  for (int i = 0; i < 4; ++i)
    px[i] = float(i) - 1.5f;
  int64_t status = 7;
  auto called = (*callable)->call({&*x}, {&*y}, bound->dims, &status);
  ASSERT_TRUE(bool(called)) << called.error().message;
  EXPECT_EQ(status, 0);
  auto *py = reinterpret_cast<const float *>(y->data.data());
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(py[i], (float(i) - 1.5f) * 3.0f);
}

/// `scale` (x * 3) checked size-generic, for the tests below.
struct Scale {
  SourceFile file{"target-test.ein", "def scale(x: f32[\"n\"]) -> "
                                     "f32[\"n\"]:\n    return x * 3.0\n"};
  CheckedModule generic;
  Scale() {
    DiagnosticEngine diags(file);
    Module module = parseModule(file, diags);
    EXPECT_FALSE(diags.hadError());
    Engine engine;
    auto checked = engine.check(file, module, {}, "scale");
    EXPECT_TRUE(bool(checked));
    if (checked)
      generic = *checked;
  }
};

TEST(TargetEngine, CompileByKeyCachesByTheKeyAndTheCPU) {
  // A program with no source file (the C++ API's kernels): the caller's
  // key names it.
  Scale scale;
  auto target = lookupTarget("cpu", TargetUse::Run);
  ASSERT_TRUE(bool(target));
  Engine engine;
  auto first = engine.compile(**target, std::string("scale v1"), scale.generic,
                              "scale", TargetOptions{});
  ASSERT_TRUE(bool(first)) << first.error().message;
  auto again = engine.compile(**target, std::string("scale v1"), scale.generic,
                              "scale", TargetOptions{});
  ASSERT_TRUE(bool(again));
  EXPECT_EQ(first->get(), again->get());
  EXPECT_EQ(engine.compilations(), 1u);
  // Another key, or another CPU compiled for, is another compilation.
  auto other = engine.compile(**target, std::string("scale v2"), scale.generic,
                              "scale", TargetOptions{});
  ASSERT_TRUE(bool(other));
  EXPECT_NE(first->get(), other->get());
  TargetOptions baseline;
  baseline.cpu.target = {"x86-64", ""};
  auto generic = engine.compile(**target, std::string("scale v1"),
                                scale.generic, "scale", baseline);
  ASSERT_TRUE(bool(generic)) << generic.error().message;
  EXPECT_NE(first->get(), generic->get());
  EXPECT_EQ(engine.compilations(), 3u);

  std::vector<float> x = {-1.5f, 0.0f, 2.0f}, y(3, 0.0f);
  int64_t n = 3, stride = 1;
  StridedArgument args[] = {{x.data(), &n, &stride, 1},
                            {y.data(), &n, &stride, 1}};
  for (auto *callable : {first->get(), generic->get()}) {
    std::fill(y.begin(), y.end(), 0.0f);
    auto called = callable->callStrided(args, 2, nullptr, nullptr);
    ASSERT_TRUE(bool(called)) << called.error().message;
    EXPECT_EQ(y, (std::vector<float>{-4.5f, 0.0f, 6.0f}));
  }
}

TEST(TargetEngine, InProcessCUDALibraryRunsOnDevicePointers) {
  // cuda-emulated's in-process artifact: a shared library built by the
  // host compiler whose "device" memory is host memory. No disk cache for
  // the device support library outside a test's own directory.
  ::setenv("EIN_CACHE_DIR", "off", /*overwrite=*/0);
  Scale scale;
  auto target = lookupTarget("cuda-emulated", TargetUse::Run);
  ASSERT_TRUE(bool(target));
  TargetOptions options;
  options.inProcess = true;
  Engine engine;
  auto callable = engine.compile(**target, std::string("scale"), scale.generic,
                                 "scale", options);
  ASSERT_TRUE(bool(callable)) << callable.error().str("test");
  std::vector<float> x = {-1.5f, 0.0f, 2.0f, 4.0f}, y(4, 0.0f);
  int64_t n = 4, stride = 1;
  StridedArgument args[] = {{x.data(), &n, &stride, 1},
                            {y.data(), &n, &stride, 1}};
  auto called = (*callable)->callStrided(args, 2, nullptr, nullptr);
  ASSERT_TRUE(bool(called)) << called.error().message;
  EXPECT_EQ(y, (std::vector<float>{-4.5f, 0.0f, 6.0f, 12.0f}));
  // Sizes that do not match are the entry point's refusal, by name.
  int64_t m = 3;
  StridedArgument wrong[] = {{x.data(), &n, &stride, 1},
                             {y.data(), &m, &stride, 1}};
  auto refused = (*callable)->callStrided(wrong, 2, nullptr, nullptr);
  ASSERT_FALSE(bool(refused));
  EXPECT_NE(refused.error().message.find("refused its arguments"),
            std::string::npos)
      << refused.error().message;
  // Host tensors are refused by name: the library reads device memory.
  auto hx = runtime::HostTensor::create(runtime::StorageType::F32, {4});
  auto hy = runtime::HostTensor::create(runtime::StorageType::F32, {4});
  ASSERT_TRUE(hx && hy);
  auto onHost = (*callable)->call({&*hx}, {&*hy}, {{"n", 4}}, nullptr);
  ASSERT_FALSE(bool(onHost));
  EXPECT_NE(onHost.error().message.find("callStrided"), std::string::npos)
      << onHost.error().message;
  EXPECT_EQ(engine.compilations(), 1u);
}

} // namespace
} // namespace ein
