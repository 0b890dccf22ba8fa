#include "model/packing.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace dialtree::model {

std::vector<LengthBucket> plan_length_buckets(const std::vector<std::int64_t>& sorted_lengths,
                                              std::int64_t overhead) {
  if (overhead < 0) throw std::invalid_argument("plan_length_buckets: overhead < 0");
  const std::size_t n = sorted_lengths.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (sorted_lengths[i] < 1 || (i > 0 && sorted_lengths[i] < sorted_lengths[i - 1])) {
      throw std::invalid_argument("plan_length_buckets: lengths must be ascending and >= 1 (at " +
                                  std::to_string(i) + ")");
    }
  }
  // best[j]: least cost of the first j inputs; cut[j]: where the last bucket of that plan starts.
  std::vector<double> best(n + 1, 0.0);
  std::vector<std::size_t> cut(n + 1, 0);
  for (std::size_t j = 1; j <= n; ++j) {
    const double len = static_cast<double>(sorted_lengths[j - 1]);
    best[j] = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < j; ++i) {
      const double cost =
          best[i] + static_cast<double>(overhead) + static_cast<double>(j - i) * len * len;
      if (cost < best[j]) best[j] = cost, cut[j] = i;
    }
  }
  std::vector<LengthBucket> buckets;
  for (std::size_t j = n; j > 0; j = cut[j]) buckets.push_back({cut[j], j, sorted_lengths[j - 1]});
  std::reverse(buckets.begin(), buckets.end());
  return buckets;
}

}  // namespace dialtree::model
