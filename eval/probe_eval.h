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
/// then eval_probe_mean_accuracy, the mean of the eval_probe_T_accuracy values (when there is an
/// intent task). Other protocols' rows are left out (they would train on labels beyond
/// train_10). For each tagging task T of the token-level probe (report.tag_rows):
///   eval_probe_T_slot_f1 (restaurant8k, dstc8) or eval_probe_top_exact_match
///   eval_probe_T_tag_accuracy     word-level tag accuracy
///   eval_probe_top_intent_accuracy
/// then eval_probe_mean_tagging, the mean of their DialoGLUE scores.
/// @throws std::invalid_argument if the report has no dialoglue-few row and no tagging row.
std::vector<std::pair<std::string, double>> probe_eval_figures(const ProbeReport& report);

}  // namespace dialtree::eval
