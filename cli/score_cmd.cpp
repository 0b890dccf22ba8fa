// `dialtree eval score`: scores a DialoGLUE prediction file with DialoGLUE's own rules
// (eval/metrics.h, docs/evaluation.md). Torch-free: the light `dialtree` runs it itself.
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "eval/metrics.h"
#include "eval/submission.h"
#include "eval/tasks.h"

namespace dialtree::cli {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

struct ScoreArgs {
  std::string task, predictions, gold, dataset_config;
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
  const std::string rel = "../shared/data/dialoglue/gt_test.json";
  if (fs::is_regular_file(rel, ec)) return rel;
  throw std::invalid_argument(
      "no DialoGLUE answer key: --gold was not given and there is no gt_test.json at " + looked +
      rel +
      " (relative to the working directory); get gt_test.json from "
      "https://github.com/alexa/dialoglue (repository root; data_utils/download_data.sh fetches "
      "the task data), then pass --gold FILE or set DIALTREE_DATA to the folder holding it");
}

void print_score(const eval::TaskScore& s, const ScoreArgs& a, const std::string& gold) {
  // Predictions that cannot be right are scored as DialoGLUE scores them, and said on stderr.
  for (const std::string& w : s.warnings) fmt::print(stderr, "warning: {}\n", w);
  if (a.as_json) {
    json j = {{"task", s.task},         {"metric", s.metric}, {"value", s.value},
              {"score", s.value * 100}, {"count", s.count},   {"predictions", a.predictions}};
    if (!gold.empty()) j["gold"] = gold;
    j["warnings"] = s.warnings;
    fmt::print("{}\n", j.dump());
    return;
  }
  fmt::print("{} {} {:.2f} ({} {})\n", s.task, s.metric, s.value * 100, s.count,
             s.task == "multiwoz" ? "turns" : "examples");
}

void run_score(const ScoreArgs& a) {
  const eval::Task task = eval::parse_task(a.task);
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
  print_score(eval::score_task_files(task, a.predictions, gold), a, gold);
}

}  // namespace

void register_eval_score(CLI::App& eval) {
  auto a = std::make_shared<ScoreArgs>();
  CLI::App* cmd = eval.add_subcommand(
      "score",
      "Score a DialoGLUE prediction file exactly as DialoGLUE's evaluate.py does: accuracy "
      "(banking, clinc, hwu), slot F1 (restaurant8k, dstc8), exact match (top), TripPy joint goal "
      "accuracy (multiwoz). Prints '<task> <metric> <score x100, 2 decimals> (<n> examples)'.");
  cmd->add_option("--task", a->task,
                  "Task: banking, clinc, hwu, restaurant8k, dstc8 (or dstc8_sgd), "
                  "top, multiwoz")
      ->required()
      ->check(CLI::IsMember(eval::task_names()));
  cmd->add_option("--predictions", a->predictions,
                  "Prediction file: the task's JSON list in test-file order (labels; span-string "
                  "lists; [intent, [tags]] pairs; multiwoz: TripPy's pred_res.test.final.json "
                  "records), or a DialoGLUE submission object holding it under the task's key")
      ->required();
  cmd->add_option("--gold", a->gold,
                  "DialoGLUE answer key gt_test.json (default: $DIALTREE_DATA/gt_test.json, else "
                  "../shared/data/dialoglue/gt_test.json); not for multiwoz");
  cmd->add_option("--dataset-config", a->dataset_config,
                  "multiwoz only: TripPy's dataset config (class_types, slots, label_maps), e.g. "
                  "dataset_config/multiwoz21.json");
  cmd->add_flag("--json", a->as_json,
                "Print one JSON object {task, metric, value (fraction), score (x100), count, "
                "predictions, gold, warnings}");
  cmd->callback([a] { run_score(*a); });
}

}  // namespace dialtree::cli
