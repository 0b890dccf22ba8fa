#include "eval/probe.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>

#include <fmt/core.h>
#include <Eigen/Eigenvalues>
#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/clock.h"
#include "common/device_spec.h"
#include "common/error.h"
#include "common/json_util.h"

namespace dialtree::eval {
namespace {

using Clock = std::chrono::steady_clock;
using Eigen::VectorXd;

// ---- L-BFGS line search (Nocedal & Wright Alg. 3.5 / 3.6, strong Wolfe) ----------------------

constexpr double kC1 = 1e-4;  // sufficient decrease
constexpr double kC2 = 0.9;   // curvature (the usual value for quasi-Newton methods)

/// A point on the search line: step length, objective, directional derivative, gradient.
struct LinePoint {
  double a = 0, f = 0, d = 0;
  VectorXd g;
};

/// Minimiser of the cubic through (a0, f0, d0) and (a1, f1, d1), or NaN when it has none.
double cubic_min(double a0, double f0, double d0, double a1, double f1, double d1) {
  const double t1 = d0 + d1 - 3 * (f0 - f1) / (a0 - a1);
  const double disc = t1 * t1 - d0 * d1;
  if (!(disc >= 0)) return std::numeric_limits<double>::quiet_NaN();
  const double t2 = std::copysign(std::sqrt(disc), a1 - a0);
  const double den = d1 - d0 + 2 * t2;
  if (den == 0) return std::numeric_limits<double>::quiet_NaN();
  return a1 - (a1 - a0) * (d1 + t2 - t1) / den;
}

class LineSearch {
 public:
  LineSearch(const LbfgsObjective& f, const VectorXd& x, const VectorXd& dir, double f0, double d0,
             int max_evals)
      : f_(f), x_(x), dir_(dir), f0_(f0), d0_(d0), max_evals_(max_evals) {}

  /// Searches from step a1; true with `out` set on a strong-Wolfe point (or, when the
  /// evaluations run out, the best point with sufficient decrease seen).
  bool run(double a1, LinePoint& out) {
    LinePoint prev;
    prev.a = 0;
    prev.f = f0_;
    prev.d = d0_;
    double a = a1;
    for (int i = 0; evals_ < max_evals_; ++i) {
      LinePoint cur = eval(a);
      if (!armijo(cur) || (i > 0 && cur.f >= prev.f)) return zoom(prev, cur, out);
      if (std::abs(cur.d) <= -kC2 * d0_) {
        out = std::move(cur);
        return true;
      }
      if (cur.d >= 0) return zoom(cur, prev, out);
      prev = std::move(cur);
      a = prev.a * 4;  // extrapolate
    }
    return fallback(out);
  }

  int evaluations() const { return evals_; }

 private:
  bool armijo(const LinePoint& p) const {
    return std::isfinite(p.f) && p.f <= f0_ + kC1 * p.a * d0_;
  }

  LinePoint eval(double a) {
    LinePoint p;
    p.a = a;
    p.g.resize(x_.size());
    p.f = f_(x_ + a * dir_, p.g);
    p.d = p.g.dot(dir_);
    ++evals_;
    if (std::isfinite(p.f) && p.f < f0_ && (!best_ || p.f < best_->f) && armijo(p)) best_ = p;
    return p;
  }

  /// Alg. 3.6: `lo` satisfies sufficient decrease with the lower objective; the minimiser lies
  /// between lo.a and hi.a.
  bool zoom(LinePoint lo, LinePoint hi, LinePoint& out) {
    while (evals_ < max_evals_) {
      const double left = std::min(lo.a, hi.a), right = std::max(lo.a, hi.a);
      const double width = right - left;
      if (!(width > 1e-16 * right)) break;
      double a = std::isfinite(hi.f) ? cubic_min(lo.a, lo.f, lo.d, hi.a, hi.f, hi.d)
                                     : std::numeric_limits<double>::quiet_NaN();
      // Safeguard: stay inside the middle 80% of the interval, else bisect.
      if (!std::isfinite(a) || a < left + 0.1 * width || a > right - 0.1 * width)
        a = left + 0.5 * width;
      LinePoint cur = eval(a);
      if (!armijo(cur) || cur.f >= lo.f) {
        hi = std::move(cur);
      } else {
        if (std::abs(cur.d) <= -kC2 * d0_) {
          out = std::move(cur);
          return true;
        }
        if (cur.d * (hi.a - lo.a) >= 0) hi = lo;
        lo = std::move(cur);
      }
    }
    return fallback(out);
  }

  bool fallback(LinePoint& out) {
    if (!best_) return false;
    out = *best_;
    return true;
  }

