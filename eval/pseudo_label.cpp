// The torch-free half of eval/pseudo_label.h: probabilities, the confident subset, the pool and
// the records (docs/training.md "Pseudo-labelled intent stage").
#include "eval/pseudo_label.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <unordered_set>

#include <fmt/format.h>

#include "common/error.h"
#include "readers/dialoglue_tasks.h"
#include "sts/tree.h"

namespace dialtree::eval {

namespace fs = std::filesystem;

void check_pseudo_label_options(const PseudoLabelOptions& o) {
  auto at_least_one = [](int v, const char* name) {
    if (v < 1) throw std::invalid_argument(fmt::format("{} must be >= 1, got {}", name, v));
  };
  at_least_one(o.per_label, "per_label");
  at_least_one(o.max_iter, "max_iter");
  at_least_one(o.batch_size, "batch_size");
  at_least_one(o.max_utt_len, "max_utt_len");
  if (!(o.C > 0) || !std::isfinite(o.C))
    throw std::invalid_argument(fmt::format("C must be a finite number > 0, got {}", o.C));
}

Eigen::MatrixXd predict_proba(const LogisticModel& model, const ProbeMatrix& x) {
  const Eigen::MatrixXd z = decision_function(model, x);
  Eigen::MatrixXd p(z.rows(), static_cast<Eigen::Index>(model.classes.size()));
  if (model.classes.size() == 2) {
    for (Eigen::Index i = 0; i < z.rows(); ++i) {
      const double s = 1.0 / (1.0 + std::exp(-z(i, 0)));
      p(i, 0) = 1.0 - s;
      p(i, 1) = s;
    }
    return p;
  }
  for (Eigen::Index i = 0; i < z.rows(); ++i) {
    const double m = z.row(i).maxCoeff();  // shift for a stable exp
    double sum = 0;
    for (Eigen::Index k = 0; k < z.cols(); ++k) sum += (p(i, k) = std::exp(z(i, k) - m));
    p.row(i) /= sum;
  }
  return p;
}

std::vector<PseudoPick> select_confident(const Eigen::MatrixXd& probabilities,
                                         const std::vector<int>& classes, int per_label) {
  if (per_label < 1)
    throw std::invalid_argument(fmt::format("per_label must be >= 1, got {}", per_label));
  if (static_cast<Eigen::Index>(classes.size()) != probabilities.cols()) {
    throw std::invalid_argument(fmt::format("select_confident: {} classes for {} columns",
                                            classes.size(), probabilities.cols()));
  }
  std::vector<std::vector<PseudoPick>> by_column(classes.size());
  for (Eigen::Index i = 0; i < probabilities.rows(); ++i) {
    Eigen::Index best = 0;
    probabilities.row(i).maxCoeff(&best);  // Eigen keeps the first maximum: the lowest column
    by_column[static_cast<std::size_t>(best)].push_back(
        {static_cast<std::size_t>(i), classes[static_cast<std::size_t>(best)],
         probabilities(i, best)});
  }
  std::vector<PseudoPick> kept;
  for (auto& col : by_column) {
    std::stable_sort(col.begin(), col.end(), [](const PseudoPick& a, const PseudoPick& b) {
      return a.confidence > b.confidence;
    });
    const std::size_t n = std::min(col.size(), static_cast<std::size_t>(per_label));
    kept.insert(kept.end(), col.begin(), col.begin() + static_cast<std::ptrdiff_t>(n));
  }
  std::sort(kept.begin(), kept.end(),
            [](const PseudoPick& a, const PseudoPick& b) { return a.row < b.row; });
  return kept;
}

std::vector<std::string> unlabelled_pool(const std::vector<std::string>& texts,
                                         const std::vector<std::string>& labelled) {
  std::unordered_set<std::string> seen(labelled.begin(), labelled.end());
  std::vector<std::string> pool;
  for (const auto& t : texts) {
    if (seen.insert(t).second) pool.push_back(t);
  }
  return pool;
}

double pick_precision(const std::vector<PseudoPick>& picks, const std::vector<int>& truth) {
  if (picks.empty()) return 0;
  std::size_t right = 0;
  for (const auto& p : picks) right += truth.at(p.row) == p.label ? 1 : 0;
  return static_cast<double>(right) / static_cast<double>(picks.size());
}

std::vector<sts::Dialog> pseudo_dialogs(const std::string& task,
                                        const std::vector<std::string>& pool,
                                        const std::vector<PseudoPick>& picks,
                                        const std::vector<std::string>& label_names) {
  std::vector<sts::Dialog> out;
  out.reserve(picks.size());
  for (const auto& p : picks) {
    sts::Tree tree;
    tree.add_intent(sts::kDefaultDomain, label_names.at(static_cast<std::size_t>(p.label)));
    sts::Turn turn;
    turn.role = "user";
    turn.text = pool.at(p.row);
    turn.label = sts::fix_up(std::move(tree));
    turn.extra = {{"pseudo_label_confidence", p.confidence}};
    out.push_back(sts::Dialog{fmt::format("{}/pseudo/{}", task, p.row), task, {std::move(turn)}});
  }
  return out;
}

nlohmann::json to_json(const PseudoLabelOptions& o) {
  return {{"per_label", o.per_label}, {"C", o.C},
          {"max_iter", o.max_iter},   {"batch_size", o.batch_size},
          {"max_utt_len", o.max_utt_len}, {"bf16", o.bf16},
          {"device", o.device}};
}

nlohmann::json pseudo_label_summary(const std::string& model, const std::string& data_dir,
                                    const PseudoLabelOptions& options,
                                    const std::vector<PseudoLabelReport>& reports) {
  nlohmann::json tasks = nlohmann::json::array();
  for (const auto& r : reports) tasks.push_back(r.to_json());
  return {{"format", "dialtree-pseudo-label/1"},
          {"model", model},
          {"data_dir", data_dir},
          {"options", to_json(options)},
          {"tasks", tasks}};
}

std::string pseudo_label_table(const std::vector<PseudoLabelReport>& reports) {
  std::string out =
      "| task | labeller | labelled | pool | kept | val accuracy | val precision of the rule | "
      "mean confidence | file |\n|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : reports) {
    out += fmt::format("| {} | {} | {} | {} | {} | {:.2f} | {:.2f} ({} kept) | {:.3f} | {} |\n",
                       r.task, r.labeller, r.labelled, r.pool, r.kept, 100 * r.val_accuracy,
                       100 * r.val_precision, r.val_kept, r.mean_confidence, r.file);
  }
  return out;
}

