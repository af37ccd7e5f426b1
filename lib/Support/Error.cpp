// Printing of ein::Error, the one error value of library code.
#include "ein/Support/Error.h"

#include <fmt/format.h>

// The build decides against exceptions (top-level CMakeLists.txt); this keeps
// that decision from silently reverting.
#ifdef __cpp_exceptions
#error "ein is built with -fno-exceptions: errors are ein::Error values"
#endif

namespace ein {

namespace {

void endLine(std::string &text) {
  if (!text.empty() && text.back() != '\n')
    text += '\n';
}

} // namespace

std::string Error::str(const std::string &tool) const {
  std::string out;
  if (!rendered.empty()) {
    out = rendered;
  } else {
    std::string where = file.empty() ? tool
                        : line       ? fmt::format("{}:{}:{}", file, line, col)
                                     : file;
    out = fmt::format("{}: error: {}\n", where, message);
    out += context;
  }
  endLine(out);
  for (const std::string &note : notes)
    out += fmt::format("{}: note: {}\n", tool, note);
  return out;
}

} // namespace ein
