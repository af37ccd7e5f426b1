// The C++ API's training loop (ein::train): a linear model's AdamW steps
// against the closed form written out here, the MLP against `einc train`'s
// log on the same options, the progress callback, resume, and errors.
#include "APITestHelpers.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace {

/// A fresh directory for a test's files, removed with it.
struct TempDir {
  std::string path;
  TempDir() {
    char name[] = "/tmp/ein-train-test-XXXXXX";
    EXPECT_NE(mkdtemp(name), nullptr);
    path = name;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
};

/// f64 rows of a linear model: y = x w* + noise, from fixed formulas.
constexpr int64_t N = 12, D = 3;
// y is one column: a 1-D file would be a token stream (docs/training.md).
const char *linearSource = R"(dim N = 12
dim D = 3
dim K = 1

def loss(x: f64["N D"], y: f64["N K"], w: f64["D K"]) -> f64[""]:
    return reduce((einsum(x, w, "n d, d k -> n k") - y) ** 2, "n k ->", "mean")
)";

struct Linear {
  std::vector<double> x, y, w0;
  TempDir temp;
  std::string dir = temp.path;
  Linear() {
    for (int64_t n = 0; n < N; ++n) {
      double target = 0;
      for (int64_t d = 0; d < D; ++d) {
        double v = std::sin(1.3 * double(n) + 0.7 * double(d) + 0.1);
        x.push_back(v);
        target += v * (double(d) - 1.2);
      }
      y.push_back(target + 0.05 * std::cos(double(n)));
    }
    w0 = {0.3, -0.2, 0.1};
    ein::save_npy(ein::Tensor::from_vector(x, {N, D}), dir + "/x.npy");
    ein::save_npy(ein::Tensor::from_vector(y, {N, 1}), dir + "/y.npy");
    ein::save_safetensors({{"w", ein::Tensor::from_vector(w0, {D, 1})}},
                          dir + "/init.safetensors");
  }
  /// Full batches: N rows in order, so every step sees the whole data.
  ein::TrainOptions options(int64_t steps) const {
    ein::TrainOptions o;
    o.data = {{"x", dir + "/x.npy", ""}, {"y", dir + "/y.npy", ""}};
    o.order = ein::SampleOrder::Sequential;
    o.steps = steps;
    o.init = dir + "/init.safetensors";
    return o;
  }
};

/// The oracle: torch.optim.AdamW's update (decoupled decay, bias-corrected
/// moments, eps outside the root) on the full-batch gradient 2/N X^T r,
/// clip_grad_norm_'s scaling, and the documented cosine schedule.
struct Reference {
  std::vector<double> losses, lrs, norms;
};
Reference adamw(const Linear &data, const ein::TrainOptions &o) {
  Reference ref;
  std::vector<double> w = data.w0, m(D, 0), v(D, 0);
  for (int64_t t = 0; t < o.steps; ++t) {
    double lr = o.lr;
    if (o.schedule == ein::Schedule::Cosine) {
      if (t < o.warmup)
        lr = o.lr * double(t + 1) / double(o.warmup);
      else
        lr = o.min_lr + (o.lr - o.min_lr) *
                            (1 + std::cos(M_PI * double(t - o.warmup) /
                                          double(o.steps - o.warmup))) /
                            2;
    }
    std::vector<double> g(D, 0);
    double loss = 0;
    for (int64_t n = 0; n < N; ++n) {
      double r = -data.y[n];
      for (int64_t d = 0; d < D; ++d)
        r += data.x[n * D + d] * w[d];
      loss += r * r / double(N);
      for (int64_t d = 0; d < D; ++d)
        g[d] += 2 * r * data.x[n * D + d] / double(N);
    }
    double norm = 0;
    for (double gd : g)
      norm += gd * gd;
    norm = std::sqrt(norm);
    if (o.clip > 0 && o.clip / (norm + 1e-6) < 1)
      for (double &gd : g)
        gd *= o.clip / (norm + 1e-6);
    ref.losses.push_back(loss);
    ref.lrs.push_back(lr);
    ref.norms.push_back(norm);
    double step = double(t + 1);
    for (int64_t d = 0; d < D; ++d) {
      w[d] *= 1 - lr * o.weight_decay;
      m[d] = o.beta1 * m[d] + (1 - o.beta1) * g[d];
      v[d] = o.beta2 * v[d] + (1 - o.beta2) * g[d] * g[d];
      double mhat = m[d] / (1 - std::pow(o.beta1, step));
      double vhat = v[d] / (1 - std::pow(o.beta2, step));
      w[d] -= lr * mhat / (std::sqrt(vhat) + o.eps);
    }
  }
  return ref;
}

