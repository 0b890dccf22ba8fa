// An `eval dialoglue` output folder that several calls add to (docs/evaluation.md "Adding to an
// output folder"): a call that runs some tasks or seeds keeps what an earlier call of the same
// run wrote there (other tasks, other seeds), so `TASKS=... scripts/run.sh` parts build one
// results.json, results.md and submission.json. Torch-free.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/json_util.h"

namespace dialtree::eval {

/// The keys of a results.json header that say which run it describes; two calls add to one
/// folder only when all of them are equal (a missing key counts as a value): the weights
/// (`model_weights`), the setting, the answer key (`gold_fingerprint`) and the pseudo-label files
/// (`pseudo_labels`). Paths (`model`, `gold`, `pseudo_label_dir`) are not compared: the same
/// files may be spelt in several ways. The recipe is compared per task (read_earlier_results):
/// `options` with the task's `task_options` on top, `device` aside (where a run ran is no part
/// of what it is).
const std::vector<std::string>& run_identity_keys();

/// "<bytes> bytes, fnv1a64 <16 hex digits>" of the file at `path` (a bundle's model.safetensors,
/// gt_test.json, a pseudo-label file): tells two trainings saved to one path apart. Reads the
/// whole file (about 0.05 s for the small model). @throws DataError when it cannot be read.
std::string file_fingerprint(const std::string& path);

/// file_fingerprint(path), or "none" when no regular file is there (a missing bundle or
/// pseudo-label file then fails later with its own reader's message).
std::string fingerprint_or_none(const std::string& path);

/// The test predictions of runs (the task's DialoGLUE submission list, as
/// `<task>/seed-<s>/test_predictions.json` holds it), by (results.json task name, seed).
using RunPredictions = std::map<std::pair<std::string, std::uint64_t>, json>;

/// What an earlier results.json in the output folder gives the run starting now.
struct EarlierResults {
  /// Its task entries (results.json "tasks") with the runs kept, each entry's mean, std and
  /// val_mean taken over those runs; the runs of seeds that this call runs again are dropped by
  /// merge_task_runs, not here. Empty object when nothing is kept.
  json tasks = json::object();
  /// Non-empty when a results.json is there but describes another run: why (the first key of
  /// run_identity_keys() that differs; for the recipe, the keys that differ, with both values).
  /// Nothing of it is kept; set_aside_results() moves it away before this run's first write.
  /// Also set when every task it holds ran with another recipe than `header` gives that task.
  std::string other_run;
  /// Its tasks that this call runs and that ran with another recipe than `header` gives them,
  /// while other tasks are kept: each as "task (options.key was X, is Y)". They are not kept;
  /// the file is set aside (whole) before this run's first write, and the tasks kept are
  /// written anew.
  std::vector<std::string> other_recipe;
  /// For the kept tasks this call does not run: the keys of their recipe that differ from
  /// `header`'s options ({task: {key: value}}, results.json's "task_options"), so that the new
  /// header still says how they ran.
  json task_options = json::object();
  /// Runs left out because their test_predictions.json is gone ("banking seed 2: ..."), so the
  /// submission file could not hold them.
  std::vector<std::string> dropped;
  /// The kept runs' test predictions, parsed once here (submission_of builds on them).
  RunPredictions predictions;
};

/// Reads `<out_dir>/results.json` when present and keeps its tasks when its run identity (the
/// keys of run_identity_keys()) equals `header`'s: a task this call does not run (`running`, by
/// either spelling) as it is, its recipe in `task_options`; a task it runs when its recipe is the
/// one `header` gives it, else listed in `other_recipe`. When the identity differs, or every
/// task is run now with another recipe, says why in `other_run` and keeps nothing (the file
/// stays where it is). A kept run whose
/// `<task>/seed-<s>/test_predictions.json` is missing or not JSON is dropped and listed; the
/// others' predictions are returned parsed.
/// @throws DataError when the file is not JSON, SchemaError when it is not a results object (no
/// "tasks" object, a run without an integer "seed" or a number "test").
EarlierResults read_earlier_results(const std::string& out_dir, const json& header,
                                    const std::vector<std::string>& running);

/// Renames `<out_dir>/results.json` to the first of results.previous.json,
/// results.previous-2.json, ... that does not exist (an earlier set-aside file is never
/// overwritten) and returns the new path. @throws DataError when the rename fails.
std::string set_aside_results(const std::string& out_dir);

/// Adds to `entry` (this call's results.json entry of one task: "runs" with "seed", "test" and
/// "val" ×100) the runs of `earlier` (the same task's entry from an earlier call) whose seeds this
/// call did not run, orders the runs by seed, and sets "mean", "std" (sample std, n − 1) and
/// "val_mean" over all of them, as run_dialoglue sets them for one call. `earlier` may be null.
void merge_task_runs(json& entry, const json& earlier);

/// The seeds of every task's runs in `tasks` (results.json "tasks"), ascending, each once.
std::vector<std::uint64_t> seeds_of(const json& tasks);

/// DialoGLUE's submission object for the runs of `tasks` (results.json "tasks"), from their
/// `predictions`: with `few` every run's list in seed order (dump_outputs_fewshot.py's layout),
/// else the first seed's list (dump_outputs.py's layout). Keys as gt_test.json's (task_key).
/// @throws std::invalid_argument when a run has no predictions (a caller's bug).
json submission_of(const json& tasks, const RunPredictions& predictions, bool few);

/// The Markdown table of a results.json object: one row per task, `mean ± std` in percent with
/// two decimals (`mean (one seed)` for a single seed, which has no sample std), the per-seed
/// scores ("seed: test"), and the mean val score.
std::string results_table(const json& results);

/// One `eval dialoglue --out` folder while a call adds to it (docs/evaluation.md "Adding to an
/// output folder"): the earlier results of the same run, this call's runs merged into them, and
/// the three files that describe them all, rewritten after every run.
class ResultsFolder {
 public:
  /// Reads `<out_dir>/results.json` (read_earlier_results against `header`, this call's results
  /// object without "tasks", and `running`, the tasks this call runs) and says through `notice`
  /// (may be empty) what it keeps and what it leaves out; the kept tasks' recipes join the
  /// header's "task_options". `few`: the setting is few-shot (the submission's layout).
  /// @throws as read_earlier_results.
  ResultsFolder(std::string out_dir, json header, bool few,
                const std::vector<std::string>& running,
                std::function<void(const std::string&)> notice);

  /// Records this call's runs of `task` (`entry`: results.json's task entry, its "runs" this
  /// call's so far) and the test `predictions` of its newest run `seed`, merges the earlier runs
  /// of seeds not run again (merge_task_runs), and rewrites results.json, results.md and
  /// submission.json atomically. An earlier results.json of another run, or holding tasks of
  /// another recipe, is renamed (set_aside_results) at the first call, and said.
  /// @throws as set_aside_results and the atomic writers.
  void record(const std::string& task, json entry, std::uint64_t seed, json predictions);

  /// The results object as last written (the header, "tasks", "seeds").
  const json& results() const { return results_; }

 private:
  std::string out_dir_;
  bool few_;
  std::function<void(const std::string&)> notice_;
  json results_;
  json earlier_tasks_;
  std::string other_run_;  ///< non-empty until the earlier file of another run is set aside
  std::vector<std::string> other_recipe_;  ///< as other_run_, for tasks of another recipe
  RunPredictions predictions_;
};

}  // namespace dialtree::eval
