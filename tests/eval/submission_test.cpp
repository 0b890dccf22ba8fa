// DialoGLUE submission files and gt_test.json (eval/submission.h): scoring the real answer key
// against itself per task, written-and-read-back submissions, and the errors of malformed files.
#include "eval/submission.h"

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/error.h"
#include "readers/readers_test_util.h"
#include "test_data.h"
#include "test_paths.h"

namespace dialtree::eval {
namespace {

using dialtree::testing::answer_key;
using dialtree::testing::percent;

using dialtree::testing::error_of;
using dialtree::testing::shared_data;
using dialtree::testing::TempDir;
using dialtree::testing::write_bytes;
using ::testing::HasSubstr;

std::string gold_path() {
  return shared_data("dialoglue/gt_test.json");
}

TEST(Tasks, NamesAliasesAndKeys) {
  EXPECT_EQ(parse_task("dstc8_sgd"), Task::Dstc8);
  EXPECT_EQ(parse_task("dstc8"), Task::Dstc8);
  EXPECT_EQ(task_key(Task::Dstc8), "dstc8");
  EXPECT_EQ(parse_task("banking"), Task::Banking);
  EXPECT_EQ(task_kind(Task::Top), TaskKind::Top);
  EXPECT_EQ(task_kind(Task::Restaurant8k), TaskKind::Slot);
  EXPECT_EQ(metric_name(Task::Hwu), "accuracy");
  EXPECT_EQ(metric_name(Task::Restaurant8k), "slot F1");
  EXPECT_EQ(metric_name(Task::Top), "exact match");
  EXPECT_EQ(metric_name(Task::Multiwoz), "joint goal accuracy");
  const std::string e = error_of<std::invalid_argument>([] { parse_task("Banking77"); });
  EXPECT_THAT(e, HasSubstr("unknown DialoGLUE task 'Banking77'"));
  EXPECT_THAT(e, HasSubstr("banking, clinc, hwu, restaurant8k, dstc8, dstc8_sgd, top, multiwoz"));
}

// The answer key scored against itself, through the same path as `dialtree eval score`.
TEST(ScoreTask, GoldFileAgainstItselfPrints100ForSixTasks) {
  const std::pair<Task, std::size_t> tasks[] = {{Task::Hwu, 1076},   {Task::Banking, 3080},
                                                {Task::Clinc, 4500}, {Task::Restaurant8k, 3731},
                                                {Task::Dstc8, 1813}, {Task::Top, 9042}};
  for (const auto& [task, count] : tasks) {
    const TaskScore s = score_task_files(task, gold_path(), gold_path());
    EXPECT_EQ(s.task, task_key(task));
    EXPECT_EQ(s.count, count) << s.task;
    EXPECT_EQ(percent(s.value), "100.00") << s.task;
    if (task_kind(task) == TaskKind::Slot) {
      EXPECT_LT(s.value, 1.0) << s.task;  // DialoGLUE's epsilons
    } else {
      EXPECT_EQ(s.value, 1.0) << s.task;
    }
  }
  // Reference values from DialoGLUE's evaluate_slot (Python) on the same file.
  EXPECT_NEAR(score_task_files(Task::Restaurant8k, gold_path(), gold_path()).value,
              0.9999949809175265, 1e-15);
  EXPECT_NEAR(score_task_files(Task::Dstc8, gold_path(), gold_path()).value, 0.9999947732978426,
              1e-15);
}

// Predictions that can never be right are scored as DialoGLUE scores them (0 for them) and
// said (docs/evaluation.md; break test, docs/failure-cases.md B15); the real key gives none.
TEST(ScoreTask, PredictionsThatCannotBeRightAreWarnedAbout) {
  for (const Task task : {Task::Hwu, Task::Restaurant8k, Task::Top}) {
    EXPECT_TRUE(score_task_files(task, gold_path(), gold_path()).warnings.empty()) << task_key(task);
  }
  const json gold = {{"hwu", {"alarm_set", "alarm_query", "alarm_set"}},
                     {"restaurant8k", json::array({json::array({"people:0-1"}), json::array()})},
                     {"top", json::array({json::array({"IN_A", {"O", "B-SL_X"}}),
                                          json::array({"IN_B", {"O"}})})}};
  TaskScore s = score_task(Task::Hwu, json{"alarm_set", "ALARM_QUERY", "nonexistent"}, gold,
                           "p.json", "gt.json");
  EXPECT_EQ(percent(s.value), "33.33");
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_EQ(s.warnings[0],
            "p.json: 2 of 3 predicted labels are not labels of the answer key (first: record 1, "
            "'ALARM_QUERY') and can never be right (another spelling or case of the label "
            "names?)");
  s = score_task(Task::Restaurant8k, json::array({json::array({"people 0 1", "people:0-1"}),
                                                  json::array({"time:3"})}),
                 gold, "p.json", "gt.json");
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_EQ(s.warnings[0],
            "p.json: 2 of 3 predicted spans are not of the form slot:start-end (first: record 0, "
            "'people 0 1') and can never be right");
  s = score_task(Task::Top,
                 json::array({json::array({"IN_A", {"O"}}), json::array({"IN_B", {"O"}})}), gold,
                 "p.json", "gt.json");
  EXPECT_EQ(percent(s.value), "50.00");
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_THAT(s.warnings[0], HasSubstr("1 of 2 predicted tag lists differ in length from the "
                                       "answer key's (first: record 0, 1 tags against 2)"));
  // A bare list as the answer key: a prediction file scored against itself.
  s = score_task(Task::Hwu, json{"alarm_set"}, json{"alarm_set"}, "p.json", "p.json");
  EXPECT_EQ(s.value, 1.0);
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_THAT(s.warnings[0], HasSubstr("p.json is a bare list, not DialoGLUE's answer key"));
}

TEST(ScoreTask, MultiwozHasNoGoldInGtTest) {
  EXPECT_TRUE(answer_key().at("multiwoz").empty());
  const std::string e = error_of<std::invalid_argument>(
      [] { score_task_files(Task::Multiwoz, gold_path(), gold_path()); });
  EXPECT_THAT(e, HasSubstr("gt_test.json has no MultiWOZ gold"));
}

TEST(Submission, WrittenFilesReadBackAndScore) {
  TempDir dir;
  const auto labels = answer_key().at("banking").get<std::vector<std::string>>();
  auto flipped = labels;
  flipped[7] = "not_a_label";
  flipped[8] = "not_a_label";
  flipped[9] = "not_a_label";
  write_submission(dir.file("banking.json"), intent_submission_json(flipped));
  TaskScore s = score_task_files(Task::Banking, dir.file("banking.json"), gold_path());
  EXPECT_EQ(s.value, 3077.0 / 3080.0);
  EXPECT_EQ(s.count, 3080u);

  const auto spans = answer_key().at("restaurant8k").get<std::vector<SpanList>>();
  write_submission(dir.file("r8k.json"), slot_submission_json(spans));
  EXPECT_EQ(percent(score_task_files(Task::Restaurant8k, dir.file("r8k.json"), gold_path()).value),
            "100.00");

  const std::vector<TopParse> top = top_parses_from_json(answer_key().at("top"), "gt_test.json");
  EXPECT_EQ(top_submission_json(top), answer_key().at("top"));
  auto wrong = top;
  wrong[5].intent = "IN_NOPE";
  write_submission(dir.file("top.json"), top_submission_json(wrong));
  EXPECT_EQ(score_task_files(Task::Top, dir.file("top.json"), gold_path()).value, 9041.0 / 9042.0);

  // A whole DialoGLUE submission object: each task is taken from its key.
  json all = json::object();
  all["banking"] = intent_submission_json(labels);
  all["dstc8"] = answer_key().at("dstc8");
  write_submission(dir.file("all.json"), all);
  EXPECT_EQ(score_task_files(Task::Banking, dir.file("all.json"), gold_path()).value, 1.0);
  EXPECT_EQ(percent(score_task_files(Task::Dstc8, dir.file("all.json"), gold_path()).value),
            "100.00");
  const std::string e = error_of<SchemaError>(
      [&] { score_task_files(Task::Clinc, dir.file("all.json"), gold_path()); });
  EXPECT_THAT(e, HasSubstr("all.json: field 'clinc': is missing"));

  // The writer refuses a folder.
  EXPECT_THROW(write_submission(dir.path().string(), all), std::invalid_argument);
  // Compact JSON and a final newline.
  write_submission(dir.file("small.json"), intent_submission_json({"a", "b"}));
  std::ifstream in(dir.file("small.json"));
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "[\"a\",\"b\"]\n");
}

// Malformed prediction files: the error names the file, the record index and the field.
TEST(Submission, MalformedFilesGiveNamedErrors) {
  TempDir dir;
  const std::string preds = dir.file("preds.json");
  auto intent = answer_key().at("banking");
  intent[17] = 3.5;
  write_bytes(preds, intent.dump());
  std::string e =
      error_of<SchemaError>([&] { score_task_files(Task::Banking, preds, gold_path()); });
  EXPECT_THAT(e, HasSubstr("preds.json: record 17: must be a string, got number"));

  auto slots = answer_key().at("restaurant8k");
  slots[17] = 3.5;
  write_bytes(preds, slots.dump());
  e = error_of<SchemaError>([&] { score_task_files(Task::Restaurant8k, preds, gold_path()); });
  EXPECT_THAT(e, HasSubstr("preds.json: record 17: must be a list of strings, got number"));
  slots[17] = json::array({"time:0-1", 4});
  write_bytes(preds, slots.dump());
  e = error_of<SchemaError>([&] { score_task_files(Task::Restaurant8k, preds, gold_path()); });
  EXPECT_THAT(e, HasSubstr("preds.json: record 17: field '[1]': must be a string, got integer"));

  auto top = answer_key().at("top");
  top[3] = json::object();
  write_bytes(preds, top.dump());
  e = error_of<SchemaError>([&] { score_task_files(Task::Top, preds, gold_path()); });
  EXPECT_THAT(e, HasSubstr("preds.json: record 3: must be a list [intent, [tags]], got object"));
  top[3] = json::array({"IN_X"});
  write_bytes(preds, top.dump());
  e = error_of<SchemaError>([&] { score_task_files(Task::Top, preds, gold_path()); });
  EXPECT_THAT(e, HasSubstr("preds.json: record 3: must be a list [intent, [tags]] of 2 elements, "
                           "got 1"));
  top[3] = json::array({7, json::array()});
  write_bytes(preds, top.dump());
  e = error_of<SchemaError>([&] { score_task_files(Task::Top, preds, gold_path()); });
  EXPECT_THAT(e, HasSubstr("preds.json: record 3: field '[0]': must be an intent string, got "
                           "integer"));
  top[3] = json::array({"IN_X", json::array({"O", nullptr})});
  write_bytes(preds, top.dump());
  e = error_of<SchemaError>([&] { score_task_files(Task::Top, preds, gold_path()); });
  EXPECT_THAT(e, HasSubstr("preds.json: record 3: field '[1][1]': must be a string, got null"));

  // Wrong count: names the file and both counts.
  auto short_list = answer_key().at("banking");
  short_list.erase(short_list.end() - 1);
  write_bytes(preds, short_list.dump());
  e = error_of<DataError>([&] { score_task_files(Task::Banking, preds, gold_path()); });
  EXPECT_THAT(e, HasSubstr("preds.json: has 3079 banking predictions but"));
  EXPECT_THAT(e, HasSubstr("has 3080 gold examples"));

  // Not JSON; not a list.
  write_bytes(preds, "[\"a\",");
  e = error_of<DataError>([&] { score_task_files(Task::Banking, preds, gold_path()); });
  EXPECT_THAT(e, HasSubstr("preds.json"));
  write_bytes(preds, "42");
  e = error_of<SchemaError>([&] { score_task_files(Task::Banking, preds, gold_path()); });
  EXPECT_THAT(e, HasSubstr("preds.json: must be a JSON list of banking predictions or an object "
                           "keyed by task, got integer"));
  e = error_of<DataError>(
      [&] { score_task_files(Task::Banking, dir.file("missing.json"), gold_path()); });
  EXPECT_THAT(e, HasSubstr("missing.json"));
}

TEST(TripPyFiles, ConfigAndPredictionFile) {
  TempDir dir;
  write_bytes(dir.file("config.json"), R"({
    "class_types": ["none", "dontcare", "copy_value", "true", "false", "inform", "refer"],
    "slots": ["hotel-area", "hotel-stars"],
    "label_maps": {"centre": ["center", "downtown"], "mid-range": ["moderately priced"]}})");
  const TripPyConfig cfg = read_trippy_config(dir.file("config.json"));
  EXPECT_EQ(cfg.class_types.size(), 7u);
  EXPECT_EQ(cfg.slots, (std::vector<std::string>{"hotel-area", "hotel-stars"}));
  ASSERT_EQ(cfg.label_maps.count("mid - range"), 1u);  // keys normalised as TripPy does
  EXPECT_EQ(cfg.label_maps.at("centre"), (std::vector<std::string>{"center", "downtown"}));

