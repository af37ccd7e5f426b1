// Tests of the target registry (lookup by --target spelling and use, the
// refusals and "did you mean") and of Engine::compile through a target.
#include "ein/Engine/Engine.h"
#include "ein/Syntax/Parser.h"
#include "ein/Target/TargetRegistry.h"

#include <gtest/gtest.h>

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

} // namespace
} // namespace ein
