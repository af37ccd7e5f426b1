// Tests of the engine: size-generic executables compiled once and reused
// across shapes, specialised ones per shape, results against loop nests; a
// function compiled with its mesh's collectives inside (TargetOptions::mesh:
// an all-reduced matmul on 2 simulated ranks is twice the loop nest's).
#include "ein/Engine/Engine.h"
#include "ein/MLIRGen/MLIRGen.h"
#include "ein/Runtime/Allocator.h"
#include "ein/Runtime/CollectiveCalls.h"
#include "ein/Runtime/Communicator.h"
#include "ein/Syntax/Parser.h"
#include "ein/Target/DeviceMemory.h"
#include "ein/Target/DeviceTensor.h"
#include "ein/Target/TargetRegistry.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <functional>
#include <thread>

namespace ein {
namespace {

/// The target the engine compiles for here: the registry's JIT.
const Target *cpuTarget() { return *lookupTarget("cpu", TargetUse::Run); }

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
    return engine.bind(file, module, {}, *checked, "mm", shapes, specialisation,
                       cpuTarget());
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

const char *kSoftmax = R"(def softmax(x: f32["b s t"]) -> f32["b s t"]:
    m = reduce(x, "b s t -> b s", "max")
    e = exp(x - m)
    z = reduce(e, "b s t -> b s", "sum")
    return e / z
)";

/// Softmax over the last axis, in double, for comparison.
void expectSoftmax(const runtime::HostTensor &x, const runtime::HostTensor &y,
                   int64_t rows, int64_t t) {
  auto *px = reinterpret_cast<const float *>(x.data.data());
  auto *py = reinterpret_cast<const float *>(y.data.data());
  for (int64_t r = 0; r < rows; ++r) {
    double m = px[r * t], z = 0;
    for (int64_t j = 0; j < t; ++j)
      m = std::max(m, double(px[r * t + j]));
    for (int64_t j = 0; j < t; ++j)
      z += std::exp(px[r * t + j] - m);
    for (int64_t j = 0; j < t; ++j)
      ASSERT_NEAR(py[r * t + j], std::exp(px[r * t + j] - m) / z, 1e-6)
          << r << "," << j;
  }
}

// The temporaries of a compiled function (softmax's max, exponentials and
// sums) come from the caching allocator: the first call takes them from
// the system, every later call reuses the blocks the first one freed.
TEST(EngineTest, TemporariesAreReusedAcrossCalls) {
  SourceFile file{"softmax.ein", kSoftmax};
  DiagnosticEngine diags(file);
  Module module = parseModule(file, diags);
  ASSERT_FALSE(diags.hadError());
  // Unfused, the temporaries are whole tensors allocated by the calling
  // thread: after the first call every allocation is a hit. Fused
  // (ein-fuse-rows), each row tile allocates its own small buffers on the
  // thread that runs it, so a later call may still miss while another
  // thread first holds a tile's buffers, at most once per thread.
  for (bool fusion : {false, true}) {
    CPUOptions cpu;
    cpu.fusion = fusion;
    Engine engine(cpu);
    auto checked = engine.check(file, module, {}, "softmax");
    ASSERT_TRUE(bool(checked));
    for (Specialisation specialisation :
         {Specialisation::Sizes, Specialisation::Generic}) {
      auto call = engine.bind(file, module, {}, *checked, "softmax",
                              {{4, 8, 300}}, specialisation, cpuTarget());
      ASSERT_TRUE(bool(call)) << call.error().message;
      auto x = filled(32, 300, 0.01f);
      x.shape = {4, 8, 300};
      auto y =
          runtime::HostTensor::create(runtime::StorageType::F32, {4, 8, 300});
      ASSERT_TRUE(bool(y));
      runtime::CachingAllocator &allocator = runtime::temporaryAllocator();
      ASSERT_TRUE(bool(call->call({&x}, {&*y})));
      runtime::AllocatorStats first = allocator.stats();
      for (int i = 0; i < 3; ++i)
        ASSERT_TRUE(bool(call->call({&x}, {&*y})));
      runtime::AllocatorStats later = allocator.stats();
      uint64_t misses = later.misses - first.misses;
      if (!fusion)
        EXPECT_EQ(misses, 0u);
      else
        EXPECT_LE(misses,
                  uint64_t(first.misses) *
                      std::max(1u, std::thread::hardware_concurrency()));
      // At least the exponentials (4*8*300 floats) each call.
      EXPECT_GE(later.hits - first.hits, 3u);
      // Every block taken is given back.
      EXPECT_EQ(later.frees - first.frees, later.hits - first.hits + misses);
      expectSoftmax(x, *y, 32, 300);
    }
  }
}

// One compiled function called from 8 threads at once: each thread's
// results are right (the temporaries of concurrent calls are distinct).
TEST(EngineTest, EightThreadsCallOneFunction) {
  SourceFile file{"softmax.ein", kSoftmax};
  DiagnosticEngine diags(file);
  Module module = parseModule(file, diags);
  ASSERT_FALSE(diags.hadError());
  Engine engine;
  auto checked = engine.check(file, module, {}, "softmax");
  ASSERT_TRUE(bool(checked));
  auto call = engine.bind(file, module, {}, *checked, "softmax", {{2, 3, 40}},
                          Specialisation::Generic, cpuTarget());
  ASSERT_TRUE(bool(call)) << call.error().message;
  std::vector<std::thread> threads;
  std::vector<int> failures(8, 0);
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      auto x = filled(6, 40, 0.01f * float(t + 1));
      x.shape = {2, 3, 40};
      auto y =
          runtime::HostTensor::create(runtime::StorageType::F32, {2, 3, 40});
      for (int i = 0; i < 50; ++i)
        if (!call->call({&x}, {&*y}))
          ++failures[t];
      expectSoftmax(x, *y, 6, 40);
    });
  for (auto &thread : threads)
    thread.join();
  for (int t = 0; t < 8; ++t)
    EXPECT_EQ(failures[t], 0) << "thread " << t;
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

