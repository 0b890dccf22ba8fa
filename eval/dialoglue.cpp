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
#include "eval/results_file.h"
#include "eval/submission.h"
#include "eval/tag_mapping.h"
#include "model/bundle.h"
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

/// Intent tasks with pseudo-labelled records joined to their training split (self-training),
/// and how many records each got.
struct SelfTraining {
  std::map<std::string, IntentTask> tasks;
  std::map<std::string, std::size_t> pseudo_labelled;
};

/// Reads (and checks) every task of `run` and its pseudo-label file when run.pseudo_label_dir
/// is set, before anything trains; empty otherwise. Throws std::invalid_argument when a task is
/// not an intent task, and what load_intent_task and read_pseudo_labels throw.
SelfTraining load_self_training(const DialoglueRun& run) {
  SelfTraining out;
  if (run.pseudo_label_dir.empty()) return out;
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
    out.pseudo_labelled[t] = extra.texts.size();
    out.tasks[t] = std::move(task);
  }
  return out;
}

/// The results object before any task has run: the run's settings, where the test gold comes
/// from (`gold` read from `gold_path`, or null for the test files) and the host.
json dialoglue_results_header(const DialoglueRun& run, const json& gold,
                              const fs::path& gold_path) {
  json results = {{"format", "dialtree-dialoglue-results/1"},
                  {"model", run.model_dir},
                  {"model_weights",
                   fingerprint_or_none((fs::path(run.model_dir) / model::kWeightsFile).string())},
                  {"setting", run.setting == Setting::Few ? "few" : "full"},
                  {"seeds", run.seeds},
                  {"options", finetune_options_json(run.recipe.options)},
                  {"gold", gold.is_null() ? "test files" : gold_path.string()},
                  {"gold_fingerprint",
                   gold.is_null() ? "test files" : file_fingerprint(gold_path.string())},
                  {"env", model::host_environment()},
                  {"tasks", json::object()}};
  // The sections of the tasks this call runs (ResultsFolder adds the kept tasks' recipes).
  json per_task = task_options_json(run.recipe);
  for (const auto& t : run.tasks) {
    if (per_task.contains(t)) results["task_options"][t] = per_task.at(t);
  }
  if (!run.pseudo_label_dir.empty()) {
    // Which labels self-training read: the files, not the folder, identify the run (a later
    // part may write new teachers' labels to the same folder).
    results["pseudo_label_dir"] = run.pseudo_label_dir;
    for (const auto& t : run.tasks) {
      results["pseudo_labels"][t] =
          fingerprint_or_none((fs::path(run.pseudo_label_dir) / (t + ".pseudo.jsonl")).string());
    }
  }
  return results;
}

/// One task's data as the seeds of run_dialoglue fine-tune and score it.
struct DialoglueTaskData {
  std::string name;
  Task task{};
  bool intent = false;
  IntentTask intent_data;
  TaggingTask tagging_data;
  std::unique_ptr<TagMapper> mapper;  // tagging tasks
  json val_gold;                      // tagging tasks: the val split's submission
  json test_gold;
};

/// Loads task `name` into `d`: its splits (an intent task from `self_trained` when there),
/// the tag mapper and val gold of a tagging task, and the test gold: `gold` (gt_test.json)
/// when not null, else the test file's labels. Throws what the loaders and TagMapper throw.
void load_dialoglue_task(const DialoglueRun& run, const std::string& name,
                         const std::map<std::string, IntentTask>& self_trained, const json& gold,
                         DialoglueTaskData& d) {
  d.name = name;
  d.task = parse_task(name);
  d.intent = is_intent_task(name);
  if (d.intent) {
    const auto st = self_trained.find(name);
    d.intent_data =
        st != self_trained.end() ? st->second : load_intent_task(run.data_dir, name, run.setting);
  } else {
    d.tagging_data = load_tagging_task(run.data_dir, name, run.setting);
    d.mapper = std::make_unique<TagMapper>(run.data_dir, d.tagging_data);
    d.val_gold = d.mapper->gold_submission(d.tagging_data.val);
  }
  // Test gold: gt_test.json when present (the official key), else the test file's labels.
  if (!gold.is_null()) {
    d.test_gold = gold;
  } else if (d.intent) {
    std::vector<std::string> labels;
    for (int id : d.intent_data.test.labels) {
      labels.push_back(d.intent_data.labels[static_cast<std::size_t>(id)]);
    }
    d.test_gold = intent_submission_json(labels);
  } else {
    d.test_gold = d.mapper->gold_submission(d.tagging_data.test);
  }
}