  const LbfgsObjective& f_;
  const VectorXd& x_;
  const VectorXd& dir_;
  double f0_, d0_;
  int max_evals_;
  int evals_ = 0;
  std::optional<LinePoint> best_;
};

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

// C = L·R for row-major L [m, q], R [q, p8] and C [m, p8], p8 a multiple of 8: the two matrix
// products of the multinomial objective, which take most of a fit. Eigen is compiled for
// baseline x86-64 here (SSE2, about 11 GFLOP/s on the development machine); these register-
// blocked kernels are compiled for AVX2+FMA (4 rows x 8 columns, about 27 GFLOP/s) and AVX-512
// (6 rows x 8 columns, about 50 GFLOP/s) and chosen at run time; other CPUs use Eigen. Each
// element sums over q in order, so results are the same run to run on one machine (the kernels
// round with FMA, so machines with different instruction sets may differ in the last bits).

using Index = std::ptrdiff_t;

// Multiply-adds round once (FMA) in these kernels: gcc needs to be told per function; clang
// contracts `a += x * y` into an FMA by default (-ffp-contract=on) and has no such attribute.
#if defined(__clang__)
#define DIALTREE_FP_CONTRACT_FAST
#else
#define DIALTREE_FP_CONTRACT_FAST , optimize("fp-contract=fast")
#endif

__attribute__((target("arch=x86-64-v4") DIALTREE_FP_CONTRACT_FAST)) void matmul_avx512(
    const double* l, Index m, Index q, const double* r, Index p8, double* c) {
  typedef double v8d __attribute__((vector_size(64), aligned(8), may_alias));
  for (Index i = 0; i < m; i += 6) {
    const Index rows = std::min<Index>(6, m - i);
    // Rows past m repeat the last row (computed, not stored): no branch in the inner loop.
    const double* l0 = l + i * q;
    const double* l1 = l + (i + std::min<Index>(1, rows - 1)) * q;
    const double* l2 = l + (i + std::min<Index>(2, rows - 1)) * q;
    const double* l3 = l + (i + std::min<Index>(3, rows - 1)) * q;
    const double* l4 = l + (i + std::min<Index>(4, rows - 1)) * q;
    const double* l5 = l + (i + std::min<Index>(5, rows - 1)) * q;
    for (Index col = 0; col < p8; col += 8) {
      v8d a0 = {}, a1 = {}, a2 = {}, a3 = {}, a4 = {}, a5 = {};
      const double* rp = r + col;
      for (Index j = 0; j < q; ++j, rp += p8) {
        const v8d rv = *reinterpret_cast<const v8d*>(rp);
        a0 += l0[j] * rv;
        a1 += l1[j] * rv;
        a2 += l2[j] * rv;
        a3 += l3[j] * rv;
        a4 += l4[j] * rv;
        a5 += l5[j] * rv;
      }
      double* out = c + i * p8 + col;
      const v8d* acc[6] = {&a0, &a1, &a2, &a3, &a4, &a5};
      for (Index t = 0; t < rows; ++t) *reinterpret_cast<v8d*>(out + t * p8) = *acc[t];
    }
  }
}

__attribute__((target("arch=x86-64-v3") DIALTREE_FP_CONTRACT_FAST)) void matmul_avx2(
    const double* l, Index m, Index q, const double* r, Index p8, double* c) {
  typedef double v4d __attribute__((vector_size(32), aligned(8), may_alias));
  for (Index i = 0; i < m; i += 4) {
    const Index rows = std::min<Index>(4, m - i);
    const double* l0 = l + i * q;
    const double* l1 = l + (i + std::min<Index>(1, rows - 1)) * q;
    const double* l2 = l + (i + std::min<Index>(2, rows - 1)) * q;
    const double* l3 = l + (i + std::min<Index>(3, rows - 1)) * q;
    for (Index col = 0; col < p8; col += 8) {
      v4d a0 = {}, b0 = {}, a1 = {}, b1 = {}, a2 = {}, b2 = {}, a3 = {}, b3 = {};
      const double* rp = r + col;
      for (Index j = 0; j < q; ++j, rp += p8) {
        const v4d r0 = *reinterpret_cast<const v4d*>(rp);
        const v4d r1 = *reinterpret_cast<const v4d*>(rp + 4);
        const double x0 = l0[j], x1 = l1[j], x2 = l2[j], x3 = l3[j];
        a0 += x0 * r0;
        b0 += x0 * r1;
        a1 += x1 * r0;
        b1 += x1 * r1;
        a2 += x2 * r0;
        b2 += x2 * r1;
        a3 += x3 * r0;
        b3 += x3 * r1;
      }
      double* out = c + i * p8 + col;
      const v4d* acc[8] = {&a0, &b0, &a1, &b1, &a2, &b2, &a3, &b3};
      for (Index t = 0; t < rows; ++t) {
        *reinterpret_cast<v4d*>(out + t * p8) = *acc[2 * t];
        *reinterpret_cast<v4d*>(out + t * p8 + 4) = *acc[2 * t + 1];
      }
    }
  }
}

#undef DIALTREE_FP_CONTRACT_FAST

void matmul_rr(const double* l, Index m, Index q, const double* r, Index p8, double* c) {
  static const int level = probe_detail::matmul_level();
  probe_detail::matmul_rr(level, l, m, q, r, p8, c);
}

Index round_up8(Index v) {
  return (v + 7) / 8 * 8;
}

/// matmul_rr() with the rows of L split over up to `threads` threads. Every element of C sums
/// over q in the same order whatever the split, so the bits do not depend on `threads`; blocks
/// are multiples of 24 rows (the kernels' 4- and 6-row tiles) and at least 96 rows.
void matmul_rr_threads(const double* l, Index m, Index q, const double* r, Index p8, double* c,
                       int threads) {
  Index block = (m + threads - 1) / std::max(threads, 1);
  block = std::max<Index>(96, (block + 23) / 24 * 24);
  if (threads <= 1 || block >= m) {
    matmul_rr(l, m, q, r, p8, c);
    return;
  }
  std::vector<std::thread> helpers;
  for (Index i = block; i < m; i += block) {
    const Index rows = std::min(block, m - i);
    helpers.emplace_back([=] { matmul_rr(l + i * q, rows, q, r, p8, c + i * p8); });
  }
  matmul_rr(l, block, q, r, p8, c);
  for (auto& t : helpers) t.join();
}

/// Σ_i CE_i + ‖W‖²/(2C) of the multinomial model and its gradient. θ holds [K, d+1] row-major
/// (row k: class k's weights, then its intercept); `y` are class indices 0..K-1. Keeps the
/// padded inputs [x | 1 | 0..] and the work buffers of one fit.
class MultinomialObjective {
 public:
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

