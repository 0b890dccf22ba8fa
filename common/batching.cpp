#include "common/batching.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace dialtree {

std::vector<std::vector<std::size_t>> plan_batches(const std::vector<std::size_t>& lengths,
                                                   const BatchPlanLimits& limits) {
  if (limits.max_batch_size == 0) {
    throw std::invalid_argument("plan_batches: max_batch_size must be >= 1");
  }
  std::vector<std::size_t> order(lengths.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  if (limits.longest_first) {
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return lengths[a] > lengths[b]; });
  }
  std::vector<std::vector<std::size_t>> batches;
  for (std::size_t start = 0; start < order.size();) {
    std::size_t longest = lengths[order[start]];
    std::size_t end = start + 1;
    while (end < order.size() && end - start < limits.max_batch_size) {
      const std::size_t padded_to = std::max(longest, lengths[order[end]]);
      if (limits.max_batch_tokens > 0 && padded_to * (end - start + 1) > limits.max_batch_tokens) {
        break;
      }
      longest = padded_to;
      ++end;
    }
    batches.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(start),
                         order.begin() + static_cast<std::ptrdiff_t>(end));
    start = end;
  }
  return batches;
}

}  // namespace dialtree
