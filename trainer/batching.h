// Deterministic batch plans for pretraining (docs/method.md §4.5): every batch holds examples of
// one source dataset only, so in-batch negatives and soft positives come from the same dataset.
// Torch-free.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dialtree::trainer {

/// One batch: the dataset it comes from and the example indices inside that dataset.
struct BatchRef {
  std::size_t dataset = 0;
  std::vector<std::size_t> examples;
  bool operator==(const BatchRef& o) const {
    return dataset == o.dataset && examples == o.examples;
  }
};

/// Where a stream is: the epoch and the index of the next batch in that epoch's plan.
struct StreamPosition {
  std::uint64_t epoch = 0;
  std::size_t next_batch = 0;
  bool operator==(const StreamPosition& o) const {
    return epoch == o.epoch && next_batch == o.next_batch;
  }
};

/// Batches drawn so that examples sharing a label element sit next to each other
/// (docs/training.md "Batches that share values"): runs of `group_size` consecutive examples of
/// a batch share one key where the data allows it, so a contrastive shard (a multiple of
/// `group_size`) holds positives for the view the keys come from.
struct Grouping {
  /// Examples per group; 0 or 1 turns grouping off (the plan is then the ungrouped one).
  std::size_t group_size = 0;
  /// keys[d][i]: the keys example i of dataset d may be grouped by (e.g. the interned elements
  /// of its V view set); an example with none is placed in the leftover groups. When active,
  /// one list per dataset with one entry per example; ignored when inactive.
  std::vector<std::vector<std::vector<std::uint32_t>>> keys;
  /// Whether the batches are grouped (group_size >= 2).
  bool active() const { return group_size > 1; }
};

/// An endless, resumable stream of batches over several datasets.
///
/// Epoch e's plan: each dataset's examples in a permutation seeded by (seed, e, dataset), cut
/// into batches of `batch_size` (the last batch of a dataset may be smaller, never empty), then
/// all batches of all datasets in an order seeded by (seed, e). The plan depends only on the
/// seed, the epoch and the dataset sizes — never on time, logging or evaluation
/// (docs/failure-cases.md C34).
///
/// SPACE-2's code sweeps the datasets one after another (docs/method.md §4.5, §8.10); we interleave
/// the batches of all datasets instead, so that a run shorter than one epoch still sees every
/// dataset. Batches still never mix datasets.
///
/// With an active `grouping`, each dataset's permuted examples are reordered before the cut:
/// every example takes one of its keys, drawn by (seed, e, dataset, example); the examples of
/// each key form groups of `group_size` in permutation order; what is left over (the examples
/// without a key and the last, incomplete group of each key) is cut into groups in permutation
/// order too; the full groups are shuffled (seeded by (seed, e, dataset)) and the one incomplete
/// group, if any, goes last. Every example is still drawn once per epoch, and every group lies
/// inside one batch when `group_size` divides `batch_size`.
class BatchStream {
 public:
  /// @param dataset_sizes examples per dataset; datasets of size 0 are skipped
  /// @param grouping optional: batches whose consecutive examples share keys (see above)
  /// @throws std::invalid_argument if batch_size is 0, every dataset is empty, or an active
  ///         grouping's keys do not have one entry per example of every dataset
  BatchStream(std::vector<std::size_t> dataset_sizes, std::size_t batch_size, std::uint64_t seed,
              Grouping grouping = {});

  /// The next batch; moves to the next epoch when the current one is exhausted.
  BatchRef next();
  /// Batches per epoch.
  std::size_t batches_per_epoch() const { return batches_per_epoch_; }
  const StreamPosition& position() const { return pos_; }
  /// Continues from a saved position (resume). @throws std::invalid_argument if out of range.
  void seek(const StreamPosition& pos);
  /// The whole plan of epoch `epoch`.
  std::vector<BatchRef> plan(std::uint64_t epoch) const;

 private:
  std::vector<std::size_t> sizes_;
  std::size_t batch_size_;
  std::uint64_t seed_;
  Grouping grouping_;
  std::size_t batches_per_epoch_ = 0;
  StreamPosition pos_;
  std::vector<BatchRef> current_;  // plan of pos_.epoch
  std::uint64_t current_epoch_ = ~0ull;
};

/// The grouped order of one dataset's examples (BatchStream's grouping rule): `order` is the
/// permutation to regroup (distinct indices, each < keys.size()), `keys` the dataset's
/// per-example keys, `seed` drives the key draws and the shuffle of the groups. Returns a
/// permutation of `order`'s elements; `order` itself when group_size < 2.
/// @throws std::out_of_range if an index of `order` has no entry in `keys`.
std::vector<std::size_t> grouped_order(const std::vector<std::size_t>& order,
                                       const std::vector<std::vector<std::uint32_t>>& keys,
                                       std::size_t group_size, std::uint64_t seed);

/// SplitMix64 step: a well-mixed 64-bit value from `x` (used to derive independent seeds).
std::uint64_t splitmix64(std::uint64_t x);

/// Fisher-Yates permutation of 0..n-1 driven by SplitMix64 from `seed` (portable: the same
/// on every standard library, unlike std::shuffle).
std::vector<std::size_t> permutation(std::size_t n, std::uint64_t seed);

}  // namespace dialtree::trainer
