// Tests of the API's communicator and sharded calls (ein/API/Distributed.h)
// on simulated ranks, one thread per rank: each collective against a loop
// over the ranks' inputs, call_sharded's blocks assembled by hand against
// Module::call of the same function without its mesh, and the refusals.
#include "APITestHelpers.h"

#include <ein/ein.h>

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

using namespace ein_api_test;

namespace {

/// Runs body(comm, rank) on one thread per communicator; returns each
/// rank's error message (empty when it succeeded).
std::vector<std::string>
onRanks(const std::vector<ein::Communicator> &comms,
        const std::function<void(const ein::Communicator &, int)> &body) {
  std::vector<std::string> errors(comms.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < comms.size(); ++r)
    threads.emplace_back([&, r] {
      try {
        body(comms[r], int(r));
      } catch (const ein::Error &e) {
        errors[r] = e.what();
      }
    });
  for (auto &t : threads)
    t.join();
  return errors;
}

/// Block `q` of `n` along `dim` of the f32 tensor `whole`, copied element
/// by element.
ein::Tensor slice(const ein::Tensor &whole, size_t dim, int64_t q, int64_t n) {
  std::vector<int64_t> shape = whole.shape();
  shape[dim] /= n;
  ein::Tensor block = ein::Tensor::zeros(whole.dtype(), shape);
  forEachIndex(shape, [&](const std::vector<int64_t> &index) {
    std::vector<int64_t> at = index;
    at[dim] += q * shape[dim];
    int64_t flat = 0;
    for (size_t d = 0; d < index.size(); ++d)
      flat += index[d] * block.strides()[d];
    static_cast<float *>(block.data())[flat] = float(element(whole, at));
  });
  return block;
}

/// The f32 blocks concatenated along `dim`, element by element.
ein::Tensor concat(const std::vector<ein::Tensor> &blocks, size_t dim) {
  std::vector<int64_t> shape = blocks[0].shape();
  shape[dim] *= int64_t(blocks.size());
  ein::Tensor whole = ein::Tensor::zeros(blocks[0].dtype(), shape);
  for (size_t q = 0; q < blocks.size(); ++q)
    forEachIndex(blocks[q].shape(), [&](const std::vector<int64_t> &index) {
      int64_t flat = 0;
      for (size_t d = 0; d < index.size(); ++d)
        flat +=
            (index[d] + (d == dim ? int64_t(q) * blocks[q].shape()[d] : 0)) *
            whole.strides()[d];
      static_cast<float *>(whole.data())[flat] =
          float(element(blocks[q], index));
    });
  return whole;
}

/// `source` without its mesh: the `mesh` line and every `@axis` removed,
/// and each `reshard(x, "...")` replaced by `x`.
std::string unsharded(const std::string &source) {
  std::string out = std::regex_replace(source, std::regex("mesh [^\n]*\n"), "");
  out = std::regex_replace(out, std::regex("reshard\\((\\w+), \"[^\"]*\"\\)"),
                           "$1");
  return std::regex_replace(out, std::regex("@[a-z]+"), "");
}

/// Expects `got` to equal `want` element for element: bit for bit when
/// `tolerance` is 0, else within `tolerance` relative to the largest
/// magnitude of `want`.
void expectClose(const ein::Tensor &got, const ein::Tensor &want,
                 double tolerance) {
  ASSERT_EQ(got.shape(), want.shape());
  double scale = 0;
  forEachIndex(want.shape(), [&](const std::vector<int64_t> &i) {
    scale = std::max(scale, std::abs(element(want, i)));
  });
  forEachIndex(want.shape(), [&](const std::vector<int64_t> &i) {
    if (tolerance == 0)
      EXPECT_EQ(element(got, i), element(want, i));
    else
      EXPECT_NEAR(element(got, i), element(want, i), tolerance * scale);
  });
}

// ---------------------------------------------------------------------------
// Collectives.

class Collectives : public ::testing::TestWithParam<int> {};

/// Rank r's input: element i is f(r, i), distinct on every rank.
ein::Tensor rankInput(int r, std::vector<int64_t> shape) {
  return iota(shape,
              [r](int64_t i) { return float(i % 13) - 4.0f + r * 0.5f; });
}

// Tests all_reduce (sum, max, min), all_gather and reduce_scatter along the
// leading and an inner dim (a strided input too), broadcast and split,
// against loops over every rank's input.
TEST_P(Collectives, AgreeWithLoopsOverRanks) {
  int n = GetParam();
  auto comms = ein::Communicator::simulated(n);
  ASSERT_EQ(int(comms.size()), n);
  std::vector<int64_t> shape{2, 3 * n};
  auto errors = onRanks(comms, [&](const ein::Communicator &comm, int r) {
    EXPECT_EQ(comm.rank(), r);
    EXPECT_EQ(comm.size(), n);
    for (ein::Reduction op : {ein::sum, ein::max, ein::min}) {
      ein::Tensor t = rankInput(r, shape);
      comm.all_reduce(t, op);
      forEachIndex(shape, [&](const std::vector<int64_t> &i) {
        double want = element(rankInput(0, shape), i);
        for (int q = 1; q < n; ++q) {
          double v = element(rankInput(q, shape), i);
          want = op == ein::sum   ? want + v
                 : op == ein::max ? std::max(want, v)
                                  : std::min(want, v);
        }
        EXPECT_EQ(element(t, i), want);
      });
    }
    // i64 sums exactly.
    ein::Tensor ints =
        ein::Tensor::from_vector(std::vector<int64_t>{r, 10 * r + 1}, {2});
    comm.all_reduce(ints);
    EXPECT_EQ(element(ints, {0}), double(n * (n - 1) / 2));
    EXPECT_EQ(element(ints, {1}), double(10 * n * (n - 1) / 2 + n));

    // all_gather along dim 0 and dim 1.
    ein::Tensor mine = rankInput(r, {2, 3});
    for (size_t dim : {size_t(0), size_t(1)}) {
      ein::Tensor gathered = comm.all_gather(mine, int64_t(dim));
      std::vector<ein::Tensor> all;
      for (int q = 0; q < n; ++q)
        all.push_back(rankInput(q, {2, 3}));
      expectClose(gathered, concat(all, dim), 0);
    }
    // A strided input: the transpose of a [3, 2] tensor.
    ein::Tensor base = rankInput(r, {3, 2});
    ein::Tensor transposed(base.storage(), ein::f32, ein::cpu, {2, 3}, {1, 2},
                           0);
    ein::Tensor gathered = comm.all_gather(transposed, -1);
    ASSERT_EQ(gathered.shape(), (std::vector<int64_t>{2, 3 * n}));
    forEachIndex({2, 3 * n}, [&](const std::vector<int64_t> &i) {
      int q = int(i[1] / 3);
      EXPECT_EQ(element(gathered, i),
                element(rankInput(q, {3, 2}), {i[1] % 3, i[0]}));
    });

    // reduce_scatter along dim 0 ([n*2, 3]) and dim 1 ([2, 3n]).
    for (size_t dim : {size_t(0), size_t(1)}) {
      std::vector<int64_t> s = dim == 0 ? std::vector<int64_t>{2 * n, 3}
                                        : std::vector<int64_t>{2, 3 * n};
      ein::Tensor scattered =
          comm.reduce_scatter(rankInput(r, s), ein::sum, int64_t(dim));
      std::vector<int64_t> blockShape = s;
      blockShape[dim] /= n;
      ASSERT_EQ(scattered.shape(), blockShape);
      forEachIndex(blockShape, [&](const std::vector<int64_t> &i) {
        std::vector<int64_t> at = i;
        at[dim] += r * blockShape[dim];
        double want = 0;
        for (int q = 0; q < n; ++q)
          want += element(rankInput(q, s), at);
        EXPECT_EQ(element(scattered, i), want);
      });
    }

    // broadcast from the last rank, into a strided view.
    ein::Tensor b = rankInput(r, {3, 2});
    ein::Tensor bt(b.storage(), ein::f32, ein::cpu, {2, 3}, {1, 2}, 0);
    comm.broadcast(bt, n - 1);
    expectClose(b, rankInput(n - 1, {3, 2}), 0);

    // split: even and odd ranks, each group summing its ranks.
    ein::Communicator half = comm.split(r % 2, r);
    EXPECT_EQ(half.size(), (n + 1 - r % 2) / 2);
    EXPECT_EQ(half.rank(), r / 2);
    ein::Tensor one = ein::Tensor::from_vector(std::vector<int64_t>{r}, {1});
    half.all_reduce(one);
    int64_t want = 0;
    for (int q = r % 2; q < n; q += 2)
      want += q;
    EXPECT_EQ(element(one, {0}), double(want));
  });
  for (int r = 0; r < n; ++r)
    EXPECT_EQ(errors[size_t(r)], "") << "rank " << r;
}

INSTANTIATE_TEST_SUITE_P(Ranks, Collectives, ::testing::Values(1, 2, 3, 4));

// Tests what the collectives refuse, by name.
TEST(Collectives, Refusals) {
  auto bad = ein::nothrow::simulated_ranks(0);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("at least 1"), std::string::npos);
  ein::Communicator none;
  EXPECT_FALSE(none.defined());
  auto undefined = ein::nothrow::all_reduce(none, iota({2}));
  ASSERT_FALSE(undefined);
  EXPECT_NE(undefined.error().message.find("undefined communicator"),
            std::string::npos);
  // Not under mpirun: mpi_world is refused by name (or MPI is absent).
  auto world = ein::nothrow::mpi_world();
  ASSERT_FALSE(world);
  EXPECT_NE(world.error().message.find("mpi_world: this "), std::string::npos)
      << world.error().message;

