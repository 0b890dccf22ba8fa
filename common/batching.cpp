#include "common/batching.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

namespace dialtree {

namespace {

void check_limits(const BatchPlanLimits& limits) {
  if (limits.max_batch_size == 0) {
    throw std::invalid_argument("plan_batches: max_batch_size must be >= 1");
  }
}

// The greedy cut, the one rule of this file: where the batch that starts at position `start` of
// `count` inputs ends. `length_at(i)` is the length of the input at position i.
template <class LengthAt>
std::size_t cut_end(std::size_t start, std::size_t count, const LengthAt& length_at,
                    const BatchPlanLimits& limits) {
  std::size_t longest = length_at(start);
  std::size_t end = start + 1;
  while (end < count && end - start < limits.max_batch_size) {
    const std::size_t padded_to = std::max(longest, length_at(end));
    if (limits.max_batch_tokens > 0 && padded_to * (end - start + 1) > limits.max_batch_tokens) {
      break;
    }
    longest = padded_to;
    ++end;
  }
  return end;
}

}  // namespace

std::vector<std::vector<std::size_t>> plan_batches(const std::vector<std::size_t>& lengths,
                                                   const BatchPlanLimits& limits) {
  check_limits(limits);
  std::vector<std::size_t> order(lengths.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  if (limits.longest_first) {
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return lengths[a] > lengths[b]; });
  }
  const auto length_at = [&](std::size_t i) { return lengths[order[i]]; };
  std::vector<std::vector<std::size_t>> batches;
  for (std::size_t start = 0; start < order.size();) {
    const std::size_t end = cut_end(start, order.size(), length_at, limits);
    batches.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(start),
                         order.begin() + static_cast<std::ptrdiff_t>(end));
    start = end;
  }
  return batches;
}

std::size_t first_batch_size(const std::vector<std::size_t>& lengths,
                             const BatchPlanLimits& limits) {
  check_limits(limits);
  if (lengths.empty()) return 0;
  return cut_end(
      0, lengths.size(), [&](std::size_t i) { return lengths[i]; }, limits);
}

std::string input_length_problem(std::size_t max_input_length, std::size_t max_batch_tokens) {
  if (max_input_length <= max_batch_tokens) return "";
  return std::to_string(max_input_length) + " exceeds --max-batch-tokens " +
         std::to_string(max_batch_tokens) +
         ": one input must fit one batch; raise --max-batch-tokens";
}

}  // namespace dialtree
