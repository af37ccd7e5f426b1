// A program using the installed C++ API that imports ein's library
// (`from ein.optim import sgd`): the library is found beside libein.so
// (PREFIX/share/ein), wherever this program is, unless EIN_LIBRARY_PATH
// names another directory. One SGD step is compared with w - lr*g computed
// here, as torch.optim.SGD computes it (lr rounded to f32 where it meets
// the tensor). Prints "sgd: ok" or the error, exit 0 / the error's kind.
#include <ein/ein.h>

#include <cmath>
#include <cstdio>
#include <vector>

int main() {
  const char *source = "from ein.optim import sgd\n"
                       "def step(w: f32[\"n\"], g: f32[\"n\"], lr: f64[\"\"]) "
                       "-> f32[\"n\"]:\n"
                       "    return sgd(w, g, lr)\n";
  try {
    ein::Module module = ein::Module::from_source(source, "step.ein");
    std::vector<float> w = {1.5f, -2.0f, 0.25f}, g = {0.5f, 3.0f, -1.0f};
    double lr = 0.1;
    auto [next] =
        module.call<1>("step", ein::Tensor::from_vector(w, {3}),
                       ein::Tensor::from_vector(g, {3}),
                       ein::Tensor::from_vector(std::vector<double>{lr}, {}));
    for (int i = 0; i < 3; ++i) {
      float expected = w[i] - static_cast<float>(lr) * g[i];
      if (std::fabs(next.at<float>({i}) - expected) >
          1e-6f * std::fabs(expected)) {
        std::printf("sgd: element %d is %g, expected %g\n", i,
                    next.at<float>({i}), expected);
        return 1;
      }
    }
    std::printf("sgd: ok\n");
    return 0;
  } catch (const ein::Error &error) {
    std::fprintf(stderr, "%s\n", error.what());
    return static_cast<int>(error.info().kind);
  }
}
