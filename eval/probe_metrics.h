// The probe's metrics (docs/evaluation.md, "Probe"), torch-free: accuracy, macro F1
// (scikit-learn's f1_score(average="macro")) and effective rank (Roy & Vetterli 2007). The mean
// and std over runs is eval/metrics.h mean_std().
#pragma once

#include <vector>

#include "eval/probe_matrix.h"

namespace dialtree::eval {

/// Fraction of positions where predicted == truth, in [0, 1].
/// @throws std::invalid_argument if the sizes differ or both are empty.
double probe_accuracy(const std::vector<int>& truth, const std::vector<int>& predicted);

/// scikit-learn's f1_score(truth, predicted, average="macro"): the unweighted mean over the
/// labels present in truth or predicted of F1 = 2·TP / (2·TP + FP + FN) (0 for a label never
/// predicted correctly), in [0, 1]. @throws as probe_accuracy().
double macro_f1(const std::vector<int>& truth, const std::vector<int>& predicted);

/// Effective rank (Roy & Vetterli, "The effective rank: a measure of effective
/// dimensionality", EUSIPCO 2007) of the rows of x after subtracting their mean:
/// exp(H(p)), H(p) = -Σ_k p_k ln p_k with p_k = σ_k / Σ_j σ_j over the singular values σ of the
/// centred [n, d] matrix. In [1, min(n - 1, d)]: d for an isotropic set, 1 for points on a
/// line. 0 when fewer than two rows or every row is the same.
double effective_rank(const ProbeMatrix& x);

}  // namespace dialtree::eval
