// What `dialtree plot` draws, read from its inputs: the numeric series of a pretraining run's
// metrics.jsonl (docs/training.md, "Run directory"), and the per-task scores and per-epoch val
// curves of `dialtree eval dialoglue --out` folders (results.json, <task>/seed-<s>/run.json;
// docs/evaluation.md) or of files in results.json's shape (bench/reference/tfidf_baseline.py).
// Torch-free. Every error is a DataError naming the file and the line or JSON path.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dialtree::plot {

/// True for a key of an evaluation record (`eval_probe_banking_accuracy`, `eval_seconds`).
bool is_eval_key(const std::string& key);

/// One point of a curve.
struct Point {
  double x = 0;
  double y = 0;
};

/// One named curve, points sorted by x.
struct Series {
  std::string key;
  std::vector<Point> points;
};

/// What the x of a pretraining run's curves is (`dialtree plot --x`).
enum class XAxis {
  steps,    ///< the record's `step` (the default)
  minutes,  ///< the record's `train_seconds` / 60: optimisation time, evaluation and saving
            ///< excluded (docs/plotting.md)
};

/// The x-axis label of `x`: "step" or "minutes of training (evaluation excluded)".
std::string x_axis_label(XAxis x);

/// The curves of one pretraining run: one series per numeric key of metrics.jsonl (every key but
/// `step`, and `train_seconds` when it gives the x) against the x of its record (read_metrics),
/// sorted by key.
struct RunMetrics {
  std::string name;  ///< legend name (the run folder's name)
  std::string path;  ///< the metrics.jsonl it came from
  std::vector<Series> series;
  /// The line skipped because the file ends inside it (a run still writing, or killed mid-line:
  /// no newline and not JSON), 0 when none; the command warns about it.
  std::size_t unfinished_line = 0;
  /// Records whose step is below a step logged before them: the file goes back, as when a
  /// resumed run appends to it and re-logs the steps after its checkpoint. The command warns,
  /// naming the first such place; a step logged twice draws its later value. (A training and an
  /// evaluation record of the same step are not a step going back.)
  std::size_t step_restarts = 0;
  std::int64_t first_restart_step = -1;   ///< the step the file first went back to
  std::int64_t first_restart_after = -1;  ///< the largest step logged before that record
  XAxis x = XAxis::steps;                 ///< what the points' x is

  /// The series of `key`, or nullptr if the run never logged it.
  const Series* find(const std::string& key) const;
};

/// Reads a metrics.jsonl file. Each non-blank line must be a JSON object with an integer `step`
/// (>= 0); every other key whose value is a number becomes a point (x, value) of that key's
/// series; `null` (a NaN or infinity written by JSON) and non-numeric values are skipped. A key
/// logged twice for the same step keeps the later value (steps going back are counted in
/// step_restarts); points are in step order. Keys may appear on some lines only
/// (e.g. `eval_*` keys at evaluation steps).
/// The x of a record is its step (XAxis::steps), or its `train_seconds` / 60 in minutes
/// (XAxis::minutes; `train_seconds` is then no series); an evaluation record (one with an
/// `eval_*` key) without `train_seconds` takes that of the training record (one without) of its
/// step.
/// @param name legend name of the run
/// An unfinished last line (see RunMetrics::unfinished_line) is skipped, not an error.
/// @throws DataError naming the file and "line N" for invalid JSON, a line that is not an
///   object, a missing or non-integer step, and (minutes) a record left without an x: a training
///   record without `train_seconds`, or an evaluation record without it whose step has no
///   training record that has it; naming the file alone if it cannot be read, holds no record,
///   or (minutes) has no `train_seconds` at all (a run logged before train_seconds existed: the
///   message points to scripts/add-train-seconds.py).
RunMetrics read_metrics(const std::string& path, const std::string& name, XAxis x = XAxis::steps);

/// One seed's scores of one task.
struct SeedRun {
  std::int64_t seed = 0;
  double test = 0;               ///< test score, percent
  std::vector<Point> val_curve;  ///< (epoch, val score) per epoch; empty when not recorded
};

/// One task's scores of one model.
struct TaskScores {
  std::string task;    ///< e.g. "banking"
  std::string metric;  ///< e.g. "accuracy"
  double mean = 0;     ///< mean test score over seeds, percent
  double std = 0;      ///< sample standard deviation over seeds
  std::vector<SeedRun> runs;
};

/// The DialoGLUE scores of one model (one bar colour in the comparison chart).
struct ModelScores {
  std::string name;    ///< legend name
  std::string source;  ///< the file it came from
  std::vector<TaskScores> tasks;
};

/// Reads the scores of a results.json-shaped object `results` (format
/// dialtree-dialoglue-results/1: `tasks: {task: {metric, mean, std, runs: [{seed, test, ...}]}}`).
/// A run's per-epoch val curve is taken from its `curve` (see read_val_curve), when present.
/// @param where the place of `results` inside `file` for messages ("" for the whole file,
///   "record 1" for an array element)
/// @throws SchemaError / DataError naming the file, the place and the JSON path of a wrong value.
ModelScores parse_results(const std::string& file, const std::string& where,
                          const std::string& name, const nlohmann::json& results);

/// Reads a results file: one results.json object (legend `name`), or a JSON array of such
/// objects (legend: each element's `model` string), as tfidf_baseline.py --json writes.
/// @throws DataError naming the file (with line and column for a JSON syntax error) and the JSON
///   path of a wrong value.
std::vector<ModelScores> read_results_file(const std::string& path, const std::string& name);

/// Reads an eval folder: `results.json`, plus each run's `curve` from
/// `<dir>/<task>/seed-<seed>/run.json` when that file exists and the results record has none.
/// @throws as read_results_file.
ModelScores read_eval_dir(const std::string& dir, const std::string& name);

/// Parses the `curve` of a run.json record (docs/evaluation.md): an array of objects with at
/// least `{"epoch": E, "val": V}` (val score in percent, as run.json records it; other keys such
/// as `train_loss` are ignored), returned sorted by epoch.
/// @param where, path where the value is, for messages
/// @throws SchemaError naming the file, the place and the JSON path of a wrong element.
std::vector<Point> read_val_curve(const std::string& file, const std::string& where,
                                  const std::string& path, const nlohmann::json& value);

/// Everything the plot command draws.
struct Inputs {
  std::vector<RunMetrics> runs;     ///< pretraining runs
  std::vector<ModelScores> models;  ///< evaluated models and baselines
};

/// Classifies and reads each path: a folder with `metrics.jsonl` is a pretraining run, a folder
/// with `results.json` an eval folder (a folder may be both); a `.jsonl` file is a metrics file;
/// any other file a results file (read_results_file). Legend names are the folder's name (the
/// file's folder for metrics.jsonl, results.json and scripts/add-train-seconds.py's
/// metrics-with-train-seconds.jsonl, else the file's stem); when two inputs of the same kind
/// would get the same name, both are named by the path as given.
/// @param x the x of the pretraining runs' curves (read_metrics); the scores ignore it
/// @throws DataError naming the path when it does not exist, or is a folder with neither file;
///   errors of the readers above.
Inputs load_inputs(const std::vector<std::string>& paths, XAxis x = XAxis::steps);

}  // namespace dialtree::plot
