// Edit distance between names, for "did you mean" suggestions.
#pragma once

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

} // namespace ein
