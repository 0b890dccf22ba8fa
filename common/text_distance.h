// String distance for "did you mean" suggestions in strict config readers.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace dialtree {

/// `s` with ASCII letters lower-cased (other bytes kept): key names compare case-insensitively.
std::string ascii_lower(std::string s);

/// Levenshtein distance between `a` and `b` (byte-wise insertions, deletions, substitutions).
std::size_t edit_distance(const std::string& a, const std::string& b);

/// How close `candidate` is to a mistyped `name`, for a "did you mean" hint: the
/// case-insensitive edit distance, at most 1 when one contains the other (both at least 5
/// characters), or nullopt when they are too far apart to suggest (distance > max(2, |name|/3)).
std::optional<std::size_t> suggestion_distance(const std::string& name,
                                               const std::string& candidate);

/// The candidate with the smallest suggestion_distance to `name` (the first one on ties), for a
/// "did you mean" hint after an unknown key; "" if none is close enough (then say no hint
/// rather than a random key): the CLI's subcommands and flags (cli/app.cpp). Settings tables rank
/// with sections and aliases on top of suggestion_distance (common/settings.h suggestion()).
std::string closest_name(const std::string& name, const std::vector<std::string>& candidates);

}  // namespace dialtree