TEST(Train, AdamWMatchesTheClosedForm) {
  Linear data;
  ein::Module m = ein::Module::from_source(linearSource, "linear.ein");
  ein::TrainOptions o = data.options(25);
  o.lr = 0.05;
  o.weight_decay = 0.1;
  o.beta2 = 0.95;
  o.schedule = ein::Schedule::Cosine;
  o.warmup = 5;
  o.min_lr = 0.005;
  o.clip = 1.0; // the first steps' norms are above it, the last ones below
  std::vector<ein::StepInfo> seen;
  o.on_step = [&](const ein::StepInfo &info) {
    seen.push_back(info);
    return true;
  };
  ein::TrainResult r = ein::train(m, "loss", o);
  Reference ref = adamw(data, o);
  ASSERT_EQ(r.losses.size(), 25u);
  ASSERT_EQ(seen.size(), 25u);
  EXPECT_EQ(r.final_step, 25);
  EXPECT_FALSE(r.stopped);
  bool clipped = false, unclipped = false;
  // f64 throughout: the only difference is the order of the sums.
  for (size_t t = 0; t < 25; ++t) {
    EXPECT_NEAR(r.losses[t], ref.losses[t], 1e-10 * ref.losses[t]) << t;
    EXPECT_EQ(seen[t].step, int64_t(t + 1));
    EXPECT_EQ(seen[t].loss, r.losses[t]);
    EXPECT_NEAR(seen[t].lr, ref.lrs[t], 1e-15) << t;
    EXPECT_NEAR(seen[t].grad_norm, ref.norms[t], 1e-10 * ref.norms[t]) << t;
    EXPECT_EQ(seen[t].clipped, ref.norms[t] > 1.0) << t;
    (ref.norms[t] > 1.0 ? clipped : unclipped) = true;
  }
  EXPECT_TRUE(clipped && unclipped);
  EXPECT_LT(r.losses.back(), r.losses.front() / 5); // it learns
}

TEST(Train, CallbackStopsAndResumeContinues) {
  Linear data;
  ein::Module m = ein::Module::from_source(linearSource, "linear.ein");
  ein::TrainOptions whole = data.options(8);
  whole.lr = 0.02;
  ein::TrainResult full = ein::train(m, "loss", whole);
  ASSERT_EQ(full.losses.size(), 8u);

  // Stopped by the callback after step 3: a finished run with a checkpoint.
  ein::TrainOptions first = whole;
  first.checkpoint = data.dir + "/run.safetensors";
  first.on_step = [](const ein::StepInfo &info) { return info.step < 3; };
  ein::TrainResult part = ein::train(m, "loss", first);
  EXPECT_TRUE(part.stopped);
  EXPECT_EQ(part.final_step, 3);
  EXPECT_EQ(part.checkpoint, first.checkpoint);
  ASSERT_EQ(part.losses.size(), 3u);
  auto saved = ein::load_safetensors(first.checkpoint);
  EXPECT_EQ(saved.count("w"), 1u);

  // Resumed: steps 4..8 as the uninterrupted run's, bit for bit (CPU).
  ein::TrainOptions rest = whole;
  rest.init.clear();
  rest.resume = first.checkpoint;
  ein::TrainResult resumed = ein::train(m, "loss", rest);
  ASSERT_EQ(resumed.losses.size(), 5u);
  EXPECT_EQ(resumed.final_step, 8);
  for (size_t t = 0; t < 5; ++t)
    EXPECT_EQ(resumed.losses[t], full.losses[t + 3]) << t;
  for (size_t t = 0; t < 3; ++t)
    EXPECT_EQ(part.losses[t], full.losses[t]) << t;
}

/// The directory of this test's executable, where einc is built too.
std::string binDir() {
  char path[4096];
  ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0)
    return ".";
  std::string exe(path, size_t(n));
  return exe.substr(0, exe.rfind('/'));
}

/// The `key` ("loss", "val_loss") of each line of an `einc train --log`
/// file that has one.
std::vector<double> logValues(const std::string &path,
                              const std::string &key = "loss") {
  std::vector<double> values;
  std::ifstream in(path);
  std::string line;
  std::string quoted = "\"" + key + "\":";
  while (std::getline(in, line)) {
    auto at = line.find(quoted);
    if (at != std::string::npos)
      values.push_back(std::strtod(line.c_str() + at + quoted.size(), nullptr));
  }
  return values;
}

