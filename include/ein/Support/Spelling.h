// Edit distance between names, for "did you mean" suggestions.
#pragma once

#include "ein/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace ein {

/// The Levenshtein distance between `a` and `b` (insertions, deletions and
/// substitutions of one byte each; names differ mostly in ASCII letters).
size_t editDistance(const std::string &a, const std::string &b);

/// The candidate nearest to `name` by edit distance, if one is at most
/// `maxDistance` away; ties go to the earliest candidate. `name` itself is
/// never suggested.
std::optional<std::string>
closestName(const std::string &name, const std::vector<std::string> &candidates,
            size_t maxDistance);

/// The error of a function name that `path` does not define (`einc run
/// --fn`, `report --fn`, the C++ API's calls): "no function named 'mmm'",
/// with "; did you mean 'mm'?" when one of `functions` (the file's, in
/// order) is a typo away, and a note listing them all.
Error noFunctionError(const std::string &path, const std::string &name,
                      const std::vector<std::string> &functions);

} // namespace ein
