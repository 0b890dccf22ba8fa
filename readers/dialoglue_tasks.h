// The DialoGLUE tasks in one table (docs/dialoglue.md): per task its name, its data folder, its
// family, its metric and which evaluation commands take it. Every list of task names that a
// command accepts, prints in its help or names in an error message is derived from here.
// Torch-free, at the readers layer: the trainer's config schema (torch-free), eval and cli all
// read it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dialtree::readers {

/// The seven DialoGLUE tasks, in table order (DialoGLUE's own: the intent tasks, the slot tasks,
/// TOP, MultiWOZ).
enum class DialoglueTask { Banking, Clinc, Hwu, Restaurant8k, Dstc8, Top, Multiwoz };

/// What a task predicts, which decides its submission entries and its metric.
enum class TaskFamily {
  Intent,  ///< one label per utterance: accuracy
  Slot,    ///< slot spans: slot F1
  Top,     ///< a root intent plus BIO tags: exact match
  Dst      ///< dialogue states (TripPy's records): joint goal accuracy
};

/// One row of the table.
struct DialoglueTaskInfo {
  DialoglueTask task;
  std::string_view name;    ///< its key in gt_test.json and in submissions, e.g. "dstc8"
  std::string_view folder;  ///< its data folder below the DialoGLUE folder, e.g. "dstc8_sgd"
  TaskFamily family;
  std::string_view metric;  ///< as printed: "accuracy", "slot F1", "exact match", ...
  bool fine_tune;           ///< `eval dialoglue` fine-tunes it
  bool probe;               ///< `eval probe` (and pretraining's eval_tasks) scores it
};

/// The table: one row per DialoglueTask, in enum order.
const std::vector<DialoglueTaskInfo>& dialoglue_tasks();

/// The row of `task`. @throws InternalError (common/check.h) for a value outside the enum (a bad
///   cast).
const DialoglueTaskInfo& dialoglue_task(DialoglueTask task);

/// The row whose name or data folder is `name` ("dstc8" and "dstc8_sgd" find the same row), or
/// nullptr for any other string. Case-sensitive, as DialoGLUE's keys are.
const DialoglueTaskInfo* find_dialoglue_task(std::string_view name);

/// The data folder of the task named `name` by either spelling ("dstc8" -> "dstc8_sgd"); any
/// other string unchanged (a caller that must know checks with find_dialoglue_task()).
std::string dialoglue_task_folder(std::string_view name);

/// A subset of the table.
enum class TaskSet {
  All,       ///< every task
  Intent,    ///< family Intent: banking, clinc, hwu
  Tagging,   ///< families Slot and Top: restaurant8k, dstc8, top
  FineTune,  ///< the tasks `eval dialoglue` fine-tunes (all but multiwoz)
  Probe,     ///< the tasks `eval probe` scores (all but multiwoz)
};

/// True when `row` belongs to `set`.
bool in_task_set(const DialoglueTaskInfo& row, TaskSet set);

/// True when `name` is the name or the data folder of a task of `set`
/// (find_dialoglue_task + in_task_set).
bool is_dialoglue_task(std::string_view name, TaskSet set);

/// How a task is spelled in a list of names.
enum class TaskSpelling {
  Name,           ///< "dstc8"
  Folder,         ///< "dstc8_sgd"
  NameAndFolder,  ///< "dstc8", "dstc8_sgd": two entries where they differ (every accepted name)
  NameOrFolder,   ///< "dstc8 (or dstc8_sgd)": one entry, for help texts
};

/// The tasks of `set` in table order, spelled as `spelling`, e.g. {"banking", "clinc", "hwu"}
/// for TaskSet::Intent.
std::vector<std::string> dialoglue_task_names(TaskSet set,
                                              TaskSpelling spelling = TaskSpelling::Name);

/// join(dialoglue_task_names(set, spelling), separator) (common/join.h): the lists of help texts
/// and error messages ("banking, clinc, hwu") and of comma-separated defaults (separator ",").
std::string join_dialoglue_task_names(TaskSet set, TaskSpelling spelling = TaskSpelling::Name,
                                      std::string_view separator = ", ");

}  // namespace dialtree::readers