/// What one seed's fine-tuning gave: the test submission, the word-level predictions of a
/// tagging task, and the run's figures.
struct SeedOutcome {
  json submission;
  std::vector<TaggingExample> word_predictions;  // tagging: test words, predicted tags
  double val = 0, train_s = 0, train_eps = 0, predict_eps = 0;
  int best_epoch = 0, epochs_run = 0;
  std::vector<EpochInfo> curve;
  std::size_t train_examples = 0;
};

/// Fine-tunes the intent task `d` with `seed` and predicts its test split. Throws what
/// finetune_intent throws.
SeedOutcome finetune_intent_seed(const DialoglueRun& run, const DialoglueTaskData& d,
                                 std::uint64_t seed,
                                 const std::function<void(const EpochInfo&)>& on_epoch,
                                 const std::string& save_dir) {
  SeedOutcome o;
  const IntentRunResult r =
      finetune_intent(run.model_dir, d.intent_data, run.recipe.for_task(d.name), seed, on_epoch,
                      save_dir);
  o.submission = intent_submission_json(r.test_predictions);
  o.val = r.best_val_accuracy, o.best_epoch = r.best_epoch, o.train_s = r.train_seconds;
  o.epochs_run = r.epochs_run, o.curve = r.curve;
  o.train_eps = r.train_examples_per_second, o.predict_eps = r.predict_examples_per_second;
  o.train_examples = d.intent_data.train.texts.size();
  return o;
}

/// Fine-tunes the tagging task `d` with `seed` (its heads start at random), selecting the
/// epoch by the val score, and predicts its test split. Throws what finetune_tagging and the
/// scoring throw.
SeedOutcome finetune_tagging_seed(const DialoglueRun& run, const DialoglueTaskData& d,
                                  std::uint64_t seed,
                                  const std::function<void(const EpochInfo&)>& on_epoch,
                                  const std::string& save_dir) {
  SeedOutcome o;
  auto val_score = [&](const std::vector<std::vector<std::string>>& tags,
                       const std::vector<std::string>& intents) {
    return score_task(d.task, d.mapper->submission(d.tagging_data.val, tags, intents), d.val_gold,
                      "val predictions", "val gold")
        .value;
  };
  // classifier_init is the intent classifier's start; the tagging heads (TOP's intent
  // head too) start at random (docs/evaluation.md "Linear-probe initialisation").
  FinetuneOptions tagging_options = run.recipe.for_task(d.name);
  tagging_options.classifier_init = "random";
  const TaggingRunResult r = finetune_tagging(run.model_dir, d.tagging_data, tagging_options,
                                              seed, val_score, on_epoch, save_dir);
  o.submission = d.mapper->submission(d.tagging_data.test, r.test_tags, r.test_intents);
  o.word_predictions = d.tagging_data.test;
  for (std::size_t i = 0; i < o.word_predictions.size(); ++i) {
    o.word_predictions[i].tags = r.test_tags[i];
    if (!r.test_intents.empty()) o.word_predictions[i].intent = r.test_intents[i];
  }
  o.val = r.best_val_score, o.best_epoch = r.best_epoch, o.train_s = r.train_seconds;
  o.epochs_run = r.epochs_run, o.curve = r.curve;
  o.train_eps = r.train_examples_per_second, o.predict_eps = r.predict_examples_per_second;
  o.train_examples = d.tagging_data.train.size();
  return o;
}

/// The run.json record of one seed: its test score `s`, val score, curve and speeds.
json seed_record(std::uint64_t seed, const TaskScore& s, const SeedOutcome& o) {
  json val_curve = json::array();
  for (const EpochInfo& e : o.curve) {
    val_curve.push_back({{"epoch", e.epoch},
                         {"train_loss", e.train_loss},
                         {"val", e.val_accuracy * 100},
                         {"learning_rate", e.learning_rate}});
  }
  return {{"seed", seed},
          {"test", s.value * 100},
          {"val", o.val * 100},
          {"best_epoch", o.best_epoch},
          {"epochs_run", o.epochs_run},
          {"curve", val_curve},
          {"train_seconds", o.train_s},
          {"train_examples_per_second", o.train_eps},
          {"predict_examples_per_second", o.predict_eps},
          {"test_examples", s.count}};
}