  double operator()(const VectorXd& theta, VectorXd& grad) {
    const Index d1 = d_ + 1;
    for (Index kk = 0; kk < k_; ++kk)
      for (Index j = 0; j < d1; ++j) wt_[j * k8_ + kk] = theta[kk * d1 + j];
    matmul_rr_threads(xa_.data(), n_, d8_, wt_.data(), k8_, z_.data(), threads_);  // logits [n, K8]
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
    matmul_rr_threads(xat_.data(), d8_, n_, z_.data(), k8_, gw_.data(), threads_);  // [x|1]ᵀ G
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
                        const VectorXd& theta, VectorXd& grad) {
  const Eigen::Index d = xa.cols() - 1;
  VectorXd z = xa * theta;
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

void check_rows(const ProbeMatrix& x, std::size_t labels, const char* what) {
  if (static_cast<std::size_t>(x.rows()) != labels) {
    throw std::invalid_argument(fmt::format("{}: {} rows but {} labels", what, x.rows(), labels));
  }
  if (x.rows() == 0) throw std::invalid_argument(std::string(what) + ": no rows");
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

/// SplitMix64 (Steele, Lea & Flood 2014): the random stream of mteb_draws().
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, n), n >= 1, without modulo bias (rejection).
  std::uint64_t below(std::uint64_t n) {
    const std::uint64_t threshold = (0 - n) % n;  // 2^64 mod n
    for (;;) {
      const std::uint64_t r = next();
      if (r >= threshold) return r % n;
    }
  }

 private:
  std::uint64_t state_;
};

std::string pct(double fraction) {
  return fmt::format("{:.2f}", fraction * 100);
}

std::string pct(const MeanStd& v, int runs) {
  return runs > 1 ? fmt::format("{:.2f} ± {:.2f}", v.mean * 100, v.std * 100) : pct(v.mean);
}

nlohmann::json ms_json(const MeanStd& v) {
  return {{"mean", v.mean}, {"std", v.std}};
}

}  // namespace

namespace probe_detail {

int matmul_level() {
  // Feature by feature: clang 14 (the guard builds) knows no "x86-64-vN" names here, nor
  // "f16c". Every CPU with these also has the rest of its level (F16C, LZCNT, MOVBE, XSAVE).
  const bool v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                  __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2");
  const bool v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
                  __builtin_cpu_supports("avx512vl");
  return v4 ? 4 : v3 ? 3 : 0;
}

void matmul_rr(int level, const double* l, std::ptrdiff_t m, std::ptrdiff_t q, const double* r,
               std::ptrdiff_t p8, double* c) {
  level = std::min(level, matmul_level());
  if (level >= 4) return matmul_avx512(l, m, q, r, p8, c);
  if (level >= 3) return matmul_avx2(l, m, q, r, p8, c);
  using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<RowMajor>(c, m, p8).noalias() =
      Eigen::Map<const RowMajor>(l, m, q) * Eigen::Map<const RowMajor>(r, q, p8);
}

}  // namespace probe_detail

// ---- L-BFGS ----------------------------------------------------------------------------------

LbfgsResult minimize_lbfgs(const LbfgsObjective& f, const VectorXd& x0, const LbfgsOptions& o) {
  if (o.max_iter < 1 || o.memory < 1 || o.max_linesearch < 1 || !(o.gtol >= 0) || !(o.ftol >= 0)) {
    throw std::invalid_argument(
        "L-BFGS: max_iter, memory and max_linesearch must be >= 1, gtol and ftol >= 0");
  }
  LbfgsResult r;
  r.x = x0;
  VectorXd g(x0.size());
  r.f = f(r.x, g);
  r.evaluations = 1;
  if (!std::isfinite(r.f)) throw std::invalid_argument("L-BFGS: f(x0) is not finite");
  r.grad_max_abs = g.size() ? g.cwiseAbs().maxCoeff() : 0.0;
  if (r.grad_max_abs <= o.gtol) {
    r.converged = true;
    r.stop_reason = "gtol";
    return r;
  }
  std::deque<VectorXd> ss, ys;
  std::deque<double> rhos;
  VectorXd dir(x0.size());
  std::vector<double> alpha(static_cast<std::size_t>(o.memory));
  bool restarted = false;
  while (r.iterations < o.max_iter) {
    // Two-loop recursion: dir = -H g with H0 = (sᵀy / yᵀy) I.
    dir = -g;
    const std::size_t m = ss.size();
    for (std::size_t j = m; j-- > 0;) {
      alpha[j] = rhos[j] * ss[j].dot(dir);
      dir -= alpha[j] * ys[j];
    }
    if (m > 0) dir *= ss[m - 1].dot(ys[m - 1]) / ys[m - 1].squaredNorm();
    for (std::size_t j = 0; j < m; ++j) {
      const double beta = rhos[j] * ys[j].dot(dir);
      dir += (alpha[j] - beta) * ss[j];
    }
    double d0 = g.dot(dir);
    if (!(d0 < 0)) {  // not a descent direction (rounding): steepest descent
      ss.clear(), ys.clear(), rhos.clear();
      dir = -g;
      d0 = g.dot(dir);
    }
    // L-BFGS-B's first step (and after a reset) has length 1; later steps are unit steps of
    // the quasi-Newton direction.
    const double a1 = ss.empty() ? 1.0 / dir.norm() : 1.0;
    LineSearch search(f, r.x, dir, r.f, d0, o.max_linesearch);
    LinePoint p;
    const bool ok = search.run(a1, p);
    r.evaluations += search.evaluations();
    if (!ok) {
      if (!ss.empty() && !restarted) {  // retry once from steepest descent
        ss.clear(), ys.clear(), rhos.clear();
        restarted = true;
        continue;
      }
      r.stop_reason = "line search failed";
      return r;
    }
    restarted = false;
    VectorXd s = p.a * dir;
    VectorXd y = p.g - g;
    const double sy = s.dot(y), yy = y.squaredNorm();
    if (sy > std::numeric_limits<double>::epsilon() * yy) {
      if (static_cast<int>(ss.size()) == o.memory) {
        ss.pop_front(), ys.pop_front(), rhos.pop_front();
      }
      ss.push_back(std::move(s));
      ys.push_back(std::move(y));
      rhos.push_back(1.0 / sy);
    }
    const double f_old = r.f;
    r.x += p.a * dir;
    r.f = p.f;
    g = std::move(p.g);
    ++r.iterations;
    r.grad_max_abs = g.cwiseAbs().maxCoeff();
    if (r.grad_max_abs <= o.gtol) {
      r.converged = true;
      r.stop_reason = "gtol";
      return r;
    }
    if ((f_old - r.f) / std::max({std::abs(f_old), std::abs(r.f), 1.0}) <= o.ftol) {
      r.converged = true;
      r.stop_reason = "ftol";
      return r;
    }
  }
  r.stop_reason = "max_iter";
  return r;
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
  check_rows(x_in, y.size(), "logistic regression");
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
    objective = [&](const VectorXd& t, VectorXd& g) {
      return binary_objective(xa, idx, o.C, t, g);
    };
  } else {
    auto multinomial = std::make_shared<MultinomialObjective>(x, idx, k, o.C, o.threads);
    objective = [multinomial](const VectorXd& t, VectorXd& g) { return (*multinomial)(t, g); };
  }
  LbfgsOptions lo;
  lo.max_iter = o.max_iter;
  lo.gtol = o.tol;
  const LbfgsResult r = minimize_lbfgs(objective, VectorXd::Zero(k * (d + 1)), lo);
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
  check_rows(x, y.size(), "nearest centroid");
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

// ---- metrics ---------------------------------------------------------------------------------

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
  const VectorXd& lambda = eig.eigenvalues();
  const double floor = lambda.maxCoeff() * static_cast<double>(gram.rows()) *
                       std::numeric_limits<double>::epsilon();
  const VectorXd sv = (lambda.array() > floor).select(lambda.array().sqrt(), 0.0).matrix();
  const double total = sv.sum();
  if (!(total > 0)) return 0;
  double entropy = 0;
  for (Eigen::Index k = 0; k < sv.size(); ++k) {
    const double p = sv(k) / total;
    if (p > 0) entropy -= p * std::log(p);
  }
  return std::exp(entropy);
}

// ---- protocols -------------------------------------------------------------------------------

ProbeProtocol parse_probe_protocol(const std::string& name) {
  if (name == "dialoglue-few") return ProbeProtocol::DialoglueFew;
  if (name == "mteb") return ProbeProtocol::Mteb;
  throw std::invalid_argument("unknown probe protocol '" + name + "' (valid: dialoglue-few, mteb)");
}

std::string probe_protocol_name(ProbeProtocol p) {
  return p == ProbeProtocol::DialoglueFew ? "dialoglue-few" : "mteb";
}

ProbePooling parse_probe_pooling(const std::string& name) {
  if (name == "cls") return ProbePooling::Cls;
  if (name == "mean") return ProbePooling::Mean;
  throw std::invalid_argument("unknown probe pooling '" + name + "' (valid: cls, mean)");
}

std::string probe_pooling_name(ProbePooling p) {
  return p == ProbePooling::Cls ? "cls" : "mean";
}

std::vector<std::vector<std::size_t>> mteb_draws(const std::vector<int>& labels, int draws,
                                                 int per_label, std::uint64_t seed) {
  if (draws < 1 || per_label < 1) {
    throw std::invalid_argument("MTEB draws: draws and per_label must be >= 1");
  }
  if (labels.empty()) throw std::invalid_argument("MTEB draws: no training examples");
  SplitMix64 rng(seed);
  std::vector<std::size_t> perm(labels.size());
  for (std::size_t i = 0; i < perm.size(); ++i) perm[i] = i;
  std::vector<std::vector<std::size_t>> out;
  for (int k = 0; k < draws; ++k) {
    for (std::size_t i = perm.size() - 1; i > 0; --i) std::swap(perm[i], perm[rng.below(i + 1)]);
    std::map<int, int> taken;
    std::vector<std::size_t> rows;
    for (const std::size_t i : perm) {
      if (taken[labels[i]] < per_label) {
        ++taken[labels[i]];
        rows.push_back(i);
      }
    }
    std::sort(rows.begin(), rows.end());
    out.push_back(std::move(rows));
  }
  return out;
}

ProbeMatrix select_rows(const ProbeMatrix& x, const std::vector<std::size_t>& rows) {
  ProbeMatrix out(static_cast<Eigen::Index>(rows.size()), x.cols());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] >= static_cast<std::size_t>(x.rows())) {
      throw std::out_of_range(fmt::format("select_rows: row {} of {}", rows[i], x.rows()));
    }
    out.row(static_cast<Eigen::Index>(i)) = x.row(static_cast<Eigen::Index>(rows[i]));
  }
  return out;
}

