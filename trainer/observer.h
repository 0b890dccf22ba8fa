// The pretraining loop's observers, after marian's Scheduler and TrainingObserver: the loop
// (run_pretraining, trainer/pretrain.cpp) runs the optimiser steps; what watches them hooks in
// here: the logging window and metrics.jsonl (trainer/log_window.h), the data-parallel health
// checks (trainer/health_monitor.h), fault injection (trainer/fault_injection.h) and the
// progress callback. Torch-free.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "trainer/step_stats.h"

namespace dialtree::trainer {

/// Receives human-readable log lines (rank 0's are the run's log).
using LogSink = std::function<void(const std::string&)>;

/// Seconds from `start` to now on the steady clock.
inline double seconds_elapsed(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// One finished optimiser step, as the observers see it.
struct StepEvent {
  std::int64_t step = 0;             ///< optimiser steps done, this one included (1-based)
  std::int64_t total = 0;            ///< steps of the whole run
  const StepStats* stats = nullptr;  ///< the step's statistics, summed over the ranks
  std::int64_t examples = 0;         ///< examples of both streams, all ranks
  double grad_norm = 0;              ///< gradient norm before clipping
  double learning_rate = 0;          ///< the learning rate the step used
  double seconds = 0;                ///< wall seconds of the step, its optimiser update included
  double train_seconds = 0;          ///< seconds of all optimisation steps so far (resumed too)
};

/// What the loop calls around every optimiser step. Observers are called in the order the loop
/// lists them; a throw ends the run with that exception.
class TrainingObserver {
 public:
  virtual ~TrainingObserver() = default;
  /// At the start of step `step` (1-based), in its compute phase, before any batch is drawn.
  virtual void before_step(std::int64_t /*step*/) {}
  /// After each optimiser step.
  virtual void after_step(const StepEvent& /*event*/) {}
};

}  // namespace dialtree::trainer
