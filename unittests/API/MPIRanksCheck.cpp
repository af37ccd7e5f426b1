// A small program of the C++ API run under mpirun
// (test/cpp-api/mpi-sharded.test): each MPI rank takes the world
// communicator, checks the collectives against closed forms, then calls a
// tensor-parallel MLP (mesh tp, one block per rank) with call_sharded and
// compares the result with Module::call of the same MLP without its mesh;
// given a directory, trains a linear model data parallel (TrainOptions::comm)
// and compares its losses with one process training on the whole batch.
// Prints one line per check and rank; exits non-zero on a mismatch or an
// error (printed).
#include <ein/ein.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace {

const char *sharded = R"(mesh tp

def mlp(x: f32["b d"], w_fc: f32["d f@tp"], w_proj: f32["f@tp d"]) -> f32["b d"]:
    h = relu(einsum(x, w_fc, "b d, d f -> b f"))
    return einsum(h, w_proj, "b f, f d -> b d")
)";

const char *whole =
    R"(def mlp(x: f32["b d"], w_fc: f32["d f"], w_proj: f32["f d"]) -> f32["b d"]:
    h = relu(einsum(x, w_fc, "b d, d f -> b f"))
    return einsum(h, w_proj, "b f, f d -> b d")
)";

/// A C-order f32 tensor of `shape` whose element i is a small value of i.
ein::Tensor values(std::vector<int64_t> shape, int seed) {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[size_t(i)] = float((i * 7 + seed * 3) % 23) * 0.125f - 1.25f;
  return ein::Tensor::from_vector(v, shape);
}

const char *linear = R"(dim N = 8
dim D = 3
dim K = 1

def loss(x: f64["N D"], y: f64["N K"], w: f64["D K"]) -> f64[""]:
    return reduce((einsum(x, w, "n d, d k -> n k") - y) ** 2, "n k ->", "mean")
)";

/// Data parallel over `world` against one process: the same losses, step
/// for step (each rank's half batch's gradient averaged is the whole
/// batch's).
bool trainCheck(const ein::Communicator &world, const std::string &dir) {
  int r = world.rank();
  if (r == 0) {
    std::vector<double> x, y;
    for (int n = 0; n < 8; ++n) {
      double target = 0;
      for (int d = 0; d < 3; ++d) {
        x.push_back(std::sin(1.3 * n + 0.7 * d + 0.1));
        target += x.back() * (d - 1.2);
      }
      y.push_back(target + 0.05 * std::cos(double(n)));
    }
    ein::save_npy(ein::Tensor::from_vector(x, {8, 3}), dir + "/x.npy");
    ein::save_npy(ein::Tensor::from_vector(y, {8, 1}), dir + "/y.npy");
    ein::save_safetensors(
        {{"w", ein::Tensor::from_vector(std::vector<double>{0.3, -0.2, 0.1},
                                        {3, 1})}},
        dir + "/init.safetensors");
  }
  // The files are written before any rank reads them.
  world.all_reduce(ein::Tensor::zeros(ein::f32, {1}));
  auto module = ein::Module::from_source(linear, "linear.ein");
  ein::TrainOptions o;
  o.data = {{"x", dir + "/x.npy", ""}, {"y", dir + "/y.npy", ""}};
  o.order = ein::SampleOrder::Sequential;
  o.steps = 4;
  o.lr = 0.05;
  o.init = dir + "/init.safetensors";
  ein::TrainResult alone = ein::train(module, "loss", o);
  o.comm = world;
  ein::TrainResult ranks = ein::train(module, "loss", o);
  // Rank 0 says how the batch was split (the other ranks print nothing).
  if (r == 0) {
    size_t at = ranks.summary.find("data parallel over");
    std::printf("rank 0: %s\n",
                at == std::string::npos
                    ? "NOT DATA PARALLEL"
                    : ranks.summary.substr(at, ranks.summary.find(';', at) - at)
                          .c_str());
  }
  // ZeRO-1 (each parameter's optimizer states on one rank) too.
  o.zero = 1;
  ein::TrainResult zero = ein::train(module, "loss", o);
  bool same = alone.losses.size() == ranks.losses.size() &&
              alone.losses.size() == zero.losses.size();
  for (size_t i = 0; same && i < alone.losses.size(); ++i)
    for (double loss : {ranks.losses[i], zero.losses[i]})
      same = same && std::abs(alone.losses[i] - loss) <=
                         1e-12 * std::abs(alone.losses[i]);
  std::printf("rank %d of %d: data-parallel train (and ZeRO-1) %s one "
              "process (%zu steps)\n",
              r, world.size(), same ? "equals" : "DIFFERS FROM",
              ranks.losses.size());
  return same;
}

int run(const char *dir) {
  ein::Communicator world = ein::Communicator::mpi_world();
  int r = world.rank(), n = world.size();

  // all_reduce: the sum of the ranks' numbers and their max; all_gather:
  // every rank's number in rank order.
  ein::Tensor mine =
      ein::Tensor::from_vector(std::vector<float>{float(r)}, {1});
  ein::Tensor gathered = world.all_gather(mine);
  world.all_reduce(mine);
  ein::Tensor top = ein::Tensor::from_vector(std::vector<float>{float(r)}, {1});
  world.all_reduce(top, ein::max);
  bool ok = mine.get({0}) == n * (n - 1) / 2.0 && top.get({0}) == n - 1;
  for (int q = 0; q < n; ++q)
    ok = ok && gathered.get({q}) == q;
  std::printf("rank %d of %d: collectives %s\n", r, n,
              ok ? "agree" : "DISAGREE");

  // The MLP: f = 4n split over tp; rank r holds columns (rows) r of w_fc
  // (w_proj), copied out of the whole weights by hand.
  int64_t b = 3, d = 5, f = 4 * n;
  ein::Tensor x = values({b, d}, 0), w_fc = values({d, f}, 1),
              w_proj = values({f, d}, 2);
  ein::Tensor fc = ein::Tensor::zeros(ein::f32, {d, 4});
  ein::Tensor proj = ein::Tensor::zeros(ein::f32, {4, d});
  for (int64_t i = 0; i < d; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      fc.set({i, j}, w_fc.get({i, r * 4 + j}));
      proj.set({j, i}, w_proj.get({r * 4 + j, i}));
    }
  auto module = ein::Module::from_source(sharded, "mlp.ein");
  std::vector<ein::Tensor> got =
      ein::call_sharded(module, "mlp", {x, fc, proj}, world, {{"tp", n}});
  std::vector<ein::Tensor> want =
      ein::Module::from_source(whole, "whole.ein").call("mlp", x, w_fc, w_proj);
  double scale = 0, error = 0;
  for (int64_t i = 0; i < b * d; ++i)
    scale = std::max(scale, std::abs(want[0].flat(i)));
  for (int64_t i = 0; i < b * d; ++i)
    error = std::max(error, std::abs(got[0].flat(i) - want[0].flat(i)));
  bool close = got[0].shape() == want[0].shape() && error <= 1e-6 * scale;
  std::printf("rank %d of %d: call_sharded %s the unsharded call\n", r, n,
              close ? "equals" : "DIFFERS FROM");
  bool trained = !dir || trainCheck(world, dir);
  return ok && close && trained ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  try {
    return run(argc > 1 ? argv[1] : nullptr);
  } catch (const ein::Error &e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
