#include "eval/probe.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <stdexcept>

#include <fmt/core.h>
#include <Eigen/Core>
#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/device_spec.h"
#include "common/run_jobs.h"

namespace dialtree::eval {
namespace {

using Clock = std::chrono::steady_clock;

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

/// run_jobs() (common/run_jobs.h) for the fits, with Eigen readied for threads first.
void run_fits(const std::vector<std::function<void()>>& jobs, int threads) {
  Eigen::initParallel();
  run_jobs(jobs, threads);
}

/// Appends the fits of one training / scored split pair to `jobs` (LR raw, LR standardized,
/// NCC), each writing its own fields of `out`. The referenced data must outlive the jobs.
void add_split_jobs(std::vector<std::function<void()>>& jobs, const ProbeMatrix& train_x,
                    const std::vector<int>& train_y, const ProbeMatrix& test_x,
                    const std::vector<int>& test_y, const ProbeOptions& o, SplitScores& out) {
  probe_detail::check_rows(test_x, test_y.size(), "probe scored split");
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
  run_fits(jobs, options.threads);
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
  probe_detail::check_rows(train_x, train_y.size(), "probe MTEB training split");
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
  run_fits(jobs, options.threads);
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

}  // namespace dialtree::eval
