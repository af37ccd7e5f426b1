// Training a model with ein's C++ API (ein/ein.h): `einc train`'s loop as a
// library call, AdamW over full batches read in order, with a progress
// callback that prints a line per step and can stop the run early.
//
// Usage: train MODEL.ein LOSS STEPS LR INIT.safetensors CHECKPOINT.safetensors
//              LOG.jsonl PARAM=FILE.npy... [--stop-below LOSS]
// The loss's data parameters are read from the .npy files (rows in order;
// a batch of all the rows is the full data every step); the parameters
// start from INIT and end in CHECKPOINT; LOG gets einc train's JSONL lines.
#include <ein/ein.h>

#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char **argv) {
  if (argc < 9) {
    std::fprintf(stderr,
                 "usage: train MODEL.ein LOSS STEPS LR INIT.safetensors "
                 "CHECKPOINT.safetensors LOG.jsonl PARAM=FILE.npy... "
                 "[--stop-below LOSS]\n");
    return 2;
  }
  ein::TrainOptions options;
  options.steps = std::atoll(argv[3]);
  options.lr = std::atof(argv[4]);
  options.init = argv[5];
  options.checkpoint = argv[6];
  options.log = argv[7];
  options.order = ein::SampleOrder::Sequential;
  double stopBelow = -1;
  for (int i = 8; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--stop-below" && i + 1 < argc) {
      stopBelow = std::atof(argv[++i]);
      continue;
    }
    auto eq = arg.find('=');
    if (eq == std::string::npos) {
      std::fprintf(stderr, "train: '%s' is not PARAM=FILE.npy\n", argv[i]);
      return 2;
    }
    options.data.push_back({arg.substr(0, eq), arg.substr(eq + 1), ""});
  }
  options.on_step = [&](const ein::StepInfo &s) {
    std::printf("step %lld  loss %.6g  lr %.3g  |g| %.4g\n",
                static_cast<long long>(s.step), s.loss, s.lr, s.grad_norm);
    return !(s.loss < stopBelow);
  };
  // The non-throwing forms: the error is a value, printed as einc prints
  // it, and its kind is einc's exit code.
  auto module = ein::nothrow::load_module(argv[1]);
  if (!module) {
    std::fprintf(stderr, "%s\n", module.error().message.c_str());
    return static_cast<int>(module.error().kind);
  }
  auto result = ein::nothrow::train(*module, argv[2], options);
  if (!result) {
    std::fprintf(stderr, "%s\n", result.error().message.c_str());
    return static_cast<int>(result.error().kind);
  }
  std::printf("%s after step %lld: loss %.6g -> %.6g; checkpoint %s\n",
              result->stopped ? "stopped" : "done",
              static_cast<long long>(result->final_step),
              result->losses.front(), result->losses.back(),
              result->checkpoint.c_str());
  return 0;
}
