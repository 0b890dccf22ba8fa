// `dialtree eval score`: scores a DialoGLUE prediction file with DialoGLUE's own rules
// (eval/metrics.h, docs/evaluation.md). Torch-free: the light `dialtree` runs it itself.
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common_options.h"
#include "common/join.h"
#include "eval/metrics.h"
#include "eval/submission.h"
#include "eval/tag_mapping.h"
#include "eval/tasks.h"
#include "readers/dialoglue_tasks.h"

namespace dialtree::cli {

namespace {

namespace fs = std::filesystem;
using readers::join_dialoglue_task_names;
using readers::TaskSet;
using readers::TaskSpelling;
using json = nlohmann::json;

struct ScoreArgs {
  std::string task, predictions, word_tags, data_dir, gold, dataset_config;
  bool as_json = false;
};

// --gold when given; else $DIALTREE_DATA/gt_test.json; else ../shared/data/dialoglue/gt_test.json
// relative to the working directory. @throws std::invalid_argument telling how to get DialoGLUE.
std::string resolve_gold(const std::string& given) {
  if (!given.empty()) return given;
  std::error_code ec;
  std::string looked;
  if (const char* env = std::getenv("DIALTREE_DATA"); env && *env) {
    const std::string p = (fs::path(env) / "gt_test.json").string();
    if (fs::is_regular_file(p, ec)) return p;
    looked = p + " (from $DIALTREE_DATA) or ";
  }
  const std::string rel = (fs::path(eval::kFallbackDialoglueDir) / "gt_test.json").string();
  if (fs::is_regular_file(rel, ec)) return rel;
  throw std::invalid_argument(
      "no DialoGLUE answer key: --gold was not given and there is no gt_test.json at " + looked +
      rel +
      " (relative to the working directory); get gt_test.json from "
      "https://github.com/alexa/dialoglue (repository root; data_utils/download_data.sh fetches "
      "the task data), then pass --gold FILE or set DIALTREE_DATA to the folder holding it");
}

// The per-type figures of a slot task's score (empty for the other tasks).
json slot_types_json(const eval::TaskScore& s) {
  json types = json::array();
  for (const auto& t : s.slot_types) {
    types.push_back({{"type", t.type},
                     {"f1", t.f1 * 100},
                     {"precision", t.precision * 100},
                     {"recall", t.recall * 100},
                     {"true_positives", t.true_positives},
                     {"predicted", t.predicted},
                     {"to_recall", t.to_recall}});
  }
  return types;
}

// The input file, under the key its option has.
void name_input(json& j, const ScoreArgs& a) {
  if (a.word_tags.empty()) {
    j["predictions"] = a.predictions;
  } else {
    j["word_tags"] = a.word_tags;
  }
}

void print_score(const eval::TaskScore& s, const ScoreArgs& a, const std::string& gold) {
  // Predictions that cannot be right are scored as DialoGLUE scores them, and said on stderr.
  for (const std::string& w : s.warnings) fmt::print(stderr, "warning: {}\n", w);
  if (a.as_json) {
    json j = {{"task", s.task},
              {"metric", s.metric},
              {"value", s.value},
              {"score", s.value * 100},
              {"count", s.count}};
    name_input(j, a);
    if (!gold.empty()) j["gold"] = gold;
    j["warnings"] = s.warnings;
    if (!s.slot_types.empty()) j["slot_types"] = slot_types_json(s);
    fmt::print("{}\n", j.dump());
    return;
  }
  fmt::print(
      "{} {} {:.2f} ({} {})\n", s.task, s.metric, s.value * 100, s.count,
      eval::task_kind(eval::parse_task(s.task)) == eval::TaskKind::Dst ? "turns" : "examples");
}

// A few-shot submission's runs (dump_outputs_fewshot.py): every run, then their mean ± std. The
// JSON has the shape of one score (value and score: the mean) plus `runs`, whatever their number.
void print_runs(const std::vector<eval::TaskScore>& runs, const ScoreArgs& a,
                const std::string& gold) {
  std::vector<double> scores;
  for (const auto& s : runs) scores.push_back(s.value * 100);
  const eval::MeanStd ms = eval::mean_std(scores);
  if (a.as_json) {
    json per_run = json::array();
    for (const auto& s : runs) {
      for (const std::string& w : s.warnings) fmt::print(stderr, "warning: {}\n", w);
      json r = {{"value", s.value}, {"score", s.value * 100}, {"warnings", s.warnings}};
      if (!s.slot_types.empty()) r["slot_types"] = slot_types_json(s);
      per_run.push_back(r);
    }
    json j = {{"task", runs[0].task},  {"metric", runs[0].metric}, {"value", ms.mean / 100},
              {"score", ms.mean},      {"std", ms.std},            {"count", runs[0].count},
              {"runs", per_run},       {"gold", gold}};
    name_input(j, a);
    fmt::print("{}\n", j.dump());
    return;
  }
  for (std::size_t k = 0; k < runs.size(); ++k) {
    fmt::print("run {}: ", k + 1);
    print_score(runs[k], a, gold);
  }
  fmt::print("{} {} {:.2f} ± {:.2f} over {} run{} (sample std; {} examples each)\n",
             runs[0].task, runs[0].metric, ms.mean, ms.std, runs.size(),
             runs.size() == 1 ? "" : "s", runs[0].count);
}

// "<why> applies to the tagging tasks (...), not '<task>'": `why` (an option, a command) was
// given a task that is not a tagging task.
std::invalid_argument tagging_only(const std::string& why, const std::string& task) {
  return std::invalid_argument(why + " applies to the tagging tasks (" +
                               join_dialoglue_task_names(TaskSet::Tagging) + "), not '" + task +
                               "'");
}

// The tagging task's examples as DialoGLUE defines them, read from the resolved data folder;
// `why` names the option that needs a tagging task.
eval::TaggingTask tagging_task(const std::string& task, const std::string& data_dir,
                               eval::Setting setting, const std::string& why) {
  if (!eval::is_tagging_task(task)) throw tagging_only(why, task);
  return eval::load_tagging_task(data_dir, task, setting);
}

void run_score(const ScoreArgs& a) {
  const eval::Task task = eval::parse_task(a.task);
  if (a.predictions.empty() == a.word_tags.empty()) {
    throw std::invalid_argument("give one of --predictions (a DialoGLUE prediction file) and "
                                "--word-tags (word-level tags as JSON lines)");
  }
  if (!a.word_tags.empty() && !eval::is_tagging_task(a.task))
    throw tagging_only("--word-tags", a.task);
  if (!a.data_dir.empty() && a.word_tags.empty()) {
    throw std::invalid_argument("--data-dir applies with --word-tags only (the words of the test "
                                "examples); --predictions files are scored as they are");
  }
  if (eval::task_kind(task) == eval::TaskKind::Dst) {
    if (!a.gold.empty()) {
      throw std::invalid_argument(
          "--gold does not apply to --task multiwoz: gt_test.json holds no MultiWOZ gold; TripPy's "
          "prediction file (pred_res.test.final.json) carries its own slot_groundtruth values");
    }
    if (a.dataset_config.empty()) {
      throw std::invalid_argument(
          "--task multiwoz needs --dataset-config: TripPy's dataset_config/multiwoz21.json "
          "(class_types, slots, label_maps) as used to train the model, since the prediction "
          "file stores class indices; DialoGLUE's evaluate.py embeds one as `mwoz_config`");
    }
    const eval::TripPyConfig config = eval::read_trippy_config(a.dataset_config);
    print_score(eval::score_trippy_file(a.predictions, config), a, "");
    return;
  }
  if (!a.dataset_config.empty()) {
    throw std::invalid_argument("--dataset-config applies to --task multiwoz only");
  }
  const std::string gold = resolve_gold(a.gold);
  json predictions;
  if (!a.word_tags.empty()) {
    // Word tags of the test examples, spread over BERT pieces by DialoGLUE's rules.
    const std::string data_dir = eval::resolve_data_dir(a.data_dir);
    const eval::TaggingTask t = tagging_task(a.task, data_dir, eval::Setting::Few, "--word-tags");
    std::vector<std::vector<std::string>> tags;
    std::vector<std::string> intents;
    eval::read_word_tags_jsonl(a.word_tags, t, t.test, tags, intents);
    predictions = eval::TagMapper(data_dir, t).submission(t.test, tags, intents);
  } else {
    predictions = json_parse_file(a.predictions);
  }
  const std::string& name = a.word_tags.empty() ? a.predictions : a.word_tags;
  bool run_list = false;
  const std::vector<eval::TaskScore> runs =
      eval::score_task_runs(task, predictions, json_parse_file(gold), name, gold, &run_list);
  if (run_list) {
    print_runs(runs, a, gold);
  } else {
    print_score(runs[0], a, gold);
  }
}

struct WordsArgs {
  std::string task, split = "test", data_dir, out;
};

void run_words(const WordsArgs& a) {
  const std::string data_dir = eval::resolve_data_dir(a.data_dir);
  // The files the command reads: every file of the task's data folder.
  if (eval::is_tagging_task(a.task)) {
    std::error_code ec;
    for (const auto& e :
         fs::directory_iterator(fs::path(data_dir) / readers::dialoglue_task_folder(a.task), ec)) {
      refuse_overwriting_input("--out", a.out, "a file of the task's data folder",
                               e.path().string());
    }
  }
  const eval::TaggingTask t = tagging_task(
      a.task, data_dir, a.split == "train" ? eval::Setting::Full : eval::Setting::Few,
      "eval words");
  const std::vector<eval::TaggingExample>& xs = a.split == "val"    ? t.val
                                                : a.split == "test" ? t.test
                                                                    : t.train;
  eval::write_word_tags_jsonl(a.out, xs, !t.intent_labels.empty());
  fmt::print("{} {}: {} examples -> {}\n", a.task, a.split, xs.size(), a.out);
}

// "accuracy (banking, clinc, hwu), slot F1 (restaurant8k, dstc8), ...": each metric of the task
// table with its tasks (rows of one metric are adjacent there).
std::string metrics_by_task() {
  const std::vector<readers::DialoglueTaskInfo>& rows = readers::dialoglue_tasks();
  std::string out;
  for (std::size_t i = 0; i < rows.size();) {
    std::vector<std::string> names;
    std::size_t j = i;
    for (; j < rows.size() && rows[j].metric == rows[i].metric; ++j)
      names.emplace_back(rows[j].name);
    out += (out.empty() ? "" : ", ") + std::string(rows[i].metric) + " (" +
           join(names) + ")";
    i = j;
  }
  return out;
}

}  // namespace

void register_eval_words(CLI::App& eval) {
  auto a = std::make_shared<WordsArgs>();
  CLI::App* cmd = eval.add_subcommand(
      "words",
      "Write a tagging task's split at DialoGLUE's word level as JSON lines: {\"words\", "
      "\"tags\"} (top: plus \"intent\") per example, in file order; slot tasks carry the "
      "requested slot names in front, as DialoGLUE builds them (docs/dialoglue.md §4). A tagger "
      "outside dialtree trains on these and is scored with `eval score --word-tags`.");
  cmd->add_option("--task", a->task,
                  join_dialoglue_task_names(TaskSet::Tagging, TaskSpelling::NameOrFolder))
      ->required();
  cmd->add_option("--split", a->split, "train_10, train, val or test")
      ->check(CLI::IsMember({"train_10", "train", "val", "test"}))
      ->capture_default_str();
  add_data_dir_option(cmd, a->data_dir, "");
  add_out_option(cmd, a->out, OutputKind::File, ".jsonl, written atomically");
  cmd->callback([a] { run_words(*a); });
}

void register_eval_score(CLI::App& eval) {
  auto a = std::make_shared<ScoreArgs>();
  CLI::App* cmd = eval.add_subcommand(
      "score",
      "Score a DialoGLUE prediction file exactly as DialoGLUE's evaluate.py does (multiwoz: as "
      "TripPy does): " +
          metrics_by_task() +
          ". Prints '<task> <metric> <score x100, 2 decimals> (<n> examples)'.");
  cmd->add_option("--task", a->task,
                  "Task: " + join_dialoglue_task_names(TaskSet::All, TaskSpelling::NameOrFolder))
      ->required()
      ->check(CLI::IsMember(eval::task_names()));
  cmd->add_option("--predictions", a->predictions,
                  "Prediction file: the task's JSON list in test-file order (labels; span-string "
                  "lists; [intent, [tags]] pairs; multiwoz: TripPy's pred_res.test.final.json "
                  "records), or a DialoGLUE submission object holding it under the task's key; "
                  "a few-shot submission (dump_outputs_fewshot.py: a list of runs per task) is "
                  "scored run by run, then mean ± std");
  cmd->add_option("--word-tags", a->word_tags,
                  "Instead of --predictions, for restaurant8k, dstc8, top: predicted word-level "
                  "tags as JSON lines, one {\"tags\": [...]} (top: plus \"intent\") per test "
                  "example in order (the words of `dialtree eval words --split test`), spread "
                  "over BERT pieces by DialoGLUE's rules before scoring");
  add_data_dir_option(cmd, a->data_dir, "for --word-tags");
  cmd->add_option("--gold", a->gold,
                  std::string("DialoGLUE answer key gt_test.json (default: "
                              "$DIALTREE_DATA/gt_test.json, else ") +
                      eval::kFallbackDialoglueDir + "/gt_test.json); not for multiwoz");
  cmd->add_option("--dataset-config", a->dataset_config,
                  "multiwoz only: TripPy's dataset config (class_types, slots, label_maps), e.g. "
                  "dataset_config/multiwoz21.json");
  cmd->add_flag("--json", a->as_json,
                "Print one JSON object {task, metric, value (fraction), score (x100), count, "
                "predictions, gold, warnings}; slot tasks add slot_types, the per-type F1, "
                "precision, recall (x100) and counts that slot F1 averages");
  cmd->callback([a] { run_score(*a); });
}

}  // namespace dialtree::cli
