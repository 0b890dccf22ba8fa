// DialoGLUE task data for fine-tuning (torch-free): where the data lives, and the train / val /
// test splits of the intent tasks (docs/dialoglue.md §1, §3) in the full or few-shot setting.
#pragma once

#include <string>
#include <vector>

namespace dialtree::eval {

/// Training-set choice of docs/dialoglue.md §1: `full` = train.*, `few` = train_10.* (10 examples
/// per intent for the intent tasks, 10% for the others).
enum class Setting { Full, Few };

/// "full" / "few" -> Setting. @throws std::invalid_argument naming the value otherwise.
Setting parse_setting(const std::string& name);

/// The DialoGLUE data folder that the commands fall back to when neither a flag nor
/// $DIALTREE_DATA names one, relative to the working directory (resolve_data_dir(), and `eval
/// score`'s answer key gt_test.json in it).
inline constexpr const char* kFallbackDialoglueDir = "../shared/data/dialoglue";

/// The DialoGLUE data folder: `given` when non-empty, else $DIALTREE_DATA, else
/// kFallbackDialoglueDir relative to the working directory. The folder must hold
/// `gt_test.json` or at least one data folder of a fine-tunable task (readers/dialoglue_tasks.h).
/// @throws std::invalid_argument saying where it looked and how to get DialoGLUE
///   (github.com/alexa/dialoglue, data_utils/download_data.sh).
std::string resolve_data_dir(const std::string& given);

/// One split of an intent task: parallel texts and class ids (ids index IntentTask::labels).
struct IntentSplit {
  std::vector<std::string> texts;
  std::vector<int> labels;
};

/// An intent task (banking, clinc, hwu): categories.json order defines the class ids.
struct IntentTask {
  std::string name;                 ///< "banking", "clinc" or "hwu"
  std::vector<std::string> labels;  ///< class id -> label string (categories.json)
  IntentSplit train, val, test;     ///< train = train.csv or train_10.csv per Setting
};

/// Reads `data_dir/<task>/{train|train_10,val,test}.csv` and categories.json with the strict
/// DialoGLUE CSV reader (readers/intent_csv.h).
/// @throws std::invalid_argument for a task that is not an intent task; DataError naming the
///   file, line and field for bad data (an unknown label, a malformed row, a missing file).
IntentTask load_intent_task(const std::string& data_dir, const std::string& task, Setting setting);

/// True for the intent tasks of the task table (readers/dialoglue_tasks.h): banking, clinc, hwu.
bool is_intent_task(const std::string& task);

/// True for the tagging tasks of the task table, by name or data folder: restaurant8k, dstc8
/// (alias dstc8_sgd) and top.
bool is_tagging_task(const std::string& task);

/// One example of a tagging task at DialoGLUE's word level: the words the gold labels are
/// defined on (slot tasks: the requested slot names prefixed, docs/dialoglue.md §4 steps 1-3; TOP:
/// the file's words, §5) and their BIO tags.
struct TaggingExample {
  std::vector<std::string> words;
  std::vector<std::string> tags;  ///< one per word: "O", "B-x", "I-x"
  std::string intent;             ///< TOP root intent ("" for slot tasks)
};

/// A tagging task (restaurant8k, dstc8_sgd: slot BIO tags; top: BIO tags plus a root intent).
struct TaggingTask {
  std::string name;                        ///< "restaurant8k", "dstc8_sgd" or "top"
  std::vector<std::string> tag_labels;     ///< tag id -> tag (slot vocab.txt / TOP vocab.slot)
  std::vector<std::string> intent_labels;  ///< TOP: intent id -> intent (vocab.intent); else empty
  std::vector<TaggingExample> train, val, test;
};

/// Reads a tagging task from `data_dir/<task>/`: slot tasks {train|train_10, val, test}.json +
/// vocab.txt, TOP {train|train_10, eval, test}.txt + vocab.slot + vocab.intent.
/// @throws std::invalid_argument for a task that is not a tagging task; DataError /
///   SchemaError naming the file, record or line and field for bad data, including a training
///   tag or intent missing from the task's vocabulary.
TaggingTask load_tagging_task(const std::string& data_dir, const std::string& task,
                              Setting setting);

}  // namespace dialtree::eval
