#include "eval/lbfgs.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

namespace dialtree::eval {
namespace {

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

}  // namespace

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

}  // namespace dialtree::eval
