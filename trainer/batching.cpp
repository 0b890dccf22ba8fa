#include "trainer/batching.h"

#include <stdexcept>

namespace dialtree::trainer {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

std::vector<std::size_t> permutation(std::size_t n, std::uint64_t seed) {
  std::vector<std::size_t> p(n);
  for (std::size_t i = 0; i < n; ++i) p[i] = i;
  std::uint64_t state = seed;
  for (std::size_t i = n; i > 1; --i) {
    state = splitmix64(state);
    // Unbiased enough for i << 2^64: the modulo bias is below 2^-40 for any realistic size.
    const std::size_t j = static_cast<std::size_t>(state % i);
    std::swap(p[i - 1], p[j]);
  }
  return p;
}

BatchStream::BatchStream(std::vector<std::size_t> dataset_sizes, std::size_t batch_size,
                         std::uint64_t seed)
    : sizes_(std::move(dataset_sizes)), batch_size_(batch_size), seed_(seed) {
  if (batch_size_ == 0) throw std::invalid_argument("BatchStream: batch_size must be >= 1");
  for (std::size_t n : sizes_) batches_per_epoch_ += (n + batch_size_ - 1) / batch_size_;
  if (batches_per_epoch_ == 0) throw std::invalid_argument("BatchStream: every dataset is empty");
}

std::vector<BatchRef> BatchStream::plan(std::uint64_t epoch) const {
  std::vector<BatchRef> batches;
  batches.reserve(batches_per_epoch_);
  const std::uint64_t epoch_seed = splitmix64(seed_ ^ splitmix64(epoch + 1));
  for (std::size_t d = 0; d < sizes_.size(); ++d) {
    const std::vector<std::size_t> order = permutation(sizes_[d], splitmix64(epoch_seed + d + 1));
    for (std::size_t start = 0; start < order.size(); start += batch_size_) {
      const std::size_t end = std::min(order.size(), start + batch_size_);
      batches.push_back(
          BatchRef{d, std::vector<std::size_t>(order.begin() + start, order.begin() + end)});
    }
  }
  const std::vector<std::size_t> mix = permutation(batches.size(), epoch_seed);
  std::vector<BatchRef> out;
  out.reserve(batches.size());
  for (std::size_t i : mix) out.push_back(std::move(batches[i]));
  return out;
}

BatchRef BatchStream::next() {
  if (pos_.next_batch >= batches_per_epoch_) {
    ++pos_.epoch;
    pos_.next_batch = 0;
  }
  if (current_epoch_ != pos_.epoch) {
    current_ = plan(pos_.epoch);
    current_epoch_ = pos_.epoch;
  }
  return current_[pos_.next_batch++];
}

void BatchStream::seek(const StreamPosition& pos) {
  if (pos.next_batch > batches_per_epoch_) {
    throw std::invalid_argument("BatchStream::seek: batch " + std::to_string(pos.next_batch) +
                                " beyond the " + std::to_string(batches_per_epoch_) +
                                " batches of an epoch");
  }
  pos_ = pos;
}

}  // namespace dialtree::trainer
