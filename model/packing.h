// Length buckets for the encoder's packed ("padding-free") forward passes (DialogEncoder::forward
// and forward_cls, docs/performance.md "Padding-free batches"): the projections and
// feed-forward run on the real tokens only, and attention runs once per bucket of similar
// lengths, each padded to its own longest member. Torch-free.
#pragma once

#include <cstdint>
#include <vector>

namespace dialtree::model {

/// plan_length_buckets' fixed cost of one more attention call in the encoder's packed
/// (padding-free) forward, in (query, key) pairs. bench_embed --order input (mixed-length
/// batches of 24, banking test): throughput is flat for 512..2048 and 5-10% lower at 64 or
/// with one bucket per batch.
inline constexpr std::int64_t kAttentionBucketOverhead = 1024;

/// One bucket: the inputs [begin, end) of a length-sorted batch, padded to `length` tokens.
struct LengthBucket {
  std::size_t begin = 0, end = 0;
  std::int64_t length = 0;
};

/// Cuts a batch sorted by ascending length into contiguous buckets minimising
/// Σ (overhead + count × length²) over the buckets, where count × length² is the number of
/// (query, key) pairs that bucket's attention computes, padding included, and `overhead` is the
/// fixed cost of one more attention call in the same units. Exact (dynamic programming, O(n²)).
/// Returns the buckets in order, covering [0, n); none for an empty batch.
/// @throws std::invalid_argument if the lengths are not ascending or one is < 1, or
///   overhead < 0.
std::vector<LengthBucket> plan_length_buckets(const std::vector<std::int64_t>& sorted_lengths,
                                              std::int64_t overhead);

}  // namespace dialtree::model
