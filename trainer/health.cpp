#include "trainer/health.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <set>
#include <stdexcept>

#include <fmt/core.h>

#include "common/error.h"

namespace dialtree::trainer {

StragglerDetector::StragglerDetector(int world, double ratio, int windows, double min_gap_seconds)
    : world_(world),
      ratio_(ratio),
      windows_(windows),
      min_gap_(min_gap_seconds),
      streak_(std::max(world, 0), 0) {
  if (!(min_gap_seconds >= 0))
    throw std::invalid_argument("StragglerDetector: min_gap_seconds must be >= 0");
  if (world < 1) throw std::invalid_argument("StragglerDetector: world must be >= 1");
  if (!(ratio > 1.0)) throw std::invalid_argument("StragglerDetector: ratio must be > 1");
  if (windows < 1) throw std::invalid_argument("StragglerDetector: windows must be >= 1");
}

std::vector<Straggler> StragglerDetector::update(const std::vector<double>& seconds) {
  if (seconds.size() != static_cast<std::size_t>(world_)) {
    throw std::invalid_argument(
        fmt::format("StragglerDetector::update: {} values for {} ranks", seconds.size(), world_));
  }
  std::vector<Straggler> out;
  if (world_ < 2) return out;
  for (int r = 0; r < world_; ++r) {
    std::vector<double> peers;
    for (int s = 0; s < world_; ++s) {
      if (s != r) peers.push_back(seconds[static_cast<std::size_t>(s)]);
    }
    const double peer = median_of(peers);
    const double mine = seconds[static_cast<std::size_t>(r)];
    int& streak = streak_[static_cast<std::size_t>(r)];
    if (peer > 0 && mine > ratio_ * peer && mine - peer > min_gap_) {
      ++streak;
      if (streak >= windows_) out.push_back({r, mine, peer, mine / peer, streak});
    } else {
      streak = 0;
    }
  }
  return out;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double hang_timeout_seconds(double median_step_seconds, double factor, double min_seconds,
                            double fallback) {
  if (!(median_step_seconds > 0)) return fallback;
  return std::max(min_seconds, factor * median_step_seconds);
}

namespace {

DataError fault_error(const std::string& item, const std::string& message) {
  return DataError("<environment>", "", kFaultEnv,
                   (item.empty() ? "" : "item " + quote_for_message(item) + ": ") + message);
}

// A decimal number in [lo, hi] (integer when `integer`), or a DataError naming the item.
double fault_number(const std::string& item, const std::string& text, double lo, double hi,
                    bool integer) {
  char* end = nullptr;
  errno = 0;
  const double v = integer ? static_cast<double>(std::strtoll(text.c_str(), &end, 10))
                           : std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno != 0 || !(v >= lo && v <= hi) ||
      text.find_first_of(" \t") != std::string::npos) {
    throw fault_error(item, fmt::format("{} is not {} in [{}, {}]", quote_for_message(text),
                                        integer ? "an integer" : "a number", lo, hi));
  }
  return v;
}

}  // namespace

FaultPlan parse_fault_plan(const std::string& text) {
  FaultPlan plan;
  if (text.empty()) return plan;
  std::set<std::string> seen;
  bool has_rank = false;
  std::size_t start = 0;
  for (int number = 1; start <= text.size(); ++number) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    start = comma + 1;
    if (item.empty()) {
      throw fault_error(
          "", fmt::format("item {} is empty (items are separated by single commas)", number));
    }
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos) throw fault_error(item, "expected key=value");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (!seen.insert(key).second) throw fault_error(item, "key given twice");
    constexpr double kMaxStep = 1e15;
    if (key == "rank") {
      plan.rank = static_cast<int>(fault_number(item, value, 0, 65535, true));
      has_rank = true;
    } else if (key == "slow_ms") {
      plan.slow_ms = fault_number(item, value, 0, 3.6e6, false);
    } else if (key == "kill_at_step") {
      plan.kill_at_step = static_cast<std::int64_t>(fault_number(item, value, 1, kMaxStep, true));
    } else if (key == "hang_at_step") {
      plan.hang_at_step = static_cast<std::int64_t>(fault_number(item, value, 1, kMaxStep, true));
    } else if (key == "skip_collective_at_step") {
      plan.skip_collective_at_step =
          static_cast<std::int64_t>(fault_number(item, value, 1, kMaxStep, true));
    } else {
      throw fault_error(item, "unknown key " + quote_for_message(key) +
                                  " (known: rank, slow_ms, kill_at_step, hang_at_step, "
                                  "skip_collective_at_step)");
    }
  }
  if (!has_rank) throw fault_error("", "names no rank (add rank=N)");
  return plan;
}

void check_fault_rank(const FaultPlan& plan, int world) {
  if (plan.rank >= world) {
    throw DataError("<environment>", "", kFaultEnv,
                    fmt::format("rank={} but the run has {} rank{} (0..{})", plan.rank, world,
                                world == 1 ? "" : "s", world - 1));
  }
}

FaultPlan fault_plan_from_env() {
  const char* v = std::getenv(kFaultEnv);
  return parse_fault_plan(v != nullptr ? v : "");
}

}  // namespace dialtree::trainer
