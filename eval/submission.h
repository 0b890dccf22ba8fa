// DialoGLUE submission files and the answer key gt_test.json (docs/dialoglue.md §3-§6), and scoring
// a task's predictions against it. Torch-free.
//
// Per task, a submission is a JSON list with one entry per test example, in test-file order:
//   banking, clinc, hwu:   ["card_arrival", ...]                      (label strings, §3)
//   restaurant8k, dstc8:   [["time:1-2"], [], ...]                    (span strings, §4)
//   top:                   [["IN_GET_EVENT", ["O", "B-SL_DATE_TIME"]], ...]   (§5)
//   multiwoz:              TripPy's prediction records (pred_res.test.final.json, §6)
// DialoGLUE's EvalAI file is one object holding all seven lists under the keys of gt_test.json
// (hwu, banking, clinc, restaurant8k, dstc8, top, multiwoz); the readers here accept either a
// task's list or such an object.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/json_util.h"
#include "eval/metrics.h"
#include "readers/dialoglue_tasks.h"

namespace dialtree::eval {

/// The seven DialoGLUE tasks (their table: readers/dialoglue_tasks.h).
using Task = readers::DialoglueTask;

/// What a task's submission holds, which decides its metric: Intent (label strings,
/// intent_accuracy), Slot (span-string lists, slot_f1), Top ([intent, [tags]] pairs,
/// top_exact_match), Dst (TripPy records, trippy_joint_goal_accuracy).
using TaskKind = readers::TaskFamily;

/// Parses a task name or data folder of the task table: "banking", "clinc", "hwu",
/// "restaurant8k", "dstc8" (also "dstc8_sgd", the name of its data folder), "top", "multiwoz".
/// @throws std::invalid_argument naming the accepted names.
Task parse_task(std::string_view name);
/// The accepted task names of parse_task, aliases included (from the task table).
std::vector<std::string> task_names();
/// The task's key in gt_test.json and in a DialoGLUE submission object ("dstc8" for Dstc8).
std::string task_key(Task task);
/// The task's kind.
TaskKind task_kind(Task task);
/// The task's metric as printed: "accuracy", "slot F1", "exact match" or "joint goal accuracy".
std::string metric_name(Task task);

/// The task's list in `root`: `root` itself if it is an array, else `root[task_key(task)]`.
/// @throws SchemaError naming `file`, the key and the type found (neither an array nor an object
///   holding the key).
const json& task_list(const json& root, Task task, const std::string& file);

/// Intent labels from a JSON list of strings (§3).
/// @throws SchemaError like `preds.json: record 17: must be a string, got integer`.
std::vector<std::string> intent_labels_from_json(const json& list, const std::string& file);
/// Span lists from a JSON list of lists of strings (§4).
/// @throws SchemaError like `preds.json: record 17: must be a list of strings, got number` or
///   `preds.json: record 17: field '[2]': must be a string, got integer`.
std::vector<SpanList> span_lists_from_json(const json& list, const std::string& file);
/// TOP parses from a JSON list of [intent, [tags]] pairs (§5).
/// @throws SchemaError like `preds.json: record 3: must be a list [intent, [tags]], got object`,
///   naming the field ("[0]", "[1]", "[1][4]") when a part has the wrong type.
std::vector<TopParse> top_parses_from_json(const json& list, const std::string& file);
/// TripPy prediction records (§6): each an object with `guid` (a list of strings, or a string
/// "test-PMUL1635.json-0" split at '-') and, for every slot s of `slots`,
/// `class_label_id_<s>` and `class_prediction_<s>` (integers), `slot_groundtruth_<s>` and
/// `slot_prediction_<s>` (strings). Other keys (input_ids_*, start_pos_*, ...) are ignored.
/// @throws SchemaError naming the file, the record and the missing or mistyped key.
std::vector<TripPyTurn> trippy_turns_from_json(const json& list,
                                               const std::vector<std::string>& slots,
                                               const std::string& file);

/// Reads TripPy's dataset config (trippy/dataset_config/multiwoz21.json): `class_types` and
/// `slots` (lists of strings) and `label_maps` (object: value -> list of variants), the label maps
/// normalised (normalize_label_maps).
/// @throws DataError / SchemaError naming the file and the field.
TripPyConfig read_trippy_config(const std::string& path);

/// Intent submission list (§3): the label strings, as DialoGLUE's dump_outputs.py writes them.
json intent_submission_json(const std::vector<std::string>& labels);
/// Slot submission list (§4): one list of "slot:start-end" strings per example.
json slot_submission_json(const std::vector<SpanList>& spans);
/// TOP submission list (§5): one [intent, [tags]] pair per example.
json top_submission_json(const std::vector<TopParse>& parses);

/// Writes `submission` to `path` atomically (common/atomic_file.h): compact JSON and a final
/// newline. @throws as write_file_atomic (std::invalid_argument for a refused target such as a
/// folder, std::runtime_error for a write failure).
void write_submission(const std::string& path, const json& submission);

/// One task's score.
struct TaskScore {
  std::string task;       ///< task_key(task), e.g. "banking", "dstc8"
  std::string metric;     ///< metric_name(task)
  double value = 0;       ///< fraction in [0, 1]; DialoGLUE prints value x 100
  std::size_t count = 0;  ///< examples scored (turns for multiwoz)
  /// Predictions that cannot be right whatever the model (labels the gold list never uses,
  /// span strings not of the form "slot:start-end", TOP tag lists of another length than the
  /// gold's), and a bare list given as the answer key: DialoGLUE scores them as wrong without a
  /// word, so they are said here (docs/evaluation.md). They never change `value`.
  std::vector<std::string> warnings;
  /// Slot tasks: the per-type figures slot F1 averages (slot_f1_details), sorted by type; empty
  /// for the other tasks. Where the points go: a type with few gold examples weighs as much as
  /// a frequent one.
  std::vector<SlotTypeScore> slot_types;
};

/// Scores the task's predictions against the gold list, both given as parsed JSON (a task list or
/// a whole submission / gt_test.json object, see task_list). Not for Multiwoz: gt_test.json holds
/// no MultiWOZ gold (use score_trippy_file).
/// @throws std::invalid_argument for Multiwoz; SchemaError (malformed entries, naming the file and
///   record); DataError naming `predictions_file` when the counts differ.
TaskScore score_task(Task task, const json& predictions, const json& gold,
                     const std::string& predictions_file = "predictions",
                     const std::string& gold_file = "gt_test.json");

/// Scores every run of the task in `predictions`. DialoGLUE's few-shot submission
/// (dump_outputs_fewshot.py) holds, under each task's key, a list of runs (one task list per
/// fine-tuning run); any other file holds one run. The task's list is read as runs when every
/// entry is a list whose entries are predictions of the task (label strings for intent tasks,
/// lists for slot tasks and TOP), unless it is one run of empty span lists; a single run's
/// entries are label strings, span lists of strings or [intent, tags] pairs. `run_list` (when
/// given) says which layout was read. Returns one TaskScore per run, in file order. Not for
/// Multiwoz. @throws as score_task(), the file named "<predictions_file> run <k>" (1-based)
/// for a bad run, e.g. one with fewer predictions than the answer key.
std::vector<TaskScore> score_task_runs(Task task, const json& predictions, const json& gold,
                                       const std::string& predictions_file = "predictions",
                                       const std::string& gold_file = "gt_test.json",
                                       bool* run_list = nullptr);

/// score_task on two files. @throws as score_task and json_parse_file.
TaskScore score_task_files(Task task, const std::string& predictions_path,
                           const std::string& gold_path);

/// TripPy joint goal accuracy of a prediction file (a list of records, or a submission object with
/// a "multiwoz" list), the gold values being the records' slot_groundtruth fields.
/// @throws DataError / SchemaError naming the file and record (an std::invalid_argument of
///   trippy_dst_states comes back as a DataError prefixed with the file name).
TaskScore score_trippy_file(const std::string& predictions_path, const TripPyConfig& config);

}  // namespace dialtree::eval
