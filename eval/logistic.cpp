#include "eval/logistic.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include <fmt/core.h>

#include "eval/lbfgs.h"
#include "eval/probe_gemm.h"

namespace dialtree::eval {
namespace {

// ---- logistic regression objectives ----------------------------------------------------------

/// [x | 1]: the inputs with a column of ones for the intercept.
ProbeMatrix with_ones(const ProbeMatrix& x) {
  ProbeMatrix a(x.rows(), x.cols() + 1);
  a.leftCols(x.cols()) = x;
  a.col(x.cols()).setOnes();
  return a;
}

/// log(1 + e^z) without overflow.
double softplus(double z) {
  return z > 0 ? z + std::log1p(std::exp(-z)) : std::log1p(std::exp(z));
}

std::ptrdiff_t round_up8(std::ptrdiff_t v) {
  return (v + 7) / 8 * 8;
}

/// Σ_i CE_i + ‖W‖²/(2C) of the multinomial model and its gradient. θ holds [K, d+1] row-major
/// (row k: class k's weights, then its intercept); `y` are class indices 0..K-1. Keeps the
/// padded inputs [x | 1 | 0..] and the work buffers of one fit.
class MultinomialObjective {
 public:
  using Index = std::ptrdiff_t;

  MultinomialObjective(const ProbeMatrix& x, std::vector<int> y, int k, double c, int threads)
      : threads_(threads),
        n_(x.rows()),
        d_(x.cols()),
        k_(k),
        d8_(round_up8(x.cols() + 1)),
        k8_(round_up8(k)),
        c_(c),
        y_(std::move(y)),
        xa_(static_cast<std::size_t>(n_ * d8_), 0.0),
        xat_(static_cast<std::size_t>(d8_ * n_), 0.0),
        wt_(static_cast<std::size_t>(d8_ * k8_), 0.0),
        z_(static_cast<std::size_t>(n_ * k8_)),
        gw_(static_cast<std::size_t>(d8_ * k8_)) {
    for (Index i = 0; i < n_; ++i) {
      for (Index j = 0; j < d_; ++j) xa_[i * d8_ + j] = xat_[j * n_ + i] = x(i, j);
      xa_[i * d8_ + d_] = xat_[d_ * n_ + i] = 1;
    }
  }

  double operator()(const Eigen::VectorXd& theta, Eigen::VectorXd& grad) {
    const Index d1 = d_ + 1;
    for (Index kk = 0; kk < k_; ++kk)
      for (Index j = 0; j < d1; ++j) wt_[j * k8_ + kk] = theta[kk * d1 + j];
    // logits [n, K8]
    probe_detail::matmul_rr_threads(xa_.data(), n_, d8_, wt_.data(), k8_, z_.data(), threads_);
    double loss = 0;
    for (Index i = 0; i < n_; ++i) {
      double* z = z_.data() + i * k8_;
      const double m = *std::max_element(z, z + k_);
      double s = 0;
      for (Index kk = 0; kk < k_; ++kk) s += (z[kk] = std::exp(z[kk] - m));
      const int yi = y_[static_cast<std::size_t>(i)];
      loss += std::log(s) - std::log(z[yi]);  // = logsumexp(z_i) - z_{i,y_i}
      // ∂CE_i/∂z_i = softmax - one-hot, in place; the padding columns stay 0.
      for (Index kk = 0; kk < k_; ++kk) z[kk] /= s;
      z[yi] -= 1;
      for (Index kk = k_; kk < k8_; ++kk) z[kk] = 0;
    }
    // [x|1]ᵀ G
    probe_detail::matmul_rr_threads(xat_.data(), d8_, n_, z_.data(), k8_, gw_.data(), threads_);
    double penalty = 0;
    for (Index kk = 0; kk < k_; ++kk) {
      for (Index j = 0; j < d1; ++j) {
        const double w = theta[kk * d1 + j];
        grad[kk * d1 + j] = gw_[j * k8_ + kk] + (j < d_ ? w / c_ : 0.0);
        if (j < d_) penalty += w * w;
      }
    }
    return loss + penalty / (2 * c_);
  }

