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
class BatchStream {
 public:
  /// @param dataset_sizes examples per dataset; datasets of size 0 are skipped
  /// @throws std::invalid_argument if batch_size is 0 or every dataset is empty
  BatchStream(std::vector<std::size_t> dataset_sizes, std::size_t batch_size, std::uint64_t seed);

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
  std::size_t batches_per_epoch_ = 0;
  StreamPosition pos_;
  std::vector<BatchRef> current_;  // plan of pos_.epoch
  std::uint64_t current_epoch_ = ~0ull;
};

/// SplitMix64 step: a well-mixed 64-bit value from `x` (used to derive independent seeds).
std::uint64_t splitmix64(std::uint64_t x);

/// Fisher-Yates permutation of 0..n-1 driven by SplitMix64 from `seed` (portable: the same
/// on every standard library, unlike std::shuffle).
std::vector<std::size_t> permutation(std::size_t n, std::uint64_t seed);

}  // namespace dialtree::trainer
