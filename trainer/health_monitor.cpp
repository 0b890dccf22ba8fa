#include "trainer/health_monitor.h"

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include "trainer/distributed.h"

namespace dialtree::trainer {

using nlohmann::json;

HealthMonitor::HealthMonitor(const PretrainConfig& config, DataParallelGroup* group,
                             LogWindow& window, LogSink say)
    : enabled_(group != nullptr && group->world_size() > 1 && config.ddp_health_checks),
      group_(group),
      world_(static_cast<std::size_t>(group != nullptr ? group->world_size() : 1)),
      hang_factor_(config.ddp_hang_timeout_factor),
      hang_min_(config.ddp_hang_timeout_min),
      ddp_timeout_(static_cast<double>(config.ddp_timeout)),
      window_(window),
      stragglers_(static_cast<int>(world_), config.ddp_straggler_ratio,
                  config.ddp_straggler_windows),
      say_(std::move(say)) {}

void HealthMonitor::after_step(const StepEvent& e) {
  if (!enabled_) return;
  const auto t_health = std::chrono::steady_clock::now();
  const StepStats& s = *e.stats;
  LogWindow& w = window_;
  w.rank_compute.resize(world_, 0.0), w.rank_collective.resize(world_, 0.0);
  w.rank_wait.resize(world_, 0.0);
  const double slowest = s.slowest_compute();
  for (std::size_t k = 0; k < world_; ++k) {
    w.rank_compute[k] += s.rank_compute[k];
    w.rank_collective[k] += s.rank_collective[k];
    // The collective could not finish before the slowest rank's compute did.
    w.rank_wait[k] += std::min(s.rank_collective[k], slowest - s.rank_compute[k]);
  }
  recent_steps_.push_back(e.seconds);
  if (recent_steps_.size() > 20) recent_steps_.pop_front();
  group_->set_hang_timeout(hang_timeout_seconds(
      median_of(std::vector<double>(recent_steps_.begin(), recent_steps_.end())), hang_factor_,
      hang_min_, ddp_timeout_));
  w.health += group_->take_health_seconds() + seconds_elapsed(t_health);
}

std::string HealthMonitor::report(const LogWindow& w, json& rec) {
  if (!enabled_ || w.rank_compute.size() != world_) return {};
  const auto t_health = std::chrono::steady_clock::now();
  const double nsteps = static_cast<double>(w.steps);
  auto per_step = [&](const std::vector<double>& v) {
    std::vector<double> out;
    for (double x : v) out.push_back(x / nsteps);
    return out;
  };
  const std::vector<double> compute = per_step(w.rank_compute);
  const auto slowest =
      static_cast<int>(std::max_element(compute.begin(), compute.end()) - compute.begin());
  const auto [lo, hi] = std::minmax_element(compute.begin(), compute.end());
  rec["rank_compute_seconds"] = compute;
  rec["rank_collective_seconds"] = per_step(w.rank_collective);
  rec["rank_wait_seconds"] = per_step(w.rank_wait);
  rec["rank_compute_seconds_min"] = *lo;
  rec["rank_compute_seconds_median"] = median_of(compute);
  rec["rank_compute_seconds_max"] = *hi;
  rec["slowest_rank"] = slowest;
  json found = json::array();
  for (const Straggler& s : stragglers_.update(compute)) {
    const std::string host = group_->host(s.rank);
    found.push_back({{"rank", s.rank},
                     {"host", host},
                     {"seconds", s.seconds},
                     {"peer_seconds", s.peer_seconds},
                     {"ratio", s.ratio},
                     {"windows", s.windows}});
    if (say_) {
      say_(
          fmt::format("warning: straggler: rank {} on {} computes a step in {:.3f} s, {:.1f}x "
                      "the median of its peers ({:.3f} s), for {} logging windows in a row",
                      s.rank, host, s.seconds, s.ratio, s.peer_seconds, s.windows));
    }
  }
  if (!found.empty()) rec["stragglers"] = found;
  // This rank's cost of the checks over the window (the time of this function included).
  const double cost = w.health + seconds_elapsed(t_health);
  rec["health_overhead_fraction"] = w.seconds > 0 ? cost / w.seconds : 0.0;
  return fmt::format("  ranks {:.3f}-{:.3f} s (slowest {})", *lo, *hi, slowest);
}

}  // namespace dialtree::trainer