// A sharded program is not compiled yet (docs/distributed.md §8): the
// engine refuses it by name rather than run it unsharded.
TEST(EngineTest, ShardedProgramIsRefused) {
  SourceFile file{"sharded.ein", "mesh tp\n"
                                 "def f(x: f32[\"n@tp\"]) -> f32[\"n@tp\"]:\n"
                                 "    return x\n"};
  DiagnosticEngine diags(file);
  Module module = parseModule(file, diags);
  ASSERT_FALSE(diags.hadError());
  Engine engine;
  auto checked = engine.check(file, module, {}, "f");
  ASSERT_FALSE(bool(checked));
  EXPECT_EQ(checked.error().kind, ErrorKind::Program);
  EXPECT_NE(checked.error().message.find(
                "this file declares a mesh; sharded programs are checked"),
            std::string::npos)
      << checked.error().message;
  EXPECT_EQ(engine.compilations(), 0u);
}

/// `mm` bound to 3x4 by 4x5, compiled with its result all-reduced over a
/// mesh axis of 2 ranks (after its one op).
struct Compiled {
  Engine engine;
  SourceFile file{"engine-test.ein", kSource};
  Module module;
  std::optional<BoundCall> bound;
  std::shared_ptr<const MeshProgram> mesh;

  /// `mm` of rows x 4 by 4 x cols; the collective on its result: an all-reduce,
  /// or (scatterDim >= 0) a reduce-scatter along that dim, or with `gather`
  /// an all-gather along it, or with `splitDim` >= 0 too an all-to-all
  /// from splitDim to it; `reduction` completes the partial results.
  explicit Compiled(int64_t rows = 3, int64_t cols = 5, int64_t scatterDim = -1,
                    bool gather = false, int64_t splitDim = -1,
                    ReduceKind reduction = ReduceKind::Sum) {
    DiagnosticEngine diags(file);
    module = parseModule(file, diags);
    EXPECT_FALSE(diags.hadError());
    auto checked = engine.check(file, module, {}, "mm");
    EXPECT_TRUE(bool(checked));
    auto b = engine.bind(file, module, {}, *checked, "mm",
                         {{rows, 4}, {4, cols}}, Specialisation::Sizes);
    EXPECT_TRUE(bool(b));
    bound = std::move(*b);
    // The product's result summed over mesh axis tp (2 ranks), after op 0.
    const CheckedFunction &fn = *bound->concrete.find("mm");
    MeshProgram m;
    m.axes = {"tp"};
    m.sizes = {2};
    InferredCollective sum;
    sum.kind = splitDim >= 0    ? CollectiveKind::AllToAll
               : gather         ? CollectiveKind::AllGather
               : scatterDim < 0 ? CollectiveKind::AllReduce
                                : CollectiveKind::ReduceScatter;
    sum.axis = "tp";
    sum.reduction = reduction;
    sum.value = fn.returns[0];
    m.collectives = {sum};
    m.points = {fn.ops.size() - 1};
    m.scatterDims = {scatterDim};
    m.splitDims = {splitDim};
    mesh = std::make_shared<const MeshProgram>(std::move(m));
  }