nlohmann::json PseudoLabelReport::to_json() const {
  nlohmann::json j = {{"task", task},
          {"labelled", labelled},
          {"pool", pool},
          {"kept", kept},
          {"per_label", per_label},
          {"val_accuracy", val_accuracy},
          {"val_precision", val_precision},
          {"val_kept", val_kept},
          {"mean_confidence", mean_confidence},
          {"labeller", labeller},
          {"iterations", iterations},
          {"converged", converged},
          {"seconds", seconds}};
  if (!file.empty()) j["file"] = file;
  return j;
}

PseudoLabelReport pseudo_label_vectors(const std::string& task, const ProbeMatrix& labelled_x,
                                       const std::vector<int>& labelled_y,
                                       const ProbeMatrix& val_x, const std::vector<int>& val_y,
                                       const ProbeMatrix& pool_x,
                                       const std::vector<std::string>& pool,
                                       const std::vector<std::string>& label_names,
                                       const PseudoLabelOptions& o) {
  check_pseudo_label_options(o);
  if (static_cast<std::size_t>(pool_x.rows()) != pool.size()) {
    throw std::invalid_argument(
        fmt::format("pseudo_label_vectors: {} pool vectors for {} texts", pool_x.rows(), pool.size()));
  }
  LogisticOptions lo;
  lo.C = o.C;
  lo.max_iter = o.max_iter;
  lo.standardize = true;  // the probe's "LR std" column: scale-free in the vectors
  const LogisticModel clf = fit_logistic(labelled_x, labelled_y, lo);
  const Eigen::MatrixXd no_rows(0, static_cast<Eigen::Index>(clf.classes.size()));
  PseudoLabelReport r = pseudo_label_probabilities(
      task, val_x.rows() > 0 ? predict_proba(clf, val_x) : no_rows, val_y,
      pool.empty() ? no_rows : predict_proba(clf, pool_x), clf.classes, pool, label_names,
      o.per_label);
  r.labelled = labelled_y.size();
  r.iterations = clf.iterations;
  r.converged = clf.converged;
  return r;
}

