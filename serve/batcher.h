// Dynamic batching for `dialtree serve` (ANCHORS.md A1, TEI's queue): one background thread
// owns a FIFO of inputs and hands the next batch to a runner. A batch takes queued inputs in
// order while the padded token budget holds — max(tokens) × count <= max_batch_tokens — and
// count <= max_batch_requests; it starts as soon as the budget is full, or max_wait after its
// first input arrived. Inputs of many requests share a forward pass; an input longer than the
// budget still runs, alone. Torch-free and generic, so it is unit-tested with fake runners.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace dialtree::serve {

/// Packing limits of a Batcher.
struct BatchLimits {
  std::size_t max_batch_tokens = 16384;      ///< padded tokens (longest input × inputs) per batch
  std::size_t max_batch_requests = 64;       ///< inputs per batch
  std::chrono::microseconds max_wait{2000};  ///< longest a queued input waits for company
};

/// A FIFO of `Item`s (each with a `std::size_t tokens` member) drained by one thread that calls
/// `runner(batch)` with batches packed by BatchLimits. The runner must not throw (it owns the
/// error reporting of its items); if it does, the exception is swallowed and the batch dropped.
template <class Item>
class Batcher {
 public:
  using Runner = std::function<void(std::vector<Item>& batch)>;

  /// Starts the batching thread. @throws std::invalid_argument if a limit is 0.
  Batcher(BatchLimits limits, Runner runner) : limits_(limits), runner_(std::move(runner)) {
    if (limits_.max_batch_tokens == 0 || limits_.max_batch_requests == 0) {
      throw std::invalid_argument("batcher: max_batch_tokens and max_batch_requests must be >= 1");
    }
    thread_ = std::thread([this] { loop(); });
  }
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;
  ~Batcher() { stop(); }

  /// Appends `items` (one request's inputs) to the queue, in order, atomically.
  /// @throws std::logic_error after stop().
  void submit(std::vector<Item> items) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) throw std::logic_error("batcher: submit() after stop()");
      const auto now = Clock::now();
      for (auto& item : items) queue_.push_back(Queued{std::move(item), now});
    }
    cv_.notify_one();
  }

  /// Inputs waiting (not yet in a batch).
  std::size_t queue_depth() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return queue_.size();
  }

  /// Runs every queued input (without waiting for max_wait), then joins the thread. Idempotent.
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_one();
    if (thread_.joinable()) thread_.join();
  }

 private:
  using Clock = std::chrono::steady_clock;
  struct Queued {
    Item item;
    Clock::time_point enqueued;
  };

  // Number of queue-front items the next batch takes, and whether the budget is full (the
  // next item would not fit, or the count limit is reached). Caller holds mutex_.
  std::pair<std::size_t, bool> plan() const {
    std::size_t n = 0, longest = 0;
    for (const auto& q : queue_) {
      if (n == limits_.max_batch_requests) return {n, true};
      const std::size_t l = std::max(longest, q.item.tokens);
      if (n > 0 && l * (n + 1) > limits_.max_batch_tokens) return {n, true};
      longest = l;
      ++n;
    }
    return {n, n == limits_.max_batch_requests};
  }

  void loop() {
    std::vector<Item> batch;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping and drained
        const auto deadline = queue_.front().enqueued + limits_.max_wait;
        cv_.wait_until(lock, deadline, [&] { return stopping_ || plan().second; });
        const std::size_t n = plan().first;
        batch.clear();
        for (std::size_t i = 0; i < n; ++i) {
          batch.push_back(std::move(queue_.front().item));
          queue_.pop_front();
        }
      }
      try {
        runner_(batch);
      } catch (...) {
        // The runner reports its own errors; never let one batch end the thread.
      }
    }
  }

  BatchLimits limits_;
  Runner runner_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Queued> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

/// Splits one batch into forward passes that waste little padding: inputs sorted by length
/// (shortest first) are cut into contiguous groups minimising Σ (longest × count + call_cost)
/// over the groups (exact, by dynamic programming in O(n²)); `call_cost` is the fixed cost of
/// one more forward pass in padded-token units. Returns the groups as indices into `lengths`,
/// each group in ascending length; every index appears once. An empty input gives no groups.
inline std::vector<std::vector<std::size_t>> plan_forward_passes(
    const std::vector<std::size_t>& lengths, std::size_t call_cost) {
  const std::size_t n = lengths.size();
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return lengths[a] < lengths[b]; });
  // best[j]: least cost of the first j sorted inputs; cut[j]: where its last group starts.
  std::vector<std::size_t> best(n + 1, 0), cut(n + 1, 0);
  for (std::size_t j = 1; j <= n; ++j) {
    best[j] = static_cast<std::size_t>(-1);
    for (std::size_t i = 0; i < j; ++i) {
      const std::size_t cost = best[i] + lengths[order[j - 1]] * (j - i) + call_cost;
      if (cost < best[j]) best[j] = cost, cut[j] = i;
    }
  }
  std::vector<std::vector<std::size_t>> groups;
  for (std::size_t j = n; j > 0; j = cut[j]) {
    groups.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(cut[j]),
                        order.begin() + static_cast<std::ptrdiff_t>(j));
  }
  std::reverse(groups.begin(), groups.end());
  return groups;
}

/// Bounds of forward_pass_cost_from_timings(), in padded tokens.
inline constexpr std::size_t kMinForwardPassCost = 1, kMaxForwardPassCost = 4096;

/// The `call_cost` of plan_forward_passes() from two timed forward passes of inputs of `length`
/// tokens: `t_one` seconds for one input and `t_many` for `n` of them (n >= 2). Fits the cost
/// model t = a + b·padded_tokens through both points and returns a / b rounded, clamped to
/// [kMinForwardPassCost, kMaxForwardPassCost]; when t_many <= t_one (no measurable per-token
/// cost: timer noise) the pass cost dominates and the result is kMaxForwardPassCost.
/// @throws std::invalid_argument if n < 2, length == 0 or a time is negative or not finite.
inline std::size_t forward_pass_cost_from_timings(double t_one, double t_many, std::size_t n,
                                                  std::size_t length) {
  if (n < 2 || length == 0 || !(t_one >= 0.0) || !(t_many >= 0.0) || t_one > 1e9 || t_many > 1e9) {
    throw std::invalid_argument(
        "forward_pass_cost_from_timings: need n >= 2, length >= 1 and finite times >= 0");
  }
  if (t_many <= t_one) return kMaxForwardPassCost;
  const double per_token = (t_many - t_one) / static_cast<double>((n - 1) * length);
  const double cost = t_one / per_token - static_cast<double>(length);
  if (cost <= static_cast<double>(kMinForwardPassCost)) return kMinForwardPassCost;
  if (cost >= static_cast<double>(kMaxForwardPassCost)) return kMaxForwardPassCost;
  return static_cast<std::size_t>(cost + 0.5);
}

}  // namespace dialtree::serve
