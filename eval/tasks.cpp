#include "eval/tasks.h"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "common/error.h"
#include "data/dialoglue_labels.h"
#include "readers/dialoglue_tasks.h"
#include "readers/intent_csv.h"
#include "readers/slot_json.h"
#include "readers/top.h"

namespace dialtree::eval {

namespace fs = std::filesystem;

Setting parse_setting(const std::string& name) {
  if (name == "full") return Setting::Full;
  if (name == "few") return Setting::Few;
  throw std::invalid_argument("setting must be 'full' or 'few', got '" + name + "'");
}

namespace {

bool looks_like_dialoglue(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return false;
  if (fs::exists(dir / "gt_test.json", ec)) return true;
  for (const auto& folder :
       readers::dialoglue_task_names(readers::TaskSet::FineTune, readers::TaskSpelling::Folder)) {
    if (fs::exists(dir / folder, ec)) return true;
  }
  return false;
}

}  // namespace

std::string resolve_data_dir(const std::string& given) {
  if (!given.empty()) {
    if (!looks_like_dialoglue(given)) {
      throw std::invalid_argument(
          "--data-dir " + given +
          ": not a DialoGLUE data folder (no gt_test.json and no task folder: " +
          readers::join_dialoglue_task_names(readers::TaskSet::FineTune,
                                             readers::TaskSpelling::Folder, "/, ") +
          "/)");
    }
    return given;
  }
  std::string looked;
  if (const char* env = std::getenv("DIALTREE_DATA"); env != nullptr && *env != '\0') {
    if (looks_like_dialoglue(env)) return env;
    looked = std::string(env) + " ($DIALTREE_DATA) and ";
  }
  const std::string rel = kFallbackDialoglueDir;
  if (looks_like_dialoglue(rel)) return rel;
  throw std::invalid_argument(
      "no DialoGLUE data: looked in " + looked + rel +
      " (relative to the working directory); get it from https://github.com/alexa/dialoglue "
      "(data_utils/download_data.sh), then pass --data-dir DIR or set DIALTREE_DATA=DIR");
}

bool is_intent_task(const std::string& task) {
  return readers::is_dialoglue_task(task, readers::TaskSet::Intent);
}

bool is_tagging_task(const std::string& task) {
  return readers::is_dialoglue_task(task, readers::TaskSet::Tagging);
}

TaggingTask load_tagging_task(const std::string& data_dir, const std::string& task,
                              Setting setting) {
  if (!is_tagging_task(task)) {
    throw std::invalid_argument("'" + task + "' is not a tagging task (" +
                                readers::join_dialoglue_task_names(readers::TaskSet::Tagging,
                                                                   readers::TaskSpelling::Folder) +
                                ")");
  }
  TaggingTask t;
  t.name = readers::dialoglue_task_folder(task);
  const fs::path dir = fs::path(data_dir) / t.name;
  const bool few = setting == Setting::Few;
  if (t.name == "top") {
    t.tag_labels = readers::read_vocab_lines((dir / "vocab.slot").string());
    t.intent_labels = readers::read_vocab_lines((dir / "vocab.intent").string());
    auto read = [&](const char* file) {
      std::vector<TaggingExample> out;
      for (auto& ex : readers::read_top((dir / file).string())) {
        out.push_back({std::move(ex.words), std::move(ex.tags), std::move(ex.intent)});
      }
      return out;
    };
    t.train = read(few ? "train_10.txt" : "train.txt");
    t.val = read("eval.txt");
    t.test = read("test.txt");
  } else {
    t.tag_labels = readers::read_slot_vocab((dir / "vocab.txt").string());
    auto read = [&](const char* file) {
      std::vector<TaggingExample> out;
      for (const auto& ex : readers::read_slot_json((dir / file).string())) {
        data::WordTags wt = data::slot_word_tags(ex);
        out.push_back({std::move(wt.words), std::move(wt.tags), ""});
      }
      return out;
    };
    t.train = read(few ? "train_10.json" : "train.json");
    t.val = read("val.json");
    t.test = read("test.json");
  }
  // Every training tag / intent must have an id.
  const std::string train_file = (dir / (t.name == "top" ? (few ? "train_10.txt" : "train.txt")
                                                         : (few ? "train_10.json" : "train.json")))
                                     .string();
  auto known = [](const std::vector<std::string>& vocab, const std::string& x) {
    for (const auto& v : vocab) {
      if (v == x) return true;
    }
    return false;
  };
  for (std::size_t i = 0; i < t.train.size(); ++i) {
    for (const auto& tag : t.train[i].tags) {
      if (!known(t.tag_labels, tag)) {
        throw DataError(train_file, "record " + std::to_string(i), "tags",
                        "tag '" + tag + "' is not in the task's tag vocabulary");
      }
    }
    if (t.name == "top" && !known(t.intent_labels, t.train[i].intent)) {
      throw DataError(train_file, "record " + std::to_string(i), "intent",
                      "intent '" + t.train[i].intent + "' is not in vocab.intent");
    }
  }
  return t;
}

IntentTask load_intent_task(const std::string& data_dir, const std::string& task, Setting setting) {
  if (!is_intent_task(task)) {
    throw std::invalid_argument("'" + task + "' is not an intent task (" +
                                readers::join_dialoglue_task_names(readers::TaskSet::Intent) + ")");
  }
  const fs::path dir = fs::path(data_dir) / task;
  const readers::LabelMap labels =
      readers::LabelMap::from_categories_json((dir / "categories.json").string());
  auto read = [&](const char* file) {
    IntentSplit split;
    for (auto& row : readers::read_intent_csv((dir / file).string(), labels).rows) {
      split.texts.push_back(std::move(row.text));
      split.labels.push_back(row.label_id);
    }
    return split;
  };
  IntentTask t;
  t.name = task;
  t.labels = labels.names();
  t.train = read(setting == Setting::Few ? "train_10.csv" : "train.csv");
  t.val = read("val.csv");
  t.test = read("test.csv");
  return t;
}

}  // namespace dialtree::eval
