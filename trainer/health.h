// Health checks of data-parallel training (docs/training.md "Health checks"): which rank is
// slow (straggler detection on per-rank step times), how long a collective or a step may take
// before the job counts as hung (a timeout derived from the measured step time), and the fault
// injection switches that the tests and operators use to exercise both. Torch-free: the
// process group (trainer/distributed.h) and the trainer feed it numbers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dialtree::trainer {

/// One straggler finding: `rank`'s mean compute seconds per step in the window against the
/// median of its peers (all other ranks).
struct Straggler {
  int rank = 0;
  double seconds = 0;       ///< its mean compute seconds per step in the window
  double peer_seconds = 0;  ///< the median of the other ranks' means
  double ratio = 0;         ///< seconds / peer_seconds
  int windows = 0;          ///< consecutive windows it has been flagged in, this one included
};

/// Flags ranks whose step compute time stays an outlier against their peers.
///
/// The rule (robust for any world size, 2 included, where a median + k·MAD rule cannot flag
/// either of two ranks): a rank is an outlier in a window when its mean compute seconds per step
/// exceed `ratio` times the median of the other ranks' means, and that median by more than
/// `min_gap_seconds` (so that noise on tiny steps is not flagged). It is reported once it has been
/// an outlier for `windows` consecutive windows, and again in every window while it stays one.
class StragglerDetector {
 public:
  /// @throws std::invalid_argument if world < 1, ratio <= 1, windows < 1 or min_gap_seconds < 0.
  StragglerDetector(int world, double ratio, int windows, double min_gap_seconds = 0.05);

  /// Takes one logging window's mean compute seconds per step of each rank (world values,
  /// rank order) and returns the ranks reported in this window, in rank order. With one rank
  /// there are no peers and nothing is reported.
  /// @throws std::invalid_argument if the vector does not hold world values.
  std::vector<Straggler> update(const std::vector<double>& seconds_per_step);

 private:
  int world_;
  double ratio_;
  int windows_;
  double min_gap_;
  std::vector<int> streak_;
};

/// The median of `values` (the mean of the two middle ones for an even count); 0 when empty.
double median_of(std::vector<double> values);

/// The hang timeout in seconds: max(min_seconds, factor × median_step_seconds), or `fallback`
/// (the fixed ddp_timeout) while no step has been measured (median_step_seconds <= 0).
double hang_timeout_seconds(double median_step_seconds, double factor, double min_seconds,
                            double fallback);

/// Faults injected into one rank of a data-parallel run, for tests and drills
/// (docs/training.md "Fault injection"): read from the environment variable DIALTREE_FAULT,
/// e.g. "rank=1,slow_ms=300" or "rank=1,kill_at_step=5". Steps are 1-based optimiser steps.
struct FaultPlan {
  int rank = -1;                             ///< the rank they apply to; -1 = none
  double slow_ms = 0;                        ///< sleep this long in every step's compute
  std::int64_t kill_at_step = 0;             ///< SIGKILL itself at the start of this step
  std::int64_t hang_at_step = 0;             ///< block forever in this step's compute
  std::int64_t skip_collective_at_step = 0;  ///< skip this step's gradient all-reduce
  /// Whether any fault applies to `r`.
  bool applies_to(int r) const { return rank >= 0 && rank == r; }
};

/// Exit status of a rank that its hang watchdog ended (EX_TEMPFAIL: the launcher may restart it;
/// trainer/distributed.h).
inline constexpr int kExitHang = 75;

/// The environment variable fault injection reads.
inline constexpr const char* kFaultEnv = "DIALTREE_FAULT";

/// Parses a DIALTREE_FAULT value: comma-separated key=value items, keys rank (required),
/// slow_ms (>= 0), kill_at_step, hang_at_step, skip_collective_at_step (>= 1). Empty text =
/// no fault.
/// @throws DataError naming DIALTREE_FAULT and the item for an unknown key, a malformed or
///   out-of-range number, a repeated key or a missing rank.
FaultPlan parse_fault_plan(const std::string& text);

/// parse_fault_plan() of the environment's DIALTREE_FAULT; no fault when unset.
/// @throws as parse_fault_plan().
FaultPlan fault_plan_from_env();

/// Checks that `plan` names a rank of a job of `world` ranks.
/// @throws DataError naming DIALTREE_FAULT, e.g. "rank=5 but the run has 2 ranks (0..1)".
void check_fault_rank(const FaultPlan& plan, int world);

}  // namespace dialtree::trainer
