// The lecture's attention head, written with ein's C++ API (ein/ein.h):
//
//   q, k, v: f32[b s (h d)]
//   qh, kh, vh = rearrange(., "b s (h d) -> b h s d")      views: no copy
//   scores = einsum(qh, kh, "b h s d, b h t d -> b h s t") / sqrt(d)
//   p = softmax over t: max, exp(scores - max), sum, divide
//   o = einsum(p, vh, "b h s t, b h t d -> b h s d")
//   out = rearrange(o, "b h s d -> b s (h d)")               a copy
//
// Usage: attention [--cuda] HEADS Q.npy K.npy V.npy OUT.npy [WEIGHTS.npy]
// reads q, k, v, writes the output (and the attention weights p, when asked)
// as .npy files, and prints the shapes, which rearranges were views, and
// what ein does for the copy that merges the heads (ein::explain). With
// --cuda, q, k and v are moved to the GPU and every operation runs there
// (EIN_CUDA=emulated runs the same CUDA code on the CPU).
#include <ein/ein.h>

#include <cmath>
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

int run(int argc, char **argv, ein::Device device) {
  const int64_t heads = std::stoll(argv[1]);
  const ein::Tensor q = ein::load_npy(argv[2]).to(device);
  const ein::Tensor k = ein::load_npy(argv[3]).to(device);
  const ein::Tensor v = ein::load_npy(argv[4]).to(device);

  // Split the heads: only sizes and strides change, the elements stay put.
  const ein::Sizes h{{"h", heads}};
  const ein::Tensor qh = ein::rearrange(q, "b s (h d) -> b h s d", h);
  const ein::Tensor kh = ein::rearrange(k, "b t (h d) -> b h t d", h);
  const ein::Tensor vh = ein::rearrange(v, "b t (h d) -> b h t d", h);
  const int64_t d = qh.shape()[3];

  // Scaled dot-product scores, one row per query position.
  const ein::Tensor scores =
      ein::einsum("b h s d, b h t d -> b h s t", qh, kh) *
      (1.0 / std::sqrt(static_cast<double>(d)));

  // Numerically stable softmax over t: the row max and the row sum keep a
  // unit axis so that they broadcast against the scores.
  const ein::Tensor m = ein::reduce(scores, "b h s t -> b h s 1", ein::max);
  const ein::Tensor e = ein::exp(scores - m);
  const ein::Tensor z = ein::reduce(e, "b h s t -> b h s 1", ein::sum);
  const ein::Tensor p = e / z;

  // The weighted sum of the values, and the heads merged back. o is C-order
  // "b h s d", so h and d are not adjacent in memory: merging them copies.
  const ein::Tensor o = ein::einsum("b h s t, b h t d -> b h s d", p, vh);
  const char *merge = "b h s d -> b s (h d)";
  const ein::Tensor out = ein::rearrange(o, merge);

  ein::save_npy(out, argv[5]);
  if (argc > 6)
    ein::save_npy(p, argv[6]);

  std::printf("attention: heads %lld, d %lld, on %s\n",
              static_cast<long long>(heads), static_cast<long long>(d),
              ein::device_name(device).c_str());
  std::printf("q %s, k %s, v %s\n", shape(q).c_str(), shape(k).c_str(),
              shape(v).c_str());
  std::printf("split heads: qh %s %s of q, kh %s %s of k, vh %s %s of v\n",
              shape(qh).c_str(), view(qh.shares_storage(q)),
              shape(kh).c_str(), view(kh.shares_storage(k)),
              shape(vh).c_str(), view(vh.shares_storage(v)));
  std::printf("scores %s, weights %s\n", shape(scores).c_str(),
              shape(p).c_str());
  std::printf("merge heads: out %s %s of o %s\n", shape(out).c_str(),
              view(out.shares_storage(o)), shape(o).c_str());
  std::printf("explain rearrange(o, \"%s\"):\n%s\n", merge,
              ein::explain("rearrange", merge, {o}).c_str());
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  ein::Device device = ein::cpu;
  if (argc > 1 && std::string(argv[1]) == "--cuda") {
    device = ein::cuda;
    argv[1] = argv[0];
    --argc;
    ++argv;
  }
  if (argc < 6 || argc > 7) {
    std::fprintf(stderr,
                 "usage: %s [--cuda] HEADS Q.npy K.npy V.npy OUT.npy "
                 "[WEIGHTS.npy]\n",
                 argv[0]);
    return 2;
  }
  try {
    return run(argc, argv, device);
  } catch (const ein::Error &error) {
    // ein's diagnostic, as einc prints it: the pattern with a caret.
    std::fprintf(stderr, "%s\n", error.what());
    return static_cast<int>(error.info().kind);
  } catch (const std::exception &error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 2;
  }
}
