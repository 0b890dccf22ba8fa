// Dynamic batching for `dialtree serve` (docs/serving.md "Batching, limits and operation", as TEI's
// queue): one background thread owns a FIFO of inputs and hands the next batch to a runner. A batch
// takes queued inputs in order while the padded token budget holds — max(tokens) × count <=
// max_batch_tokens — and count <= max_batch_requests; it starts as soon as the budget is full, or
// max_wait after its first input arrived. Inputs of many requests share a forward pass; an input
// longer than the budget still runs, alone. Torch-free and generic, so it is unit-tested with fake
// runners.
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

}  // namespace dialtree::serve