  ErrorOr<std::shared_ptr<Callable>> compile(const std::string &target,
                                             bool inProcess = false) {
    TargetOptions options;
    options.mesh = mesh;
    options.inProcess = inProcess;
    return engine.compile(**lookupTarget(target, TargetUse::Run),
                          "collectives-test", bound->concrete, "mm", options);
  }
};

/// Calls `callable` (compiled for `memory`) on 2 simulated ranks, each in
/// its CollectiveScope over its rank's group (on a device, the group's
/// communicator on its memory: NCCL), rank r on `inputs[r]`, into an f32
/// output of `shape`: each rank's output, or the first error a rank met
/// (the call's, or a collective's).
ErrorOr<std::vector<runtime::HostTensor>>
onTwoRanks(DeviceMemory &memory, Callable &callable,
           const std::vector<std::vector<const runtime::HostTensor *>> &inputs,
           const std::vector<int64_t> &shape, const Bindings &dims) {
  auto ranks = simulatedRanks(2);
  std::vector<runtime::HostTensor> outs;
  for (int r = 0; r < 2; ++r)
    outs.push_back(
        *runtime::HostTensor::create(runtime::StorageType::F32, shape));
  std::vector<std::optional<Error>> errors(2);
  std::vector<std::thread> threads;
  for (size_t r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      Communicator *group = ranks[r].get();
      std::unique_ptr<Communicator> device;
      if (!memory.isHost()) {
        auto made = memory.communicator(*group);
        if (!made) {
          errors[r] = made.error();
          return;
        }
        device = std::move(*made);
        group = device.get();
      }
      CollectiveScope scope({group});
      if (auto called = callIn(memory, callable, inputs[r], {&outs[r]}, dims);
          !called)
        errors[r] = called.error();
      else if (auto failed = scope.error())
        errors[r] = *failed;
    });
  for (auto &t : threads)
    t.join();
  for (auto &e : errors)
    if (e)
      return *e;
  return outs;
}

/// Runs `callable` (`mm` compiled with its collective, for `memory`) on 2
/// simulated ranks (onTwoRanks) and checks rank r's result: the product's
/// block r along `dim` (-1: the whole product), times `times` (2 for a sum
/// over the ranks, 1 for a mean).
void expectOnTwoRanks(int64_t dim, float times, DeviceMemory &memory,
                      Callable &callable, const Bindings &dims) {
  auto a = filled(4, 4, 0.5f), b = filled(4, 6, 0.25f);
  std::vector<int64_t> block = {dim == 0 ? 2 : 4, dim == 1 ? 3 : 6};
  auto outs = onTwoRanks(memory, callable, {{&a, &b}, {&a, &b}}, block, dims);
  ASSERT_TRUE(bool(outs)) << outs.error().message;
  auto *pa = reinterpret_cast<const float *>(a.data.data());
  auto *pb = reinterpret_cast<const float *>(b.data.data());
  for (int r = 0; r < 2; ++r) {
    auto *pc = reinterpret_cast<const float *>((*outs)[size_t(r)].data.data());
    for (int64_t i = 0; i < block[0]; ++i)
      for (int64_t j = 0; j < block[1]; ++j) {
        int64_t gi = dim == 0 ? r * 2 + i : i, gj = dim == 1 ? r * 3 + j : j;
        float sum = 0;
        for (int k = 0; k < 4; ++k)
          sum += pa[gi * 4 + k] * pb[k * 6 + gj];
        EXPECT_FLOAT_EQ(pc[i * block[1] + j], times * sum)
            << "dim " << dim << " rank " << r;
      }
  }
}

/// The collective inside the function on 2 simulated ranks, each calling
/// in its CollectiveScope: an all-reduce (every rank returns twice the 4 x 6
/// product), a reduce-scatter along dim 0 (the communicator's) and along
/// dim 1 (an all-reduce, then the rank's block): rank r returns block r.
TEST(CompiledCollectivesTest, CollectiveInsideTheFunction) {
  for (int64_t dim : {-1, 0, 1}) {
    Compiled c(4, 6, dim);
    auto callable = c.compile("cpu");
    ASSERT_TRUE(bool(callable)) << callable.error().str("test");
    expectOnTwoRanks(dim, 2, hostMemory(), **callable, c.bound->dims);
  }
}

