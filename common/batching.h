// Cutting inputs of mixed lengths into forward batches (docs/serving.md "Batching, limits and
// operation"): the one place that orders inputs (longest first, or as they came) and cuts batches
// within a size limit and a padded-token budget. Used by `dialtree embed`, bench_embed,
// fine-tuning's evaluation passes and the server's batcher (in arrival order). Torch-free.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace dialtree {

/// Limits of one forward batch.
struct BatchPlanLimits {
  std::size_t max_batch_size = 64;  ///< inputs per batch, >= 1
  /// Padded tokens per batch: inputs × the longest one's tokens; 0 = no limit. A single input
  /// longer than this still gets a batch of its own.
  std::size_t max_batch_tokens = 0;
  /// Order the inputs longest first (true) or keep their order (false: batches of mixed
  /// lengths, as a server's arrival order makes them; for benchmarks).
  bool longest_first = true;
};

/// Orders the inputs by length, longest first (ties keep their input order; see
/// BatchPlanLimits::longest_first), and cuts that order greedily: each batch takes the next
/// inputs while it stays within both limits. Longest first pads least, and the largest batch
/// comes first, so running out of memory happens at once, not after an hour.
/// `lengths[i]` is input i's token count. Returns the batches as lists of input indices; together
/// they hold every index exactly once. An empty input gives no batches.
/// @throws std::invalid_argument if max_batch_size is 0.
std::vector<std::vector<std::size_t>> plan_batches(const std::vector<std::size_t>& lengths,
                                                   const BatchPlanLimits& limits);

/// How many of `lengths`, taken in the given order, the first batch of
/// plan_batches(lengths, limits with longest_first = false) holds, without planning the rest
/// (the server's batcher asks this on every arrival). 0 for no inputs.
/// @throws std::invalid_argument if max_batch_size is 0.
std::size_t first_batch_size(const std::vector<std::size_t>& lengths,
                             const BatchPlanLimits& limits);

/// Why a --max-input-length of `max_input_length` tokens does not fit a --max-batch-tokens of
/// `max_batch_tokens` (one input must fit one batch: TEI's start-up guard), or "" when it does.
/// One rule for `serve` and `embed` (docs/failure-cases.md B14).
std::string input_length_problem(std::size_t max_input_length, std::size_t max_batch_tokens);

}  // namespace dialtree
