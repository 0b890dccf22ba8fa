// The probe's classifiers (docs/evaluation.md, "Probe"), torch-free: multinomial and binary
// logistic regression with L2, the objective of scikit-learn's LogisticRegression(C, max_iter,
// solver="lbfgs"), minimised by our own L-BFGS (eval/lbfgs.h) with the matrix products of
// eval/probe_gemm.h; scikit-learn's StandardScaler; nearest class centroid on cosine similarity.
// Everything runs in double precision with Eigen and is deterministic.
#pragma once

#include <cstddef>
#include <vector>

#include <Eigen/Core>

#include "eval/probe_matrix.h"

namespace dialtree::eval {

/// scikit-learn's StandardScaler: per-column mean and population standard deviation (ddof 0)
/// fitted on the training rows; a constant column (variance within rounding of 0, scikit-learn's
/// test) gets scale 1.
struct Standardizer {
  Eigen::RowVectorXd mean;   ///< [d]
  Eigen::RowVectorXd scale;  ///< [d], > 0
  /// @throws std::invalid_argument if x has no rows.
  static Standardizer fit(const ProbeMatrix& x);
  /// (x - mean) / scale, row by row. @throws std::invalid_argument if the widths differ.
  ProbeMatrix transform(const ProbeMatrix& x) const;
};

/// Settings of fit_logistic(); names and defaults of scikit-learn's LogisticRegression.
struct LogisticOptions {
  double C = 1.0;            ///< inverse regularisation strength, > 0
  int max_iter = 100;        ///< L-BFGS iterations
  double tol = 1e-4;         ///< L-BFGS gtol
  bool standardize = false;  ///< fit a Standardizer on the training rows first
  /// Threads for the matrix products of a multinomial fit (three or more classes); the fitted
  /// model's bits do not depend on it. Pays off for large fits (the token probe's TOP tagger:
  /// about 30k rows x 260 classes).
  int threads = 1;
};

/// A fitted logistic regression. Two classes use scikit-learn's binary model (one weight row,
/// class `classes[1]` when w·x + b > 0); three or more the multinomial (softmax) model.
struct LogisticModel {
  std::vector<int> classes;   ///< the sorted distinct training labels
  Eigen::MatrixXd coef;       ///< [K, d] (K = 1 for two classes, else classes.size())
  Eigen::VectorXd intercept;  ///< [K]
  bool standardized = false;  ///< `scaler` applies before coef
  Standardizer scaler;        ///< fitted on the training rows when standardized
  int iterations = 0;         ///< L-BFGS iterations used
  int evaluations = 0;        ///< objective evaluations (line searches included)
  bool converged = false;     ///< L-BFGS met gtol or ftol before max_iter
  double grad_max_abs = 0;    ///< largest |gradient| entry of the objective at the solution
  double objective = 0;       ///< Σ_i CE_i + ‖W‖²/(2C) at the solution
};

/// L2-regularised logistic regression exactly as scikit-learn's LogisticRegression(C, max_iter,
/// solver="lbfgs") defines it (multi_class="auto"): it minimises C·Σ_i CE_i + ½‖W‖², the
/// intercept not penalised; optimised (as scikit-learn 1.2 does) in the equivalent form
/// Σ_i CE_i + ‖W‖²/(2C), so that the stopping rules mean the same. Starts from zero weights.
/// `x` [n, d]; `y` n labels (any ints; at least two distinct values).
/// @throws std::invalid_argument on mismatched sizes, fewer than two classes, C <= 0 or
///   max_iter < 1, or a non-finite input.
LogisticModel fit_logistic(const ProbeMatrix& x, const std::vector<int>& y,
                           const LogisticOptions& options = {});

/// Class scores [n, K] (the logits; for two classes one column, the decision function).
/// @throws std::invalid_argument if the width differs from the model's.
Eigen::MatrixXd decision_function(const LogisticModel& model, const ProbeMatrix& x);

/// Predicted label of each row of x (arg-max, the lowest class on ties).
/// @throws as decision_function().
std::vector<int> predict(const LogisticModel& model, const ProbeMatrix& x);

/// Nearest class centroid on cosine: each class's centroid is the mean of its L2-normalised
/// training rows, normalised again; a row goes to the centroid of highest cosine.
struct CentroidModel {
  std::vector<int> classes;  ///< sorted distinct training labels
  ProbeMatrix centroids;     ///< [K, d], unit rows (a zero row stays zero)
};

/// Fits the centroids. Zero rows are left unnormalised (they add nothing to a centroid).
/// @throws std::invalid_argument on mismatched sizes or no rows.
CentroidModel fit_centroids(const ProbeMatrix& x, const std::vector<int>& y);

/// Label of the centroid of highest cosine with each row (the lowest class on ties).
/// @throws std::invalid_argument if the width differs.
std::vector<int> predict(const CentroidModel& model, const ProbeMatrix& x);

namespace probe_detail {
/// Checks that `x` [n, d] has one row per label and at least one row (the classifiers' and the
/// protocols' check of a split). @throws std::invalid_argument "<what>: n rows but m labels" or
/// "<what>: no rows".
void check_rows(const ProbeMatrix& x, std::size_t labels, const char* what);
}  // namespace probe_detail

}  // namespace dialtree::eval
