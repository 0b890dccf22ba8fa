#include "eval/dialoglue.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>

#include <fmt/core.h>

#include "common/atomic_file.h"
#include "common/json_util.h"
#include "eval/eval_config.h"
#include "eval/pseudo_label.h"
#include "eval/submission.h"
#include "eval/tag_mapping.h"
#include "model/device.h"
#include "readers/dialoglue_tasks.h"

namespace dialtree::eval {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

void write_json(const fs::path& path, const json& j) {
  write_file_atomic(path.string(), j.dump(2) + "\n");
}

// The tasks this command fine-tunes, checked before anything trains: an unknown name lists them
// (multiwoz, which `eval score` scores, is not among them); multiwoz is refused with the reason.
void check_dialoglue_tasks(const std::vector<std::string>& tasks) {
  using readers::TaskSet;
  for (const auto& t : tasks) {
    const readers::DialoglueTaskInfo* row = readers::find_dialoglue_task(t);
    if (row == nullptr) {
      // The tasks this command fine-tunes, by every accepted spelling, and which spellings are
      // one task (the name and the data folder).
      std::string aliases;
      for (const auto& r : readers::dialoglue_tasks()) {
        if (!readers::in_task_set(r, TaskSet::FineTune) || r.name == r.folder) continue;
        aliases += std::string(aliases.empty() ? " (" : "; ") + std::string(r.name) + " and " +
                   std::string(r.folder) + " are one task";
      }
      throw std::invalid_argument("eval dialoglue: unknown task '" + t + "'; it fine-tunes " +
                                  readers::join_dialoglue_task_names(
                                      TaskSet::FineTune, readers::TaskSpelling::NameAndFolder) +
                                  aliases + (aliases.empty() ? "" : ")"));
    }
    if (!row->fine_tune) {  // multiwoz, the one task without a head (the table's comment)
      const std::string name(row->name);
      throw std::invalid_argument("eval dialoglue: " + name +
                                  " is not supported (no DST head yet; MultiWOZ is also "
                                  "absent from ../shared/data); `dialtree eval score --task " +
                                  name + "` scores TripPy output");
    }
  }
}

}  // namespace

