// The statistics of one pretraining step that the data-parallel ranks sum in a single all-reduce
// (docs/training.md "Health checks": the per-rank seconds ride along with the logged losses):
// the loss parts, the token counts and each rank's compute and collective seconds. Torch-free.
#pragma once

#include <cstdint>
#include <vector>

namespace dialtree::trainer {

/// The loss parts of one step or micro-batch (values, docs/method.md §4.3), as metrics.jsonl
/// logs them.
struct StepLosses {
  double total = 0;              ///< the objective optimised ("loss")
  double sup = 0;                ///< labelled multi-view contrastive loss ("contrastive")
  double self = 0;               ///< unlabelled self-supervised contrastive loss
  double mlm_l = 0;              ///< language loss of the labelled batch ("mlm_labelled")
  double mlm_u = 0;              ///< language loss of the unlabelled batch ("mlm_unlabelled")
  double generator_mlm = 0;      ///< replaced-token detection: the generator's MLM loss (else 0)
  double replaced_token = 0;     ///< replaced-token detection: the discriminator's BCE (else 0)
  double encoder_mlm = 0;        ///< rtd with loss.encoder_mlm_weight > 0: the encoder's MLM loss
  double token_contrastive = 0;  ///< the token-level tree term (loss.token_contrastive_weight > 0)
};

/// One optimiser step's statistics. Each rank fills its own; DataParallelGroup::sum of
/// to_vector() and from_vector() then give every rank the job's, and average_losses_over_ranks()
/// turns the summed loss means into means over ranks.
struct StepStats {
  StepLosses losses;       ///< means over the step's micro-batches (and over ranks once summed)
  double tokens = 0;       ///< token rows the encoder's blocks computed (padding included unless
                           ///< padding_free), summed over micro-batches (and ranks)
  double real_tokens = 0;  ///< real tokens of the batches, summed likewise
  std::vector<double> rank_compute;     ///< per rank: seconds of the step's compute (forward,
                                        ///< backward), 0 where another rank fills it in
  std::vector<double> rank_collective;  ///< per rank: seconds inside collectives, likewise

  /// Zeros for a job of `world` ranks. @throws std::invalid_argument if world < 1.
  explicit StepStats(int world = 1);

  /// The ranks it has slots for.
  int world() const { return static_cast<int>(rank_compute.size()); }

  /// Adds micro-batch losses `l` as one of `micro_batches` (>= 1) of the step: each part gains
  /// part / micro_batches, so that after all of them it holds their mean.
  void add_micro_batch(const StepLosses& l, std::int64_t micro_batches);

  /// Sets rank `rank`'s compute and collective seconds. @throws std::out_of_range for a bad rank.
  void set_rank_seconds(int rank, double compute, double collective);

  /// Every figure in one vector, for the element-wise sum over ranks: the 7 loss parts in
  /// StepLosses order, tokens, real_tokens, then rank_compute and rank_collective
  /// (9 + 2 x world values).
  std::vector<double> to_vector() const;

  /// The inverse of to_vector() for a job of `world` ranks.
  /// @throws std::invalid_argument if `v` does not hold 9 + 2 x world values or world < 1.
  static StepStats from_vector(const std::vector<double>& v, int world);

  /// After the sum over ranks: divides the loss parts (sums of each rank's means) by world().
  void average_losses_over_ranks();

  /// The largest per-rank compute seconds (the slowest rank's).
  double slowest_compute() const;
};

}  // namespace dialtree::trainer
