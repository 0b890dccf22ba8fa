// The data-parallel health checks of the pretraining loop (docs/training.md "Health checks"):
// the observer that sums each rank's compute, collective and waiting seconds into the logging
// window, derives the hang timeout from the recent step times, and reports the per-rank figures
// and stragglers (StragglerDetector, trainer/health.h) in every metrics.jsonl record and log
// line. The rules themselves are trainer/health.h; the watchdog is trainer/watchdog.h.
#pragma once

#include <cstddef>
#include <deque>
#include <string>

#include <nlohmann/json.hpp>

#include "trainer/config.h"
#include "trainer/health.h"
#include "trainer/log_window.h"
#include "trainer/observer.h"

namespace dialtree::trainer {

class DataParallelGroup;  // trainer/distributed.h

/// Watches the ranks of a data-parallel job; enabled with more than one rank and
/// config.ddp_health_checks, otherwise it does nothing (and reports nothing).
class HealthMonitor : public TrainingObserver, public WindowReporter {
 public:
  /// @param group the job (null: a single process, disabled); it outlives this
  /// @param window the run's logging window, where the per-rank sums go; it outlives this
  /// @param say receives the straggler warnings (may be empty)
  /// @throws std::invalid_argument for a ddp_straggler_ratio <= 1 or ddp_straggler_windows < 1
  ///   (StragglerDetector).
  HealthMonitor(const PretrainConfig& config, DataParallelGroup* group, LogWindow& window,
                LogSink say);

  /// Whether the checks run.
  bool enabled() const { return enabled_; }

  /// Adds the step's per-rank seconds to the window (a rank's wait: min(collective, slowest
  /// compute - own compute)), sets the group's hang timeout from the median of the last 20 step
  /// times, and adds what the checks cost this rank to the window's `health`.
  void after_step(const StepEvent& e) override;

  /// Adds the window's per-rank means per step to `record` (rank_compute_seconds,
  /// rank_collective_seconds, rank_wait_seconds, rank_compute_seconds_min / _median / _max,
  /// slowest_rank, health_overhead_fraction, and stragglers when there are any), logs a warning
  /// per straggler, and returns "  ranks 0.412-0.436 s (slowest 1)". Nothing (and "") when
  /// disabled or the window holds no per-rank figures.
  std::string report(const LogWindow& w, nlohmann::json& record) override;

 private:
  bool enabled_;
  DataParallelGroup* group_;
  std::size_t world_;
  double hang_factor_, hang_min_, ddp_timeout_;
  LogWindow& window_;
  StragglerDetector stragglers_;
  std::deque<double> recent_steps_;  // seconds of the last steps, for the hang timeout
  LogSink say_;
};

}  // namespace dialtree::trainer