json run_dialoglue(const DialoglueRun& run,
                   const std::function<void(const RunProgress&)>& progress) {
  if (run.seeds.empty()) throw std::invalid_argument("eval dialoglue: no seeds");
  if (run.tasks.empty()) throw std::invalid_argument("eval dialoglue: no tasks");
  check_dialoglue_tasks(run.tasks);
  // Self-training: every task and pseudo-label file is read (and checked) before anything
  // trains; the records join the training split here, and the loop below uses these tasks.
  std::map<std::string, IntentTask> self_trained;
  std::map<std::string, std::size_t> pseudo_labelled;
  if (!run.pseudo_label_dir.empty()) {
    for (const auto& t : run.tasks) {
      if (!is_intent_task(t)) {
        throw std::invalid_argument(
            "eval dialoglue: pseudo-labels (self-training) are for the "
            "intent tasks, not '" +
            t + "'");
      }
      IntentTask task = load_intent_task(run.data_dir, t, run.setting);
      const IntentSplit extra = read_pseudo_labels(
          (fs::path(run.pseudo_label_dir) / (t + ".pseudo.jsonl")).string(), task.labels);
      task.train.texts.insert(task.train.texts.end(), extra.texts.begin(), extra.texts.end());
      task.train.labels.insert(task.train.labels.end(), extra.labels.begin(), extra.labels.end());
      pseudo_labelled[t] = extra.texts.size();
      self_trained[t] = std::move(task);
    }
  }
  fs::create_directories(run.out_dir);
  const fs::path gold_path = fs::path(run.data_dir) / "gt_test.json";
  json gold;
  if (fs::is_regular_file(gold_path)) gold = json_parse_file(gold_path.string());

  json results = {{"format", "dialtree-dialoglue-results/1"},
                  {"model", run.model_dir},
                  {"setting", run.setting == Setting::Few ? "few" : "full"},
                  {"seeds", run.seeds},
                  {"options", finetune_options_json(run.options)},
                  {"gold", gold.is_null() ? "test files" : gold_path.string()},
                  {"env", model::host_environment()},
                  {"tasks", json::object()}};
  if (!run.pseudo_label_dir.empty()) results["pseudo_label_dir"] = run.pseudo_label_dir;
  const std::size_t runs = run.tasks.size() * run.seeds.size();
  json submission_file = json::object();
  std::size_t index = 0;
  for (const auto& name : run.tasks) {
    const Task task = parse_task(name);
    const bool intent = is_intent_task(name);
    IntentTask intent_data;
    TaggingTask tagging_data;
    std::unique_ptr<TagMapper> mapper;
    json val_gold;
    if (intent) {
      const auto st = self_trained.find(name);
      intent_data =
          st != self_trained.end() ? st->second : load_intent_task(run.data_dir, name, run.setting);
    } else {
      tagging_data = load_tagging_task(run.data_dir, name, run.setting);
      mapper = std::make_unique<TagMapper>(run.data_dir, tagging_data);
      val_gold = mapper->gold_submission(tagging_data.val);
    }
    // Test gold: gt_test.json when present (the official key), else the test file's labels.
    json test_gold;
    if (!gold.is_null()) {
      test_gold = gold;
    } else if (intent) {
      std::vector<std::string> labels;
      for (int id : intent_data.test.labels) {
        labels.push_back(intent_data.labels[static_cast<std::size_t>(id)]);
      }
      test_gold = intent_submission_json(labels);
    } else {
      test_gold = mapper->gold_submission(tagging_data.test);
    }
    const std::string gold_name = gold.is_null() ? "the test file" : gold_path.string();
    json task_runs = json::array();
    std::vector<double> test_scores;
    double val_sum = 0;
    std::size_t train_examples = 0;
    for (const std::uint64_t seed : run.seeds) {
      RunProgress p{name, seed, index, runs, {}};
      auto on_epoch = [&](const EpochInfo& e) {
        p.epoch = e;
        if (progress) progress(p);
      };
      json submission;
      std::vector<TaggingExample> word_predictions;  // tagging: test words, predicted tags
      double val = 0, train_s = 0, train_eps = 0, predict_eps = 0;
      int best_epoch = 0, epochs_run = 0;
      std::vector<EpochInfo> curve;
      const std::string save_dir =
          run.save_models
              ? (fs::path(run.out_dir) / name / ("seed-" + std::to_string(seed)) / "model").string()
              : std::string();
      if (intent) {
        const IntentRunResult r =
            finetune_intent(run.model_dir, intent_data, run.options, seed, on_epoch, save_dir);
        submission = intent_submission_json(r.test_predictions);
        val = r.best_val_accuracy, best_epoch = r.best_epoch, train_s = r.train_seconds;
        epochs_run = r.epochs_run, curve = r.curve;
        train_eps = r.train_examples_per_second, predict_eps = r.predict_examples_per_second;
        train_examples = intent_data.train.texts.size();
      } else {
        auto val_score = [&](const std::vector<std::vector<std::string>>& tags,
                             const std::vector<std::string>& intents) {
          return score_task(task, mapper->submission(tagging_data.val, tags, intents), val_gold,
                            "val predictions", "val gold")
              .value;
        };
        // classifier_init is the intent classifier's start; the tagging heads (TOP's intent
        // head too) start at random (docs/evaluation.md "Linear-probe initialisation").
        FinetuneOptions tagging_options = run.options;
        tagging_options.classifier_init = "random";
        const TaggingRunResult r = finetune_tagging(run.model_dir, tagging_data, tagging_options,
                                                    seed, val_score, on_epoch, save_dir);
        submission = mapper->submission(tagging_data.test, r.test_tags, r.test_intents);
        word_predictions = tagging_data.test;
        for (std::size_t i = 0; i < word_predictions.size(); ++i) {
          word_predictions[i].tags = r.test_tags[i];
          if (!r.test_intents.empty()) word_predictions[i].intent = r.test_intents[i];
        }
        val = r.best_val_score, best_epoch = r.best_epoch, train_s = r.train_seconds;
        epochs_run = r.epochs_run, curve = r.curve;
        train_eps = r.train_examples_per_second, predict_eps = r.predict_examples_per_second;
        train_examples = tagging_data.train.size();
      }
      const fs::path dir = fs::path(run.out_dir) / name / ("seed-" + std::to_string(seed));
      fs::create_directories(dir);
      const std::string pred_path = (dir / "test_predictions.json").string();
      write_submission(pred_path, submission);
      if (!intent) {
        // The word-level predictions (eval score --word-tags; a served model's /parse answers
        // the same words with the same tags: scripts/check-parse.py).
        write_word_tags_jsonl((dir / "test_word_tags.jsonl").string(), word_predictions,
                              !tagging_data.intent_labels.empty());
      }
      const TaskScore s = score_task(task, submission, test_gold, pred_path, gold_name);
      json val_curve = json::array();
      for (const EpochInfo& e : curve) {
        val_curve.push_back({{"epoch", e.epoch},
                             {"train_loss", e.train_loss},
                             {"val", e.val_accuracy * 100},
                             {"learning_rate", e.learning_rate}});
      }
      const json rec = {{"seed", seed},
                        {"test", s.value * 100},
                        {"val", val * 100},
                        {"best_epoch", best_epoch},
                        {"epochs_run", epochs_run},
                        {"curve", val_curve},
                        {"train_seconds", train_s},
                        {"train_examples_per_second", train_eps},
                        {"predict_examples_per_second", predict_eps},
                        {"test_examples", s.count}};
      write_json(dir / "run.json", rec);
      task_runs.push_back(rec);
      test_scores.push_back(s.value * 100);
      val_sum += val * 100;
      // DialoGLUE's submission layouts: dump_outputs.py (full) holds one run per task,
      // dump_outputs_fewshot.py (few) the list of runs.
      if (run.setting == Setting::Few) {
        submission_file[task_key(task)].push_back(submission);
      } else if (!submission_file.contains(task_key(task))) {
        submission_file[task_key(task)] = submission;
      }
      ++index;
    }
    const auto n = static_cast<double>(run.seeds.size());
    const MeanStd test_ms = mean_std(test_scores);
    results["tasks"][name] = {{"metric", metric_name(task)},
                              {"classifier_init", intent ? run.options.classifier_init : "random"},
                              {"mean", test_ms.mean},
                              {"std", test_ms.std},
                              {"val_mean", val_sum / n},
                              {"train_examples", train_examples},
                              {"runs", task_runs}};
    if (const auto it = pseudo_labelled.find(name); it != pseudo_labelled.end())
      results["tasks"][name]["pseudo_labelled"] = it->second;
    write_json(fs::path(run.out_dir) / "results.json", results);  // partial results survive
    write_submission((fs::path(run.out_dir) / "submission.json").string(), submission_file);
  }
  write_json(fs::path(run.out_dir) / "results.json", results);
  write_file_atomic((fs::path(run.out_dir) / "results.md").string(), results_table(results));
  return results;
}

std::string results_table(const json& results) {
  std::string out = fmt::format(
      "model `{}`, setting {}, seeds {}\n\n| task | metric | test mean ± std | per seed | val "
      "mean |\n|---|---|---|---|---|\n",
      results.at("model").get<std::string>(), results.at("setting").get<std::string>(),
      results.at("seeds").dump());
  for (const auto& [name, t] : results.at("tasks").items()) {
    std::string per_seed;
    for (const auto& r : t.at("runs")) {
      per_seed +=
          (per_seed.empty() ? "" : ", ") + fmt::format("{:.2f}", r.at("test").get<double>());
    }
    // One seed has no sample std (n - 1 = 0): say so rather than print "± 0.00".
    const std::string spread = t.at("runs").size() > 1
                                   ? fmt::format("± {:.2f}", t.at("std").get<double>())
                                   : std::string("(one seed)");
    out += fmt::format("| {} | {} | {:.2f} {} | {} | {:.2f} |\n", name,
                       t.at("metric").get<std::string>(), t.at("mean").get<double>(), spread,
                       per_seed, t.at("val_mean").get<double>());
  }
  return out;
}

}  // namespace dialtree::eval