/// Runs `c` (a rows x 4 by 4 x cols product whose result a collective
/// moves) on 2 simulated ranks whose `a` differ, into outputs of `shape`,
/// and checks element (i, j) of rank r's output against the loop nest's
/// product of the inputs of rank `source(r, i, j)[0]` at (source[1],
/// source[2]).
void expectMovedProducts(
    Compiled &c, int64_t rows, int64_t cols, const std::vector<int64_t> &shape,
    const std::function<std::array<int64_t, 3>(int, int64_t, int64_t)>
        &source) {
  auto callable = c.compile("cpu");
  ASSERT_TRUE(bool(callable)) << callable.error().str("test");
  std::vector<runtime::HostTensor> as = {filled(rows, 4, 0.5f),
                                         filled(rows, 4, 1.0f)};
  auto b = filled(4, cols, 0.25f);
  auto outs = onTwoRanks(hostMemory(), **callable, {{&as[0], &b}, {&as[1], &b}},
                         shape, c.bound->dims);
  ASSERT_TRUE(bool(outs)) << outs.error().message;
  auto *pb = reinterpret_cast<const float *>(b.data.data());
  for (int r = 0; r < 2; ++r) {
    auto *pc = reinterpret_cast<const float *>((*outs)[size_t(r)].data.data());
    for (int64_t i = 0; i < shape[0]; ++i)
      for (int64_t j = 0; j < shape[1]; ++j) {
        auto [from, li, lj] = source(r, i, j);
        auto *pa =
            reinterpret_cast<const float *>(as[size_t(from)].data.data());
        float sum = 0;
        for (int k = 0; k < 4; ++k)
          sum += pa[li * 4 + k] * pb[k * cols + lj];
        EXPECT_FLOAT_EQ(pc[i * shape[1] + j], sum)
            << "rank " << r << " at " << i << "," << j;
      }
  }
}

/// An all-gather of the result inside the function on 2 simulated ranks
/// whose inputs differ: along dim 0 (the communicator's order) and dim 1
/// (a transpose around it), every rank's result holds rank r's 3 x 5
/// product as block r.
TEST(CompiledCollectivesTest, AllGatherOfTheResult) {
  Compiled rows(3, 5, 0, /*gather=*/true);
  expectMovedProducts(rows, 3, 5, {6, 5}, [](int, int64_t i, int64_t j) {
    return std::array<int64_t, 3>{i / 3, i % 3, j};
  });
  Compiled cols(3, 5, 1, /*gather=*/true);
  expectMovedProducts(cols, 3, 5, {3, 10}, [](int, int64_t i, int64_t j) {
    return std::array<int64_t, 3>{j / 5, i, j % 5};
  });
}

/// An all-to-all of the result inside the function on 2 simulated ranks
/// whose inputs differ (4 x 6 products): from dim 1 to dim 0, rank r keeps
/// column block r (3 wide) of every rank's product, stacked by rank along
/// the rows; from dim 0 to dim 1, row block r (2 high), side by side.
TEST(CompiledCollectivesTest, AllToAllOfTheResult) {
  Compiled toRows(4, 6, 0, /*gather=*/false, /*splitDim=*/1);
  expectMovedProducts(toRows, 4, 6, {8, 3}, [](int r, int64_t i, int64_t j) {
    return std::array<int64_t, 3>{i / 4, i % 4, r * 3 + j};
  });
  Compiled toCols(4, 6, 1, /*gather=*/false, /*splitDim=*/0);
  expectMovedProducts(toCols, 4, 6, {2, 12}, [](int r, int64_t i, int64_t j) {
    return std::array<int64_t, 3>{j / 6, r * 2 + i, j % 6};
  });
}

/// Outside a rank's scope a function compiled with collectives is refused
/// by name: the CPU's JIT function and the CUDA target's library alike.
TEST(CompiledCollectivesTest, RefusedOutsideARank) {
  for (const char *name : {"cpu", "cuda-emulated"}) {
    auto target = lookupTarget(name, TargetUse::Run);
    ASSERT_TRUE(bool(target));
    auto memory = (*target)->memory();
    ASSERT_TRUE(bool(memory));
    Compiled c;
    auto callable = c.compile(name, /*inProcess=*/!(*memory)->isHost());
    ASSERT_TRUE(bool(callable)) << callable.error().str("test");
    auto a = filled(3, 4, 0.5f), b = filled(4, 5, 0.25f);
    auto out = *runtime::HostTensor::create(runtime::StorageType::F32, {3, 5});
    auto called = callIn(**memory, **callable, {&a, &b}, {&out}, c.bound->dims);
    ASSERT_FALSE(bool(called)) << name;
    EXPECT_NE(called.error().message.find(
                  "was compiled with its mesh's collectives: it runs on a "
                  "rank of a sharded run"),
              std::string::npos)
        << called.error().message;
  }
}