PseudoLabelReport pseudo_label_probabilities(const std::string& task,
                                             const Eigen::MatrixXd& val_p,
                                             const std::vector<int>& val_y,
                                             const Eigen::MatrixXd& pool_p,
                                             const std::vector<int>& classes,
                                             const std::vector<std::string>& pool,
                                             const std::vector<std::string>& label_names,
                                             int per_label) {
  const auto k = static_cast<Eigen::Index>(classes.size());
  if (val_p.rows() != static_cast<Eigen::Index>(val_y.size()) ||
      pool_p.rows() != static_cast<Eigen::Index>(pool.size()) || val_p.cols() != k ||
      pool_p.cols() != k) {
    throw std::invalid_argument(fmt::format(
        "pseudo_label_probabilities: val {}x{} for {} labels, pool {}x{} for {} texts, {} classes",
        val_p.rows(), val_p.cols(), val_y.size(), pool_p.rows(), pool_p.cols(), pool.size(), k));
  }
  PseudoLabelReport r;
  r.task = task;
  r.pool = pool.size();
  r.per_label = per_label;
  if (!val_y.empty()) {
    std::size_t right = 0;
    for (Eigen::Index i = 0; i < val_p.rows(); ++i) {
      Eigen::Index best = 0;
      val_p.row(i).maxCoeff(&best);  // the first maximum, as select_confident()
      right += classes[static_cast<std::size_t>(best)] == val_y[static_cast<std::size_t>(i)];
    }
    r.val_accuracy = static_cast<double>(right) / static_cast<double>(val_y.size());
    // The pool's per-label share applied to val: per_label * |val| / |pool| rows per label, at
    // least 1, so that val's kept fraction matches the pool's.
    const double share = pool.empty() ? 1.0
                                      : std::min(1.0, static_cast<double>(per_label) /
                                                          static_cast<double>(pool.size()));
    const int val_per_label =
        std::max(1, static_cast<int>(std::lround(share * static_cast<double>(val_y.size()))));
    const auto val_picks = select_confident(val_p, classes, val_per_label);
    r.val_kept = val_picks.size();
    r.val_precision = pick_precision(val_picks, val_y);
  }
  if (!pool.empty()) {
    const auto picks = select_confident(pool_p, classes, per_label);
    double sum = 0;
    for (const auto& p : picks) sum += p.confidence;
    r.kept = picks.size();
    r.mean_confidence = picks.empty() ? 0 : sum / static_cast<double>(picks.size());
    r.records = pseudo_dialogs(task, pool, picks, label_names);
  }
  return r;
}

IntentSplit read_pseudo_labels(const std::string& path,
                               const std::vector<std::string>& label_names) {
  if (!fs::is_regular_file(path)) {
    throw DataError(path, "", "", "no such file (write it with `dialtree eval pseudo-label`)");
  }
  IntentSplit out;
  std::size_t record = 0;
  sts::for_each_dialog(path, [&](sts::Dialog&& d) {
    ++record;
    const std::string where = fmt::format("record {} (id '{}')", record, d.id);
    auto bad = [&](const std::string& field, const std::string& what) {
      throw DataError(path, where, field, what);
    };
    if (d.turns.size() != 1)
      bad("turns", fmt::format("{} turns; a pseudo-label is one", d.turns.size()));
    const sts::Turn& t = d.turns[0];
    if (!t.label || t.label->domains.size() != 1 ||
        t.label->domains.begin()->first != sts::kDefaultDomain ||
        t.label->domains.begin()->second.size() != 1) {
      bad("turns[0].label", std::string("expected one intent under ") + sts::kDefaultDomain);
    }
    const std::string& intent = t.label->domains.begin()->second.begin()->first;
    const auto it = std::find(label_names.begin(), label_names.end(), intent);
    if (it == label_names.end()) {
      bad("turns[0].label", "intent '" + intent + "' is not one of the task's categories");
    }
    out.texts.push_back(t.text);
    out.labels.push_back(static_cast<int>(it - label_names.begin()));
  });
  if (out.texts.empty()) {
    // Zero records would silently make a self-training run a plain one.
    throw DataError(path, "", "", "no records; self-training needs at least one pseudo-label");
  }
  return out;
}

PseudoLabelData load_pseudo_label_data(const std::string& data_dir, const std::string& task) {
  if (!is_intent_task(task)) {
    throw std::invalid_argument("pseudo-labels are for the intent tasks (" +
                                readers::join_dialoglue_task_names(readers::TaskSet::Intent) +
                                "), not '" + task + "'");
  }
  IntentTask few = load_intent_task(data_dir, task, Setting::Few);
  const std::string folder = data_dir + "/" + task + "/";
  std::unordered_set<int> intents(few.train.labels.begin(), few.train.labels.end());
  if (intents.size() < 2) {
    throw DataError(folder + "train_10.csv", "", "category",
                    fmt::format("{} intent(s) in {} rows; the classifier needs at least two",
                                intents.size(), few.train.labels.size()));
  }
  if (few.val.texts.empty()) {
    throw DataError(folder + "val.csv", "", "",
                    "no rows; the precision of the pseudo-labels is checked on val");
  }
  PseudoLabelData d;
  d.task = task;
  // train.csv's texts only: its labels are read by the strict CSV reader and dropped here, so
  // nothing after this line can see them (the few-shot rule of docs/evaluation.md).
  d.pool = unlabelled_pool(load_intent_task(data_dir, task, Setting::Full).train.texts,
                           few.train.texts);
  d.label_names = std::move(few.labels);
  d.labelled = std::move(few.train);
  d.val = std::move(few.val);
  return d;
}

}  // namespace dialtree::eval
