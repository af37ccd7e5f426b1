// Tests of the engine: size-generic executables compiled once and reused
// across shapes, specialised ones per shape, results against loop nests.
#include "ein/Engine/Engine.h"
#include "ein/Syntax/Parser.h"

#include <gtest/gtest.h>

#include <cmath>

namespace ein {
namespace {

const char *kSource = R"(def mm(a: f32["m k"], b: f32["k n"]) -> f32["m n"]:
    return einsum(a, b, "m k, k n -> m n")
)";

struct Fixture {
  SourceFile file{"engine-test.ein", kSource};
  Module module;
  Fixture() {
    DiagnosticEngine diags(file);
    module = parseModule(file, diags);
    EXPECT_FALSE(diags.hadError());
  }
  /// The symbolic check, then the binding to `shapes`.
  ErrorOr<BoundCall> bind(Engine &engine,
                          const std::vector<std::vector<int64_t>> &shapes,
                          Specialisation specialisation) {
    auto checked = engine.check(file, module, {}, "mm");
    EXPECT_TRUE(bool(checked));
    return engine.bind(file, module, {}, *checked, "mm", shapes,
                       specialisation);
  }
};

runtime::HostTensor filled(int64_t rows, int64_t cols, float scale) {
  auto t = runtime::HostTensor::create(runtime::StorageType::F32, {rows, cols});
  EXPECT_TRUE(bool(t));
  auto *p = reinterpret_cast<float *>(t->data.data());
  for (int64_t i = 0; i < rows * cols; ++i)
    p[i] = scale * static_cast<float>((i * 7) % 13) - 3.0f;
  return std::move(*t);
}

/// Calls `call` on an m x k by k x n product and compares with a loop nest.
void expectMatmul(const BoundCall &call, int64_t m, int64_t k, int64_t n) {
  auto a = filled(m, k, 0.5f), b = filled(k, n, 0.25f);
  ASSERT_EQ(call.resultShapes.size(), 1u);
  EXPECT_EQ(call.resultShapes[0], (std::vector<int64_t>{m, n}));
  auto c = runtime::HostTensor::create(runtime::StorageType::F32, {m, n});
  ASSERT_TRUE(bool(c));
  auto called = call.call({&a, &b}, {&*c});
  ASSERT_TRUE(bool(called)) << called.error().message;
  auto *pa = reinterpret_cast<const float *>(a.data.data());
  auto *pb = reinterpret_cast<const float *>(b.data.data());
  auto *pc = reinterpret_cast<const float *>(c->data.data());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double ref = 0;
      for (int64_t p = 0; p < k; ++p)
        ref += double(pa[i * k + p]) * pb[p * n + j];
      EXPECT_NEAR(pc[i * n + j], ref, 1e-3) << i << "," << j;
    }
}

TEST(EngineTest, SizeGenericCompilesOnceForEveryShape) {
  Fixture f;
  Engine engine;
  for (auto [m, k, n] : {std::tuple{3, 5, 7}, {17, 4, 9}, {1, 33, 2}}) {
    auto call = f.bind(engine, {{m, k}, {k, n}}, Specialisation::Generic);
    ASSERT_TRUE(bool(call)) << call.error().message;
    expectMatmul(*call, m, k, n);
  }
  EXPECT_EQ(engine.compilations(), 1u);
}

TEST(EngineTest, SpecialisedCompilesOncePerShape) {
  Fixture f;
  Engine engine;
  for (auto [m, k, n] : {std::tuple{3, 5, 7}, {17, 4, 9}, {3, 5, 7}}) {
    auto call = f.bind(engine, {{m, k}, {k, n}}, Specialisation::Sizes);
    ASSERT_TRUE(bool(call)) << call.error().message;
    expectMatmul(*call, m, k, n);
  }
  EXPECT_EQ(engine.compilations(), 2u); // the third call reuses the first
}

TEST(EngineTest, InputsThatDoNotBindAreUsageErrors) {
  Fixture f;
  Engine engine;
  auto call = f.bind(engine, {{3, 5}, {4, 7}}, Specialisation::Generic);
  ASSERT_FALSE(bool(call));
  EXPECT_EQ(call.error().kind, ErrorKind::Usage);
  EXPECT_EQ(engine.compilations(), 0u);
  auto missing = engine.check(f.file, f.module, {}, "nope");
  ASSERT_FALSE(bool(missing));
  EXPECT_NE(missing.error().message.find("no function named 'nope'"),
            std::string::npos);
}

} // namespace
} // namespace ein