  // Two turns of one dialogue; turn 1 predicts dontcare for gold "4". Extra keys are ignored.
  const auto rec = [](const char* turn, json area, json stars) {
    json r = {{"guid", json::array({"test", "PMUL1.json", turn})},
              {"input_ids_hotel-area", {1, 2}}};
    for (const auto& [slot, v] : {std::pair<std::string, json>{"hotel-area", area},
                                  std::pair<std::string, json>{"hotel-stars", stars}}) {
      r["class_label_id_" + slot] = v[0];
      r["class_prediction_" + slot] = v[1];
      r["slot_groundtruth_" + slot] = v[2];
      r["slot_prediction_" + slot] = v[3];
    }
    return r;
  };
  json preds = json::array({rec("0", {2, 2, "centre", "center"}, {0, 0, "none", "none"}),
                            rec("1", {0, 0, "centre", "center"}, {2, 1, "4", "dontcare"})});
  write_bytes(dir.file("pred_res.json"), preds.dump());
  TaskScore s = score_trippy_file(dir.file("pred_res.json"), cfg);
  EXPECT_EQ(s.task, "multiwoz");
  EXPECT_EQ(s.count, 2u);
  EXPECT_DOUBLE_EQ(s.value, 0.5);

  // guid as one string "test-PMUL1.json-0" works the same.
  preds[0]["guid"] = "test-PMUL1.json-0";
  write_bytes(dir.file("pred_res.json"), preds.dump());
  EXPECT_DOUBLE_EQ(score_trippy_file(dir.file("pred_res.json"), cfg).value, 0.5);

  // A missing key names the record and the key.
  preds[1].erase("class_prediction_hotel-stars");
  write_bytes(dir.file("pred_res.json"), preds.dump());
  std::string e = error_of<SchemaError>([&] { score_trippy_file(dir.file("pred_res.json"), cfg); });
  EXPECT_THAT(e, HasSubstr("pred_res.json: record 1: field 'class_prediction_hotel-stars': is "
                           "missing"));
  // A bad class index is a DataError naming the file, record and slot.
  preds[1]["class_prediction_hotel-stars"] = 12;
  write_bytes(dir.file("pred_res.json"), preds.dump());
  e = error_of<DataError>([&] { score_trippy_file(dir.file("pred_res.json"), cfg); });
  EXPECT_THAT(e, HasSubstr("pred_res.json: record 1: slot 'hotel-stars': class_prediction 12"));

  write_bytes(dir.file("bad_config.json"), R"({"class_types": ["none"], "slots": "x"})");
  e = error_of<SchemaError>([&] { read_trippy_config(dir.file("bad_config.json")); });
  EXPECT_THAT(e, HasSubstr("bad_config.json: field 'slots'"));
}

}  // namespace
}  // namespace dialtree::eval
