// What the contrastive loss's soft targets hold, view by view, over the labelled batches a
// pretraining run draws (docs/training.md "What the views see"): how many positives an anchor
// has in its shard, how much target mass they carry, and how often a view's set is empty. It
// answers "which views have anything to pull together?" before a run spends CPU on them.
// Torch-free.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "trainer/pretrain_data.h"

namespace dialtree::trainer {

/// One view's figures over the anchors of the batches drawn.
struct ViewStats {
  std::string view;                 ///< "D", "I", ..., "DISV"
  double positives_per_anchor = 0;  ///< mean #{j ≠ i in i's shard : S_ij > 0}
  double target_mass = 0;           ///< mean Σ_{j ≠ i} S_ij (the soft positives' weight)
  double anchors_without_positive = 0;  ///< fraction whose only positive is their own copy
  double empty_sets = 0;            ///< fraction of anchors whose view set is empty
};

/// The figures of every view (all ten, in sts::View order), whatever the run projects.
struct BatchViewStats {
  std::size_t batches = 0;
  std::size_t anchors = 0;
  double mean_shard_size = 0;
  std::vector<ViewStats> views;
};

/// Draws the first `batches` batches of the labelled stream exactly as pretraining does
/// (BatchStream over `datasets` with `batch_size` and `seed`, i.e. data_seed), cuts each into
/// consecutive shards of `shard_size` (0 = the whole batch; the contrastive loss's shards,
/// losses/contrastive.h) and scores each shard with sts::batch_scores (docs/method.md §3.5,
/// per-view mode). `grouping` draws the batches as data.group_by_view does (view_grouping()).
/// @throws std::invalid_argument if batch_size or batches is 0, `datasets` holds no example, or
/// an active `grouping` has no key list per example (BatchStream's rules).
BatchViewStats batch_view_stats(const std::vector<PretrainDataset>& datasets,
                                std::size_t batch_size, std::size_t shard_size,
                                std::size_t batches, std::uint64_t seed,
                                const Grouping& grouping = {});

}  // namespace dialtree::trainer
