#include "eval/tag_probe.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <set>
#include <stdexcept>

#include "common/clock.h"
#include "eval/submission.h"

namespace dialtree::eval {
namespace {

using Clock = std::chrono::steady_clock;

int index_of(const std::vector<std::string>& names, const std::string& x, const char* what) {
  const auto it = std::find(names.begin(), names.end(), x);
  if (it == names.end())
    throw std::invalid_argument(std::string("token probe: ") + what + " '" + x +
                                "' is not in the task's vocabulary");
  return static_cast<int>(it - names.begin());
}

/// Checks that `v` holds one row list per example, one entry per word, rows inside `words`.
void check_vectors(const WordVectors& v, const std::vector<TaggingExample>& xs, const char* what) {
  if (v.rows.size() != xs.size() || static_cast<std::size_t>(v.cls.rows()) != xs.size()) {
    throw std::invalid_argument(std::string("token probe: ") + what + ": " +
                                std::to_string(xs.size()) + " examples but " +
                                std::to_string(v.rows.size()) + " row lists and " +
                                std::to_string(v.cls.rows()) + " [CLS] rows");
  }
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (v.rows[i].size() != xs[i].words.size()) {
      throw std::invalid_argument(std::string("token probe: ") + what + ": example " +
                                  std::to_string(i) + " has " +
                                  std::to_string(xs[i].words.size()) + " words but " +
                                  std::to_string(v.rows[i].size()) + " rows");
    }
    for (const std::int64_t r : v.rows[i]) {
      if (r >= v.words.rows())
        throw std::invalid_argument(std::string("token probe: ") + what + ": row out of range");
    }
  }
}

}  // namespace

TagProbeRow probe_tagging(const TaggingTask& task, const WordVectors& train,
                          const std::vector<TaggingExample>& scored, const WordVectors& scored_x,
                          const std::string& split, const TagMapper& mapper,
                          const nlohmann::json& gold, const ProbeOptions& options) {
  const auto t0 = Clock::now();
  check_vectors(train, task.train, "training split");
  check_vectors(scored_x, scored, "scored split");
  if (train.words.cols() != scored_x.words.cols()) {
    throw std::invalid_argument("token probe: the splits' vectors differ in width");
  }
  const bool top = !task.intent_labels.empty();
  // The training words that kept a sub-word, in row order, with their tag ids.
  std::vector<int> tag_y(static_cast<std::size_t>(train.words.rows()), -1);
  for (std::size_t i = 0; i < task.train.size(); ++i) {
    for (std::size_t w = 0; w < task.train[i].words.size(); ++w) {
      const std::int64_t r = train.rows[i][w];
      if (r >= 0)
        tag_y[static_cast<std::size_t>(r)] =
            index_of(task.tag_labels, task.train[i].tags[w], "tag");
    }
  }
  if (std::find(tag_y.begin(), tag_y.end(), -1) != tag_y.end()) {
    throw std::invalid_argument("token probe: a training vector belongs to no word");
  }
  if (std::set<int>(tag_y.begin(), tag_y.end()).size() < 2) {
    throw std::invalid_argument("token probe: " + task.name +
                                "'s training words hold fewer than two tags");
  }
  LogisticOptions lo;
  lo.C = options.C;
  lo.max_iter = options.max_iter;
  lo.standardize = true;
  // TOP's intent classifier runs beside the tagger when there is a second thread.
  auto fit_intents = [&] {
    std::vector<int> y;
    y.reserve(task.train.size());
    for (const auto& x : task.train) y.push_back(index_of(task.intent_labels, x.intent, "intent"));
    return fit_logistic(train.cls, y, lo);
  };
  std::future<LogisticModel> intent_future;
  LogisticModel intent_model;
  if (top && options.threads > 1) intent_future = std::async(std::launch::async, fit_intents);
  LogisticOptions tagger_options = lo;  // the large fit: its products on every thread
  tagger_options.threads = std::max(1, options.threads);
  const LogisticModel tagger = fit_logistic(train.words, tag_y, tagger_options);
  if (top) intent_model = intent_future.valid() ? intent_future.get() : fit_intents();

  const std::vector<int> tag_pred = predict(tagger, scored_x.words);
  std::vector<std::vector<std::string>> tags(scored.size());
  std::vector<std::string> intents;
  std::size_t words = 0, right = 0, intents_right = 0;
  for (std::size_t i = 0; i < scored.size(); ++i) {
    for (std::size_t w = 0; w < scored[i].words.size(); ++w) {
      const std::int64_t r = scored_x.rows[i][w];
      tags[i].push_back(r < 0 ? "O"
                              : task.tag_labels[static_cast<std::size_t>(
                                    tag_pred[static_cast<std::size_t>(r)])]);
      right += tags[i].back() == scored[i].tags[w] ? 1 : 0;
      ++words;
    }
  }
  if (top) {
    for (const int id : predict(intent_model, scored_x.cls)) {
      intents.push_back(task.intent_labels[static_cast<std::size_t>(id)]);
    }
    for (std::size_t i = 0; i < scored.size(); ++i)
      intents_right += intents[i] == scored[i].intent ? 1 : 0;
  }
  const Task t = parse_task(task.name);
  const TaskScore s = score_task(t, mapper.submission(scored, tags, intents), gold,
                                 "token-probe predictions", split + " gold");

  TagProbeRow row;
  row.task = task_key(t);
  row.split = split;
  row.metric = metric_name(t);
  row.train_examples = task.train.size();
  row.train_words = tag_y.size();
  row.eval_examples = scored.size();
  row.tag_classes = static_cast<int>(tagger.classes.size());
  row.dim = static_cast<int>(train.words.cols());
  row.score = s.value;
  row.tag_accuracy = words == 0 ? 0.0 : static_cast<double>(right) / static_cast<double>(words);
  if (top && !scored.empty())
    row.intent_accuracy = static_cast<double>(intents_right) / static_cast<double>(scored.size());
  row.lr_iterations = std::max(tagger.iterations, top ? intent_model.iterations : 0);
  row.lr_converged = tagger.converged && (!top || intent_model.converged);
  row.fit_seconds = seconds_since(t0);
  return row;
}

}  // namespace dialtree::eval
