// `dialtree eval dialoglue`: fine-tunes a model bundle on DialoGLUE tasks for several seeds,
// predicts each test split once, scores the predictions against DialoGLUE's answer key
// (gt_test.json) with eval/submission.h, and writes submissions, results.json and results.md.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/eval_config.h"
#include "eval/finetune.h"
#include "eval/tasks.h"

namespace dialtree::eval {

/// What to run.
struct DialoglueRun {
  std::string model_dir;           ///< model bundle (model/bundle.h)
  std::vector<std::string> tasks;  ///< e.g. {"banking", "clinc", "hwu"}
  Setting setting = Setting::Few;
  std::vector<std::uint64_t> seeds = {1, 2, 3};
  std::string out_dir;   ///< created; one folder per task and seed inside
  std::string data_dir;  ///< resolved DialoGLUE folder (resolve_data_dir)
  /// The options, and per task (by data folder name) those its `tasks:` section changes
  /// (docs/evaluation.md "Per-task options").
  FinetuneRecipe recipe;
  /// Save each task's selected model as a bundle in `<task>/seed-<s>/model/`: intent tasks with
  /// their intent head (for `dialtree serve` /classify), tagging tasks with their tagger (and
  /// TOP's intent head) and tag names.
  bool save_models = false;
  /// Self-training (docs/evaluation.md "Self-training"): when set, each intent task's training
  /// split is train_10 (or train) followed by the records of `<dir>/<task>.pseudo.jsonl`
  /// (read_pseudo_labels(): `eval pseudo-label`'s output). Val and test are unchanged. Refused
  /// for tagging tasks. Empty = off.
  std::string pseudo_label_dir;
};

/// Progress of the whole run, for a progress bar: run `run` of `runs` (task x seed), epoch.
struct RunProgress {
  std::string task;
  std::uint64_t seed = 0;
  std::size_t run = 0, runs = 0;  ///< 0-based index of the current run, number of runs
  EpochInfo epoch;
};

/// Runs every (task, seed) pair in order and writes, below out_dir:
///  - `<task>/seed-<s>/test_predictions.json` (the task's DialoGLUE submission list) and
///    `<task>/seed-<s>/run.json` (val accuracy, best epoch, test score, throughput);
///  - `results.json` ({model, setting, seeds, options, task_options (where a task's differ),
///    tasks: {task: {metric, runs, mean, std}}})
///    and `results.md` (the Markdown table);
///  - `submission.json`, DialoGLUE's EvalAI file for the tasks run, keyed as gt_test.json: in the
///    full setting each task's list of the first seed (dump_outputs.py's layout), in the few-shot
///    setting each task's list of runs, one per seed in seed order (dump_outputs_fewshot.py's);
///    `dialtree eval score` scores either back (docs/evaluation.md);
/// all written atomically. The folder is added to (docs/evaluation.md "Adding to an output
/// folder"): when out_dir already holds a results.json of the same run (run_identity_keys():
/// weights, setting, gold, pseudo-label files; and, for each task this call runs, the recipe it
/// ran with), its tasks and seeds are kept, a seed run again replaces its run, and mean, std and
/// submission.json cover every run kept; a results.json of another run, or one where a task this
/// call runs ran with another recipe, is renamed to results.previous.json (the other tasks
/// carried over). `notice` gets one sentence per such event (for stderr).
/// Test scores come from gt_test.json in data_dir when present (the official answer key), else
/// from the test file's own labels. Mean and sample standard deviation (n - 1) are over seeds,
/// in percent. Returns results.json's object.
/// Tasks: banking, clinc, hwu (finetune_intent), restaurant8k, dstc8_sgd, top (finetune_tagging,
/// val and test scored through eval/tag_mapping.h); multiwoz is refused (no DST head).
/// With pseudo_label_dir set, results.json has "pseudo_label_dir" and each task its
/// "pseudo_labelled" count (train_examples includes them).
/// @throws std::invalid_argument for an unknown or unsupported task, no seeds, an unusable
///   out_dir, or pseudo_label_dir with a tagging task; DataError / SchemaError for bad data or
///   bundle files (a missing or bad pseudo-label file is reported before any training).
nlohmann::json run_dialoglue(const DialoglueRun& run,
                             const std::function<void(const RunProgress&)>& progress = {},
                             const std::function<void(const std::string&)>& notice = {});


}  // namespace dialtree::eval
