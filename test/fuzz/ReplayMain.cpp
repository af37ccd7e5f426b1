// Replays fuzz inputs through a target's LLVMFuzzerTestOneInput without
// libFuzzer or sanitizers: the main build's check of the seed corpus and the
// fixed regressions of a target that CI does not fuzz (docs/fuzzing.md).
//
//   ein-fuzz-replay-TARGET PATH...   files, or directories read recursively
//
// Inputs named open-ORACLE--WHAT reproduce a finding not fixed yet and are
// skipped (scripts/fuzz.sh checks that they still fail); *.md files are
// notes. A finding aborts with the oracle's message after the input's path is
// printed; an input running longer than EIN_FUZZ_TIMEOUT seconds (default 60)
// is a finding too.
#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace {

namespace fs = std::filesystem;

bool isReplayed(const fs::path &path) {
  std::string name = path.filename().string();
  return name.rfind("open-", 0) != 0 && path.extension() != ".md";
}

void onTimeout(int) {
  static const char message[] = "ein-fuzz-replay: an input ran past the "
                                "timeout (a hang): see the path above\n";
  (void)!write(2, message, sizeof(message) - 1);
  _exit(1);
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PATH...\n", argv[0]);
    return 2;
  }
  std::vector<fs::path> inputs;
  size_t skipped = 0;
  for (int i = 1; i < argc; ++i) {
    std::error_code error;
    fs::path root(argv[i]);
    if (fs::is_directory(root, error)) {
      for (auto &entry : fs::recursive_directory_iterator(root, error))
        if (entry.is_regular_file())
          (isReplayed(entry.path()) ? inputs.push_back(entry.path())
                                    : void(++skipped));
    } else if (fs::is_regular_file(root, error)) {
      (isReplayed(root) ? inputs.push_back(root) : void(++skipped));
    } else {
      std::fprintf(stderr, "ein-fuzz-replay: no file or directory '%s'\n",
                   argv[i]);
      return 2;
    }
  }
  std::sort(inputs.begin(), inputs.end());
  const char *timeoutText = std::getenv("EIN_FUZZ_TIMEOUT");
  unsigned timeout = timeoutText ? std::atoi(timeoutText) : 60;
  std::signal(SIGALRM, onTimeout);
  for (const fs::path &input : inputs) {
    std::ifstream in(input, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)),
                      std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) {
      std::fprintf(stderr, "ein-fuzz-replay: cannot read '%s'\n",
                   input.c_str());
      return 2;
    }
    // Named before it runs, so that a crash or a finding says which input.
    std::fprintf(stderr, "replaying %s\n", input.c_str());
    alarm(timeout);
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(bytes.data()),
                           bytes.size());
    alarm(0);
  }
  std::printf("replayed %zu inputs, skipped %zu\n", inputs.size(), skipped);
  return 0;
}