 private:
  int threads_;
  Index n_, d_, k_, d8_, k8_;
  double c_;
  std::vector<int> y_;
  std::vector<double> xa_, xat_;  // [x | 1 | 0..] as [n, d8] and transposed [d8, n]
  std::vector<double> wt_, z_, gw_;
};

/// scikit-learn's binary model: Σ_i [log(1 + e^{z_i}) - y_i z_i] + ‖w‖²/(2C), z = [x | 1]·θ,
/// y in {0, 1}.
double binary_objective(const ProbeMatrix& xa, const std::vector<int>& y, double c,
                        const Eigen::VectorXd& theta, Eigen::VectorXd& grad) {
  const Eigen::Index d = xa.cols() - 1;
  Eigen::VectorXd z = xa * theta;
  double loss = 0;
  for (Eigen::Index i = 0; i < z.size(); ++i) {
    const double yi = y[static_cast<std::size_t>(i)];
    loss += softplus(z(i)) - yi * z(i);
    z(i) = 1 / (1 + std::exp(-z(i))) - yi;  // ∂/∂z_i
  }
  grad.noalias() = xa.transpose() * z;
  grad.head(d) += theta.head(d) / c;
  return loss + theta.head(d).squaredNorm() / (2 * c);
}

std::vector<int> sorted_classes(const std::vector<int>& y) {
  std::vector<int> c(y.begin(), y.end());
  std::sort(c.begin(), c.end());
  c.erase(std::unique(c.begin(), c.end()), c.end());
  return c;
}

/// Index of the largest entry of a row (the first on ties).
template <class Row>
int argmax(const Row& row) {
  int best = 0;
  for (Eigen::Index j = 1; j < row.size(); ++j) {
    if (row(j) > row(best)) best = static_cast<int>(j);
  }
  return best;
}

void normalize_rows(ProbeMatrix& x) {
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    const double n = x.row(i).norm();
    if (n > 0) x.row(i) /= n;
  }
}

}  // namespace

void probe_detail::check_rows(const ProbeMatrix& x, std::size_t labels, const char* what) {
  if (static_cast<std::size_t>(x.rows()) != labels) {
    throw std::invalid_argument(fmt::format("{}: {} rows but {} labels", what, x.rows(), labels));
  }
  if (x.rows() == 0) throw std::invalid_argument(std::string(what) + ": no rows");
}

// ---- classifiers -----------------------------------------------------------------------------

Standardizer Standardizer::fit(const ProbeMatrix& x) {
  if (x.rows() == 0) throw std::invalid_argument("Standardizer: no rows");
  const double n = static_cast<double>(x.rows());
  Standardizer s;
  s.mean = x.colwise().mean();
  const Eigen::RowVectorXd var = (x.rowwise() - s.mean).array().square().colwise().sum() / n;
  s.scale.resize(x.cols());
  const double eps = std::numeric_limits<double>::epsilon();
  for (Eigen::Index j = 0; j < x.cols(); ++j) {
    // scikit-learn's _is_constant_feature: a variance within the rounding error of 0.
    const double bound = n * eps * var(j) + std::pow(n * s.mean(j) * eps, 2);
    s.scale(j) = var(j) <= bound ? 1.0 : std::sqrt(var(j));
  }
  return s;
}

ProbeMatrix Standardizer::transform(const ProbeMatrix& x) const {
  if (x.cols() != mean.size()) {
    throw std::invalid_argument(
        fmt::format("Standardizer: {} columns, fitted on {}", x.cols(), mean.size()));
  }
  return ((x.rowwise() - mean).array().rowwise() / scale.array()).matrix();
}