/// Writes one seed's test predictions (and a tagging task's word tags) under `dir`, scores
/// them against the task's test gold (named `gold_name` in messages) and writes run.json.
/// Returns the run record. Throws what the writers and score_task throw.
json write_and_score_seed(const fs::path& dir, const DialoglueTaskData& d,
                          const std::string& gold_name, std::uint64_t seed,
                          const SeedOutcome& o) {
  fs::create_directories(dir);
  const std::string pred_path = (dir / "test_predictions.json").string();
  write_submission(pred_path, o.submission);
  if (!d.intent) {
    // The word-level predictions (eval score --word-tags; a served model's /parse answers
    // the same words with the same tags: scripts/check-parse.py).
    write_word_tags_jsonl((dir / "test_word_tags.jsonl").string(), o.word_predictions,
                          !d.tagging_data.intent_labels.empty());
  }
  const TaskScore s = score_task(d.task, o.submission, d.test_gold, pred_path, gold_name);
  json rec = seed_record(seed, s, o);
  write_json(dir / "run.json", rec);
  return rec;
}

}  // namespace

json run_dialoglue(const DialoglueRun& given,
                   const std::function<void(const RunProgress&)>& progress,
                   const std::function<void(const std::string&)>& notice) {
  if (given.seeds.empty()) throw std::invalid_argument("eval dialoglue: no seeds");
  if (given.tasks.empty()) throw std::invalid_argument("eval dialoglue: no tasks");
  check_dialoglue_tasks(given.tasks);
  DialoglueRun run = given;  // tasks by data folder name ("dstc8" -> "dstc8_sgd"): one spelling
  for (auto& t : run.tasks) t = readers::dialoglue_task_folder(t);
  // Self-training: every task and pseudo-label file is read (and checked) before anything
  // trains; the records join the training split here, and the loop below uses these tasks.
  const SelfTraining self = load_self_training(run);
  fs::create_directories(run.out_dir);
  const fs::path gold_path = fs::path(run.data_dir) / "gt_test.json";
  json gold;
  if (fs::is_regular_file(gold_path)) gold = json_parse_file(gold_path.string());

  // An earlier call of the same run into this folder keeps its tasks and seeds (docs/
  // evaluation.md "Adding to an output folder"); results.json, results.md and submission.json
  // are rewritten after every seed, so an interrupted call leaves them agreeing with the seed
  // folders.
  ResultsFolder folder(run.out_dir, dialoglue_results_header(run, gold, gold_path),
                       run.setting == Setting::Few, run.tasks, notice);
  const std::size_t runs = run.tasks.size() * run.seeds.size();
  std::size_t index = 0;
  for (const auto& name : run.tasks) {
    DialoglueTaskData d;
    load_dialoglue_task(run, name, self.tasks, gold, d);
    const std::string gold_name = gold.is_null() ? "the test file" : gold_path.string();
    json task_runs = json::array();
    std::size_t train_examples = 0;
    for (const std::uint64_t seed : run.seeds) {
      RunProgress p{name, seed, index, runs, {}};
      auto on_epoch = [&](const EpochInfo& e) {
        p.epoch = e;
        if (progress) progress(p);
      };
      const fs::path dir = fs::path(run.out_dir) / name / ("seed-" + std::to_string(seed));
      const std::string save_dir = run.save_models ? (dir / "model").string() : std::string();
      const SeedOutcome o = d.intent ? finetune_intent_seed(run, d, seed, on_epoch, save_dir)
                                     : finetune_tagging_seed(run, d, seed, on_epoch, save_dir);
      train_examples = o.train_examples;
      task_runs.push_back(write_and_score_seed(dir, d, gold_name, seed, o));
      ++index;
      const std::string classifier_init =
          d.intent ? run.recipe.for_task(name).classifier_init : "random";
      json entry = {{"metric", metric_name(d.task)},
                    {"classifier_init", classifier_init},
                    {"train_examples", train_examples},
                    {"runs", task_runs}};
      if (const auto it = self.pseudo_labelled.find(name); it != self.pseudo_labelled.end())
        entry["pseudo_labelled"] = it->second;
      folder.record(name, std::move(entry), seed, o.submission);
    }
  }
  return folder.results();
}

}  // namespace dialtree::eval
