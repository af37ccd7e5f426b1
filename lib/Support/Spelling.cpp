// Edit distance between names, for "did you mean" suggestions.
#include "ein/Support/Spelling.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>

namespace ein {

size_t editDistance(const std::string &a, const std::string &b) {
  // One row of the dynamic-programming table at a time.
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), 0);
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                         diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::optional<std::string>
closestName(const std::string &name, const std::vector<std::string> &candidates,
            size_t maxDistance) {
  std::optional<std::string> best;
  size_t bestDistance = 0;
  for (const std::string &candidate : candidates) {
    if (candidate == name)
      continue;
    size_t d = editDistance(name, candidate);
    if (d <= maxDistance && (!best || d < bestDistance)) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

Error noFunctionError(const std::string &path, const std::string &name,
                      const std::vector<std::string> &functions) {
  std::string message = fmt::format("no function named '{}'", name);
  if (auto close = closestName(name, functions, name.size() / 2 + 1))
    message += fmt::format("; did you mean '{}'?", *close);
  Error error = Error::inFile(ErrorKind::Program, path, std::move(message));
  if (functions.empty())
    return error.withNote(fmt::format("{} defines no function", path));
  return error.withNote(
      fmt::format("the functions of {}: {}", path, fmt::join(functions, ", ")));
}

} // namespace ein
