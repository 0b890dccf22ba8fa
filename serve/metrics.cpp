#include "serve/metrics.h"

#include <charconv>
#include <cmath>
#include <stdexcept>

namespace dialtree::serve {
namespace {

std::string number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

std::vector<double> latency_bounds() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

std::vector<double> powers_of_two(double last) {
  std::vector<double> b;
  for (double v = 1; v <= last; v *= 2) b.push_back(v);
  return b;
}

void header(std::string& out, const std::string& name, const std::string& help, const char* type) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)) {
  for (std::size_t i = 1; i < bounds_.size(); ++i) {
    if (!(bounds_[i] > bounds_[i - 1])) {
      throw std::invalid_argument("histogram bounds must be strictly increasing");
    }
  }
  counts_.assign(bounds_.size() + 1, 0);
}

void Histogram::observe(double value) {
  std::size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += value;
  ++count_;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& labels) const {
  // `labels` is either "" or `key="value"` pairs without braces.
  const std::string sep = labels.empty() ? "" : labels + ",";
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    const double le = i < bounds_.size() ? bounds_[i] : INFINITY;
    out +=
        name + "_bucket{" + sep + "le=\"" + number(le) + "\"} " + std::to_string(cumulative) + "\n";
  }
  const std::string braces = labels.empty() ? "" : "{" + labels + "}";
  out += name + "_sum" + braces + " " + number(sum_) + "\n";
  out += name + "_count" + braces + " " + std::to_string(count_) + "\n";
}

Metrics::Metrics()
    : batch_size_(powers_of_two(1024)),
      batch_tokens_(powers_of_two(1 << 20)),
      batch_duration_(latency_bounds()),
      queue_time_(latency_bounds()),
      input_length_(powers_of_two(8192)) {}

void Metrics::record_request(const std::string& route, int status) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++requests_[{route, status}];
}

void Metrics::observe_request_duration(const std::string& route, double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  request_duration_.try_emplace(route, latency_bounds()).first->second.observe(seconds);
}

void Metrics::observe_batch(std::size_t inputs, std::size_t padded_tokens, double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  batch_size_.observe(static_cast<double>(inputs));
  batch_tokens_.observe(static_cast<double>(padded_tokens));
  batch_duration_.observe(seconds);
}

void Metrics::observe_queue_time(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  queue_time_.observe(seconds);
}

void Metrics::observe_input_length(std::size_t tokens) {
  std::lock_guard<std::mutex> lock(mutex_);
  input_length_.observe(static_cast<double>(tokens));
}

void Metrics::count_cancelled(std::size_t inputs) {
  std::lock_guard<std::mutex> lock(mutex_);
  cancelled_ += inputs;
}

std::string Metrics::render(std::size_t queue_depth, std::size_t in_flight,
                            std::size_t open_connections) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  header(out, "dialtree_requests_total", "HTTP requests answered, by route and status.", "counter");
  for (const auto& [key, n] : requests_) {
    out += "dialtree_requests_total{route=\"" + key.first + "\",status=\"" +
           std::to_string(key.second) + "\"} " + std::to_string(n) + "\n";
  }
  header(out, "dialtree_request_duration_seconds",
         "Wall time of a request from arrival to response, by route.", "histogram");
  for (const auto& [route, h] : request_duration_) {
    h.render(out, "dialtree_request_duration_seconds", "route=\"" + route + "\"");
  }
  header(out, "dialtree_queue_size", "Inputs waiting for a batch.", "gauge");
  out += "dialtree_queue_size " + std::to_string(queue_depth) + "\n";
  header(out, "dialtree_requests_in_flight", "Requests being served now.", "gauge");
  out += "dialtree_requests_in_flight " + std::to_string(in_flight) + "\n";
  header(out, "dialtree_open_connections", "Client connections open now.", "gauge");
  out += "dialtree_open_connections " + std::to_string(open_connections) + "\n";
  header(out, "dialtree_cancelled_inputs_total",
         "Inputs skipped because their client disconnected before their batch ran.", "counter");
  out += "dialtree_cancelled_inputs_total " + std::to_string(cancelled_) + "\n";
  header(out, "dialtree_batch_size", "Inputs per forward pass.", "histogram");
  batch_size_.render(out, "dialtree_batch_size", "");
  header(out, "dialtree_batch_tokens", "Padded tokens (longest input x inputs) per forward pass.",
         "histogram");
  batch_tokens_.render(out, "dialtree_batch_tokens", "");
  header(out, "dialtree_batch_duration_seconds", "Wall time of one forward pass.", "histogram");
  batch_duration_.render(out, "dialtree_batch_duration_seconds", "");
  header(out, "dialtree_queue_duration_seconds", "Time an input waited for its batch.",
         "histogram");
  queue_time_.render(out, "dialtree_queue_duration_seconds", "");
  header(out, "dialtree_input_length", "Tokens per serialised input.", "histogram");
  input_length_.render(out, "dialtree_input_length", "");
  return out;
}

}  // namespace dialtree::serve
