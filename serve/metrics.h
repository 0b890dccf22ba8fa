// Prometheus metrics of `dialtree serve` (GET /metrics, text exposition format 0.0.4): request
// counts by route and status, queue depth, batch size / tokens and latency histograms. Names
// follow TEI's vocabulary (docs/serving.md) under a dialtree_ prefix. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace dialtree::serve {

/// A cumulative histogram with fixed upper bounds (Prometheus `le` buckets plus +Inf).
class Histogram {
 public:
  /// `bounds` strictly increasing. @throws std::invalid_argument otherwise.
  explicit Histogram(std::vector<double> bounds);
  /// Adds one observation.
  void observe(double value);
  /// Appends the _bucket / _sum / _count lines of metric `name` to `out`; `labels` is "" or
  /// `key="value"` pairs without braces, added to every line.
  void render(std::string& out, const std::string& name, const std::string& labels) const;
  std::uint64_t count() const { return count_; }

 private:
  std::vector<double> bounds_;
  std::vector<std::uint64_t> counts_;  ///< per bucket, not cumulative; last = +Inf
  double sum_ = 0.0;
  std::uint64_t count_ = 0;
};

/// Every metric of the server. Durations are in seconds.
class Metrics {
 public:
  Metrics();
  /// One finished HTTP request (any route, any status).
  void record_request(const std::string& route, int status);
  /// Wall time of a request that reached a handler, from arrival to response.
  void observe_request_duration(const std::string& route, double seconds);
  /// One forward pass: inputs, padded tokens (longest × inputs) and its wall time.
  void observe_batch(std::size_t inputs, std::size_t padded_tokens, double seconds);
  /// Time one input waited in the queue before its batch started.
  void observe_queue_time(double seconds);
  /// Tokens of one input after serialisation.
  void observe_input_length(std::size_t tokens);
  /// Inputs dropped from a batch because their client had disconnected.
  void count_cancelled(std::size_t inputs);
  /// The whole exposition text; `queue_depth`, `in_flight` and `open_connections` are the
  /// current gauge values.
  std::string render(std::size_t queue_depth, std::size_t in_flight,
                     std::size_t open_connections) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, std::uint64_t> requests_;
  std::uint64_t cancelled_ = 0;
  std::map<std::string, Histogram> request_duration_;
  Histogram batch_size_, batch_tokens_, batch_duration_, queue_time_, input_length_;
};

}  // namespace dialtree::serve
