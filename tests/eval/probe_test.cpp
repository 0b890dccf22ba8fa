// eval/probe (torch-free): hand-worked answers for the nearest centroid, effective rank, macro F1,
// logistic regression and L-BFGS; MTEB draws; embedding files; agreement with scikit-learn on
// tests/fixtures/probe (the committed sklearn.json, and bench/reference/probe.py run live).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include <fmt/core.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <Eigen/Cholesky>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "eval/probe.h"
#include "test_paths.h"

namespace dialtree::eval {
namespace {

namespace fs = std::filesystem;
using testing::fixture;
using ::testing::HasSubstr;

ProbeMatrix rows(std::initializer_list<std::initializer_list<double>> r) {
  ProbeMatrix m(static_cast<Eigen::Index>(r.size()), static_cast<Eigen::Index>(r.begin()->size()));
  Eigen::Index i = 0;
  for (const auto& row : r) {
    Eigen::Index j = 0;
    for (double v : row) m(i, j++) = v;
    ++i;
  }
  return m;
}

/// The root of f on [lo, hi] (f(lo) < 0 < f(hi)) by bisection, to double precision.
template <class F>
double bisect(F f, double lo, double hi) {
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (f(mid) < 0 ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

TEST(Probe, NearestCentroidOnCosineByHand) {
  // Class 0: (2, 0) and (0, 3) normalise to (1, 0), (0, 1): centroid (1, 1)/√2. Class 1: (-1, 0).
  const CentroidModel m = fit_centroids(rows({{2, 0}, {0, 3}, {-1, 0}}), {7, 7, 9});
  EXPECT_EQ(m.classes, (std::vector<int>{7, 9}));
  EXPECT_NEAR(m.centroids(0, 0), 1 / std::sqrt(2.0), 1e-15);
  EXPECT_NEAR(m.centroids(0, 1), 1 / std::sqrt(2.0), 1e-15);
  EXPECT_NEAR(m.centroids(1, 0), -1, 1e-15);
  EXPECT_NEAR(m.centroids(1, 1), 0, 1e-15);
  // (1, 1): cos 1 vs -0.71. (-1, 0.5): -0.32 vs 0.89. (0.1, -5): -0.69 vs -0.02 (scale does
  // not matter, only the angle). (3, 3) again class 7 although far from both.
  EXPECT_EQ(predict(m, rows({{1, 1}, {-1, 0.5}, {0.1, -5}, {30, 30}})),
            (std::vector<int>{7, 9, 9, 7}));
  EXPECT_THROW(predict(m, rows({{1, 2, 3}})), std::invalid_argument);
  EXPECT_THROW(fit_centroids(rows({{1, 2}}), {1, 2}), std::invalid_argument);
}

TEST(Probe, EffectiveRankByHand) {
  // ±e_i in d = 5: centred already, singular values all √2 -> p uniform -> exp(ln 5) = 5.
  ProbeMatrix iso(10, 5);
  iso.setZero();
  for (int i = 0; i < 5; ++i) iso(2 * i, i) = 1, iso(2 * i + 1, i) = -1;
  EXPECT_NEAR(effective_rank(iso), 5.0, 1e-12);
  // An orthonormal basis shifted by an offset: the offset is removed by centring; the centred
  // rows e_i - 1/d have d - 1 equal singular values (and one 0): d - 1.
  const ProbeMatrix basis = (ProbeMatrix::Identity(6, 6).array() + 4.0).matrix();
  EXPECT_NEAR(effective_rank(basis), 5.0, 1e-9);
  // Points on a line (not through the origin): rank 1.
  ProbeMatrix line(10, 3);
  for (int i = 0; i < 10; ++i) line.row(i) << 1 + 0.5 * i, 2 - i, 3 + 2.5 * i;
  EXPECT_NEAR(effective_rank(line), 1.0, 1e-6);
  // (±2, 0), (0, ±1): singular values 2√2 and √2 -> p = (2/3, 1/3).
  const double h = -(2.0 / 3 * std::log(2.0 / 3) + 1.0 / 3 * std::log(1.0 / 3));
  EXPECT_NEAR(effective_rank(rows({{2, 0}, {-2, 0}, {0, 1}, {0, -1}})), std::exp(h), 1e-12);
  EXPECT_NEAR(std::exp(h), 1.8898815748423097, 1e-12);  // numpy.linalg.svd
  // Degenerate: one row, or all rows equal.
  EXPECT_EQ(effective_rank(rows({{1, 2}})), 0.0);
  EXPECT_EQ(effective_rank(rows({{1, 2}, {1, 2}})), 0.0);
}

TEST(Probe, AccuracyAndMacroF1ByHand) {
  // Labels present: 0, 1, 2 (true only), 3 (predicted only).
  // F1: 0 -> 2·1/(2+0+1) = 2/3; 1 -> 2·2/(4+1+0) = 4/5; 2 -> 0; 3 -> 0. Mean 11/30.
  const std::vector<int> truth = {0, 0, 1, 1, 2}, pred = {0, 1, 1, 1, 3};
  EXPECT_DOUBLE_EQ(probe_accuracy(truth, pred), 0.6);
  EXPECT_NEAR(macro_f1(truth, pred), 11.0 / 30, 1e-15);  // sklearn: 0.3666666666666667
  EXPECT_DOUBLE_EQ(macro_f1(truth, truth), 1.0);
  EXPECT_THROW(macro_f1({1}, {1, 2}), std::invalid_argument);
  EXPECT_THROW(probe_accuracy({}, {}), std::invalid_argument);
  const MeanStd s = mean_std({0.5, 0.7, 0.9});
  EXPECT_DOUBLE_EQ(s.mean, 0.7);
  EXPECT_NEAR(s.std, 0.2, 1e-15);  // sample std (n - 1)
  EXPECT_EQ(mean_std({0.4}).std, 0.0);
}

TEST(Probe, StandardizerIsStandardScaler) {
  const ProbeMatrix x = rows({{1, 5, 0}, {3, 5, 2}, {5, 5, 4}});
  const Standardizer s = Standardizer::fit(x);
  EXPECT_DOUBLE_EQ(s.mean(0), 3);
  EXPECT_NEAR(s.scale(0), std::sqrt(8.0 / 3), 1e-15);  // population std
  EXPECT_EQ(s.scale(1), 1.0);                          // constant column
  const ProbeMatrix t = s.transform(rows({{3, 6, 2}}));
  EXPECT_DOUBLE_EQ(t(0, 0), 0);
  EXPECT_DOUBLE_EQ(t(0, 1), 1);
  EXPECT_THROW(s.transform(rows({{1, 2}})), std::invalid_argument);
}

TEST(Probe, LbfgsReachesTheOptimumOfAQuadraticAndRosenbrock) {
  // f = ½ xᵀAx - bᵀx with A SPD: x* = A⁻¹b.
  Eigen::MatrixXd a(4, 4);
  a << 4, 1, 0, 0, 1, 3, 1, 0, 0, 1, 2, 0.5, 0, 0, 0.5, 1;
  const Eigen::VectorXd b = Eigen::Vector4d(1, -2, 3, 0.5);
  auto quad = [&](const Eigen::VectorXd& x, Eigen::VectorXd& g) {
    g = a * x - b;
    return 0.5 * x.dot(a * x) - b.dot(x);
  };
  // (gtol near 1e-8 is as far as double precision can verify decrease when f is O(1).)
  LbfgsOptions o;
  o.gtol = 1e-8;
  o.ftol = 0;
  LbfgsResult r = minimize_lbfgs(quad, Eigen::VectorXd::Zero(4), o);
  EXPECT_TRUE(r.converged) << r.stop_reason;
  EXPECT_EQ(r.stop_reason, "gtol");
  EXPECT_LE(r.grad_max_abs, 1e-8);
  const Eigen::VectorXd want = a.ldlt().solve(b);
  EXPECT_LE((r.x - want).cwiseAbs().maxCoeff(), 1e-7);
  EXPECT_LT(r.iterations, 20);

  // Rosenbrock's banana: minimum 0 at (1, 1) (f -> 0, so a tight gtol can be verified).
  auto rosen = [](const Eigen::VectorXd& x, Eigen::VectorXd& g) {
    const double u = 1 - x(0), v = x(1) - x(0) * x(0);
    g(0) = -2 * u - 400 * x(0) * v;
    g(1) = 200 * v;
    return u * u + 100 * v * v;
  };
  o.max_iter = 500;
  o.gtol = 1e-10;
  r = minimize_lbfgs(rosen, Eigen::Vector2d(-1.2, 1), o);
  EXPECT_TRUE(r.converged) << r.stop_reason;
  EXPECT_NEAR(r.x(0), 1, 1e-8);
  EXPECT_NEAR(r.x(1), 1, 1e-8);
  // max_iter stops it early, not converged.
  o.max_iter = 3;
  r = minimize_lbfgs(rosen, Eigen::Vector2d(-1.2, 1), o);
  EXPECT_FALSE(r.converged);
  EXPECT_EQ(r.stop_reason, "max_iter");
  EXPECT_EQ(r.iterations, 3);
  o.max_iter = 0;
  EXPECT_THROW(minimize_lbfgs(rosen, Eigen::Vector2d(0, 0), o), std::invalid_argument);
}

TEST(Probe, MatrixProductKernelsAgreeWithANaiveProduct) {
  // Odd shapes: row tails of the 6- and 4-row blocks, several 8-column blocks.
  for (const auto& [m, q] : std::vector<std::pair<int, int>>{{1, 1}, {7, 13}, {23, 300}, {6, 8}}) {
    const int p8 = 24;
    std::vector<double> l(static_cast<std::size_t>(m * q)), r(static_cast<std::size_t>(q * p8));
    for (std::size_t i = 0; i < l.size(); ++i) l[i] = std::sin(0.37 * static_cast<double>(i));
    for (std::size_t i = 0; i < r.size(); ++i) r[i] = std::cos(0.11 * static_cast<double>(i));
    for (const int level : {0, 3, 4}) {
      std::vector<double> c(static_cast<std::size_t>(m * p8), -1);
      probe_detail::matmul_rr(level, l.data(), m, q, r.data(), p8, c.data());
      for (int i = 0; i < m; ++i) {
        for (int j = 0; j < p8; ++j) {
          double want = 0;
          for (int t = 0; t < q; ++t) want += l[i * q + t] * r[t * p8 + j];
          ASSERT_NEAR(c[i * p8 + j], want, 1e-12 * q) << "level " << level << " m " << m;
        }
      }
    }
  }
  std::printf("matrix kernel of this CPU: level %d\n", probe_detail::matmul_level());
}

TEST(Probe, MatrixKernelLevelIsTheCpuTierOfCpuid) {
  // The level as it was decided before the tier came from common/blas_kernels.h: x86-64-v3's
  // AVX2, FMA, BMI1 and BMI2 for the AVX2 kernel, and v4's AVX-512 flags on top.
  const bool v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                  __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2");
  const bool v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
                  __builtin_cpu_supports("avx512vl");
  EXPECT_EQ(probe_detail::matmul_level(), v4 ? 4 : v3 ? 3 : 0);
}

TEST(Probe, MultinomialLogisticRegressionMatchesTheClosedForm) {
  // Three classes, x = e_k with label k. By symmetry W = a(I - 11ᵀ/3), b = 0: the own-class
  // logit is 2a/3, the others -a/3, p = 1/(1 + 2e^{-a}), ‖W‖² = 2a². The objective
  // C·3·ln(1 + 2e^{-a}) + a² is minimal where a = 3C/(e^a + 2).
  for (const double c : {0.5, 1.0, 10.0}) {
    LogisticOptions o;
    o.C = c;
    o.tol = 1e-8;
    o.max_iter = 1000;
    const LogisticModel m = fit_logistic(ProbeMatrix::Identity(3, 3), {0, 1, 2}, o);
    const double a = bisect([&](double t) { return t - 3 * c / (std::exp(t) + 2); }, 0, 50);
    EXPECT_TRUE(m.converged);
    EXPECT_LE(m.grad_max_abs, 1e-8);
    ASSERT_EQ(m.coef.rows(), 3);
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j)
        EXPECT_NEAR(m.coef(i, j), i == j ? 2 * a / 3 : -a / 3, 1e-7) << "C=" << c;
      EXPECT_NEAR(m.intercept(i), 0, 1e-7);
    }
    // The reported objective is Σ CE + ‖W‖²/(2C) = (the objective above) / C.
    EXPECT_NEAR(m.objective, 3 * std::log(1 + 2 * std::exp(-a)) + a * a / c, 1e-10);
  }
}

TEST(Probe, BinaryLogisticRegressionIsScikitLearnsBinaryModel) {
  // (x = 1, y = 1), (x = -1, y = 0): b = 0, and C·2·ln(1 + e^{-w}) + w²/2 is minimal where
  // w = 2C/(1 + e^w). Labels 3 and 8: the positive class is the larger.
  LogisticOptions o;
  o.tol = 1e-8;
  o.max_iter = 1000;
  const LogisticModel m = fit_logistic(rows({{1}, {-1}}), {8, 3}, o);
  EXPECT_TRUE(m.converged);
  const double w = bisect([](double t) { return t - 2 / (1 + std::exp(t)); }, 0, 10);
  ASSERT_EQ(m.coef.rows(), 1);
  EXPECT_NEAR(m.coef(0, 0), w, 1e-7);
  EXPECT_NEAR(m.intercept(0), 0, 1e-7);
  EXPECT_EQ(predict(m, rows({{0.5}, {-3}})), (std::vector<int>{8, 3}));
}

TEST(Probe, LogisticRegressionSeparatesASeparableToyCompletely) {
  // Four well separated clusters in 2-D (labels not 0..K-1), raw and standardized.
  ProbeMatrix x(40, 2), t(8, 2);
  std::vector<int> y, ty;
  const double cx[] = {5, -5, 0, 0}, cy[] = {0, 0, 5, -5};
  const int label[] = {10, 20, 30, 40};
  for (int k = 0; k < 4; ++k) {
    for (int i = 0; i < 10; ++i) {
      x.row(k * 10 + i) << cx[k] + 0.3 * std::sin(i * 1.7), cy[k] + 0.3 * std::cos(i * 2.3);
      y.push_back(label[k]);
    }
    for (int i = 0; i < 2; ++i) {
      t.row(k * 2 + i) << cx[k] + 0.5 * (i ? 1 : -1), cy[k] - 0.4 * (i ? 1 : -1);
      ty.push_back(label[k]);
    }
  }
  for (const bool standardize : {false, true}) {
    LogisticOptions o;
    o.standardize = standardize;
    const LogisticModel m = fit_logistic(x, y, o);
    EXPECT_EQ(m.classes, (std::vector<int>{10, 20, 30, 40}));
    EXPECT_EQ(probe_accuracy(ty, predict(m, t)), 1.0);
    EXPECT_EQ(probe_accuracy(y, predict(m, x)), 1.0);
  }
  LogisticOptions bad;
  bad.C = 0;
  EXPECT_THROW(fit_logistic(x, y, bad), std::invalid_argument);
  EXPECT_THROW(fit_logistic(x, std::vector<int>(40, 1)), std::invalid_argument);  // one class
  EXPECT_THROW(fit_logistic(x, {1, 2}), std::invalid_argument);
}

TEST(Probe, MultinomialFitsGiveTheSameBitsOnAnyNumberOfThreads) {
  // 500 rows (several 24-row blocks per thread, a ragged last one), 7 classes, 13 features.
  ProbeMatrix x(500, 13);
  std::vector<int> y;
  for (int i = 0; i < 500; ++i) {
    for (int j = 0; j < 13; ++j) x(i, j) = std::sin(0.37 * i + 1.3 * j) + 0.1 * (i % 7 == j % 7);
    y.push_back(i % 7);
  }
  LogisticOptions o;
  o.max_iter = 30;
  const LogisticModel one = fit_logistic(x, y, o);
  for (const int threads : {2, 3, 8}) {
    o.threads = threads;
    const LogisticModel many = fit_logistic(x, y, o);
    EXPECT_EQ(many.iterations, one.iterations) << threads;
    EXPECT_TRUE(many.coef == one.coef) << threads;  // bit for bit
    EXPECT_TRUE(many.intercept == one.intercept) << threads;
    EXPECT_EQ(many.objective, one.objective) << threads;
  }
}

TEST(Probe, MtebDrawsAreDeterministicAndTakeUpToPerLabelOfEach) {
  std::vector<int> labels;
  for (int i = 0; i < 200; ++i) labels.push_back(i % 7 == 6 ? 6 : i % 3);  // 0, 1, 2 many; 6 few
  labels.push_back(9);                                                     // a single example
  const auto d = mteb_draws(labels, 10, 8, 42);
  ASSERT_EQ(d.size(), 10u);
  EXPECT_EQ(d, mteb_draws(labels, 10, 8, 42));
  EXPECT_NE(d, mteb_draws(labels, 10, 8, 43));
  std::set<std::vector<std::size_t>> distinct(d.begin(), d.end());
  EXPECT_EQ(distinct.size(), 10u);
  for (const auto& draw : d) {
    EXPECT_TRUE(std::is_sorted(draw.begin(), draw.end()));
    std::map<int, int> count;
    for (auto i : draw) ++count[labels.at(i)];
    EXPECT_EQ(count, (std::map<int, int>{{0, 8}, {1, 8}, {2, 8}, {6, 8}, {9, 1}}));
  }
  EXPECT_THROW(mteb_draws({}, 10, 8, 42), std::invalid_argument);
  EXPECT_THROW(mteb_draws(labels, 0, 8, 42), std::invalid_argument);
}

TEST(Probe, EmbeddingFilesRoundTripAndReportFormats) {
  testing::TempDir tmp;
  const ProbeMatrix x = rows({{1.5, -2}, {0.25, 3e-3}, {7, 8}});
  write_embeddings(tmp.file("a"), x, {0, 2, 1}, {"x", "y", "z"}, {{"task", "hwu"}});
  const EmbeddingFile f = read_embeddings(tmp.file("a"));
  EXPECT_EQ(f.labels, (std::vector<int>{0, 2, 1}));
  EXPECT_EQ(f.label_names, (std::vector<std::string>{"x", "y", "z"}));
  EXPECT_EQ(f.x, x.cast<float>().cast<double>());
  EXPECT_EQ(fs::file_size(tmp.file("a.f32")), 24u);
  const auto h = nlohmann::json::parse(std::ifstream(tmp.file("a.json")));
  EXPECT_EQ(h.at("task"), "hwu");
  EXPECT_EQ(h.at("data"), "a.f32");
  std::ofstream(tmp.file("a.f32"), std::ios::app) << "x";
  EXPECT_THROW(read_embeddings(tmp.file("a")), DataError);
  EXPECT_THROW(read_embeddings(tmp.file("missing")), DataError);

  EXPECT_EQ(parse_probe_protocol("mteb"), ProbeProtocol::Mteb);
  EXPECT_EQ(probe_protocol_name(ProbeProtocol::DialoglueFew), "dialoglue-few");
  EXPECT_THROW(parse_probe_protocol("bogus"), std::invalid_argument);
  ProbeOptions o;
  o.split = "train";
  EXPECT_THROW(check_probe_options(o), std::invalid_argument);

  ProbeReport report;
  ProbeRow row;
  row.task = "banking";
  row.protocol = ProbeProtocol::Mteb;
  row.split = "val";
  row.runs = 10;
  row.lr_accuracy = {0.5, 0.01};
  row.lr_standardized_accuracy = {0.6, 0.02};
  row.ncc_accuracy = {0.4, 0.03};
  row.lr_macro_f1 = {0.45, 0.015};
  row.effective_rank = 12.34;
  row.embed_seconds = 1;
  row.fit_seconds = 2.5;
  row.lr_standardized_converged = false;
  report.rows.push_back(row);
  const std::string table = probe_table(report);
  EXPECT_THAT(table, HasSubstr("| task | protocol | LR acc | LR-std acc | NCC acc | macro F1 |"));
  EXPECT_THAT(table, HasSubstr("| banking | mteb (val) | 50.00 ± 1.00 | 60.00 ± 2.00* | "
                               "40.00 ± 3.00 | 45.00 ± 1.50 | 12.3 | 3.5 |"));
  EXPECT_THAT(table, HasSubstr("max_iter = 100"));
  const nlohmann::json j = report.to_json();
  EXPECT_EQ(j.at("format"), "dialtree-probe/1");
  EXPECT_EQ(j.at("rows")[0].at("protocol"), "mteb");
  EXPECT_DOUBLE_EQ(j.at("rows")[0].at("lr_accuracy").at("std").get<double>(), 0.01);
}

// ---- agreement with scikit-learn --------------------------------------------------------------

struct Agreement {
  double c;
  const char* kind;  // "raw" or "standardized"
  double accuracy, macro_f1;
};

/// Our LR on tests/fixtures/probe (train / test) for each C of `reference` (probe.py's JSON).
std::vector<Agreement> ours_vs(const nlohmann::json& reference, std::vector<Agreement>& theirs) {
  const EmbeddingFile train = read_embeddings(fixture("probe/train"));
  const EmbeddingFile test = read_embeddings(fixture("probe/test"));
  std::vector<Agreement> ours;
  for (const auto& r : reference.at("results")) {
    const double c = r.at("C").get<double>();
    for (const char* kind : {"raw", "standardized"}) {
      LogisticOptions o;
      o.C = c;
      o.standardize = std::string(kind) == "standardized";
      const std::vector<int> p = predict(fit_logistic(train.x, train.labels, o), test.x);
      ours.push_back({c, kind, probe_accuracy(test.labels, p), macro_f1(test.labels, p)});
      theirs.push_back({c, kind, r.at(kind).at("accuracy").get<double>(),
                        r.at(kind).at("macro_f1").get<double>()});
    }
  }
  return ours;
}

void expect_agreement(const nlohmann::json& reference) {
  std::vector<Agreement> theirs;
  const std::vector<Agreement> ours = ours_vs(reference, theirs);
  ASSERT_EQ(ours.size(), 4u);  // C = 1 and 10, raw and standardized
  for (std::size_t i = 0; i < ours.size(); ++i) {
    SCOPED_TRACE(fmt::format("C={} {}: ours {:.4f} / {:.4f}, sklearn {:.4f} / {:.4f}", ours[i].c,
                             ours[i].kind, ours[i].accuracy, ours[i].macro_f1, theirs[i].accuracy,
                             theirs[i].macro_f1));
    EXPECT_NEAR(ours[i].accuracy, theirs[i].accuracy, 0.005);  // 0.5 accuracy points
    EXPECT_NEAR(ours[i].macro_f1, theirs[i].macro_f1, 0.005);
    // The fixture's classes overlap: neither side is trivially perfect.
    EXPECT_LT(theirs[i].accuracy, 0.9);
  }
}

TEST(ProbeAgreement, MatchesTheCommittedScikitLearnFigures) {
  const nlohmann::json reference =
      nlohmann::json::parse(std::ifstream(fixture("probe/sklearn.json")));
  EXPECT_EQ(reference.at("max_iter"), 100);
  expect_agreement(reference);
}

TEST(ProbeAgreement, MatchesScikitLearnRunLive) {
  if (std::system("/usr/bin/python3 -c 'import sklearn' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "/usr/bin/python3 cannot import sklearn (apt-get install python3-sklearn)";
  }
  testing::TempDir tmp;
  const fs::path root = fs::path(DIALTREE_FIXTURES_DIR).parent_path().parent_path();
  const std::string cmd =
      fmt::format("/usr/bin/python3 '{}' --train '{}' --test '{}' --C 1,10 > '{}'",
                  (root / "bench/reference/probe.py").string(), fixture("probe/train"),
                  fixture("probe/test"), tmp.file("sklearn.json"));
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  expect_agreement(nlohmann::json::parse(std::ifstream(tmp.file("sklearn.json"))));
}

}  // namespace
}  // namespace dialtree::eval
