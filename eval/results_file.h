// An `eval dialoglue` output folder that several calls add to (docs/evaluation.md "Adding to an
// output folder"): a call that runs some tasks or seeds keeps what an earlier call of the same
// run wrote there (other tasks, other seeds), so `TASKS=... scripts/run.sh` parts build one
// results.json, results.md and submission.json. Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/json_util.h"

namespace dialtree::eval {

/// The keys of a results.json header that say which run it describes; two calls add to one
/// folder only when all of them are equal (a missing key counts as a value): the weights
/// (`model_weights`), the setting, the recipe (`options`, its `device` aside: where a run ran is
/// no part of what it is), the answer key (`gold_fingerprint`) and the pseudo-label files
/// (`pseudo_labels`). Paths (`model`, `gold`, `pseudo_label_dir`) are not compared: the same
/// files may be spelt in several ways.
const std::vector<std::string>& run_identity_keys();

/// "<bytes> bytes, fnv1a64 <16 hex digits>" of the file at `path` (a bundle's model.safetensors,
/// gt_test.json, a pseudo-label file): tells two trainings saved to one path apart. Reads the
/// whole file (about 0.05 s for the small model). @throws DataError when it cannot be read.
std::string file_fingerprint(const std::string& path);

/// file_fingerprint(path), or "none" when no regular file is there (a missing bundle or
/// pseudo-label file then fails later with its own reader's message).
std::string fingerprint_or_none(const std::string& path);

/// What an earlier results.json in the output folder gives the run starting now.
struct EarlierResults {
  /// Its task entries (results.json "tasks") with the runs kept, each entry's mean, std and
  /// val_mean taken over those runs; the runs of seeds that this call runs again are dropped by
  /// merge_task_runs, not here. Empty object when nothing is kept.
  json tasks = json::object();
  /// Non-empty when a results.json is there but describes another run: why (the first key of
  /// run_identity_keys() that differs; for the recipe, the keys that differ, with both values).
  /// Nothing of it is kept; set_aside_results() moves it away before this run's first write.
  std::string other_run;
  /// Runs left out because their test_predictions.json is gone ("banking seed 2: ..."), so the
  /// submission file could not hold them.
  std::vector<std::string> dropped;
};

/// Reads `<out_dir>/results.json` when present and keeps its tasks when its run identity (the
/// keys of run_identity_keys()) equals `header`'s; otherwise says why in `other_run` and keeps
/// nothing (the file stays where it is). A kept run whose
/// `<task>/seed-<s>/test_predictions.json` is missing or not JSON is dropped and listed.
/// @throws DataError when the file is not JSON, SchemaError when it is not a results object (no
/// "tasks" object, a run without an integer "seed" or a number "test").
EarlierResults read_earlier_results(const std::string& out_dir, const json& header);

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

/// DialoGLUE's submission object for the results' tasks, read back from each run's
/// `<out_dir>/<task>/seed-<s>/test_predictions.json`: with `few` every run's list in seed order
/// (dump_outputs_fewshot.py's layout), else the first seed's list (dump_outputs.py's layout).
/// Keys as gt_test.json's (task_key). @throws DataError when a file cannot be read or parsed.
json submission_from_runs(const json& tasks, const std::string& out_dir, bool few);

}  // namespace dialtree::eval
