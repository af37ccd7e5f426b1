// Per-call overhead and first-call compile latency of the C++ API
// (bench/cpp_api_overhead.py runs it beside einops and PyTorch), and, with
// `recipes`, the cost of a call with a pattern never seen before. Prints one
// line per measurement: "NAME SECONDS".
#include <ein/ein.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

/// The median over 7 batches of the time per call, each batch long enough
/// (>= 20 ms) to hide the clock's cost.
double perCall(const std::function<void()> &call) {
  call();
  size_t n = 1;
  for (;;) {
    auto start = Clock::now();
    for (size_t i = 0; i < n; ++i)
      call();
    double s = std::chrono::duration<double>(Clock::now() - start).count();
    if (s >= 0.02)
      break;
    n *= 2;
  }
  std::vector<double> samples;
  for (int batch = 0; batch < 7; ++batch) {
    auto start = Clock::now();
    for (size_t i = 0; i < n; ++i)
      call();
    samples.push_back(
        std::chrono::duration<double>(Clock::now() - start).count() / n);
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

double once(const std::function<void()> &call) {
  auto start = Clock::now();
  call();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

} // namespace

/// The calling thread's CPU time in seconds: what the API spends planning,
/// even on a loaded machine (wall time there is mostly waiting).
double threadSeconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

/// The cost of a new recipe (plan) in a warm process, in the calling
/// thread's CPU time: the first call of each of `n` patterns never seen
/// before, whose kernels are cached (a view, or an einsum whose elementary
/// kernel an earlier pattern compiled).
void newRecipes() {
  const int n = 200;
  ein::Tensor x = ein::Tensor::zeros(ein::f32, {2, 3, 8});
  ein::Tensor a = ein::Tensor::zeros(ein::f32, {4, 4});
  ein::einsum("i j, j k -> i k", a, a); // compiles the elementary kernel
  std::vector<std::string> views, einsums;
  for (int k = 0; k < n; ++k) {
    // Built without `"literal" + std::string`, which GCC 12
    // flags with a false -Wrestrict (GCC bug 105329).
    std::string id = std::to_string(k);
    views.push_back(std::string("b")
                        .append(id)
                        .append(" s c -> b")
                        .append(id)
                        .append(" s c"));
    einsums.push_back(std::string("i")
                          .append(id)
                          .append(" j, j k -> i")
                          .append(id)
                          .append(" k"));
  }
  double start = threadSeconds();
  for (const std::string &p : views)
    ein::rearrange(x, p);
  double view = threadSeconds() - start;
  start = threadSeconds();
  for (const std::string &p : einsums)
    ein::einsum(p, a, a);
  double einsum = threadSeconds() - start;
  // pack has no recipe: every call checks its pattern.
  start = threadSeconds();
  for (int k = 0; k < n; ++k)
    ein::pack({x, x}, "b * c");
  double pack = threadSeconds() - start;
  std::printf("pack_call %.9f\n", pack / n);
  std::printf("new_recipe_view %.9f\n", view / n);
  std::printf("new_recipe_einsum %.9f\n", einsum / n);
}

int main(int argc, char **argv) {
  std::string what = argc > 1 ? argv[1] : "overhead";
  if (what == "recipes") {
    newRecipes();
    return 0;
  }
  std::vector<float> values(2 * 3 * 8, 1.0f);
  ein::Tensor x = ein::Tensor::from_vector(values, {2, 3, 8});
  ein::Tensor a =
      ein::Tensor::from_vector(std::vector<float>(16, 0.5f), {4, 4});
  ein::Tensor v = ein::Tensor::from_vector(std::vector<float>(8, 0.5f), {8});
  // First calls: compile (or load from the disk cache) and run.
  std::printf("first_rearrange_view %.9f\n", once([&] {
                ein::rearrange(x, "b s (h d) -> b h s d", {{"h", 2}});
              }));
  std::printf("first_einsum %.9f\n",
              once([&] { ein::einsum("i j, j k -> i k", a, a); }));
  std::printf("first_reduce %.9f\n",
              once([&] { ein::reduce(x, "b s c -> b c", ein::sum); }));
  std::printf("first_exp %.9f\n", once([&] { ein::exp(v); }));
  std::printf("first_rearrange_copy %.9f\n",
              once([&] { ein::rearrange(x, "b s c -> (c s) b"); }));
  if (what == "first")
    return 0;
  std::printf("view_rearrange %.9f\n", perCall([&] {
                ein::rearrange(x, "b s (h d) -> b h s d", {{"h", 2}});
              }));
  std::printf("kernel_einsum_4x4 %.9f\n",
              perCall([&] { ein::einsum("i j, j k -> i k", a, a); }));
  std::printf("kernel_reduce %.9f\n",
              perCall([&] { ein::reduce(x, "b s c -> b c", ein::sum); }));
  std::printf("kernel_exp_8 %.9f\n", perCall([&] { ein::exp(v); }));
  std::printf("kernel_rearrange_copy %.9f\n",
              perCall([&] { ein::rearrange(x, "b s c -> (c s) b"); }));
  return 0;
}