  bool cuda = ein::cuda_available();
  auto comms = ein::Communicator::simulated(2);
  auto errors = onRanks(comms, [&](const ein::Communicator &comm, int) {
    auto mean = ein::nothrow::all_reduce(comm, iota({2}), ein::mean);
    ASSERT_FALSE(mean);
    EXPECT_NE(mean.error().message.find("all_reduce takes sum, max or min"),
              std::string::npos);
    auto odd = ein::nothrow::reduce_scatter(comm, iota({3, 2}));
    ASSERT_FALSE(odd);
    EXPECT_NE(odd.error().message.find("does not divide into 2 blocks"),
              std::string::npos);
    auto dim = ein::nothrow::all_gather(comm, iota({3}), 1);
    ASSERT_FALSE(dim);
    EXPECT_NE(dim.error().message.find("dim 1 of a tensor of 1 dim(s)"),
              std::string::npos);
    auto root = ein::nothrow::broadcast(comm, iota({3}), 2);
    ASSERT_FALSE(root);
    EXPECT_NE(root.error().message.find("broadcast from rank 2 of a group "
                                        "of 2"),
              std::string::npos);
    // A CUDA tensor (EIN_CUDA=emulated in lit): NCCL through the API is
    // not built.
    if (cuda) {
      ein::Tensor device = ein::Tensor::zeros(ein::f32, {2}, ein::cuda);
      auto refused = ein::nothrow::all_reduce(comm, device);
      ASSERT_FALSE(refused);
      EXPECT_NE(refused.error().message.find("takes CPU tensors"),
                std::string::npos);
    }
    // bool does not reduce (the runtime's refusal), on every rank alike.
    ein::Tensor flags = ein::Tensor::zeros(ein::bool_, {2});
    auto boolean = ein::nothrow::all_reduce(comm, flags);
    ASSERT_FALSE(boolean);
  });
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
}

