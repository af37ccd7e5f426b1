// A two-layer MLP over a batch of token vectors, written with ein's C++ API
// (ein/ein.h):
//
//   x: f32[b s i], w1: f32[i h], b1: f32[h], w2: f32[h o], b2: f32[o]
//   xt  = rearrange(x, "b s i -> (b s) i")                  a view
//   y   = act(einsum(xt, w1, "n i, i h -> n h") + b1)       act: gelu or relu
//   z   = einsum(y, w2, "n h, h o -> n o") + b2
//   out = rearrange(z, "(b s) o -> b s o")                  a view
//   rows = rearrange(out, "b s o -> (s b) o")               a copy
//
// Usage: mlp gelu|relu X.npy W1.npy B1.npy W2.npy B2.npy OUT.npy
// writes the output as .npy, and prints the shapes, which rearranges were
// views, and what ein does for the copy and for the first einsum
// (ein::explain).
#include <ein/ein.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace {

std::string shape(const ein::Tensor &t) {
  std::string s = "[";
  for (size_t i = 0; i < t.shape().size(); ++i)
    s += (i ? ", " : "") + std::to_string(t.shape()[i]);
  return s + "]";
}

const char *view(bool shares) { return shares ? "view" : "copy"; }

int run(char **argv) {
  const std::string activation = argv[1];
  if (activation != "gelu" && activation != "relu") {
    std::fprintf(stderr, "error: the activation is gelu or relu, not '%s'\n",
                 activation.c_str());
    return 2;
  }
  const ein::Tensor x = ein::load_npy(argv[2]);
  const ein::Tensor w1 = ein::load_npy(argv[3]);
  const ein::Tensor b1 = ein::load_npy(argv[4]);
  const ein::Tensor w2 = ein::load_npy(argv[5]);
  const ein::Tensor b2 = ein::load_npy(argv[6]);

  // The tokens as one batch of rows: b and s are adjacent, so a view.
  const ein::Tensor xt = ein::rearrange(x, "b s i -> (b s) i");

  // The biases broadcast over the rows, as in numpy.
  const ein::Tensor pre = ein::einsum("n i, i h -> n h", xt, w1) + b1;
  const ein::Tensor y = activation == "gelu" ? ein::gelu(pre) : ein::relu(pre);
  const ein::Tensor z = ein::einsum("n h, h o -> n o", y, w2) + b2;

  // Back to one row per (b, s): a split, so a view again.
  const ein::Tensor out =
      ein::rearrange(z, "(b s) o -> b s o", {{"b", x.shape()[0]}});
  ein::save_npy(out, argv[7]);

  // Sequence-major rows, (s b): s and b swap places, and one stride cannot
  // step through both, so this layout needs a copy.
  const char *seqMajor = "b s o -> (s b) o";
  const ein::Tensor rows = ein::rearrange(out, seqMajor);

  std::printf("mlp: %s\n", activation.c_str());
  std::printf("x %s, w1 %s, b1 %s, w2 %s, b2 %s\n", shape(x).c_str(),
              shape(w1).c_str(), shape(b1).c_str(), shape(w2).c_str(),
              shape(b2).c_str());
  std::printf("flatten tokens: xt %s %s of x\n", shape(xt).c_str(),
              view(xt.shares_storage(x)));
  std::printf("hidden %s, out rows %s\n", shape(y).c_str(), shape(z).c_str());
  std::printf("unflatten tokens: out %s %s of z\n", shape(out).c_str(),
              view(out.shares_storage(z)));
  std::printf("sequence-major: rows %s %s of out\n", shape(rows).c_str(),
              view(rows.shares_storage(out)));
  std::printf("explain rearrange(out, \"%s\"):\n%s\n", seqMajor,
              ein::explain("rearrange", seqMajor, {out}).c_str());
  std::printf("explain einsum(\"n i, i h -> n h\"):\n%s\n",
              ein::explain("einsum", "n i, i h -> n h", {xt, w1}).c_str());
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 8) {
    std::fprintf(stderr, "usage: %s gelu|relu X.npy W1.npy B1.npy W2.npy "
                         "B2.npy OUT.npy\n",
                 argv[0]);
    return 2;
  }
  try {
    return run(argv);
  } catch (const ein::Error &error) {
    std::fprintf(stderr, "%s\n", error.what());
    return static_cast<int>(error.info().kind);
  } catch (const std::exception &error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 2;
  }
}
