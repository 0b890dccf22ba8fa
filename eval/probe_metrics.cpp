#include "eval/probe_metrics.h"

#include <cmath>
#include <cstddef>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>

#include <fmt/core.h>
#include <Eigen/Eigenvalues>

namespace dialtree::eval {

namespace {
void check_pair(const std::vector<int>& truth, const std::vector<int>& predicted,
                const char* what) {
  if (truth.size() != predicted.size()) {
    throw std::invalid_argument(
        fmt::format("{}: {} true labels but {} predictions", what, truth.size(), predicted.size()));
  }
  if (truth.empty()) throw std::invalid_argument(std::string(what) + ": no examples");
}
}  // namespace

double probe_accuracy(const std::vector<int>& truth, const std::vector<int>& predicted) {
  check_pair(truth, predicted, "accuracy");
  std::size_t right = 0;
  for (std::size_t i = 0; i < truth.size(); ++i) right += truth[i] == predicted[i] ? 1 : 0;
  return static_cast<double>(right) / static_cast<double>(truth.size());
}

double macro_f1(const std::vector<int>& truth, const std::vector<int>& predicted) {
  check_pair(truth, predicted, "macro F1");
  struct Counts {
    std::size_t tp = 0, fp = 0, fn = 0;
  };
  std::map<int, Counts> per_label;  // the union of true and predicted labels
  for (std::size_t i = 0; i < truth.size(); ++i) {
    if (truth[i] == predicted[i]) {
      ++per_label[truth[i]].tp;
    } else {
      ++per_label[truth[i]].fn;
      ++per_label[predicted[i]].fp;
    }
  }
  double sum = 0;
  for (const auto& [label, c] : per_label) {
    const std::size_t den = 2 * c.tp + c.fp + c.fn;
    sum += den == 0 ? 0.0 : 2.0 * static_cast<double>(c.tp) / static_cast<double>(den);
  }
  return sum / static_cast<double>(per_label.size());
}

double effective_rank(const ProbeMatrix& x) {
  if (x.rows() < 2 || x.cols() == 0) return 0;
  const Eigen::MatrixXd centred = x.rowwise() - x.colwise().mean();
  // The singular values are the square roots of the eigenvalues of the smaller Gram matrix
  // (d x d, or n x n when n < d). A self-adjoint eigensolver compiles in a third of the time of
  // Eigen's SVD (docs/build.md P12) and runs faster. Eigenvalues within the Gram matrix's
  // rounding (size x eps x the largest) are numerically zero, as in numpy's matrix_rank.
  const Eigen::MatrixXd gram = centred.cols() <= centred.rows()
                                   ? Eigen::MatrixXd(centred.transpose() * centred)
                                   : Eigen::MatrixXd(centred * centred.transpose());
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(gram, Eigen::EigenvaluesOnly);
  const Eigen::VectorXd& lambda = eig.eigenvalues();
  const double floor = lambda.maxCoeff() * static_cast<double>(gram.rows()) *
                       std::numeric_limits<double>::epsilon();
  const Eigen::VectorXd sv = (lambda.array() > floor).select(lambda.array().sqrt(), 0.0).matrix();
  const double total = sv.sum();
  if (!(total > 0)) return 0;
  double entropy = 0;
  for (Eigen::Index k = 0; k < sv.size(); ++k) {
    const double p = sv(k) / total;
    if (p > 0) entropy -= p * std::log(p);
  }
  return std::exp(entropy);
}

}  // namespace dialtree::eval
