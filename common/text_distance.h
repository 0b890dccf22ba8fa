// String distance for "did you mean" suggestions in strict config readers.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace dialtree {

/// Levenshtein distance between `a` and `b` (byte-wise insertions, deletions, substitutions).
std::size_t edit_distance(const std::string& a, const std::string& b);

/// The candidate with the smallest edit_distance to `name` (the first one on ties), for a
/// "did you mean" hint after an unknown key; "" if there are no candidates. The trainer's
/// config reader ranks with sections and aliases on top of this (trainer/config.cpp).
std::string closest_name(const std::string& name, const std::vector<std::string>& candidates);

}  // namespace dialtree