void check_probe_options(const ProbeOptions& o) {
  auto bad = [](const std::string& what) { throw std::invalid_argument("probe: " + what); };
  if (o.split != "test" && o.split != "val")
    bad("split must be 'test' or 'val', not '" + o.split + "'");
  if (!(o.C > 0)) bad("C must be > 0");
  if (o.max_iter < 1) bad("max_iter must be >= 1");
  if (o.batch_size < 1) bad("batch_size must be >= 1");
  if (o.max_utt_len < 1) bad("max_utt_len must be >= 1");
  if (o.mteb_draws < 1) bad("mteb_draws must be >= 1");
  if (o.mteb_per_label < 1) bad("mteb_per_label must be >= 1");
  if (o.threads < 0) bad("threads must be >= 0");
  if (o.protocols.empty()) bad("no protocol");
  if (const std::string p = device_spec_problem(o.device); !p.empty()) bad("device " + p);
}

namespace {

/// Runs every job on up to `threads` threads (0: the hardware's), each job on one thread; the
/// jobs write disjoint outputs, so the results do not depend on the thread count. The first
/// exception a job throws is rethrown after all threads have finished.
void run_jobs(const std::vector<std::function<void()>>& jobs, int threads) {
  std::size_t n = threads > 0 ? static_cast<std::size_t>(threads)
                              : std::max(1u, std::thread::hardware_concurrency());
  n = std::min(n, jobs.size());
  std::vector<std::exception_ptr> errors(jobs.size());
  auto run_one = [&](std::size_t i) {
    try {
      jobs[i]();
    } catch (...) {
      errors[i] = std::current_exception();
    }
  };
  if (n <= 1) {
    for (std::size_t i = 0; i < jobs.size(); ++i) run_one(i);
  } else {
    Eigen::initParallel();
    std::atomic<std::size_t> next{0};
    std::vector<std::thread> pool;
    for (std::size_t t = 0; t < n; ++t) {
      pool.emplace_back([&] {
        for (std::size_t i = next++; i < jobs.size(); i = next++) run_one(i);
      });
    }
    for (auto& t : pool) t.join();
  }
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

/// Appends the fits of one training / scored split pair to `jobs` (LR raw, LR standardized,
/// NCC), each writing its own fields of `out`. The referenced data must outlive the jobs.
void add_split_jobs(std::vector<std::function<void()>>& jobs, const ProbeMatrix& train_x,
                    const std::vector<int>& train_y, const ProbeMatrix& test_x,
                    const std::vector<int>& test_y, const ProbeOptions& o, SplitScores& out) {
  check_rows(test_x, test_y.size(), "probe scored split");
  for (const bool standardize : {false, true}) {
    jobs.emplace_back([&, standardize] {
      LogisticOptions lo;
      lo.C = o.C;
      lo.max_iter = o.max_iter;
      lo.standardize = standardize;
      const LogisticModel m = fit_logistic(train_x, train_y, lo);
      const std::vector<int> p = predict(m, test_x);
      (standardize ? out.lr_standardized_accuracy : out.lr_accuracy) = probe_accuracy(test_y, p);
      (standardize ? out.lr_standardized_macro_f1 : out.lr_macro_f1) = macro_f1(test_y, p);
      (standardize ? out.lr_standardized_iterations : out.lr_iterations) = m.iterations;
      (standardize ? out.lr_standardized_converged : out.lr_converged) = m.converged;
    });
  }
  jobs.emplace_back([&] {
    const std::vector<int> p = predict(fit_centroids(train_x, train_y), test_x);
    out.ncc_accuracy = probe_accuracy(test_y, p);
    out.ncc_macro_f1 = macro_f1(test_y, p);
  });
}

}  // namespace

SplitScores score_split(const ProbeMatrix& train_x, const std::vector<int>& train_y,
                        const ProbeMatrix& test_x, const std::vector<int>& test_y,
                        const ProbeOptions& options) {
  SplitScores s;
  std::vector<std::function<void()>> jobs;
  add_split_jobs(jobs, train_x, train_y, test_x, test_y, options, s);
  run_jobs(jobs, options.threads);
  return s;
}

namespace {
ProbeRow aggregate(const std::string& task, ProbeProtocol protocol, const ProbeOptions& o,
                   const std::vector<SplitScores>& runs, std::size_t train_examples,
                   const ProbeMatrix& test_x) {
  ProbeRow row;
  row.task = task;
  row.protocol = protocol;
  row.split = o.split;
  row.train_examples = train_examples;
  row.eval_examples = static_cast<std::size_t>(test_x.rows());
  row.runs = static_cast<int>(runs.size());
  row.dim = static_cast<int>(test_x.cols());
  auto stat = [&](double SplitScores::*field) {
    std::vector<double> v;
    for (const auto& r : runs) v.push_back(r.*field);
    return mean_std(v);
  };
  row.lr_accuracy = stat(&SplitScores::lr_accuracy);
  row.lr_macro_f1 = stat(&SplitScores::lr_macro_f1);
  row.lr_standardized_accuracy = stat(&SplitScores::lr_standardized_accuracy);
  row.lr_standardized_macro_f1 = stat(&SplitScores::lr_standardized_macro_f1);
  row.ncc_accuracy = stat(&SplitScores::ncc_accuracy);
  row.ncc_macro_f1 = stat(&SplitScores::ncc_macro_f1);
  for (const auto& r : runs) {
    row.lr_max_iterations = std::max(row.lr_max_iterations, r.lr_iterations);
    row.lr_standardized_max_iterations =
        std::max(row.lr_standardized_max_iterations, r.lr_standardized_iterations);
    row.lr_converged = row.lr_converged && r.lr_converged;
    row.lr_standardized_converged = row.lr_standardized_converged && r.lr_standardized_converged;
  }
  row.effective_rank = effective_rank(test_x);
  return row;
}
}  // namespace

ProbeRow probe_dialoglue_few(const std::string& task, const ProbeMatrix& train_x,
                             const std::vector<int>& train_y, const ProbeMatrix& test_x,
                             const std::vector<int>& test_y, const ProbeOptions& options) {
  const auto t0 = Clock::now();
  ProbeRow row =
      aggregate(task, ProbeProtocol::DialoglueFew, options,
                {score_split(train_x, train_y, test_x, test_y, options)}, train_y.size(), test_x);
  row.fit_seconds = seconds_since(t0);
  return row;
}

ProbeRow probe_mteb(const std::string& task, const ProbeMatrix& train_x,
                    const std::vector<int>& train_y,
                    const std::vector<std::vector<std::size_t>>& draws, const ProbeMatrix& test_x,
                    const std::vector<int>& test_y, const ProbeOptions& options) {
  check_rows(train_x, train_y.size(), "probe MTEB training split");
  if (draws.empty()) throw std::invalid_argument("probe MTEB: no draws");
  const auto t0 = Clock::now();
  std::vector<ProbeMatrix> xs(draws.size());
  std::vector<std::vector<int>> ys(draws.size());
  std::size_t per_draw = 0;
  for (std::size_t k = 0; k < draws.size(); ++k) {
    xs[k] = select_rows(train_x, draws[k]);
    for (const std::size_t i : draws[k]) ys[k].push_back(train_y.at(i));
    per_draw = std::max(per_draw, draws[k].size());
  }
  std::vector<SplitScores> runs(draws.size());
  std::vector<std::function<void()>> jobs;
  for (std::size_t k = 0; k < draws.size(); ++k)
    add_split_jobs(jobs, xs[k], ys[k], test_x, test_y, options, runs[k]);
  run_jobs(jobs, options.threads);
  ProbeRow row = aggregate(task, ProbeProtocol::Mteb, options, runs, per_draw, test_x);
  row.fit_seconds = seconds_since(t0);
  return row;
}

nlohmann::json to_json(const ProbeRow& r) {
  return {{"task", r.task},
          {"protocol", probe_protocol_name(r.protocol)},
          {"split", r.split},
          {"train_examples", r.train_examples},
          {"eval_examples", r.eval_examples},
          {"runs", r.runs},
          {"dim", r.dim},
          {"lr_accuracy", ms_json(r.lr_accuracy)},
          {"lr_macro_f1", ms_json(r.lr_macro_f1)},
          {"lr_standardized_accuracy", ms_json(r.lr_standardized_accuracy)},
          {"lr_standardized_macro_f1", ms_json(r.lr_standardized_macro_f1)},
          {"ncc_accuracy", ms_json(r.ncc_accuracy)},
          {"ncc_macro_f1", ms_json(r.ncc_macro_f1)},
          {"effective_rank", r.effective_rank},
          {"lr_max_iterations", r.lr_max_iterations},
          {"lr_standardized_max_iterations", r.lr_standardized_max_iterations},
          {"lr_converged", r.lr_converged},
          {"lr_standardized_converged", r.lr_standardized_converged},
          {"embed_seconds", r.embed_seconds},
          {"fit_seconds", r.fit_seconds}};
}

nlohmann::json to_json(const TagProbeRow& r) {
  return {{"task", r.task},
          {"split", r.split},
          {"metric", r.metric},
          {"train_examples", r.train_examples},
          {"train_words", r.train_words},
          {"eval_examples", r.eval_examples},
          {"tag_classes", r.tag_classes},
          {"dim", r.dim},
          {"score", r.score},
          {"tag_accuracy", r.tag_accuracy},
          {"intent_accuracy",
           r.intent_accuracy < 0 ? nlohmann::json(nullptr) : nlohmann::json(r.intent_accuracy)},
          {"lr_iterations", r.lr_iterations},
          {"lr_converged", r.lr_converged},
          {"embed_seconds", r.embed_seconds},
          {"fit_seconds", r.fit_seconds}};
}

nlohmann::json ProbeReport::to_json() const {
  nlohmann::json protocols = nlohmann::json::array();
  for (const auto p : options.protocols) protocols.push_back(probe_protocol_name(p));
  nlohmann::json rows_json = nlohmann::json::array(), tag_rows_json = nlohmann::json::array();
  for (const auto& r : rows) rows_json.push_back(eval::to_json(r));
  for (const auto& r : tag_rows) tag_rows_json.push_back(eval::to_json(r));
  return {{"format", "dialtree-probe/1"},
          {"model", model},
          {"data_dir", data_dir},
          {"options",
           {{"protocols", protocols},
            {"split", options.split},
            {"C", options.C},
            {"max_iter", options.max_iter},
            {"batch_size", options.batch_size},
            {"pooling", probe_pooling_name(options.pooling)},
            {"bf16", options.bf16},
            {"device", options.device},
            {"max_utt_len", options.max_utt_len},
            {"mteb_draws", options.mteb_draws},
            {"mteb_per_label", options.mteb_per_label},
            {"mteb_seed", options.mteb_seed},
            {"from_scratch_seed", options.from_scratch_seed},
            {"threads", options.threads}}},
          {"seconds", seconds},
          {"rows", rows_json},
          {"tag_rows", tag_rows_json}};
}

std::string probe_table(const ProbeReport& report) {
  std::string out;
  bool unconverged = false;
  if (!report.rows.empty()) {
    out +=
        "| task | protocol | LR acc | LR-std acc | NCC acc | macro F1 | eff. rank | seconds |\n"
        "|---|---|---|---|---|---|---|---|\n";
  }
  for (const auto& r : report.rows) {
    std::string protocol = probe_protocol_name(r.protocol);
    if (r.split != "test") protocol += " (" + r.split + ")";
    unconverged = unconverged || !r.lr_converged || !r.lr_standardized_converged;
    out +=
        fmt::format("| {} | {} | {}{} | {}{} | {} | {} | {:.1f} | {:.1f} |\n", r.task, protocol,
                    pct(r.lr_accuracy, r.runs), r.lr_converged ? "" : "*",
                    pct(r.lr_standardized_accuracy, r.runs), r.lr_standardized_converged ? "" : "*",
                    pct(r.ncc_accuracy, r.runs), pct(r.lr_macro_f1, r.runs), r.effective_rank,
                    r.embed_seconds + r.fit_seconds);
  }
  if (!report.tag_rows.empty()) {
    if (!out.empty()) out += "\n";
    out +=
        "| task | split | metric (token probe, LR-std) | score | word tag acc | intent acc | "
        "seconds |\n|---|---|---|---|---|---|---|\n";
  }
  for (const auto& r : report.tag_rows) {
    unconverged = unconverged || !r.lr_converged;
    out += fmt::format("| {} | {} | {} | {}{} | {} | {} | {:.1f} |\n", r.task, r.split, r.metric,
                       pct(r.score), r.lr_converged ? "" : "*", pct(r.tag_accuracy),
                       r.intent_accuracy < 0 ? std::string("–") : pct(r.intent_accuracy),
                       r.embed_seconds + r.fit_seconds);
  }
  if (report.options.pooling != ProbePooling::Cls) {
    out += "\nVectors: " + probe_pooling_name(report.options.pooling) +
           " pooling of the final token states (--pooling), not the [CLS] vector.\n";
  }
  if (unconverged) {
    out += fmt::format(
        "\n* L-BFGS stopped at max_iter = {} before its tolerance in at least one fit of the "
        "cell (scikit-learn warns ConvergenceWarning there too).\n",
        report.options.max_iter);
  }
  return out;
}

// ---- embedding files -------------------------------------------------------------------------

void write_embeddings(const std::string& stem, const ProbeMatrix& x, const std::vector<int>& labels,
                      const std::vector<std::string>& label_names, const nlohmann::json& extra) {
  if (static_cast<std::size_t>(x.rows()) != labels.size()) {
    throw std::invalid_argument(
        fmt::format("write_embeddings: {} rows but {} labels", x.rows(), labels.size()));
  }
  static_assert(sizeof(float) == 4, "float32");
  std::string bytes(static_cast<std::size_t>(x.size()) * 4, '\0');
  char* p = bytes.data();
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    for (Eigen::Index j = 0; j < x.cols(); ++j, p += 4) {
      const auto v = static_cast<float>(x(i, j));
      std::uint32_t u;
      std::memcpy(&u, &v, 4);
      for (int b = 0; b < 4; ++b) p[b] = static_cast<char>((u >> (8 * b)) & 0xFF);  // little-endian
    }
  }
  const std::filesystem::path data_path = stem + ".f32";
  nlohmann::json header = {{"format", "dialtree-embeddings/1"},
                           {"rows", x.rows()},
                           {"dim", x.cols()},
                           {"dtype", "float32"},
                           {"byte_order", "little"},
                           {"data", data_path.filename().string()},
                           {"labels", labels},
                           {"label_names", label_names}};
  if (extra.is_object()) {
    for (auto it = extra.begin(); it != extra.end(); ++it) header[it.key()] = it.value();
  }
  write_file_atomic(data_path, bytes);
  write_file_atomic(stem + ".json", header.dump() + "\n");
}