LogisticModel fit_logistic(const ProbeMatrix& x_in, const std::vector<int>& y,
                           const LogisticOptions& o) {
  probe_detail::check_rows(x_in, y.size(), "logistic regression");
  if (!(o.C > 0)) throw std::invalid_argument("logistic regression: C must be > 0");
  if (o.max_iter < 1) throw std::invalid_argument("logistic regression: max_iter must be >= 1");
  if (!x_in.allFinite()) throw std::invalid_argument("logistic regression: non-finite input");
  LogisticModel m;
  m.classes = sorted_classes(y);
  if (m.classes.size() < 2) {
    throw std::invalid_argument("logistic regression: needs at least two classes, got " +
                                std::to_string(m.classes.size()));
  }
  m.standardized = o.standardize;
  ProbeMatrix scaled;  // the standardized inputs, when asked for
  if (o.standardize) {
    m.scaler = Standardizer::fit(x_in);
    scaled = m.scaler.transform(x_in);
  }
  const ProbeMatrix& x = o.standardize ? scaled : x_in;
  std::vector<int> idx(y.size());
  for (std::size_t i = 0; i < y.size(); ++i) {
    idx[i] = static_cast<int>(std::lower_bound(m.classes.begin(), m.classes.end(), y[i]) -
                              m.classes.begin());
  }
  const Eigen::Index d = x_in.cols();
  const bool binary = m.classes.size() == 2;
  const int k = binary ? 1 : static_cast<int>(m.classes.size());
  LbfgsObjective objective;
  ProbeMatrix xa;  // binary: [x | 1]
  if (binary) {
    xa = with_ones(x);
    objective = [&](const Eigen::VectorXd& t, Eigen::VectorXd& g) {
      return binary_objective(xa, idx, o.C, t, g);
    };
  } else {
    auto multinomial = std::make_shared<MultinomialObjective>(x, idx, k, o.C, o.threads);
    objective = [multinomial](const Eigen::VectorXd& t, Eigen::VectorXd& g) {
      return (*multinomial)(t, g);
    };
  }
  LbfgsOptions lo;
  lo.max_iter = o.max_iter;
  lo.gtol = o.tol;
  const LbfgsResult r = minimize_lbfgs(objective, Eigen::VectorXd::Zero(k * (d + 1)), lo);
  const Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>
      theta(r.x.data(), k, d + 1);
  m.coef = theta.leftCols(d);
  m.intercept = theta.col(d);
  m.iterations = r.iterations;
  m.evaluations = r.evaluations;
  m.converged = r.converged;
  m.grad_max_abs = r.grad_max_abs;
  m.objective = r.f;
  return m;
}

Eigen::MatrixXd decision_function(const LogisticModel& m, const ProbeMatrix& x) {
  if (x.cols() != m.coef.cols()) {
    throw std::invalid_argument(
        fmt::format("logistic regression: {} columns, fitted on {}", x.cols(), m.coef.cols()));
  }
  Eigen::MatrixXd z = (m.standardized ? m.scaler.transform(x) : x) * m.coef.transpose();
  z.rowwise() += m.intercept.transpose();
  return z;
}

std::vector<int> predict(const LogisticModel& m, const ProbeMatrix& x) {
  const Eigen::MatrixXd z = decision_function(m, x);
  std::vector<int> out(static_cast<std::size_t>(x.rows()));
  for (Eigen::Index i = 0; i < z.rows(); ++i) {
    const int c = m.classes.size() == 2 ? (z(i, 0) > 0 ? 1 : 0) : argmax(z.row(i));
    out[static_cast<std::size_t>(i)] = m.classes[static_cast<std::size_t>(c)];
  }
  return out;
}

CentroidModel fit_centroids(const ProbeMatrix& x, const std::vector<int>& y) {
  probe_detail::check_rows(x, y.size(), "nearest centroid");
  CentroidModel m;
  m.classes = sorted_classes(y);
  m.centroids = ProbeMatrix::Zero(static_cast<Eigen::Index>(m.classes.size()), x.cols());
  ProbeMatrix unit = x;
  normalize_rows(unit);
  for (std::size_t i = 0; i < y.size(); ++i) {
    const auto c = std::lower_bound(m.classes.begin(), m.classes.end(), y[i]) - m.classes.begin();
    m.centroids.row(c) += unit.row(static_cast<Eigen::Index>(i));
  }
  // The mean's direction is the sum's: normalising the sum gives the normalised mean.
  normalize_rows(m.centroids);
  return m;
}

std::vector<int> predict(const CentroidModel& m, const ProbeMatrix& x) {
  if (x.cols() != m.centroids.cols()) {
    throw std::invalid_argument(
        fmt::format("nearest centroid: {} columns, fitted on {}", x.cols(), m.centroids.cols()));
  }
  ProbeMatrix unit = x;
  normalize_rows(unit);
  const Eigen::MatrixXd cos = unit * m.centroids.transpose();
  std::vector<int> out(static_cast<std::size_t>(x.rows()));
  for (Eigen::Index i = 0; i < cos.rows(); ++i)
    out[static_cast<std::size_t>(i)] = m.classes[static_cast<std::size_t>(argmax(cos.row(i)))];
  return out;
}

}  // namespace dialtree::eval
