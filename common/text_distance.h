// String distance for "did you mean" suggestions in strict config readers.
#pragma once

#include <cstddef>
#include <string>

namespace dialtree {

/// Levenshtein distance between `a` and `b` (byte-wise insertions, deletions, substitutions).
std::size_t edit_distance(const std::string& a, const std::string& b);

}  // namespace dialtree