/// The same on the CUDA target's emulation: the generated code's
/// collectives reach each rank's device communicator (emulated NCCL over
/// the simulated ranks) through the table the loader installed, while the
/// ranks share the one emulated device (its lock released in the
/// collective); a mean is the sum divided on the device.
TEST(CompiledCollectivesTest, CollectiveInsideTheCUDAFunction) {
  auto target = lookupTarget("cuda-emulated", TargetUse::Run);
  ASSERT_TRUE(bool(target));
  auto memory = (*target)->memory();
  ASSERT_TRUE(bool(memory)) << memory.error().message;
  // Sums: all-reduce, reduce-scatter along dim 0 and 1; a mean: the
  // reduce-scatter along dim 0 (its block divided).
  for (auto [dim, reduction] : {std::pair{int64_t(-1), ReduceKind::Sum},
                                {int64_t(0), ReduceKind::Sum},
                                {int64_t(1), ReduceKind::Sum},
                                {int64_t(0), ReduceKind::Mean}}) {
    Compiled c(4, 6, dim, /*gather=*/false, /*splitDim=*/-1, reduction);
    auto callable = c.compile("cuda-emulated", /*inProcess=*/true);
    ASSERT_TRUE(bool(callable)) << callable.error().str("test");
    float times = reduction == ReduceKind::Mean ? 1.0f : 2.0f;
    expectOnTwoRanks(dim, times, **memory, **callable, c.bound->dims);
  }
}

/// The CUDA targets compile the collectives only into the in-process
/// library, which the rank's communicators reach; not into a program.
TEST(CompiledCollectivesTest, CUDAProgramWithCollectivesRefused) {
  Compiled c;
  auto callable = c.compile("cuda-emulated");
  ASSERT_FALSE(bool(callable));
  EXPECT_EQ(callable.error().message,
            "a sharded function on --target=cuda-emulated is built into this "
            "process (its collectives run on the rank's communicators), not "
            "as a program");
}

/// A DeviceTensor placed in each target's memory comes back bit for bit,
/// on the device through its buffer; a call on tensors of two memories is
/// refused by name (the device's code would read host pointers).
TEST(DeviceTensorTest, PlacedAndBackOnEveryMemory) {
  for (const char *name : {"cpu", "cuda-emulated"}) {
    auto target = lookupTarget(name, TargetUse::Run);
    ASSERT_TRUE(bool(target));
    auto memory = (*target)->memory();
    ASSERT_TRUE(bool(memory)) << memory.error().message;
    runtime::HostTensor a = filled(3, 4, 0.5f);
    auto held = DeviceTensor::place(**memory, a);
    ASSERT_TRUE(bool(held)) << name;
    EXPECT_EQ(held->shape(), a.shape);
    EXPECT_EQ((*memory)->isHost(), held->data() == held->host().data.data())
        << name;
    auto back = held->toHost();
    ASSERT_TRUE(bool(back)) << name;
    EXPECT_EQ(back->data, a.data) << name;
  }
  auto cuda = (*lookupTarget("cuda-emulated", TargetUse::Run))->memory();
  ASSERT_TRUE(bool(cuda));
  Compiled c;
  auto callable = c.compile("cpu");
  ASSERT_TRUE(bool(callable));
  auto a = DeviceTensor::place(hostMemory(), filled(3, 4, 0.5f));
  auto b = DeviceTensor::place(**cuda, filled(4, 5, 0.25f));
  auto out =
      DeviceTensor::create(hostMemory(), runtime::StorageType::F32, {3, 5});
  ASSERT_TRUE(a && b && out);
  auto called = callOn(**callable, {&*a, &*b}, {&*out}, c.bound->dims);
  ASSERT_FALSE(bool(called));
  EXPECT_NE(called.error().message.find("two memories"), std::string::npos)
      << called.error().message;
}

} // namespace
} // namespace ein
