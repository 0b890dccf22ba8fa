#include "common/text_distance.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace dialtree {

std::string ascii_lower(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::optional<std::size_t> suggestion_distance(const std::string& name,
                                               const std::string& candidate) {
  const std::string n = ascii_lower(name), c = ascii_lower(candidate);
  std::size_t d = edit_distance(n, c);
  const bool contained = n.size() >= 5 && (c.find(n) != std::string::npos ||
                                           (c.size() >= 5 && n.find(c) != std::string::npos));
  if (d > std::max<std::size_t>(2, n.size() / 3) && !contained) return std::nullopt;
  if (contained) d = std::min<std::size_t>(d, 1);
  return d;
}

std::string closest_name(const std::string& name, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = static_cast<std::size_t>(-1);
  for (const std::string& c : candidates) {
    const std::optional<std::size_t> d = suggestion_distance(name, c);
    if (d && *d < best_d) {
      best_d = *d;
      best = c;
    }
  }
  return best;
}

}  // namespace dialtree
