// Calls every C++ API operation on tiny tensors and prints how many threads
// the process has after each, for test/cpp-api/no-fork.test: a call that
// entered an OpenMP parallel region would have started the runtime's worker
// threads, so a count above 1 names the first call that forked. A large
// copy at the end must fork, which shows the count sees it.
#include <ein/ein.h>

#include <dirent.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace {

/// The threads of this process (/proc/self/task has one entry per thread).
int threads() {
  DIR *dir = opendir("/proc/self/task");
  if (!dir)
    return -1;
  int n = 0;
  while (dirent *entry = readdir(dir))
    if (entry->d_name[0] != '.')
      ++n;
  closedir(dir);
  return n;
}

void check(const char *name, const std::function<void()> &call) {
  call();
  std::printf("%s: threads %d\n", name, threads());
}

} // namespace

int main() {
  std::printf("start: threads %d\n", threads());
  std::vector<float> values(2 * 3 * 8);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = float(i) - 20.0f;
  ein::Tensor x = ein::Tensor::from_vector(values, {2, 3, 8});
  ein::Tensor a =
      ein::Tensor::from_vector(std::vector<float>(16, 0.5f), {4, 4});
  ein::Tensor v = ein::Tensor::from_vector(std::vector<float>(8, 0.5f), {8});
  check("rearrange view", [&] {
    ein::rearrange(x, "b s (h d) -> b h s d", {{"h", 2}});
  });
  check("rearrange copy", [&] { ein::rearrange(x, "b s c -> (c s) b"); });
  check("rearrange copy, last axis kept",
        [&] { ein::rearrange(x, "b s c -> (s b) c"); });
  check("repeat", [&] { ein::repeat(x, "b s c -> b s r c", {{"r", 3}}); });
  check("repeat transposed", [&] {
    ein::repeat(x, "b s c -> c r s b", {{"r", 2}});
  });
  for (auto [name, how] :
       {std::pair("sum", ein::sum), std::pair("mean", ein::mean),
        std::pair("max", ein::max), std::pair("min", ein::min),
        std::pair("prod", ein::prod)}) {
    check((std::string("reduce last axis ") + name).c_str(),
          [&] { ein::reduce(x, "b s c -> b s", how); });
    check((std::string("reduce leading axis ") + name).c_str(),
          [&] { ein::reduce(x, "b s c -> s c", how); });
  }
  check("einsum", [&] { ein::einsum("i j, j k -> i k", a, a); });
  check("einsum transposed",
        [&] { ein::einsum("b s c, b t c -> b s t", x, x); });
  check("pack", [&] { ein::pack({x, x}, "b * c"); });
  check("unpack", [&] {
    ein::Packed p = ein::pack({x, x}, "b * c");
    ein::unpack(p.tensor, p.shapes, "b * c");
  });
  check("exp", [&] { ein::exp(v); });
  check("add, broadcast", [&] { ein::add(x, v); });
  check("astype", [&] { ein::astype(x, ein::f64); });
  ein::Tensor big =
      ein::Tensor::from_vector(std::vector<float>(512 * 512, 1.0f), {512, 512});
  check("large copy", [&] { ein::rearrange(big, "a b -> (b a)"); });
  return 0;
}
