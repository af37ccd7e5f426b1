// A function compiled with its mesh's collectives inside
// (TargetOptions::mesh, ein-mesh-to-calls): a matmul whose result is
// all-reduced over a mesh axis of 2 simulated ranks equals twice the loop
// nest's product (each rank holds the same inputs); called outside a rank's
// CollectiveScope it refuses, and a target that does not compile
// collectives is refused by name.
#include "ein/Engine/Engine.h"
#include "ein/MLIRGen/MLIRGen.h"
#include "ein/Runtime/CollectiveCalls.h"
#include "ein/Runtime/Communicator.h"
#include "ein/Syntax/Parser.h"
#include "ein/Target/TargetRegistry.h"

#include <gtest/gtest.h>

#include <thread>

namespace ein {
namespace {

const char *kSource = R"(def mm(a: f32["m k"], b: f32["k n"]) -> f32["m n"]:
    return einsum(a, b, "m k, k n -> m n")
)";

runtime::HostTensor filled(int64_t rows, int64_t cols, float scale) {
  auto t = runtime::HostTensor::create(runtime::StorageType::F32, {rows, cols});
  EXPECT_TRUE(bool(t));
  auto *p = reinterpret_cast<float *>(t->data.data());
  for (int64_t i = 0; i < rows * cols; ++i)
    p[i] = scale * static_cast<float>((i * 7) % 13) - 3.0f;
  return std::move(*t);
}

struct Compiled {
  Engine engine;
  SourceFile file{"collectives-test.ein", kSource};
  Module module;
  std::optional<BoundCall> bound;
  std::shared_ptr<const MeshProgram> mesh;

  Compiled() {
    DiagnosticEngine diags(file);
    module = parseModule(file, diags);
    EXPECT_FALSE(diags.hadError());
    auto checked = engine.check(file, module, {}, "mm");
    EXPECT_TRUE(bool(checked));
    auto b = engine.bind(file, module, {}, *checked, "mm", {{3, 4}, {4, 5}},
                         Specialisation::Sizes);
    EXPECT_TRUE(bool(b));
    bound = std::move(*b);
    // The product's result summed over mesh axis tp (2 ranks), after op 0.
    const CheckedFunction &fn = *bound->concrete.find("mm");
    MeshProgram m;
    m.axes = {"tp"};
    m.sizes = {2};
    InferredCollective sum;
    sum.kind = CollectiveKind::AllReduce;
    sum.axis = "tp";
    sum.value = fn.returns[0];
    m.collectives = {sum};
    m.points = {fn.ops.size() - 1};
    m.scatterDims = {-1};
    mesh = std::make_shared<const MeshProgram>(std::move(m));
  }

  ErrorOr<std::shared_ptr<Callable>> compile(const std::string &target) {
    TargetOptions options;
    options.mesh = mesh;
    return engine.compile(**lookupTarget(target, TargetUse::Run),
                          "collectives-test", bound->concrete, "mm", options);
  }
};

TEST(CompiledCollectivesTest, AllReduceInsideTheFunction) {
  Compiled c;
  auto callable = c.compile("cpu");
  ASSERT_TRUE(bool(callable)) << callable.error().str("test");
  auto a = filled(3, 4, 0.5f), b = filled(4, 5, 0.25f);
  auto ranks = simulatedRanks(2);
  std::vector<runtime::HostTensor> outs;
  for (int r = 0; r < 2; ++r)
    outs.push_back(
        *runtime::HostTensor::create(runtime::StorageType::F32, {3, 5}));
  std::vector<std::optional<Error>> errors(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      CollectiveScope scope({ranks[size_t(r)].get()});
      auto called = (*callable)->call({&a, &b}, {&outs[size_t(r)]},
                                      c.bound->dims);
      if (!called)
        errors[size_t(r)] = called.error();
      else if (scope.error())
        errors[size_t(r)] = *scope.error();
    });
  for (auto &t : threads)
    t.join();
  auto *pa = reinterpret_cast<const float *>(a.data.data());
  auto *pb = reinterpret_cast<const float *>(b.data.data());
  for (int r = 0; r < 2; ++r) {
    ASSERT_FALSE(errors[size_t(r)]) << errors[size_t(r)]->message;
    auto *pc = reinterpret_cast<const float *>(outs[size_t(r)].data.data());
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 5; ++j) {
        float sum = 0;
        for (int k = 0; k < 4; ++k)
          sum += pa[i * 4 + k] * pb[k * 5 + j];
        EXPECT_FLOAT_EQ(pc[i * 5 + j], 2 * sum) << "rank " << r;
      }
  }
}

TEST(CompiledCollectivesTest, RefusedOutsideARank) {
  Compiled c;
  auto callable = c.compile("cpu");
  ASSERT_TRUE(bool(callable));
  auto a = filled(3, 4, 0.5f), b = filled(4, 5, 0.25f);
  auto out = *runtime::HostTensor::create(runtime::StorageType::F32, {3, 5});
  auto called = (*callable)->call({&a, &b}, {&out}, c.bound->dims);
  ASSERT_FALSE(bool(called));
  EXPECT_NE(called.error().message.find(
                "was compiled with its mesh's collectives: it runs on a rank "
                "of a sharded run"),
            std::string::npos)
      << called.error().message;
}

TEST(CompiledCollectivesTest, TargetWithoutCollectivesRefused) {
  Compiled c;
  auto callable = c.compile("cuda-emulated");
  ASSERT_FALSE(bool(callable));
  EXPECT_EQ(callable.error().message,
            "--target=cuda-emulated does not compile a sharded function's "
            "collectives into its code");
}

} // namespace
} // namespace ein
