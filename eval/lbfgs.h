// Limited-memory BFGS with a strong-Wolfe line search (docs/evaluation.md, "Probe"): the
// optimiser of the probe's logistic regression (eval/logistic.h). Torch-free; runs in double
// precision with Eigen and is deterministic.
#pragma once

#include <functional>
#include <string>

#include <Eigen/Core>

namespace dialtree::eval {

/// Settings of minimize_lbfgs(). The defaults are those scikit-learn 1.2 passes to SciPy's
/// L-BFGS-B for LogisticRegression(solver="lbfgs"): 10 correction pairs, gtol = tol = 1e-4 on
/// the largest absolute gradient entry, SciPy's default relative ftol 2.22e-9 (factr 1e7 times
/// the machine epsilon), at most 20 function evaluations per line search.
struct LbfgsOptions {
  int max_iter = 100;  ///< iterations (accepted steps); the search stops after this many
  int memory = 10;     ///< (s, y) correction pairs kept
  double gtol = 1e-4;  ///< converged when max_i |g_i| <= gtol
  double ftol =
      2.220446049250313e-9;  ///< converged when (f_old - f) / max(|f_old|, |f|, 1) <= ftol
  int max_linesearch = 20;   ///< function evaluations per line search
};

/// The outcome of minimize_lbfgs().
struct LbfgsResult {
  Eigen::VectorXd x;        ///< the last accepted point
  double f = 0;             ///< objective at x
  double grad_max_abs = 0;  ///< max_i |∂f/∂x_i| at x
  int iterations = 0;       ///< accepted steps
  int evaluations = 0;      ///< objective evaluations, line searches included
  bool converged = false;   ///< the gtol or ftol test passed (false: max_iter or a failed search)
  std::string stop_reason;  ///< "gtol", "ftol", "max_iter" or "line search failed"
};

/// An objective for minimize_lbfgs(): returns f(x) and writes ∇f(x) into `grad` (already sized
/// like x).
using LbfgsObjective = std::function<double(const Eigen::VectorXd& x, Eigen::VectorXd& grad)>;

/// Minimises a smooth function with limited-memory BFGS (Nocedal & Wright, Numerical
/// Optimization, 2nd ed., Alg. 7.4 two-loop recursion; line search Alg. 3.5/3.6 for the strong
/// Wolfe conditions with c1 = 1e-4, c2 = 0.9 and cubic interpolation). The first step has
/// length 1/‖∇f(x0)‖ as in L-BFGS-B; later steps start at 1. A pair with sᵀy <= 2.2e-16·yᵀy is
/// skipped; a failed line search restarts once from steepest descent, then stops.
/// Deterministic: the same inputs give the same bits.
/// @throws std::invalid_argument if options are not positive or f(x0) is not finite.
LbfgsResult minimize_lbfgs(const LbfgsObjective& f, const Eigen::VectorXd& x0,
                           const LbfgsOptions& options = {});

}  // namespace dialtree::eval