// ---------------------------------------------------------------------------
// call_sharded against Module::call of the function without its mesh.

/// One sharded function: its source, the inputs' whole shapes, the mesh,
/// and per input and result the dim split on each axis (or -1).
struct ShardedCase {
  const char *name;
  const char *source;
  const char *function;
  std::vector<std::vector<int64_t>> shapes;
  ein::Sizes mesh;
  /// For each input then each result: (dim, axis index) splits.
  std::vector<std::vector<std::pair<size_t, size_t>>> inputSplits, resultSplits;
  /// Whether a sum crosses ranks (else bit for bit).
  bool reduces;
};

/// Rank r's coordinate on each mesh axis (row-major, the last fastest).
std::vector<int64_t> coordinate(const ein::Sizes &mesh, int64_t r) {
  std::vector<int64_t> c(mesh.size());
  for (size_t i = mesh.size(); i-- > 0;) {
    c[i] = r % mesh[i].second;
    r /= mesh[i].second;
  }
  return c;
}

/// Rank r's block of `whole` under `splits`.
ein::Tensor blockFor(const ein::Tensor &whole,
                     const std::vector<std::pair<size_t, size_t>> &splits,
                     const ein::Sizes &mesh, int64_t r) {
  ein::Tensor t = whole;
  std::vector<int64_t> c = coordinate(mesh, r);
  for (auto [dim, axis] : splits)
    t = slice(t, dim, c[axis], mesh[axis].second);
  return t;
}

class Sharded : public ::testing::TestWithParam<ShardedCase> {};

