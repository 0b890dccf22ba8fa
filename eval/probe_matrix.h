// The matrix type of the frozen-embedding probe (docs/evaluation.md, "Probe"), shared by its
// classifiers, metrics, protocols and embedding files. Torch-free.
#pragma once

#include <Eigen/Core>

namespace dialtree::eval {

/// Embeddings of n examples, one per row: [n, d], double, row-major.
using ProbeMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

}  // namespace dialtree::eval
