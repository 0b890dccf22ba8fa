// Dynamic batching for `dialtree serve` (docs/serving.md "Batching, limits and operation", as TEI's
// queue): worker threads share a FIFO of inputs, and each in turn takes the next batch and runs
// it (one worker by default; `dialtree serve --inference-workers`, docs/serving.md "Inference
// workers"). A batch takes queued inputs in order while the padded token budget holds —
// max(tokens) × count <= max_batch_tokens — and count <= max_batch_requests; it starts as soon as
// the budget is full, or when it has gathered as many inputs as the worker's previous batch took
// (the steady load's forecast), or max_wait after its first input arrived or the worker became
// free, whichever is later. So a lone
// client's requests start at once, while under load the inputs that come back from the clients of
// the batch just finished are waited for instead of leaving in a small batch of stragglers (docs/
// serving.md "Batching, limits and operation"). Inputs of many requests share a forward pass; an
// input longer than the budget still runs, alone. Torch-free and generic, so it is unit-tested
// with fake runners.
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

#include "common/batching.h"

namespace dialtree::serve {

/// Packing limits of a Batcher.
struct BatchLimits {
  std::size_t max_batch_tokens = 16384;  ///< padded tokens (longest input × inputs) per batch
  std::size_t max_batch_requests = 64;   ///< inputs per batch
  /// Longest the batcher waits for company for a batch smaller than the previous one, counted
  /// from the later of the first input's arrival and the end of the previous batch.
  std::chrono::microseconds max_wait{2000};
};

/// A FIFO of `Item`s (each with a `std::size_t tokens` member) drained by `workers` threads, each
/// of which calls `runner(batch)` with batches packed by BatchLimits, one batch at a time; with
/// several workers, batches run concurrently, so the runner must be thread-safe. Items leave the
/// queue in arrival order. The runner must not throw (it owns the error reporting of its items);
/// if it does, the exception is swallowed and the batch dropped.
template <class Item>
class Batcher {
 public:
  using Runner = std::function<void(std::vector<Item>& batch)>;

  /// Starts `workers` batching threads. @throws std::invalid_argument if a limit or `workers`
  /// is 0.
  Batcher(BatchLimits limits, Runner runner, std::size_t workers = 1)
      : limits_(limits), runner_(std::move(runner)) {
    if (limits_.max_batch_tokens == 0 || limits_.max_batch_requests == 0) {
      throw std::invalid_argument("batcher: max_batch_tokens and max_batch_requests must be >= 1");
    }
    if (workers == 0) throw std::invalid_argument("batcher: workers must be >= 1");
    threads_.reserve(workers);
    for (std::size_t i = 0; i < workers; ++i) threads_.emplace_back([this] { loop(); });
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

  /// Runs every queued input (without waiting for max_wait), then joins the threads. Idempotent.
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  using Clock = std::chrono::steady_clock;
  struct Queued {
    Item item;
    Clock::time_point enqueued;
  };

  // Number of queue-front items the next batch takes (the first batch that plan_batches would
  // cut from the queue in arrival order, common/batching.h), and whether the budget is full (an
  // item is left behind, or the count limit is reached). Caller holds mutex_.
  std::pair<std::size_t, bool> plan() const {
    const std::size_t look = std::min(queue_.size(), limits_.max_batch_requests + 1);
    lengths_.resize(look);
    for (std::size_t i = 0; i < look; ++i) lengths_[i] = queue_[i].item.tokens;
    const std::size_t n =
        first_batch_size(lengths_, {limits_.max_batch_requests, limits_.max_batch_tokens, false});
    return {n, n < queue_.size() || n == limits_.max_batch_requests};
  }

  // One worker. Its forecast and the time it became free are its own.
  void loop() {
    std::vector<Item> batch;
    // The forecast: as many inputs as this worker's previous batch took (at first, a full batch).
    std::size_t expected = limits_.max_batch_requests;
    Clock::time_point free_since = Clock::now();
    for (;;) {
      bool more = false;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        for (;;) {
          cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
          if (queue_.empty()) return;  // stopping and drained
          const auto deadline = std::max(queue_.front().enqueued, free_since) + limits_.max_wait;
          cv_.wait_until(lock, deadline, [&] {
            if (stopping_ || queue_.empty()) return true;
            const auto [n, full] = plan();
            return full || n >= expected;
          });
          if (!queue_.empty()) break;  // else another worker took them while this one waited
        }
        const std::size_t n = plan().first;
        expected = n;
        batch.clear();
        for (std::size_t i = 0; i < n; ++i) {
          batch.push_back(std::move(queue_.front().item));
          queue_.pop_front();
        }
        more = !queue_.empty();
      }
      // Inputs left behind: another free worker starts on them while this one runs its batch.
      if (more) cv_.notify_one();
      try {
        runner_(batch);
      } catch (...) {
        // The runner reports its own errors; never let one batch end the thread.
      }
      free_since = Clock::now();
    }
  }

  BatchLimits limits_;
  Runner runner_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Queued> queue_;
  mutable std::vector<std::size_t> lengths_;  // plan()'s scratch, guarded by mutex_
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace dialtree::serve
