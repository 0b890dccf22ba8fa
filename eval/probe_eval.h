// The representation probe as pretraining's evaluation (docs/training.md "Evaluation during
// pretraining"): the figures of a probe report under the names metrics.jsonl and
// metric_for_best_model use. Torch-free.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "eval/probe.h"

namespace dialtree::eval {

/// Named figures of `report`'s dialoglue-few rows, as fractions in [0, 1] (effective rank as
/// is), for each task T:
///   eval_probe_T_accuracy         logistic regression on standardized vectors (the headline:
///                                 information kept, whatever its scale)
///   eval_probe_T_lr_accuracy      logistic regression on the raw vectors
///   eval_probe_T_ncc_accuracy     nearest class centroid (cosine)
///   eval_probe_T_effective_rank   of the scored split's vectors
/// then eval_probe_mean_accuracy, the mean of the eval_probe_T_accuracy values. Other protocols'
/// rows are left out (they would train on labels beyond train_10).
/// @throws std::invalid_argument if the report has no dialoglue-few row.
std::vector<std::pair<std::string, double>> probe_eval_figures(const ProbeReport& report);

}  // namespace dialtree::eval
