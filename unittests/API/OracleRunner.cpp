// Runs C++ API calls listed in a case file on .npy inputs and writes the
// results as .npy, for test/cpp-api/einops-oracle.test, which compares them
// with einops and numpy. One case per line, tab-separated:
//   NAME  OP  PATTERN  SIZES  INPUTS  OUTPUT
// OP: rearrange, reduce:HOW, repeat, einsum, pack, unpack, module:FUNCTION
// (PATTERN is then the .ein file; its first result is written), or an
// elementwise function name; SIZES: name=value,... or "-"; INPUTS: .npy
// paths, comma-separated, each prefixed with "T:" to pass the reversed-axes
// view of the file's array (a strided, non-contiguous tensor); OUTPUT: the
// .npy to write (unpack: a prefix, one file per part). Prints one line per
// case: "NAME ok view|copy" or "NAME error: ...", then with --stats the
// kernel caches' counts ("kernels: compiled N loaded M"). With --device
// cuda every input is moved to the CUDA device first (views are made
// there), so the calls run on it; results are saved through the CPU.
#include <ein/ein.h>

#include <fstream>
#include <iostream>

namespace {

/// The parts of `text` between `sep`s, empty ones included ("a;" is "a", "").
std::vector<std::string> split(const std::string &text, char sep) {
  std::vector<std::string> parts{""};
  for (char c : text) {
    if (c == sep)
      parts.emplace_back();
    else
      parts.back() += c;
  }
  return parts;
}

ein::Tensor input(const std::string &spec, ein::Device device) {
  if (spec.rfind("T:", 0) == 0) {
    ein::Tensor t = ein::load_npy(spec.substr(2)).to(device);
    std::string axes;
    for (int64_t d = 0; d < t.rank(); ++d)
      axes += " a" + std::to_string(d);
    std::string reversed;
    for (int64_t d = t.rank(); d-- > 0;)
      reversed += " a" + std::to_string(d);
    return ein::rearrange(t, axes + " ->" + reversed);
  }
  return ein::load_npy(spec).to(device);
}

ein::Reduction reduction(const std::string &name) {
  const std::pair<const char *, ein::Reduction> table[] = {
      {"sum", ein::sum}, {"mean", ein::mean}, {"max", ein::max},
      {"min", ein::min}, {"prod", ein::prod}, {"any", ein::any},
      {"all", ein::all}, {"var", ein::var}};
  for (auto &[n, r] : table)
    if (name == n)
      return r;
  throw std::runtime_error("unknown reduction " + name);
}

} // namespace

int main(int argc, char **argv) {
  bool stats = false;
  ein::Device device = ein::cpu;
  bool usage = argc < 2;
  for (int i = 2; i < argc && !usage; ++i) {
    std::string arg = argv[i];
    if (arg == "--stats")
      stats = true;
    else if (arg == "--device" && i + 1 < argc)
      device = std::string(argv[++i]) == "cuda" ? ein::cuda : ein::cpu;
    else
      usage = true;
  }
  if (usage) {
    std::cerr << "usage: EinAPIOracle CASES.tsv [--stats] [--device "
                 "cpu|cuda]\n";
    return 2;
  }
  std::ifstream cases(argv[1]);
  std::string line;
  while (std::getline(cases, line)) {
    if (line.empty())
      continue;
    auto f = split(line, '\t');
    if (f.size() != 6) {
      std::cerr << "bad case line: " << line << "\n";
      return 2;
    }
    const std::string &name = f[0], &op = f[1], &pattern = f[2];
    ein::Sizes sizes;
    if (f[3] != "-")
      for (auto &kv : split(f[3], ',')) {
        auto eq = kv.find('=');
        sizes.push_back({kv.substr(0, eq), std::stoll(kv.substr(eq + 1))});
      }
    try {
      std::vector<ein::Tensor> inputs;
      for (auto &spec : split(f[4], ','))
        inputs.push_back(input(spec, device));
      ein::Tensor out;
      if (op == "rearrange")
        out = ein::rearrange(inputs[0], pattern, sizes);
      else if (op.rfind("reduce:", 0) == 0)
        out = ein::reduce(inputs[0], pattern, reduction(op.substr(7)), sizes);
      else if (op == "repeat")
        out = ein::repeat(inputs[0], pattern, sizes);
      else if (op == "einsum")
        out = ein::nothrow::einsum(pattern, inputs, sizes).value();
      else if (op == "pack")
        out = ein::pack(inputs, pattern).tensor;
      else if (op == "unpack") {
        ein::PackedShapes shapes;
        for (auto &part : split(f[3], ';')) {
          shapes.emplace_back();
          for (auto &s : split(part, ' '))
            if (!s.empty())
              shapes.back().push_back(std::stoll(s));
        }
        auto parts = ein::unpack(inputs[0], shapes, pattern);
        for (size_t i = 0; i < parts.size(); ++i)
          ein::save_npy(parts[i], f[5] + "." + std::to_string(i) + ".npy");
        std::cout << name << " ok "
                  << (parts[0].shares_storage(inputs[0]) ? "view" : "copy")
                  << "\n";
        continue;
      } else if (op.rfind("module:", 0) == 0)
        out = ein::Module::load(pattern).call(op.substr(7), inputs).at(0);
      else
        out = ein::nothrow::elementwise(op, inputs).value();
      ein::save_npy(out, f[5]);
      bool view = false;
      for (auto &t : inputs)
        view |= out.shares_storage(t);
      std::cout << name << " ok " << (view ? "view" : "copy") << "\n";
    } catch (const std::exception &e) {
      std::string what = e.what();
      std::cout << name << " error: " << what.substr(0, what.find('\n'))
                << "\n";
    }
  }
  if (stats) {
    ein::CacheStats c = ein::cache_stats();
    std::cout << "kernels: compiled " << c.compiled << " loaded " << c.loaded
              << "\n";
  }
  return 0;
}
