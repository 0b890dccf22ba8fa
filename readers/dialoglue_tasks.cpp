#include "readers/dialoglue_tasks.h"

#include "common/check.h"
#include "common/join.h"

namespace dialtree::readers {

const std::vector<DialoglueTaskInfo>& dialoglue_tasks() {
  using T = DialoglueTask;
  using F = TaskFamily;
  // task, name, data folder, family, metric, fine_tune (eval dialoglue), probe (eval probe)
  static const std::vector<DialoglueTaskInfo> table = {
      {T::Banking, "banking", "banking", F::Intent, "accuracy", true, true},
      {T::Clinc, "clinc", "clinc", F::Intent, "accuracy", true, true},
      {T::Hwu, "hwu", "hwu", F::Intent, "accuracy", true, true},
      {T::Restaurant8k, "restaurant8k", "restaurant8k", F::Slot, "slot F1", true, true},
      {T::Dstc8, "dstc8", "dstc8_sgd", F::Slot, "slot F1", true, true},
      {T::Top, "top", "top", F::Top, "exact match", true, true},
      // No DST head yet: `eval score` scores TripPy's output, nothing fine-tunes or probes it.
      {T::Multiwoz, "multiwoz", "multiwoz", F::Dst, "joint goal accuracy", false, false},
  };
  return table;
}

const DialoglueTaskInfo& dialoglue_task(DialoglueTask task) {
  for (const auto& row : dialoglue_tasks()) {
    if (row.task == task) return row;
  }
  DIALTREE_UNREACHABLE("unknown DialoglueTask " + std::to_string(static_cast<int>(task)));
}

const DialoglueTaskInfo* find_dialoglue_task(std::string_view name) {
  for (const auto& row : dialoglue_tasks()) {
    if (name == row.name || name == row.folder) return &row;
  }
  return nullptr;
}

bool in_task_set(const DialoglueTaskInfo& row, TaskSet set) {
  switch (set) {
    case TaskSet::All:
      return true;
    case TaskSet::Intent:
      return row.family == TaskFamily::Intent;
    case TaskSet::Tagging:
      return row.family == TaskFamily::Slot || row.family == TaskFamily::Top;
    case TaskSet::FineTune:
      return row.fine_tune;
    case TaskSet::Probe:
      return row.probe;
  }
  DIALTREE_UNREACHABLE("unknown TaskSet " + std::to_string(static_cast<int>(set)));
}

std::string dialoglue_task_folder(std::string_view name) {
  const DialoglueTaskInfo* row = find_dialoglue_task(name);
  return std::string(row != nullptr ? row->folder : name);
}

bool is_dialoglue_task(std::string_view name, TaskSet set) {
  const DialoglueTaskInfo* row = find_dialoglue_task(name);
  return row != nullptr && in_task_set(*row, set);
}

std::vector<std::string> dialoglue_task_names(TaskSet set, TaskSpelling spelling) {
  std::vector<std::string> out;
  for (const auto& row : dialoglue_tasks()) {
    if (!in_task_set(row, set)) continue;
    const std::string name(row.name), folder(row.folder);
    switch (spelling) {
      case TaskSpelling::Name:
        out.push_back(name);
        break;
      case TaskSpelling::Folder:
        out.push_back(folder);
        break;
      case TaskSpelling::NameAndFolder:
        out.push_back(name);
        if (folder != name) out.push_back(folder);
        break;
      case TaskSpelling::NameOrFolder:
        out.push_back(folder == name ? name : name + " (or " + folder + ")");
        break;
    }
  }
  return out;
}

std::string join_dialoglue_task_names(TaskSet set, TaskSpelling spelling,
                                      std::string_view separator) {
  return join(dialoglue_task_names(set, spelling), separator);
}

}  // namespace dialtree::readers