// Tests that every rank's result blocks, assembled, equal the unsharded
// call's results, and that each rank's block is the block of the whole.
TEST_P(Sharded, EqualsTheUnshardedCall) {
  const ShardedCase &c = GetParam();
  auto module = ein::Module::from_source(c.source, "sharded.ein");
  auto whole = ein::Module::from_source(unsharded(c.source), "whole.ein");
  std::vector<ein::Tensor> inputs;
  for (size_t i = 0; i < c.shapes.size(); ++i)
    inputs.push_back(iota(c.shapes[i], [i](int64_t k) {
      return float((k * 7 + int64_t(i) * 3) % 23) * 0.125f - 1.25f;
    }));
  std::vector<ein::Tensor> want = whole.call(c.function, inputs);
  int n = 1;
  for (auto &[axis, size] : c.mesh)
    n *= int(size);
  auto comms = ein::Communicator::simulated(n);
  std::vector<std::vector<ein::Tensor>> got(static_cast<size_t>(n));
  auto errors = onRanks(comms, [&](const ein::Communicator &comm, int r) {
    std::vector<ein::Tensor> blocks;
    for (size_t i = 0; i < inputs.size(); ++i)
      blocks.push_back(blockFor(inputs[i], c.inputSplits[i], c.mesh, r));
    got[size_t(r)] =
        ein::call_sharded(module, c.function, blocks, comm, c.mesh);
    // A second call takes the prepared program from the module's cache.
    auto again = ein::call_sharded(module, c.function, blocks, comm, c.mesh);
    for (size_t k = 0; k < again.size(); ++k)
      expectClose(again[k], got[size_t(r)][k], 0);
  });
  for (int r = 0; r < n; ++r)
    ASSERT_EQ(errors[size_t(r)], "") << "rank " << r;
  for (size_t k = 0; k < want.size(); ++k)
    for (int r = 0; r < n; ++r) {
      SCOPED_TRACE("result " + std::to_string(k) + " of rank " +
                   std::to_string(r));
      expectClose(got[size_t(r)][k],
                  blockFor(want[k], c.resultSplits[k], c.mesh, r),
                  c.reduces ? 1e-6 : 0);
    }
}

const char *mlpSource = R"(mesh tp

def mlp(x: f32["b d"], w_fc: f32["d f@tp"], w_proj: f32["f@tp d"]) -> f32["b d"]:
    h = relu(einsum(x, w_fc, "b d, d f -> b f"))
    return einsum(h, w_proj, "b f, f d -> b d")
)";

const char *mlp2dSource = R"(mesh dp, tp

def mlp(x: f32["b@dp s d"], w_fc: f32["d f@tp"], w_proj: f32["f@tp d"]) -> f32["b@dp s d"]:
    h = relu(einsum(x, w_fc, "b s d, d f -> b s f"))
    return einsum(h, w_proj, "b s f, f d -> b s d")
)";

const char *batchSource = R"(mesh dp

def scale(x: f32["b@dp d"], w: f32["d e"]) -> (f32["b@dp e"], f32["d e"]):
    return tanh(einsum(x, w, "b d, d e -> b e")), w * 2.0
)";

const char *scatterSource = R"(mesh tp

def proj(h: f32["b f@tp"], w: f32["f@tp d"]) -> f32["b d@tp"]:
    return einsum(h, w, "b f, f d -> b d")
)";

const char *allToAllSource = R"(mesh tp

def lead(x: f32["b@tp d"], w: f32["d f"]) -> f32["b f@tp"]:
    h = einsum(x, w, "b d, d f -> b f")
    return reshard(h, "b f@tp") + 1.0
)";

