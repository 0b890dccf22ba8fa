// SPACE-2's multi-view tree score (docs/method.md §3): ten views of a label tree, Jaccard per view,
// the combined mode, and the B x B x 10 soft-target tensor of a batch.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "sts/tree.h"
#include "sts/views.h"

namespace dialtree::sts {

/// String sets of the ten views of one tree: names stripped and lower-cased (§3.1), paths
/// joined with "-", every element containing "default_domain" or "default_intent" dropped
/// (§3.3), each set sorted and de-duplicated. Computed on fix_up(tree) (§2.1).
struct ViewSets {
  std::array<std::vector<std::string>, kNumViews> sets;
  bool empty_tree = true;  ///< the fixed-up tree is empty: it scores 0 against every tree
  /// Canonical form of the cleaned tree (placeholders kept), for the combined mode's
  /// "identical trees score 1" rule.
  std::vector<std::string> canonical;
};

/// Builds the view sets of `tree` (docs/method.md §3.1–3.3).
ViewSets view_sets(const Tree& tree);

/// Per-view Jaccard of two trees (§3.4): |A∩B| / |A∪B|, 0 when the union is empty (then
/// `defined[k]` is false), and all 0 if either tree is empty.
struct ViewScores {
  std::array<double, kNumViews> jaccard{};
  std::array<bool, kNumViews> defined{};
};
ViewScores score_views(const ViewSets& a, const ViewSets& b);
ViewScores score_views(const Tree& a, const Tree& b);

/// Combined mode (§3.5 b): 1 if the cleaned trees are identical, else the mean of the Jaccard
/// values over the views whose union is non-empty; 0 if none is, or if either tree is empty.
double combined_score(const ViewSets& a, const ViewSets& b);
double combined_score(const Tree& a, const Tree& b);

/// Row-major float matrix.
using ScoreMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Per-view soft targets of a batch (§3.5 a): `views[k]` is B x B with S_ij = J_k(T_i, T_j)
/// for i != j and S_ii = 1 (also for empty trees). Symmetric.
struct BatchScores {
  std::array<ScoreMatrix, kNumViews> views;
  std::size_t batch_size() const { return static_cast<std::size_t>(views[0].rows()); }
  /// The scores as one contiguous B x B x 10 float array, index (i * B + j) * 10 + k.
  std::vector<float> to_bbk() const;
};
BatchScores batch_scores(const std::vector<ViewSets>& trees);
BatchScores batch_scores(const std::vector<Tree>& trees);

/// Combined-mode B x B matrix with diagonal 1 (§3.5 b).
ScoreMatrix batch_combined(const std::vector<ViewSets>& trees);

}  // namespace dialtree::sts