EmbeddingFile read_embeddings(const std::string& stem) {
  const std::string header_path = stem + ".json";
  nlohmann::json h;
  try {
    h = nlohmann::json::parse(read_file_bytes(header_path));
  } catch (const nlohmann::json::exception& e) {
    throw DataError(header_path, "", "", std::string("not JSON: ") + e.what());
  }
  auto field = [&](const char* name) -> const nlohmann::json& {
    if (!h.is_object() || !h.contains(name)) throw DataError(header_path, "", name, "missing");
    return h.at(name);
  };
  if (field("format") != "dialtree-embeddings/1" || field("dtype") != "float32" ||
      field("byte_order") != "little") {
    throw DataError(header_path, "", "format",
                    "expected dialtree-embeddings/1, float32, little-endian");
  }
  EmbeddingFile out;
  std::size_t rows = 0, dim = 0;
  try {
    rows = field("rows").get<std::size_t>();
    dim = field("dim").get<std::size_t>();
    out.labels = field("labels").get<std::vector<int>>();
    if (h.contains("label_names"))
      out.label_names = h.at("label_names").get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception& e) {
    throw DataError(header_path, "", "", std::string("bad header: ") + e.what());
  }
  if (out.labels.size() != rows) {
    throw DataError(header_path, "", "labels",
                    fmt::format("{} labels for {} rows", out.labels.size(), rows));
  }
  const std::string data_path =
      (std::filesystem::path(header_path).parent_path() / field("data").get<std::string>())
          .string();
  const std::string bytes = read_file_bytes(data_path);
  if (bytes.size() != rows * dim * 4) {
    throw DataError(
        data_path, "", "",
        fmt::format("{} bytes, expected rows x dim x 4 = {}", bytes.size(), rows * dim * 4));
  }
  out.x.resize(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(dim));
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < dim; ++j, p += 4) {
      const std::uint32_t u =
          static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
          (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
      float v;
      std::memcpy(&v, &u, 4);
      out.x(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = v;
    }
  }
  return out;
}

}  // namespace dialtree::eval