INSTANTIATE_TEST_SUITE_P(
    Functions, Sharded,
    ::testing::Values(ShardedCase{"mlp_tp2",
                                  mlpSource,
                                  "mlp",
                                  {{4, 8}, {8, 16}, {16, 8}},
                                  {{"tp", 2}},
                                  {{}, {{1, 0}}, {{0, 0}}},
                                  {{}},
                                  true},
                      ShardedCase{"mlp_tp4",
                                  mlpSource,
                                  "mlp",
                                  {{4, 8}, {8, 16}, {16, 8}},
                                  {{"tp", 4}},
                                  {{}, {{1, 0}}, {{0, 0}}},
                                  {{}},
                                  true},
                      ShardedCase{"mlp_dp2_tp2",
                                  mlp2dSource,
                                  "mlp",
                                  {{4, 3, 8}, {8, 16}, {16, 8}},
                                  {{"dp", 2}, {"tp", 2}},
                                  {{{0, 0}}, {{1, 1}}, {{0, 1}}},
                                  {{{0, 0}}},
                                  true},
                      ShardedCase{"batch_dp2",
                                  batchSource,
                                  "scale",
                                  {{6, 5}, {5, 3}},
                                  {{"dp", 2}},
                                  {{{0, 0}}, {}},
                                  {{{0, 0}}, {}},
                                  false},
                      ShardedCase{"reduce_scatter",
                                  scatterSource,
                                  "proj",
                                  {{3, 8}, {8, 12}},
                                  {{"tp", 2}},
                                  {{{1, 0}}, {{0, 0}}},
                                  {{{1, 0}}},
                                  true},
                      ShardedCase{"all_to_all",
                                  allToAllSource,
                                  "lead",
                                  {{8, 3}, {3, 8}},
                                  {{"tp", 2}},
                                  {{{0, 0}}, {}},
                                  {{{1, 0}}},
                                  false}),
    [](const ::testing::TestParamInfo<ShardedCase> &info) {
      return std::string(info.param.name);
    });

/// Runs call_sharded of mlpSource's `mlp` on `n` simulated ranks with the
/// blocks `blocksOf(rank)` and `mesh`; returns each rank's error.
std::vector<std::string>
shardedErrors(const ein::Module &module, int n, const ein::Sizes &mesh,
              const std::function<std::vector<ein::Tensor>(int)> &blocksOf,
              const std::string &function = "mlp") {
  auto comms = ein::Communicator::simulated(n);
  return onRanks(comms, [&](const ein::Communicator &comm, int r) {
    ein::call_sharded(module, function, blocksOf(r), comm, mesh);
  });
}

std::vector<ein::Tensor> mlpBlocks(int64_t b, int64_t d, int64_t f) {
  return {iota({b, d}), iota({d, f}), iota({f, d})};
}

// Tests the refusals of call_sharded: each names what is wrong, on every
// rank (a rank's own bad input stops the others by name, no timeout).
TEST(Sharded, Refusals) {
  auto module = ein::Module::from_source(mlpSource, "mlp.ein");
  auto contains = [](const std::string &text, const std::string &part) {
    return text.find(part) != std::string::npos;
  };
  // The mesh's sizes do not make the communicator's size.
  auto errors = shardedErrors(module, 2, {{"tp", 4}},
                              [](int) { return mlpBlocks(4, 8, 4); });
  for (auto &e : errors)
    EXPECT_TRUE(contains(e, "the mesh's sizes make 4 rank(s); the "
                            "communicator has 2 (2 simulated ranks)"))
        << e;
  // An axis the mesh lacks, and one without a size.
  errors = shardedErrors(module, 2, {{"tq", 2}},
                         [](int) { return mlpBlocks(4, 8, 4); });
  EXPECT_TRUE(contains(errors[0], "'tq' is not an axis of the mesh (tp); did "
                                  "you mean 'tp'?"))
      << errors[0];
  errors = shardedErrors(module, 1, {}, [](int) { return mlpBlocks(4, 8, 4); });
  EXPECT_TRUE(contains(errors[0], "no size for mesh axis 'tp'")) << errors[0];
  // A block whose dims do not fit the others (w_proj's d is 6, x's 8).
  errors = shardedErrors(module, 2, {{"tp", 2}}, [](int) {
    return std::vector<ein::Tensor>{iota({4, 8}), iota({8, 4}), iota({4, 6})};
  });
  for (auto &e : errors)
    EXPECT_TRUE(contains(e, "error:")) << e;
  EXPECT_TRUE(contains(errors[0], "d")) << errors[0];
  // A block of the wrong rank.
  errors = shardedErrors(module, 2, {{"tp", 2}}, [](int) {
    return std::vector<ein::Tensor>{iota({4, 8, 1}), iota({8, 4}),
                                    iota({4, 8})};
  });
  EXPECT_TRUE(contains(errors[0], "the block of input 0 ('x') has 3 dim(s)"))
      << errors[0];
  // Ranks whose blocks differ: named, on every rank.
  errors = shardedErrors(module, 2, {{"tp", 2}},
                         [](int r) { return mlpBlocks(4, 8, r == 0 ? 4 : 2); });
  for (auto &e : errors)
    EXPECT_TRUE(contains(e, "rank 1 does not run what rank 0 runs")) << e;
  // One rank's bad input (a dtype) stops the other by name.
  errors = shardedErrors(module, 2, {{"tp", 2}}, [](int r) {
    std::vector<ein::Tensor> blocks = mlpBlocks(4, 8, 4);
    if (r == 1)
      blocks[0] = ein::Tensor::zeros(ein::f64, {4, 8});
    return blocks;
  });
  EXPECT_TRUE(contains(errors[1], "the block of input 0 ('x') is f64, the "
                                  "parameter is f32"))
      << errors[1];
  EXPECT_TRUE(contains(errors[0], "stopped: rank 1 failed")) << errors[0];
  // The wrong count of blocks.
  errors = shardedErrors(module, 1, {{"tp", 1}}, [](int) {
    return std::vector<ein::Tensor>{iota({4, 8})};
  });
  EXPECT_TRUE(contains(errors[0], "'mlp' takes 3 input(s), got 1 block(s)"))
      << errors[0];
  // A function of a file without a mesh.
  auto plain = ein::Module::from_source(unsharded(mlpSource), "plain.ein");
  errors = shardedErrors(plain, 1, {}, [](int) { return mlpBlocks(4, 8, 4); });
  EXPECT_TRUE(contains(errors[0], "the file declares no mesh")) << errors[0];
  // The unsharded call of a function of a file with a mesh.
  auto call = ein::nothrow::call(module, "mlp", mlpBlocks(4, 8, 8));
  ASSERT_FALSE(call);
  EXPECT_TRUE(contains(call.error().message, "call it on each rank's blocks "
                                             "with call_sharded"))
      << call.error().message;
}

