#include "trainer/batching.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>

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

std::vector<std::size_t> grouped_order(const std::vector<std::size_t>& order,
                                       const std::vector<std::vector<std::uint32_t>>& keys,
                                       std::size_t group_size, std::uint64_t seed) {
  if (group_size < 2) return order;
  // The examples of each key in permutation order; keys in order of first appearance, so the
  // result does not depend on a hash map's iteration order.
  std::unordered_map<std::uint32_t, std::size_t> bucket_of;
  std::vector<std::vector<std::size_t>> buckets;
  std::vector<char> is_rest(keys.size(), 0);  // keyless, or in a key's incomplete group
  for (std::size_t i : order) {
    const auto& candidates = keys.at(i);
    if (candidates.empty()) {
      is_rest[i] = 1;
      continue;
    }
    const std::uint32_t key =
        candidates[splitmix64(seed ^ splitmix64(i + 1)) % candidates.size()];
    const auto [it, added] = bucket_of.emplace(key, buckets.size());
    if (added) buckets.emplace_back();
    buckets[it->second].push_back(i);
  }
  // Full groups of `members`; returns where its incomplete tail starts.
  std::vector<std::vector<std::size_t>> groups;
  const auto cut = [&](const std::vector<std::size_t>& members) {
    std::size_t start = 0;
    for (; start + group_size <= members.size(); start += group_size) {
      groups.emplace_back(members.begin() + start, members.begin() + start + group_size);
    }
    return start;
  };
  for (const auto& bucket : buckets) {
    for (std::size_t k = cut(bucket); k < bucket.size(); ++k) is_rest[bucket[k]] = 1;
  }
  // Leftovers in permutation order: the keyless examples and each key's incomplete group.
  std::vector<std::size_t> rest_in_order;
  for (std::size_t i : order) {
    if (is_rest[i]) rest_in_order.push_back(i);
  }
  const std::size_t tail_start = cut(rest_in_order);
  std::vector<std::size_t> out;
  out.reserve(order.size());
  for (std::size_t g : permutation(groups.size(), splitmix64(seed))) {
    out.insert(out.end(), groups[g].begin(), groups[g].end());
  }
  out.insert(out.end(), rest_in_order.begin() + static_cast<std::ptrdiff_t>(tail_start),
             rest_in_order.end());
  return out;
}

BatchStream::BatchStream(std::vector<std::size_t> dataset_sizes, std::size_t batch_size,
                         std::uint64_t seed, Grouping grouping)
    : sizes_(std::move(dataset_sizes)),
      batch_size_(batch_size),
      seed_(seed),
      grouping_(std::move(grouping)) {
  if (batch_size_ == 0) throw std::invalid_argument("BatchStream: batch_size must be >= 1");
  for (std::size_t n : sizes_) batches_per_epoch_ += (n + batch_size_ - 1) / batch_size_;
  if (batches_per_epoch_ == 0) throw std::invalid_argument("BatchStream: every dataset is empty");
  if (grouping_.active()) {
    if (grouping_.keys.size() != sizes_.size()) {
      throw std::invalid_argument("BatchStream: grouping keys for " +
                                  std::to_string(grouping_.keys.size()) + " datasets, expected " +
                                  std::to_string(sizes_.size()));
    }
    for (std::size_t d = 0; d < sizes_.size(); ++d) {
      if (grouping_.keys[d].size() != sizes_[d]) {
        throw std::invalid_argument("BatchStream: dataset " + std::to_string(d) + " has " +
                                    std::to_string(sizes_[d]) + " examples but " +
                                    std::to_string(grouping_.keys[d].size()) + " key lists");
      }
    }
  }
}

std::vector<BatchRef> BatchStream::plan(std::uint64_t epoch) const {
  std::vector<BatchRef> batches;
  batches.reserve(batches_per_epoch_);
  const std::uint64_t epoch_seed = splitmix64(seed_ ^ splitmix64(epoch + 1));
  for (std::size_t d = 0; d < sizes_.size(); ++d) {
    std::vector<std::size_t> order = permutation(sizes_[d], splitmix64(epoch_seed + d + 1));
    if (grouping_.active()) {
      order = grouped_order(order, grouping_.keys[d], grouping_.group_size,
                            splitmix64(epoch_seed ^ splitmix64(d + 0x5EED)));
    }
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
