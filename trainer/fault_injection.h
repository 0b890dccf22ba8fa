// Fault injection in the pretraining loop (docs/training.md "Fault injection"): the observer
// that applies a FaultPlan (trainer/health.h, from DIALTREE_FAULT) to its rank: SIGKILL at the
// start of a step, a hang in a step's compute, a slow-down of every step, a skipped gradient
// all-reduce. Torch-free.
#pragma once

#include <cstdint>

#include "trainer/health.h"
#include "trainer/observer.h"

namespace dialtree::trainer {

/// Applies `plan` to rank `rank`; does nothing on the other ranks.
class FaultInjector : public TrainingObserver {
 public:
  /// @throws DataError naming DIALTREE_FAULT when plan.rank is outside a job of `world` ranks
  ///   (check_fault_rank).
  FaultInjector(const FaultPlan& plan, int rank, int world);

  /// The plan of the environment's DIALTREE_FAULT (none when unset).
  /// @throws DataError as parse_fault_plan() and check_fault_rank().
  static FaultInjector from_env(int rank, int world);

  /// Whether a fault targets this rank.
  bool armed() const { return armed_; }

  /// At the start of step `step` (1-based): SIGKILL at kill_at_step, block forever at
  /// hang_at_step, and sleep slow_ms in every step.
  void before_step(std::int64_t step) override;

  /// Whether this rank skips step `step`'s gradient all-reduce (skip_collective_at_step).
  bool skips_collective(std::int64_t step) const;

 private:
  FaultPlan plan_;
  bool armed_ = false;
};

}  // namespace dialtree::trainer