// Tests that a vocab-parallel take (a table split along the ids' axis, run
// on the host between parts) runs through call_sharded as through einc
// run: every rank's result is the whole table's rows of the ids.
TEST(Sharded, VocabParallelTake) {
  auto vocab = ein::Module::from_source(
      "mesh tp\n\ndef embed(table: f32[\"vocab@tp d\"], ids: i64[\"n\"]) -> "
      "f32[\"n d\"]:\n    return take(table, ids, \"vocab\")\n",
      "vocab.ein");
  ein::Tensor table = iota({4, 3});
  std::vector<int64_t> ids = {3, 0, 2};
  auto comms = ein::Communicator::simulated(2);
  std::vector<std::vector<ein::Tensor>> got(2);
  auto errors = onRanks(comms, [&](const ein::Communicator &comm, int r) {
    got[size_t(r)] = ein::call_sharded(
        vocab, "embed",
        {slice(table, 0, r, 2), ein::Tensor::from_vector(ids, {3})}, comm,
        {{"tp", 2}});
  });
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(errors[size_t(r)], "") << "rank " << r;
    ASSERT_EQ(got[size_t(r)].size(), 1u);
    expectTensor(
        got[size_t(r)][0], {3, 3},
        [&](const std::vector<int64_t> &at) {
          return element(table, {ids[size_t(at[0])], at[1]});
        },
        0);
  }
}

// Tests that a module with a mesh reports its cost per rank and its
// collectives, as einc report --mesh does (the module loads now).
TEST(Sharded, ReportsPerRankCostAndCollectives) {
  auto module = ein::Module::from_source(mlpSource, "mlp.ein");
  ein::CostReport r =
      module.report("mlp", {{"b", 4}, {"d", 8}, {"f", 16}, {"tp", 2}});
  EXPECT_NE(r.text.find("2*b*d*(f/tp)"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("all-reduce      tp    2"), std::string::npos)
      << r.text;
  // Two einsums of 2*4*8*(16/2) FLOPs and a relu of 4*(16/2), per rank.
  EXPECT_EQ(r.flops, 2 * 512 + 32);
}

// Tests that data-parallel training refuses simulated ranks by name (the
// loop's state is per process; MPI ranks train: mpi-sharded.test).
TEST(Sharded, TrainRefusesSimulatedRanks) {
  auto module = ein::Module::from_source(mlpSource, "mlp.ein");
  ein::TrainOptions o;
  o.steps = 1;
  o.comm = ein::Communicator::simulated(1)[0];
  auto trained = ein::nothrow::train(module, "mlp", o);
  ASSERT_FALSE(trained);
  EXPECT_NE(trained.error().message.find("data-parallel training runs on MPI "
                                         "ranks"),
            std::string::npos)
      << trained.error().message;
}

} // namespace