TEST(Train, MLPMatchesEincTrain) {
  // The MLP of test/einc/Inputs/train_oracle.py, on rows from formulas.
  TempDir temp;
  const std::string &dir = temp.path;
  const char *source = R"(dim D = 8
dim H = 16
dim K = 3

def loss(x: f32["B D"], y: f32["B K"], w1: f32["D H"], w2: f32["H K"]) -> f32[""]:
    h = relu(einsum(x, w1, "b d, d h -> b h"))
    return reduce((einsum(h, w2, "b h, h k -> b k") - y) ** 2, "b k ->", "mean")
)";
  std::string path = dir + "/mlp.ein";
  std::ofstream(path) << source;
  auto fill = [](std::vector<int64_t> shape, double scale, double phase) {
    return ein_api_test::iota(shape, [=](int64_t i) {
      return float(scale * std::sin(0.37 * double(i) + phase));
    });
  };
  ein::save_npy(fill({200, 8}, 1.0, 0.0), dir + "/x.npy");
  ein::save_npy(fill({200, 3}, 0.8, 1.0), dir + "/y.npy");
  ein::save_safetensors(
      {{"w1", fill({8, 16}, 0.3, 2.0)}, {"w2", fill({16, 3}, 0.3, 3.0)}},
      dir + "/init.safetensors");
  ein::Module m = ein::Module::load(path);
  ein::TrainOptions o;
  o.data = {{"x", dir + "/x.npy", ""}, {"y", dir + "/y.npy", ""}};
  o.sizes = {{"B", 16}};
  o.steps = 12;
  o.seed = 7;
  o.accumulate = 2;
  o.lr = 0.01;
  o.schedule = ein::Schedule::Cosine;
  o.warmup = 3;
  o.clip = 0.5;
  o.init = dir + "/init.safetensors";
  o.log = dir + "/api.jsonl";
  o.val_fraction = 0.2; // the last 40 rows
  o.eval_every = 4;
  ein::TrainResult r = ein::train(m, "loss", o);
  ASSERT_EQ(r.losses.size(), 12u);
  EXPECT_EQ(logValues(o.log), r.losses); // the API's log is einc's format
  ASSERT_EQ(r.val_losses.size(), 3u);
  std::vector<double> val;
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(r.val_losses[i].first, int64_t(4 * (i + 1)));
    val.push_back(r.val_losses[i].second);
  }
  EXPECT_EQ(logValues(o.log, "val_loss"), val);

  std::string cmd =
      binDir() + "/einc train " + path +
      " --fn loss --dim B=16 --steps 12 --seed 7 --accumulate 2 --lr 0.01 "
      "--schedule cosine --warmup 3 --clip 0.5 --val-fraction 0.2 "
      "--eval-every 4 --print-every 0 --data x=" +
      dir + "/x.npy --data y=" + dir + "/y.npy --init " + dir +
      "/init.safetensors --log " + dir + "/einc.jsonl > " + dir +
      "/einc.out 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::vector<double> einc = logValues(dir + "/einc.jsonl");
  ASSERT_EQ(einc.size(), 12u);
  // The same compiled code on the same batches: equal up to the JSON's
  // round trip (shortest form, exact) and the CPU target's choice.
  for (size_t t = 0; t < 12; ++t)
    EXPECT_NEAR(r.losses[t], einc[t], 1e-6 * std::abs(einc[t])) << t;
  std::vector<double> eincVal = logValues(dir + "/einc.jsonl", "val_loss");
  ASSERT_EQ(eincVal.size(), 3u);
  for (size_t i = 0; i < 3; ++i)
    EXPECT_NEAR(val[i], eincVal[i], 1e-6 * std::abs(eincVal[i])) << i;
}

TEST(Train, ErrorsAreInfoNotCrashes) {
  Linear data;
  ein::Module m = ein::Module::from_source(linearSource, "linear.ein");
  auto fails = [&](const ein::TrainOptions &o, const std::string &needle,
                   const std::string &fn = "loss") {
    auto r = ein::nothrow::train(m, fn, o);
    ASSERT_FALSE(r) << needle;
    EXPECT_EQ(r.error().kind, ein::ErrorInfo::Kind::Usage) << needle;
    EXPECT_NE(r.error().message.find(needle), std::string::npos)
        << r.error().message;
  };
  ein::TrainOptions missing = data.options(3);
  missing.data[0].path = data.dir + "/none.npy";
  fails(missing, "none.npy");

  // A data file whose rows are not the parameter's: y as x.
  ein::TrainOptions shapes = data.options(3);
  shapes.data[0].path = data.dir + "/y.npy";
  fails(shapes, "y.npy");

  ein::TrainOptions steps = data.options(0);
  fails(steps, "TrainOptions::steps (--steps) expects an integer >= 1");

  ein::TrainOptions lr = data.options(3);
  lr.lr = -1;
  fails(lr, "TrainOptions::lr");

  ein::TrainOptions target = data.options(3);
  target.target = "tpu";
  fails(target, "TrainOptions::target 'tpu'");

  ein::TrainOptions init = data.options(3);
  init.init = data.dir + "/x.npy";
  fails(init, "x.npy");

  auto noFn = ein::nothrow::train(m, "nope", data.options(3));
  ASSERT_FALSE(noFn);
  EXPECT_NE(noFn.error().message.find("nope"), std::string::npos);
  EXPECT_THROW(ein::train(m, "loss", data.options(0)), ein::Error);
}

} // namespace
